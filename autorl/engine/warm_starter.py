"""The warm starter process: `python -m autorl.engine.warm_starter NAME KEEP_S MODULE...` (warm.py starts it).

It binds its abstract socket NAME before importing MODULE... (and calling those given as `module:function`),
then serves: one connection per runner, one fork per request (the child becomes `python -m MODULE ARGS`
without the imports), each child's end reported to its runner; idle, it ends after KEEP_S seconds, once a
stopped trial asks it to, when its directory is gone or when a newer starter of its group listens. The
protocol and the runner's side: autorl/engine/warm.py.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import random
import runpy
import select
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from autorl.engine.warm import (
    FIRST_CONTACT_S,
    MAX_MESSAGE,
    REAP_EVERY_S,
    STALE,
    SUPERSEDED_EVERY_S,
    peer,
    send,
)


def _newer_in_group(name: str, born_ns: int) -> bool:
    """Whether a starter of the same group (same name but for the environment part) listens that began
    after `born_ns`: the runners of this directory now use that one. A listening starter also binds a tag,
    `NAME@BORN` (CLOCK_MONOTONIC ns, the same clock in every process of the machine); socket inode numbers
    would not do, the kernel hands them out in per-CPU batches."""
    group = name.rsplit("-", 1)[0] + "-"
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        if len(fields) < 8 or not fields[7].startswith("@" + group):
            continue
        other, _, born = fields[7][1:].partition("@")
        if other != name and born.isdigit() and int(born) > born_ns:
            return True
    return False


def _preload(modules: list[str]) -> str | None:
    """Import the modules, and call each `module:function` entry (a prewarm: work done once for every child,
    such as a compile; an exception it raises is its own: the starter serves, and the children do that work
    themselves); None, or why this starter cannot serve. CUDA must stay untouched (a forked child cannot use
    a CUDA context it inherits) and no thread may run (a fork would not carry it): no Python thread, and no
    native thread that a prewarm left (the imports' own, before it, are torch's idle pools)."""
    import importlib

    try:
        for entry in modules:
            name, _, function = entry.partition(":")
            module = importlib.import_module(name)
            if function:
                prewarm, native = getattr(module, function), _native_threads()
                with contextlib.suppress(Exception):
                    prewarm()
                if _native_threads() > native:
                    raise RuntimeError(f"{entry} left a native thread running (a fork would not be safe)")
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            raise RuntimeError("importing the modules initialised CUDA")
        if threading.active_count() > 1:
            raise RuntimeError("importing the modules started a thread (a fork would not be safe)")
    except BaseException:
        return "warm start: " + traceback.format_exc(limit=3)
    return None


def _native_threads() -> int:
    """This process's threads as the kernel counts them (Python's and native ones)."""
    return len(os.listdir("/proc/self/task"))


def _module_files() -> dict[str, int]:
    """The source files of every imported module and their modification times."""
    files = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            try:
                files[path] = os.stat(path).st_mtime_ns
            except OSError:
                files[path] = -1
    return files


def _changed(files: dict[str, int]) -> bool:
    """Whether any of these module files changed (or went) since their times were taken."""
    for path, mtime in files.items():
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return True
        except OSError:
            if mtime != -1:
                return True
    return False


class _Server:
    """The starter's loop: a connection per runner, a fork per request, each child's end to its runner."""

    def __init__(self, name: str, listener: socket.socket, keep_s: float, error: str | None) -> None:
        self.name = name
        self.listener: socket.socket | None = listener
        self.born_ns = time.monotonic_ns()
        self.tag: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.tag.bind(f"\0{name}@{self.born_ns}")  # what a runner reaches is `name`; this dates it
        self.keep_s = keep_s
        self.looked = time.monotonic()  # for a newer starter of the group
        self.error = error
        self.files = _module_files() if error is None else {}
        self.conns: dict[socket.socket, set[int]] = {}  # runner -> its running children
        self.owner: dict[int, socket.socket] = {}
        self.idle_since = time.monotonic()
        self.idle_s = 0.0 if error else max(keep_s, FIRST_CONTACT_S)  # until the first runner came
        self.home = os.getcwd()  # the directory it serves: once it is gone, no trial can come

    def serve(self) -> tuple[dict[str, Any], int]:
        """Serve until idle for long enough; returns only in a forked child: its request and the write end
        of its output pipe."""
        while True:
            watched = [*([self.listener] if self.listener else []), *self.conns]
            readable, _, _ = select.select(watched, [], [], REAP_EVERY_S)
            self._reap()
            if not readable and not self.conns and self._done_waiting():
                sys.exit(0)
            for sock in readable:
                if sock is self.listener:
                    self._accept()
                elif (forked := self._request(sock)) is not None:
                    return forked

    def _done_waiting(self) -> bool:
        """Idle: whether to end. After `idle_s` (0 once a stopped trial asked it to end), or at once when
        nobody can reach it (stale, failed), when its directory is gone, or when a newer starter of its group
        (the same directory and modules, another environment) serves them now: a directory keeps at most
        one idle starter per group."""
        now = time.monotonic()
        if self.listener is None or now - self.idle_since >= self.idle_s:
            return True
        if now - self.looked < SUPERSEDED_EVERY_S:
            return False
        self.looked = now
        return not os.path.isdir(self.home) or _newer_in_group(self.name, self.born_ns)

    def _accept(self) -> None:
        assert self.listener is not None
        conn, _ = self.listener.accept()
        if peer(conn)[1] != os.getuid():
            conn.close()
            return
        if self.error is None and _changed(self.files):
            self.error = STALE  # serve no one new: the next runner starts a fresh starter under this name
            self.listener.close()
            if self.tag is not None:
                self.tag.close()
            self.listener = self.tag = None
        if self.error is not None:
            send(conn, {"error": self.error, "stale": self.error == STALE})
            conn.close()
            return
        send(conn, {"ready": True})
        self.conns[conn] = set()
        self.idle_s = self.keep_s

    def _request(self, conn: socket.socket) -> tuple[dict[str, Any], int] | None:
        try:
            data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 1)
        except OSError:
            data, fds = b"", []
        if not data:
            self._drop(conn)
            return None
        request = json.loads(data)
        if request.get("end"):  # its trial was stopped: end as soon as no runner is left
            self.idle_s = 0.0
            return None
        me = os.getpid()
        pid = os.fork()
        if pid == 0:
            for sock in [*self.conns, *(s for s in (self.listener, self.tag) if s is not None)]:
                sock.close()
            return {**request, "starter": me}, fds[0]  # the child's own way out of the loop
        os.close(fds[0])
        self.conns[conn].add(pid)
        self.owner[pid] = conn
        send(conn, {"pid": pid})
        return None

    def _drop(self, conn: socket.socket) -> None:
        """A runner left (its trial ended, or it died): what it still had running is killed."""
        for pid in self.conns.pop(conn):
            for kill, target in ((os.killpg, pid), (os.kill, pid)):  # its group, or itself before setsid
                with contextlib.suppress(OSError):
                    kill(target, signal.SIGKILL)
        conn.close()
        if not self.conns:
            self.idle_since = time.monotonic()

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.owner.pop(pid, None)
            if conn is not None and conn in self.conns:
                self.conns[conn].discard(pid)
                send(conn, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def _become(request: dict[str, Any], out_fd: int, starter_env: dict[str, str]) -> None:
    """In the forked child: take on the launch's session, output, cores, directory and environment."""
    from autorl.engine.process import die_with_parent

    os.setsid()
    die_with_parent()
    if os.getppid() != request["starter"]:  # the starter died before the parent-death signal was armed
        os._exit(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(devnull)
    os.close(out_fd)
    # the child's own streams, also as the interpreter's originals (what a library restores on exit)
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, errors="backslashreplace", closefd=False)  # type: ignore[misc]  # noqa: SIM115, E501
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)  # type: ignore[misc]  # noqa: SIM115, E501
    if request["cpus"] and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, request["cpus"])
    os.chdir(request["cwd"])
    # the runner's environment of now; what the imports set stays, as a cold child that ran them has it
    for name in set(starter_env) - set(request["env"]):
        os.environ.pop(name, None)
    os.environ.update(request["env"])
    random.seed()  # a fresh interpreter's state, not the starter's
    sys.argv = [request["module"], *request["args"]]
    sys.modules.pop(request["module"], None)  # as under `python -m`: run as __main__, not imported first


def _run(module: str) -> None:
    """Run the module as `python -m` would, then exit without the interpreter's teardown.

    The exit code is the one Python gives (SystemExit's code, 1 after an uncaught exception, death by SIGINT
    after an uncaught KeyboardInterrupt). As at the interpreter's exit, threading's exit hooks run (an idle
    ThreadPoolExecutor's workers are told to end: torch's compile pool left two after a cold compile, and
    joining them held a trainer for 30 s), non-daemon threads are joined and the atexit handlers run (e.g.
    multiprocessing ending its children), then stdout/stderr are flushed and the process ends: tearing down
    torch's modules costs about 1 s per child here, and the modules run warm write their files in with-blocks.
    """
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's: threading's exit hooks, the joins
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def main() -> None:
    name, keep_s, modules = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        listener.bind("\0" + name)  # before the imports: runners queue here meanwhile
    except OSError:
        return  # another starter holds the name: it serves
    listener.listen(64)
    starter_env = dict(os.environ)
    request, out_fd = _Server(name, listener, keep_s, _preload(modules)).serve()
    _become(request, out_fd, starter_env)
    _run(request["module"])


if __name__ == "__main__":
    main()
