"""Ray across machines, driven as a user drives it: run.py in a subprocess, started as the README says
(`uv run run.py`, `uv run --no-sync run.py`, the venv's python), against `--ray local` and against a real
two-node cluster on this machine (`ray start --head` from one checkout, `ray start --address` from another).

Each cluster has its own ports, temp dir and HOME (its token); its processes carry a marker in their
environment and are ended by it (never `ray stop`, which ends every Ray process of the user).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from autorl.commands.tune import parse_summary
from autorl.engine.process import kill_marked, kill_processes, processes_with_env
from autorl.engine.ray_pool import STOP_ESCALATE_S
from autorl.record.ledger import Ledger

pytest.importorskip("ray")
# One pytest-xdist worker runs every Ray test: their clusters and timing bounds never contend with each other
pytestmark = pytest.mark.xdist_group("ray")

REPO = Path(__file__).resolve().parent.parent
RAY_CLI = Path(sys.executable).with_name("ray")
UV = shutil.which("uv")
MARK = "AUTORL_TEST_RAY"
CLASSIC = "total_env_steps = 2048\nnum_envs = 8\nnum_steps = 32\n"
LONG = "total_env_steps = 10000000\nnum_envs = 8\nnum_steps = 32\n"  # trains until the budget ends


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checkout(path: Path, config: str = CLASSIC) -> Path:
    """A node's autorl root (AUTORL_ROOT): where its runs, results and classic.toml live."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "classic.toml").write_text(config)
    return path


def user_env(home: Path, root: Path, **extra: str) -> dict[str, str]:
    # A user's Python writes bytecode (some sandboxes turn it off: every start would compile scipy and Ray)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "HOME": str(home), "AUTORL_ROOT": str(root), **extra}


@dataclass
class Node:
    proc: subprocess.Popen
    marker: str
    root: Path

    def kill(self) -> None:
        kill_marked(MARK, self.marker)
        self.proc.wait(timeout=30)


def start_node(tmp: Path, name: str, env: dict[str, str], args: list[str]) -> Node:
    """`ray start --block ...` in its own session; returns once the node says it runs."""
    marker = f"{name}-{uuid.uuid4().hex[:8]}"
    log = tmp / f"{name}.log"
    agent = ["--dashboard-agent-listen-port", str(free_port())]
    cmd = [str(RAY_CLI), "start", "--block", "--num-cpus", "1", "--disable-usage-stats", *agent, *args]
    with log.open("w") as out:
        proc = subprocess.Popen(
            cmd, cwd=env["AUTORL_ROOT"], env={**env, MARK: marker}, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    node = Node(proc, marker, Path(env["AUTORL_ROOT"]))
    deadline = time.monotonic() + 180
    while "Ray runtime started" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            node.kill()
            pytest.fail(f"ray start {name} failed:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    return node


@dataclass
class ClusterInfo:
    address: str
    home: Path
    head: Node
    worker: Node
    tmp: Path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two nodes, one CPU each: the head in checkout A, the other in checkout B; token auth on (the token in
    HOME, as after any earlier use of Ray on the machine); nodes are seen dead after ~3 s of silence."""
    tmp = tmp_path_factory.mktemp("ray")
    home = tmp / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text(uuid.uuid4().hex * 2)
    port = free_port()
    fast_death = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}
    # Ray's sockets live under its temp dir, and an AF_UNIX path holds at most 107 bytes: a short directory,
    # not one under pytest's (longer still on a pytest-xdist worker)
    ray_tmp = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    head_args = ["--head", "--port", str(port), "--include-dashboard", "false", "--temp-dir", str(ray_tmp)]
    head = start_node(tmp, "head", user_env(home, checkout(tmp / "A"), **fast_death), head_args)
    address = f"127.0.0.1:{port}"
    try:
        worker = start_node(
            tmp, "worker", user_env(home, checkout(tmp / "B"), RAY_AUTH_MODE="token"), ["--address", address]
        )
    except BaseException:
        head.kill()
        shutil.rmtree(ray_tmp, ignore_errors=True)
        raise
    yield ClusterInfo(address, home, head, worker, tmp)
    worker.kill()
    head.kill()
    shutil.rmtree(ray_tmp, ignore_errors=True)


@dataclass
class Run:
    returncode: int
    out: str  # stdout and stderr, as a terminal shows them
    connect_s: float  # from "[ray] connecting"/"[ray] starting" to the exit: what --ray adds


def run_py(how: str, env: dict[str, str], *args: str, timeout: float = 600) -> Run:
    """run.py as a user starts it; stdout and stderr together, each line timed."""
    cmd = launcher(how) + ["run.py", "--track", "classic", "--allow-dirty-harness", *args]
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines, ray_at = [], None
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if ray_at is None and line.startswith("[ray] "):
            ray_at = time.monotonic()
        if time.monotonic() > deadline:
            proc.kill()
    proc.wait(timeout=60)
    return Run(proc.returncode, "".join(lines), time.monotonic() - ray_at if ray_at else 0.0)


def launcher(how: str) -> list[str]:
    """The start modes a user has: `uv run`, `uv run --no-sync` (after one `uv sync`), the venv's python."""
    if how == "python":
        return [sys.executable]
    if UV is None:
        pytest.skip("uv is not on PATH")
    return [UV, "run", "--no-sync"] if how == "uv --no-sync" else [UV, "run"]


# --- bad addresses and tokens: exit 2 within 15 s, nothing recorded, no run directory -----------------------


class NotRay:
    """A TCP server that accepts and never answers like Ray's GCS."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.conns.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


def test_an_address_that_is_not_a_ray_cluster_is_refused_within_15_s(tmp_path):
    root = checkout(tmp_path / "root")
    env = user_env(tmp_path, root)
    not_ray = NotRay()
    try:
        cases = {
            f"127.0.0.1:{free_port()}": "nothing answers there",  # nothing listening
            f"127.0.0.1:{not_ray.port}": "not a Ray cluster",
            "not-a-host:99999": "HOST:PORT",
        }
        for address, said in cases.items():
            run = run_py("python", env, "--seeds", "1", "--ray", address)
            assert run.returncode == 2 and said in run.out, run.out
            assert run.connect_s < 12, (address, run.connect_s)
            assert not (root / "runs").exists() and not (root / "results.tsv").exists()
    finally:
        not_ray.close()


def test_a_missing_or_wrong_token_is_exit_2_with_the_fix(cluster, tmp_path):
    root = checkout(tmp_path / "root")
    no_token = user_env(tmp_path, root)  # a HOME without ~/.ray/auth_token
    run = run_py("python", no_token, "--seeds", "1", "--ray", cluster.address)
    assert run.returncode == 2 and run.connect_s < 12, run.out
    assert "requires its authentication token" in run.out and "~/.ray/auth_token" in run.out
    wrong = user_env(cluster.home, root, RAY_AUTH_TOKEN="0" * 32)
    run = run_py("python", wrong, "--seeds", "1", "--ray", cluster.address)
    assert run.returncode == 2 and run.connect_s < 12, run.out
    assert "refused the token from RAY_AUTH_TOKEN" in run.out
    assert not (root / "runs").exists() and not (root / "results.tsv").exists()


def test_a_seed_no_node_can_hold_is_refused_before_training(cluster, tmp_path):
    root = checkout(tmp_path / "root", CLASSIC + "torch_threads = 2\n")
    run = run_py("python", user_env(cluster.home, root), "--seeds", "1", "--ray", cluster.address)
    assert run.returncode == 2, run.out
    assert "each seed asks for 2 CPU and 0 GPU" in run.out and "1 CPU, 0 GPU" in run.out
    assert not (root / "runs").exists()


# --- trials ------------------------------------------------------------------------------------------------


def test_two_nodes_each_run_a_seed_in_their_own_checkout(cluster):
    """`uv run run.py --ray HEAD:PORT` with no Ray variable set: the token is found in HOME; each node runs a
    seed in its own checkout; the small files come back to the head, the weights stay where they were made."""
    a, b = cluster.head.root, cluster.worker.root
    env = user_env(cluster.home, a)
    run = run_py("uv", env, "--seeds", "2", "--budget", "20", "--all-seeds", "--ray", cluster.address)
    assert run.returncode == 0, run.out
    s = parse_summary(run.out)
    assert s["status"] == "ok" and len(s["seeds"].split(",")) == 2
    assert f"in {b}" in run.out and f"in {a}" in run.out  # the probe: each node's checkout
    run_id = Path(s["run_dir"]).name
    on_b = sorted(p.name for p in (b / "runs" / run_id).iterdir())
    assert len(on_b) == 1  # one seed ran on node B, in B's checkout
    for k in (0, 1):
        seed = a / "runs" / run_id / f"seed-{k}"
        assert (seed / "eval.jsonl").exists() and (seed / "run.log").exists()  # came back
        assert (seed / "weights").exists() == (f"seed-{k}" not in on_b)  # weights stay on their node
    assert (b / "runs" / run_id / on_b[0] / "weights").exists()
    assert len(Ledger(a / "results.tsv").rows()) == 1
    assert not (b / "results.tsv").exists()


class Trial:
    """run.py started in the background; its lines are read as they come (for signals mid-trial)."""

    def __init__(self, how: str, env: dict[str, str], *args: str) -> None:
        cmd = launcher(how) + ["run.py", "--track", "classic", "--allow-dirty-harness", *args]
        self.proc = subprocess.Popen(
            cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.t0 = time.monotonic()
        self.lines: list[str] = []
        self.times: list[float] = []  # when each line came, seconds since the start
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.times.append(time.monotonic() - self.t0)
            self.lines.append(line)

    @property
    def out(self) -> str:
        return "".join(self.lines)

    def timeline(self) -> str:
        """The output with each line's arrival time: what a failure shows (an assertion's repr is cut)."""
        return "".join(f"{t:7.2f} {line}" for t, line in zip(self.times, self.lines, strict=False))

    def check_stopped(self, took: float, code: int) -> None:
        """Stopped with `code` well before the grace period (30 s) or the budget (60 s) would end it: the
        running tasks get STOP_ESCALATE_S to save, then Ray's shutdown (1.5 s on an idle 2-core VM) and the
        exit (0.8 s) follow, each about twice as long beside the rest of the suite (2026-11-28)."""
        if took >= STOP_ESCALATE_S + 10 or self.proc.returncode != code:
            pytest.fail(f"{took:.1f} s after the signal, exit {self.proc.returncode}:\n{self.timeline()}")

    def wait_for(self, test, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not test():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"never saw {what}:\n{self.out[-4000:]}")
            time.sleep(0.2)

    def finish(self, timeout: float) -> float:
        """Seconds until it exits (killed, and the test failed, after `timeout`)."""
        t0 = time.monotonic()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"run.py still running after {timeout} s:\n{self.out[-4000:]}")
        self.reader.join(10)
        return time.monotonic() - t0


def seeds_started_since(t0: float, cluster: ClusterInfo) -> int:
    """Seeds training in the nodes' own checkouts (the driver's root only sees them when they finish)."""
    logs = [
        *(cluster.head.root / "runs").glob("*/seed-*/run.log"),
        *(cluster.worker.root / "runs").glob("*/seed-*/run.log"),
    ]
    return sum(1 for p in logs if p.stat().st_mtime > t0 and p.stat().st_size > 0)


def seed_started(root: Path) -> bool:
    return any((root / "runs").glob("*/seed-*/run.log"))


def test_a_node_lost_mid_trial_costs_only_its_seed(cluster, tmp_path):
    """A third node joins, one of three seeds runs there, the node is killed: that seed is a crash seed that
    names the node, the other two finish and are evaluated, the trial ends on its own with a row."""
    a = cluster.head.root
    c = checkout(cluster.tmp / "C")
    node_c = start_node(
        cluster.tmp, "c", user_env(cluster.home, c, RAY_AUTH_MODE="token"), ["--address", cluster.address]
    )
    try:
        long = tmp_path / "long.toml"
        long.write_text(LONG)
        rows_before = len(Ledger(a / "results.tsv").rows()) if (a / "results.tsv").exists() else 0
        args = [
            "--config",
            str(long),
            "--seeds",
            "3",
            "--budget",
            "8",
            "--new-context",  # the shared checkout's baseline ran at 20 s
            "--all-seeds",
            "--ray",
            cluster.address,
        ]
        trial = Trial("python", user_env(cluster.home, a), *args)
        trial.wait_for(lambda: seed_started(c), 240, "a seed starting on node C")
        time.sleep(3)
    finally:
        node_c.kill()
    took = trial.finish(timeout=240)
    assert trial.proc.returncode == 1, trial.out
    s = parse_summary(trial.out)
    assert s["status"] == "crash" and len(s["seeds"].split(",")) == 3
    c_line = next(line for line in trial.lines if line.startswith("[ray] node ") and f"in {c}" in line)
    c_name = c_line.removeprefix("[ray] node ").split(": ")[0]
    assert f"{c_name} left the cluster" in trial.out
    lost = [d.name for d in (c / "runs").glob("*/seed-*")]
    assert len(lost) == 1
    run = a / s["run_dir"]
    for k in range(3):
        evaluated = (run / f"seed-{k}" / "eval.jsonl").exists()
        assert evaluated == (f"seed-{k}" not in lost)
    assert len(Ledger(a / "results.tsv").rows()) == rows_before + 1
    assert took < 120


def test_sigterm_stops_running_and_waiting_seeds_soon(cluster, tmp_path):
    """Three seeds on two one-CPU nodes: two run, one waits for resources; SIGTERM ends all soon after the
    escalation (check_stopped)."""
    root = checkout(tmp_path / "root", LONG)
    trial = Trial(
        "uv --no-sync",
        user_env(cluster.home, root),
        "--seeds",
        "3",
        "--budget",
        "60",
        "--ray",
        cluster.address,
    )
    t0 = time.time()
    trial.wait_for(lambda: seeds_started_since(t0, cluster) >= 2, 240, "two seeds training")
    time.sleep(2)
    trial.proc.send_signal(signal.SIGTERM)
    took = trial.finish(timeout=60)
    trial.check_stopped(took, 143)
    row = Ledger(root / "results.tsv").rows()[-1]
    assert row.status == "interrupted"


def test_ray_local_under_uv_run_no_sync_records_a_row(tmp_path):
    """`uv run --no-sync run.py --ray local` (typed after `uv sync`): the workers run in this venv, both
    classic seeds run as Ray tasks side by side, each with its log and eval."""
    root = checkout(tmp_path / "root")
    env = user_env(tmp_path, root, **{MARK: uuid.uuid4().hex})
    run = run_py("uv --no-sync", env, "--seeds", "2", "--budget", "20", "--all-seeds", "--ray", "local")
    assert run.returncode == 0, run.out
    s = parse_summary(run.out)
    assert s["status"] == "ok" and s["parallel"] == "2" and "on ray local" in run.out
    assert len(s["seeds"].split(",")) == 2
    assert f"{Path(sys.executable).parent}" in run.out  # the probe: the venv's python, not one Ray built
    rows = Ledger(root / "results.tsv").rows()
    assert len(rows) == 1 and rows[0].parallel == 2
    for k in (0, 1):
        seed_dir = root / s["run_dir"] / f"seed-{k}"
        assert (seed_dir / "eval.jsonl").exists() and (seed_dir / "run.log").exists()
    assert not processes_with_env(MARK, env[MARK])  # no Ray process of the trial is left


def test_sigint_during_a_ray_local_trial_leaves_an_interrupted_row_and_its_rerun_keeps_finished_seeds(
    tmp_path,
):
    """Ctrl-C in the second wave: an interrupted row, no process left; the same command again (program.md:
    run the same commit again) keeps the two seeds of the first wave, which finished as Ray tasks, and
    trains only the third."""
    root = checkout(tmp_path / "root", LONG)
    env = user_env(tmp_path, root, **{MARK: uuid.uuid4().hex})
    args = ("--seeds", "3", "--parallel", "2", "--budget", "8", "--ray", "local")  # waves of 2, then 1
    trial = Trial("uv", env, *args)
    trial.wait_for(lambda: any((root / "runs").glob("*/seed-2/run.log")), 300, "the second wave's seed")
    time.sleep(2)
    trial.proc.send_signal(signal.SIGINT)
    took = trial.finish(timeout=60)
    trial.check_stopped(took, 130)
    # in waves: the third seed starts once both of the first have finished (a plan of one wave of 3, Ray's
    # own without --parallel, starts it when either has). Two CI runs kept none: their seeds were flagged
    # contended beside the suite's other worker (conftest now turns the CPU pressure off for children).
    assert "plan: 3 seed(s), 2 at a time (2 wave(s)) on ray local" in trial.out, trial.timeline()
    stopped = Ledger(root / "results.tsv").rows()[-1]
    assert stopped.status == "interrupted"
    assert not processes_with_env(MARK, env[MARK])

    again = run_py("uv --no-sync", env, *args)
    assert again.returncode == 0, again.out
    s = parse_summary(again.out)
    assert s["status"] == "ok" and len(s["seeds"].split(",")) == 3
    seeds = [x.strip() for x in s["seeds"].split(",")]
    assert (
        f"kept: 2 of 3 seeds ({seeds[0]}, {seeds[1]}) finished in {stopped.run_id} before its stop: not "
        "trained again, 1 to run"
    ) in again.out, again.out
    assert s["kept_seeds"] == f"2 of 3, finished in {stopped.run_id} (stopped)"
    for k in (0, 1):  # the first wave's files, linked from the stopped trial's run directory
        here, there = root / s["run_dir"] / f"seed-{k}", root / "runs" / stopped.run_id / f"seed-{k}"
        assert (here / "eval.jsonl").stat().st_ino == (there / "eval.jsonl").stat().st_ino
    third = root / s["run_dir"] / "seed-2"  # trained again: its own log, now evaluated
    assert (third / "run.log").stat().st_ino != (
        root / "runs" / stopped.run_id / "seed-2" / "run.log"
    ).stat().st_ino
    assert (
        json.loads((third / "outcome.json").read_text())["status"] == "ok" and (third / "eval.jsonl").exists()
    )
    [row] = [r for r in Ledger(root / "results.tsv").rows() if r.run_id != stopped.run_id]
    assert row.status == "ok" and row.extras is not None  # the ledger's extras read back as text
    assert (row.extras["kept_seeds"], row.extras["kept_from"]) == ("2", stopped.run_id)
    assert not processes_with_env(MARK, env[MARK])


def test_a_worker_that_cannot_start_is_a_crash_seed_with_its_error(tmp_path):
    """Ray's uv integration switched back on under `uv run --no-sync`: each worker runs `uv run --no-sync` in
    a copy of the directory without a venv and dies on `import ray`. Bounded by --ray-start-timeout."""
    root = checkout(tmp_path / "root")
    env = user_env(tmp_path, root, RAY_ENABLE_UV_RUN_RUNTIME_ENV="1", **{MARK: uuid.uuid4().hex})
    run = run_py(
        "uv --no-sync", env, "--seeds", "2", "--ray", "local", "--ray-start-timeout", "15", timeout=300
    )
    assert run.returncode == 1, run.out
    s = parse_summary(run.out)
    assert s["status"] == "crash"
    assert "no Ray worker started on node" in run.out and "No module named 'ray'" in run.out
    assert len(Ledger(root / "results.tsv").rows()) == 1
    assert not processes_with_env(MARK, env[MARK])


def test_the_token_is_looked_up_where_rays_tools_look(monkeypatch, tmp_path):
    from autorl.engine.ray_pool import token_source

    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(var, raising=False)
    assert token_source() is None
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("x")
    assert token_source() == str(tmp_path / ".ray" / "auth_token")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "missing"))
    assert token_source() == str(tmp_path / ".ray" / "auth_token")  # a path to nothing is no token
    (tmp_path / "tok").write_text("y")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "tok"))
    assert token_source() == str(tmp_path / "tok")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "z")
    assert token_source() == "RAY_AUTH_TOKEN"


def test_kill_marked_also_kills_what_a_killed_process_started_meanwhile(tmp_path):
    # A process that starts others while it is killed (a raylet its workers): one look and a kill miss some
    marker = uuid.uuid4().hex
    forker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, time\n"
            "for _ in range(3000):\n    subprocess.Popen(['sleep', '120']); time.sleep(0.002)\n"
            "time.sleep(120)",
        ],
        env={**os.environ, MARK: marker},
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while len(processes_with_env(MARK, marker)) < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        killed = kill_marked(MARK, marker)
        assert forker.pid in killed and len(killed) > 20
        assert not processes_with_env(MARK, marker)
    finally:
        kill_processes(processes_with_env(MARK, marker))
        forker.wait(timeout=30)


def test_a_sigterm_whose_exit_python_ignored_in_ray_init_still_stops_the_trial():
    # Ray's SIGTERM handler raises SystemExit wherever the main thread is; in an at-fork callback Python
    # prints "Exception ignored" and goes on (CI: the trial then ran to the end): the stop request holds it,
    # and the signal comes again until its exception gets through
    from autorl.engine.process import Stop
    from autorl.engine.ray_pool import _init

    stop = Stop()

    class RayDouble:  # a test double of what _init calls in the ray module
        worked_s = 0.0

        class _private:
            class utils:
                @staticmethod
                def set_sigterm_handler(handler):
                    signal.signal(signal.SIGTERM, handler)

        @classmethod
        def init(cls, **kwargs):
            cls._private.utils.set_sigterm_handler(lambda signum, frame: sys.exit(signum))  # as ray.init does
            with contextlib.suppress(SystemExit):  # the signal comes; its exception is lost
                signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
            started = time.monotonic()
            try:
                while time.monotonic() - started < 20:  # the rest of Ray's start
                    time.sleep(0.05)
            finally:
                cls.worked_s = time.monotonic() - started

    setter = RayDouble._private.utils.set_sigterm_handler
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.request(signum))  # the trial's
    try:
        assert _init(RayDouble, "127.0.0.1:1", stop) is False
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert stop and stop.signum == signal.SIGTERM and not stop.hard.is_set()
    assert RayDouble.worked_s < 5  # the signal came again (AGAIN_S) rather than waiting for the start to end
    assert RayDouble._private.utils.set_sigterm_handler is setter  # Ray's own is put back


def test_sigterm_while_ray_starts_records_nothing_and_leaves_no_process(tmp_path):
    """No seed had started: no row (as a signal during the base eval), and no Ray process left."""
    root = checkout(tmp_path / "root")
    env = user_env(tmp_path, root, **{MARK: uuid.uuid4().hex})
    trial = Trial("python", env, "--seeds", "2", "--ray", "local")
    trial.wait_for(lambda: "[ray] starting Ray on this machine" in trial.out, 120, "Ray starting")
    time.sleep(1)
    trial.proc.send_signal(signal.SIGTERM)
    took = trial.finish(timeout=60)
    trial.check_stopped(took, 143)
    assert "stopped before any seed started" in trial.out
    assert not (root / "results.tsv").exists() or not Ledger(root / "results.tsv").rows()
    assert not processes_with_env(MARK, env[MARK])


def test_a_ray_seed_task_runs_its_job_s_own_config_and_split_where_the_job_lies(tmp_path, monkeypatch):
    """`autorl confirm --ray` and `autorl fidelity --ray` pool several configs (and the test split): the task
    a worker runs takes the job's config and split, not the pool's, and puts the seed at the job's place
    under the worker's runs/ (confirm and fidelity: runs/<id>/<config>/seed-<k>). Called in-process here:
    it is the function Ray ships to the worker."""
    from autorl.classic.config import load_classic_config
    from autorl.classic.track import TRACK
    from autorl.engine.backend import Slot
    from autorl.engine.pool import SeedJob
    from autorl.engine.process import BudgetSpec
    from autorl.engine.ray_pool import runs_relative, seed_task
    from autorl.io import paths
    from autorl.io.harness import harness_hash

    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    pool_cfg = load_classic_config(REPO / "classic.toml")
    job_cfg = TRACK.lengthen(pool_cfg, 2)
    seed_dir = paths.runs_dir() / "fidelity-x" / "run-a" / "seed-0"
    assert runs_relative(seed_dir) == "fidelity-x/run-a/seed-0"
    job = SeedJob(0, 7, seed_dir, job_cfg, "test")
    spec = BudgetSpec(budget_s=0.5)
    harness = harness_hash(paths.repo_root())
    result, files, _ = seed_task(
        harness,
        TRACK.make_backend("classic"),
        pool_cfg,
        job,
        "fidelity-x/run-a/seed-0",
        spec,
        Slot(threads=1),
    )
    assert result.status == "ok", result.error
    assert result.dir == seed_dir and "resolved.json" in files
    assert json.loads(files["resolved.json"])["harness"]["score_env_steps"] == 100_000  # the job's config
    assert result.eval_rows and not any(str(r["example_id"]).startswith("steps-") for r in result.eval_rows)


def test_this_module_runs_as_one_xdist_group(request):
    """Under `--dist loadgroup` (the suite's default) pytest-xdist sends the "ray" group to one worker only
    when the test's id carries the group's name: pytest 9.2 keeps ids where pytest-xdist 3.8 does not write
    it (pyproject.toml pins pytest below 9.2), and the Ray tests then ran beside each other and beside the
    docs' classic trials."""
    if getattr(request.config.option, "loadgroup", False):
        assert request.node.nodeid.endswith("@ray"), request.node.nodeid
