"""Warm starts: a trial's children forked from a process that has already imported torch and the harness.

A cold child pays the interpreter and its imports on every launch: `import torch` and the `torch._dynamo`
that the first optimizer pulls in take about 5-12 s on a 2-core CPU, transformers 2-3 s more, and a seed
launches two children (training, then the fixed eval). On a classic trial that was most of a seed's wall
time. Here a *starter* process per distinct (Python, working directory, environment, modules) imports the
launch's `warm` modules once; each launch is then a fork of it that runs `python -m MODULE ARGS` as a fresh
interpreter would, without the imports.

A starter outlives its trial: it waits `AUTORL_WARM_KEEP` seconds (default 600) for the next trial's
launches, so an agent's next `uv run run.py` in the same directory forks at once instead of waiting for the
imports again; 0 ends it with its trial. It listens on a Linux abstract socket named after its key, answers
only its own user (SO_PEERCRED), and replaces itself when a module it imported changed on disk (an edited
harness or a `uv sync` never runs stale code). It holds no GPU, no file and no child between trials.

What a forked child keeps from a cold one: its own session and process group (the runner's killpg reaches
it and only it), its merged stdout/stderr on a pipe the runner reads, stdin from /dev/null, its slot's
cores, the runner's environment with the launch's, death with its parent (the starter), a fresh `random`
state, and an exit code reported as Popen reports one (-N for signal N). When the runner's connection closes
(the trial ended, or the runner was killed, even by SIGKILL) the starter kills what that runner still had
running. It ends without the interpreter's teardown of its modules (`_run`). The runner follows it through
`WarmChild`, which answers the part of Popen that autorl.process uses. The budget clock, the start-up figure
(from the launch to the child's `ready`, including a new starter's one-time imports for the first child) and
everything recorded keep their meaning.

Warm starts are on inside `with starters():` (a trial's base eval and seeds, `autorl confirm`), on Linux,
for launches that name their modules (`Launch.warm`); anywhere else, or when a starter cannot serve (its
imports fail, or it would have touched CUDA, which a fork cannot inherit), the launch runs cold, as before.
`AUTORL_WARM=0` turns them off.

Protocol, on a SOCK_SEQPACKET connection, one JSON message per packet:
  starter -> runner: {"ready": true} or {"error": text, "stale": bool} once, on accepting (after its imports)
  runner -> starter: {"module", "args", "cwd", "env", "cpus"} with the write end of the child's output pipe
  starter -> runner: {"pid": N} per request and {"exited": N, "code": C} when child N ends.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import math
import os
import random
import runpy
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from autorl.backend import Launch

ENV_SWITCH = "AUTORL_WARM"  # "0": every launch cold
KEEP_VAR = "AUTORL_WARM_KEEP"  # seconds a starter waits, idle, for the next trial; 0: it ends with its trial
KEEP_DEFAULT_S = 600.0
FIRST_CONTACT_S = 60.0  # a new starter waits at least this long for its first connection
CONNECT_S = 30.0  # a new starter's socket must be listening within this time (it binds before importing)
MAX_MESSAGE = 1 << 20
REAP_EVERY_S = 0.02  # how often the starter looks for ended children (the exit code's latency)
# Shell bookkeeping that differs between two commands of one session: not part of a starter's key (a child
# still gets the runner's values).
VOLATILE_ENV = frozenset({"_", "OLDPWD", "PWD", "SHLVL"})
STALE = "the starter's modules changed on disk since it imported them"
GROUP_PREFIX = "autorl-warm-"
SUPERSEDED_EVERY_S = 2.0  # how often an idle starter looks for a newer one of its group (then it ends)


class StarterError(RuntimeError):
    """The starter cannot serve (its imports failed, it died or it stopped answering): launch cold."""


def keep_problem() -> str | None:
    """Why AUTORL_WARM_KEEP is unusable; None when it is unset or a number of seconds >= 0."""
    text = os.environ.get(KEEP_VAR)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        return f"{KEEP_VAR}={text!r}: a number of seconds >= 0 (0: a warm starter ends with its trial)"
    return None


def keep_seconds() -> float:
    """How long a starter started now waits, idle, for the next trial (keep_problem() refuses bad values
    before a trial starts)."""
    return KEEP_DEFAULT_S if keep_problem() is not None else float(os.environ.get(KEEP_VAR, KEEP_DEFAULT_S))


def _name(launch: Launch, env: dict[str, str]) -> str:
    """The abstract socket name of the starter that serves `launch`: one per user and what its imports may
    depend on, as `autorl-warm-UID-GROUP-ENV`. GROUP: the interpreter, the working directory, the modules and
    the launch's own environment (a GPU slot's devices); ENV: the rest of the runner's environment."""

    def digest(parts: list[str]) -> str:
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]

    group = digest(
        [
            sys.executable,
            str(launch.cwd),
            *launch.warm,
            "\0",
            *sorted(f"{k}={v}" for k, v in launch.env.items()),
        ]
    )
    rest = digest(sorted(f"{k}={v}" for k, v in env.items() if k not in VOLATILE_ENV))
    return f"{GROUP_PREFIX}{os.getuid()}-{group}-{rest}"


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


def _peer(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket."""
    pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return pid, uid


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


_STARTED: list[subprocess.Popen[bytes]] = []  # starters this process started that may outlive their trial


class _Starter:
    """The runner's connection to one starter process: the one serving its key, else a new one."""

    def __init__(self, launch: Launch) -> None:
        self.lock = threading.Lock()  # one request at a time: a request's reply is the next "pid" message
        self.ready = threading.Event()
        self.error: str | None = None
        self.retry = False  # the starter closed before it was ready without being new: start another
        self.pid = 0  # the starter's
        self.pids: list[int] = []  # replies to requests, in order
        self.replied = threading.Condition()
        self.children: dict[int, WarmChild] = {}
        self.early_exits: dict[int, int] = {}  # a child that ended before its WarmChild was registered
        self.started: subprocess.Popen[bytes] | None = None
        self.keep_s = keep_seconds()
        self.reader: threading.Thread | None = None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._connect(launch)
        except (OSError, StarterError) as exc:
            self.sock.close()
            self.error = f"no warm starter: {exc}"
            self.ready.set()
            return
        self.reader = threading.Thread(target=self._read, name="warm-starter", daemon=True)
        self.reader.start()

    def _connect(self, launch: Launch) -> None:
        env = launch.child_env()
        address = "\0" + _name(launch, env)
        for proc in list(_STARTED):  # reap kept starters that have ended since
            if proc.poll() is not None:
                _STARTED.remove(proc)
        try:
            self.sock.connect(address)
        except (ConnectionRefusedError, FileNotFoundError):
            self.started = subprocess.Popen(
                [sys.executable, "-m", "autorl.warm", address[1:], str(self.keep_s), *launch.warm],
                cwd=launch.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # not the runner's: a Ctrl-C reaches the runner only
            )
            _STARTED.append(self.started)
            self._connect_new(address)
        self.pid, uid = _peer(self.sock)
        if uid != os.getuid():
            raise StarterError(f"the socket {address[1:]} belongs to user {uid}")

    def _connect_new(self, address: str) -> None:
        """Connect to the starter just started; it listens before importing (or exits at once when another
        starter holds the name, and that one answers)."""
        assert self.started is not None
        deadline = time.monotonic() + CONNECT_S
        while True:
            ended = self.started.poll() is not None
            try:
                self.sock.connect(address)
                return
            except (ConnectionRefusedError, FileNotFoundError):
                if ended or time.monotonic() > deadline:
                    raise StarterError("the starter did not start") from None
                time.sleep(0.02)

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
                self.retry = bool(msg.get("stale"))
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
            if not self.ready.is_set() and self.started is None:
                self.retry = True  # a kept starter that ended as we came (idle): a new one will serve
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
            "env": launch.child_env(),
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

    def close(self, end: bool = False) -> None:
        """Leave the starter: it kills what this runner still had running and, idle, waits for the next
        trial (or ends, with AUTORL_WARM_KEEP=0, or `end`: a trial stopped by a signal leaves nothing)."""
        if end and self.reader is not None and self.ready.is_set():
            with contextlib.suppress(OSError):
                _send(self.sock, {"end": True})  # it ends once its other runners, if any, have left
        if self.reader is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            self.sock.close()
            self.reader.join(timeout=2)
        if self.started is None or (self.keep_s != 0 and not end):
            return
        if not self.ready.is_set() or self.error:  # still importing (a trial stopped early): nothing to serve
            self.started.kill()  # a runner queued for it starts another
        with contextlib.suppress(subprocess.TimeoutExpired):  # it ends once its other runners leave
            self.started.wait(timeout=5)


class Starters:
    """The starters of one trial, one per distinct (working directory, environment, modules)."""

    def __init__(self) -> None:
        self.starters: dict[tuple[Any, ...], _Starter] = {}
        self.forked = 0  # children forked so far (launches that did not fall back to a cold start)
        self.lock = threading.Lock()

    def _starter(self, launch: Launch, stale: _Starter | None = None) -> _Starter:
        key = (str(launch.cwd), tuple(sorted(launch.env.items())), tuple(launch.warm))
        with self.lock:
            if key not in self.starters or self.starters[key] is stale:
                if stale is not None:
                    stale.close()
                self.starters[key] = _Starter(launch)
            return self.starters[key]

    def spawn(self, launch: Launch, ready_timeout_s: float, give_up: Callable[[], bool]) -> WarmChild:
        """Fork `launch` (a `python -m` launch) from its starter; raises StarterError when it cannot."""
        module, args = _module_args(launch)
        starter = self._starter(launch)
        try:
            starter.wait_ready(ready_timeout_s, give_up)
        except StarterError:
            if not starter.retry:
                raise
            starter = self._starter(launch, stale=starter)  # stale, or ended idle as we came: once more
            starter.wait_ready(ready_timeout_s, give_up)
        child = starter.fork(module, args, launch)
        with self.lock:
            self.forked += 1
        return child

    def close(self, end: bool = False) -> None:
        with self.lock:
            for starter in self.starters.values():
                starter.close(end)
            self.starters.clear()


_ACTIVE: Starters | None = None


@contextlib.contextmanager
def starters(stop: Any = None) -> Iterator[Starters | None]:
    """Warm starts for the launches inside (None when AUTORL_WARM=0 or off Linux); every connection to a
    starter closes on the way out, and when `stop` (the trial's autorl.process.Stop) is set by then, every
    starter ends: a trial stopped by a signal leaves no process (the keep-alive is for trials that end)."""
    global _ACTIVE
    if os.environ.get(ENV_SWITCH, "1") == "0" or not sys.platform.startswith("linux") or _ACTIVE is not None:
        yield _ACTIVE
        return
    _ACTIVE = pool = Starters()
    try:
        yield pool
    finally:
        _ACTIVE = None
        pool.close(end=bool(stop))


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


# --- the starter process (python -m autorl.warm NAME KEEP_S MODULE...) ------------------------------------


def _send(sock: socket.socket, msg: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # a runner that is gone: its connection is dropped when read
        sock.send(json.dumps(msg).encode())


def _preload(modules: list[str]) -> str | None:
    """Import the modules; None, or why this starter cannot serve. CUDA must stay untouched (a forked child
    cannot use a CUDA context it inherits) and no thread may run (a fork would not carry it)."""
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
        return "warm start: " + traceback.format_exc(limit=3)
    return None


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
        if _peer(conn)[1] != os.getuid():
            conn.close()
            return
        if self.error is None and _changed(self.files):
            self.error = STALE  # serve no one new: the next runner starts a fresh starter under this name
            self.listener.close()
            if self.tag is not None:
                self.tag.close()
            self.listener = self.tag = None
        if self.error is not None:
            _send(conn, {"error": self.error, "stale": self.error == STALE})
            conn.close()
            return
        _send(conn, {"ready": True})
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
        _send(conn, {"pid": pid})
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
                _send(conn, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def _become(request: dict[str, Any], out_fd: int, starter_env: dict[str, str]) -> None:
    """In the forked child: take on the launch's session, output, cores, directory and environment."""
    from autorl.process import die_with_parent

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
    for name in set(starter_env) - set(request["env"]):  # the runner's environment, and what imports set
        os.environ.pop(name, None)
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
