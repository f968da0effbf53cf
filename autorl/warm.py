"""Warm starts: a trial's children forked from a process that has already imported torch and the harness.

A cold child pays the interpreter and its imports on every launch: `import torch` and the `torch._dynamo`
that the first optimizer pulls in take about 5-9 s on a 2-core CPU, transformers 2 s more, and a seed
launches two children (training, then the fixed eval). On a classic trial that was most of a seed's wall
time. Here one *starter* process per distinct (Python, working directory, environment, modules) imports
the launch's `warm` modules once; each launch is then a fork of it that runs `python -m MODULE ARGS` as a
fresh interpreter would, without the imports.

What a forked child keeps from a cold one: its own session and process group (the runner's killpg reaches
it and only it), its merged stdout/stderr on a pipe the runner reads, stdin from /dev/null, its slot's
cores, the launch's environment, death with its parent (the starter, which dies with the runner), a fresh
`random` state, and an exit code reported as Popen reports one (-N for signal N). It ends without the
interpreter's teardown of its modules (`_run`). The runner follows it
through `WarmChild`, which answers the part of Popen that autorl.process uses. The budget clock, the
start-up figure (from the launch to the child's `ready`, the starter's one-time imports included for the
first child) and everything recorded keep their meaning.

Warm starts are on inside `with starters():` (a trial's base eval and seeds, `autorl confirm`), for
launches that name their modules (`Launch.warm`); anywhere else, or when a starter cannot start (its
imports fail, or it would have touched CUDA, which a fork cannot inherit), the launch runs cold, as before.
`AUTORL_WARM=0` turns them off.

Protocol, on a SOCK_SEQPACKET socket pair, one JSON message per packet:
  runner -> starter: {"module", "args", "cwd", "env", "cpus"} with the write end of the child's output pipe
  starter -> runner: {"ready": true} or {"error": text} once, after the imports; then {"pid": N} per
  request and {"exited": N, "code": C} when child N ends.
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
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from autorl.backend import Launch

ENV_SWITCH = "AUTORL_WARM"  # "0": every launch cold
MAX_MESSAGE = 1 << 20
REAP_EVERY_S = 0.02  # how often the starter looks for ended children (the exit code's latency)


class StarterError(RuntimeError):
    """The starter cannot serve (its imports failed, it died or it stopped answering): launch cold."""


class WarmChild:
    """A forked child as autorl.process sees a Popen: pid, stdout, poll, wait, kill, returncode."""

    def __init__(self, pid: int, stdout_fd: int) -> None:
        self.pid = pid
        self.stdout = open(stdout_fd, encoding="utf-8", errors="replace")  # noqa: SIM115 (closed by the reader)
        self.returncode: int | None = None
        self._exited = threading.Event()

    def _ended(self, code: int) -> None:
        self.returncode = code
        self._exited.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(f"warm child {self.pid}", timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)


class _Starter:
    """The runner's end of one starter process."""

    def __init__(self, launch: Launch) -> None:
        from autorl.process import die_with_parent

        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "autorl.warm", str(theirs.fileno()), *launch.warm],
                cwd=launch.cwd,
                env={**os.environ, **launch.env, "PYTHONUNBUFFERED": "1"},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # a Ctrl-C in the terminal reaches the runner only
                preexec_fn=die_with_parent,
            )
        self.lock = threading.Lock()  # one request at a time: a request's reply is the next "pid" message
        self.ready = threading.Event()
        self.error: str | None = None
        self.pids: list[int] = []  # replies to requests, in order
        self.replied = threading.Condition()
        self.children: dict[int, WarmChild] = {}
        self.early_exits: dict[int, int] = {}  # a child that ended before its WarmChild was registered
        self.reader = threading.Thread(target=self._read, name="warm-starter", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                break
            self._take(json.loads(data))
        self._gone("the starter process ended")

    def _take(self, msg: dict[str, Any]) -> None:
        with self.replied:
            if "ready" in msg:
                self.ready.set()
            elif "error" in msg:
                self.error = msg["error"]
                self.ready.set()
            elif "pid" in msg:
                self.pids.append(msg["pid"])
            elif "exited" in msg:
                child = self.children.pop(msg["exited"], None)
                if child is None:
                    self.early_exits[msg["exited"]] = msg["code"]
                else:
                    child._ended(msg["code"])
            self.replied.notify_all()

    def _gone(self, why: str) -> None:
        """The starter is gone: its children die with it (parent-death signal), so each one is SIGKILLed."""
        with self.replied:
            self.error = self.error or why
            for child in self.children.values():
                child._ended(-signal.SIGKILL)
            self.children.clear()
            self.ready.set()
            self.replied.notify_all()

    def wait_ready(self, timeout_s: float, give_up: Callable[[], bool]) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.ready.wait(0.1):
            if give_up() or time.monotonic() > deadline:
                raise StarterError("the starter was not ready in time")
        if self.error is not None:
            raise StarterError(self.error)

    def fork(self, module: str, args: list[str], launch: Launch) -> WarmChild:
        request = {
            "module": module,
            "args": args,
            "cwd": str(launch.cwd),
            "env": launch.env,
            "cpus": list(launch.cpus),
        }
        read_fd, write_fd = os.pipe()
        try:
            with self.lock:
                try:
                    socket.send_fds(self.sock, [json.dumps(request).encode()], [write_fd])
                except OSError as exc:
                    raise StarterError(f"the starter is gone ({exc})") from exc
                finally:
                    os.close(write_fd)
                pid = self._next_pid()
                child = WarmChild(pid, read_fd)
                with self.replied:
                    if pid in self.early_exits:
                        child._ended(self.early_exits.pop(pid))
                    else:
                        self.children[pid] = child
                return child
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(read_fd)
            raise

    def _next_pid(self) -> int:
        with self.replied:
            while not self.pids:
                if self.error is not None:
                    raise StarterError(self.error)
                self.replied.wait(1.0)
            return self.pids.pop(0)

    def close(self) -> None:
        """End the starter: it exits when its socket closes (any child still running dies with it)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=2)


class Starters:
    """The starters of one trial, one per distinct (working directory, environment, modules)."""

    def __init__(self) -> None:
        self.starters: dict[tuple[Any, ...], _Starter] = {}
        self.forked = 0  # children forked so far (launches that did not fall back to a cold start)
        self.lock = threading.Lock()
        # The parent-death signal follows the *thread* that started a process: starters are started from
        # this one thread, which lives as long as the trial, not from a seed's thread that ends before them.
        self.spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warm-spawner")

    def _starter(self, launch: Launch) -> _Starter:
        key = (str(launch.cwd), tuple(sorted(launch.env.items())), tuple(launch.warm))
        with self.lock:
            if key not in self.starters:
                self.starters[key] = self.spawner.submit(_Starter, launch).result()
            return self.starters[key]

    def spawn(self, launch: Launch, ready_timeout_s: float, give_up: Callable[[], bool]) -> WarmChild:
        """Fork `launch` (a `python -m` launch) from its starter; raises StarterError when it cannot."""
        module, args = _module_args(launch)
        starter = self._starter(launch)
        starter.wait_ready(ready_timeout_s, give_up)
        child = starter.fork(module, args, launch)
        with self.lock:
            self.forked += 1
        return child

    def close(self) -> None:
        with self.lock:
            for starter in self.starters.values():
                starter.close()
            self.starters.clear()
        self.spawner.shutdown(wait=True)


_ACTIVE: Starters | None = None


@contextlib.contextmanager
def starters() -> Iterator[Starters | None]:
    """Warm starts for the launches inside (None when AUTORL_WARM=0); every starter ends on the way out."""
    global _ACTIVE
    if os.environ.get(ENV_SWITCH, "1") == "0" or _ACTIVE is not None:
        yield _ACTIVE
        return
    _ACTIVE = pool = Starters()
    try:
        yield pool
    finally:
        _ACTIVE = None
        pool.close()


def fork(launch: Launch, ready_timeout_s: float, give_up: Callable[[], bool]) -> WarmChild | None:
    """`launch` forked from its starter, or None to start it cold: no starters active, a launch that names no
    modules or is not `python -m`, or a starter that cannot serve (a fault of the modules then shows in the
    cold child's own log). Waiting for the starter's imports ends after ready_timeout_s or once give_up()."""
    if _ACTIVE is None or not launch.warm or not _module_args(launch)[0]:
        return None
    try:
        return _ACTIVE.spawn(launch, ready_timeout_s, give_up)
    except StarterError:
        return None


def _module_args(launch: Launch) -> tuple[str, list[str]]:
    """("MODULE", ARGS) of a `python -m MODULE ARGS` launch on this interpreter, else ("", [])."""
    argv = launch.argv
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m":
        return argv[2], list(argv[3:])
    return "", []


# --- the starter process (python -m autorl.warm FD MODULE...) -----------------------------------------------


def _send(sock: socket.socket, msg: dict[str, Any]) -> None:
    sock.send(json.dumps(msg).encode())


def _preload(sock: socket.socket, modules: list[str]) -> None:
    """Import the modules; CUDA must stay untouched (a forked child cannot use a CUDA context it inherits)."""
    import importlib

    try:
        for name in modules:
            importlib.import_module(name)
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            raise RuntimeError("importing the modules initialised CUDA")
        if threading.active_count() > 1:
            raise RuntimeError("importing the modules started a thread (a fork would not be safe)")
    except BaseException:
        _send(sock, {"error": "warm start: " + traceback.format_exc(limit=3)})
        sys.exit(1)
    _send(sock, {"ready": True})


def _reap(sock: socket.socket) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _send(sock, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def _serve(sock: socket.socket) -> tuple[dict[str, Any], int]:
    """Fork a child per request until the runner closes the socket. Returns only in a child: its request
    and the write end of its output pipe."""
    me = os.getpid()
    while True:
        readable, _, _ = select.select([sock], [], [], REAP_EVERY_S)
        _reap(sock)
        if not readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 1)
        except OSError:
            data, fds = b"", []
        if not data:
            sys.exit(0)  # the runner is done (or gone)
        pid = os.fork()
        if pid == 0:
            return {**json.loads(data), "starter": me}, fds[0]  # the child's own way out of the loop
        os.close(fds[0])
        _send(sock, {"pid": pid})


def _become(sock: socket.socket, request: dict[str, Any], out_fd: int) -> None:
    """In the forked child: take on the launch's session, output, cores, directory and environment."""
    from autorl.process import die_with_parent

    sock.close()
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
    sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, errors="backslashreplace", closefd=False)  # noqa: SIM115
    if request["cpus"] and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, request["cpus"])
    os.chdir(request["cwd"])
    os.environ.update(request["env"])
    random.seed()  # a fresh interpreter's state, not the starter's
    sys.argv = [request["module"], *request["args"]]
    sys.modules.pop(request["module"], None)  # as under `python -m`: run as __main__, not imported first


def _run(module: str) -> None:
    """Run the module as `python -m` would, then exit without the interpreter's teardown.

    The exit code is the one Python gives (SystemExit's code, 1 after an uncaught exception, death by SIGINT
    after an uncaught KeyboardInterrupt). Non-daemon threads are joined and the atexit handlers run (e.g.
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
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    _preload(sock, sys.argv[2:])
    request, out_fd = _serve(sock)
    _become(sock, request, out_fd)
    _run(request["module"])


if __name__ == "__main__":
    main()
