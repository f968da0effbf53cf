"""Seeds across machines: each seed is a Ray task running `autorl.engine.seed.run_seed` on a worker.

`run.py --ray HOST:PORT` connects to a running Ray cluster (`ray start --head` on one machine, `ray start
--address HEAD:PORT` on the others, each from its own prepared checkout and venv); `--ray local` starts a Ray
instance on this machine. A seed runs in the checkout and interpreter of the node that runs it: the node's
`ray start` process is its venv's Python, and Ray's `uv run` runtime environment (which would rebuild a venv
per worker from a copy of the driver's directory) is turned off. Each task asks for its seed's resources
(CPUs, GPUs: from the backend's slot); before any seed, a zero-CPU probe on every node checks that a worker
starts there and has the trial's harness. A seed sends back its result and its small run files (logs,
metrics, eval rows); the weights stay on the node unless the run directory is on shared storage.

Nothing waits forever: the connection (`TCP_PROBE_S`, `GCS_ANSWER_S`), a node's first worker
(`--ray-start-timeout`) and a stop request (`STOP_ESCALATE_S`) are bounded; a seed whose node leaves the
cluster is a `crash` seed that names the node. See docs/ray.md.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl.engine import warm
from autorl.engine.backend import Backend, Slot, TrialConfig
from autorl.engine.pool import PoolRun, Report, SeedJob, waves
from autorl.engine.process import BudgetSpec, Stop, kill_marked
from autorl.engine.seed import Judge, SeedResult, run_seed
from autorl.engine.slots import Plan
from autorl.io import atomic, paths
from autorl.io.tomlcheck import ConfigError

SMALL_FILE_BYTES = 64 * 2**20  # run files larger than this (none so far) stay on the worker
TCP_PROBE_S = 3.0  # is anything listening at HOST:PORT
GCS_ANSWER_S = 5.0  # a Ray head answers in well under a second; anything else listening there is not Ray
STOP_ESCALATE_S = 5.0  # after a stop request, running tasks get this long to save, then are killed
NODE_DEATH_S = 30.0  # Ray's health check declares a silent node dead after ~15 s (3 s period x 5 misses)
AGAIN_S = 0.3  # a SIGTERM whose exception Python ignored during ray.init is sent again after this long
ERROR_LINES = 20  # a node's last stderr lines kept, to explain a worker that did not start
LOCAL_MARKER = ("AUTORL_RAY_LOCAL", str(os.getpid()))  # in the environment of every process `local` starts
AUTH_DOC = "https://docs.ray.io/en/latest/ray-security/token-auth.html"


class HarnessMismatch(RuntimeError):
    """The worker's checkout is not the commit the trial runs."""


def _say(msg: str) -> None:
    print(f"[ray] {msg}", flush=True)


def _ray() -> Any:
    """Import Ray with its `uv run` integration off (read at import; a user may set it on): workers use the
    node's own venv, not one rebuilt per worker from a copy of the driver's directory (docs/ray.md)."""
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    import ray

    return ray


def resources(slot: Slot) -> dict[str, float]:
    """What a seed asks Ray for: the cores of its slot (at least one) and its share of GPUs."""
    cpus = max(len(slot.cpus), slot.threads or 1)
    gpus = len(slot.gpus) * (slot.gpu_share if slot.gpu_share is not None else 1.0)
    return {"num_cpus": float(cpus), "num_gpus": float(gpus)}


def small_files(seed_dir: Path) -> dict[str, bytes]:
    """The seed directory's own files (not the weights directory): what comes back to the driver."""
    if not seed_dir.is_dir():
        return {}
    return {
        p.name: p.read_bytes()
        for p in sorted(seed_dir.iterdir())
        if p.is_file() and p.stat().st_size <= SMALL_FILE_BYTES
    }


# --- on the workers ----------------------------------------------------------------------------------------


def node_probe() -> dict[str, str]:
    """Runs on each node before the seeds (no CPU asked): which checkout and interpreter a seed gets there."""
    import sys

    from autorl.io.harness import harness_hash

    root = paths.repo_root()
    return {
        "host": socket.gethostname(),
        "python": sys.executable,
        "root": str(root),
        "harness": harness_hash(root),
    }


def seed_task(
    expected_harness: str,
    backend: Backend,
    cfg: TrialConfig,
    job: SeedJob,
    rel_dir: str,
    spec: BudgetSpec,
    slot: Slot,
    judge: Judge | None = None,
) -> tuple[SeedResult, dict[str, bytes], str]:
    """Runs on a Ray worker, in the worker's checkout (its repo root, or AUTORL_ROOT): the seed in
    runs/<rel_dir> there, with the job's own config and split where it has them (confirm, fidelity)."""
    from autorl.io.harness import harness_hash

    root = paths.repo_root()
    found = harness_hash(root)
    if found != expected_harness:
        raise HarnessMismatch(
            f"worker {socket.gethostname()}: the autorl checkout at {root} has harness {found}, the trial "
            f"runs {expected_harness}: check out the same commit on every node"
        )
    seed_dir = paths.runs_dir() / rel_dir
    # Its training and eval children fork from one starter (torch imported once a seed, not once a child),
    # the task's own, which ends with it: nothing is kept on the node (the trial's stop never reaches here).
    with warm.starters(private=True):
        result = run_seed(
            backend, job.config(cfg), job.seed, job.index, seed_dir, spec, slot, split=job.split, judge=judge
        )
    return result, small_files(seed_dir), socket.gethostname()


# --- the cluster -------------------------------------------------------------------------------------------


@dataclass
class Node:
    node_id: str
    ip: str
    cpus: float
    gpus: float
    host: str = ""  # from the probe; "" when its worker did not start
    python: str = ""
    root: str = ""
    error: str = ""  # why no worker started there

    def name(self) -> str:
        return f"{self.host or '?'} ({self.ip}, node {self.node_id[:8]})"


@dataclass
class Cluster:
    """A connected Ray driver: the nodes as probed, and what their workers printed on stderr."""

    address: str
    started_here: bool
    harness: str = ""  # the harness hash every node was probed to run (a seed's task checks it again)
    nodes: list[Node] = field(default_factory=list)
    stderr: dict[str, collections.deque[str]] = field(default_factory=dict)  # by node IP

    def close(self) -> None:
        """Disconnect; `local`: end every Ray process this trial started (they carry its marker)."""
        ray = _ray()
        if ray.is_initialized():
            ray.shutdown()
        if self.started_here:
            kill_marked(*LOCAL_MARKER)

    def broken(self) -> list[Node]:
        return [n for n in self.nodes if n.error]

    def lost(self, stop: Stop, seconds: float = NODE_DEATH_S) -> list[Node]:
        """The probed nodes that are no longer alive, waiting up to `seconds` for Ray to notice one (a
        worker's death reaches the driver before the GCS declares its node dead)."""
        deadline = time.monotonic() + seconds
        while True:
            alive = {n["NodeID"] for n in _ray().nodes() if n.get("Alive")}
            lost = [n for n in self.nodes if n.node_id not in alive]
            if lost or stop or time.monotonic() > deadline:
                return lost
            time.sleep(0.5)

    def keep_stderr(self, data: dict[str, Any]) -> None:
        if data.get("is_err"):
            self.stderr.setdefault(data.get("ip", ""), collections.deque(maxlen=ERROR_LINES)).extend(
                data.get("lines", [])
            )


def token_source() -> str | None:
    """Where Ray's own tools find the cluster's token, in their order; None: none on this machine."""
    if os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return "RAY_AUTH_TOKEN"
    if (path := os.environ.get("RAY_AUTH_TOKEN_PATH", "").strip()) and Path(path).expanduser().is_file():
        return path
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if default.is_file() else None


def _bounded(fn: Callable[[], Any], seconds: float, stop: Stop) -> tuple[bool, Any, BaseException | None]:
    """Run fn in a daemon thread: (finished, value, exception); gives up at `seconds` or a stop request."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 (handed to the caller)
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="ray-connect")
    thread.start()
    deadline = time.monotonic() + seconds
    while thread.is_alive() and time.monotonic() < deadline and not stop:
        thread.join(0.1)
    return not thread.is_alive(), box.get("value"), box.get("error")


def _check_reachable(addr: str) -> None:
    host, _, port = addr.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=TCP_PROBE_S).close()
    except OSError as exc:
        raise ConfigError(
            f"--ray {addr}: nothing answers there ({exc}); start the head with "
            f"`ray start --head --port {port}` or pass its address (docs/ray.md)"
        ) from None


def _auth_fix(addr: str, source: str | None) -> str:
    if source is None:
        return (
            f"--ray {addr}: the cluster requires its authentication token and this machine has none: copy "
            f"~/.ray/auth_token from the head node to ~/.ray/auth_token here (or set RAY_AUTH_TOKEN_PATH) "
            f"({AUTH_DOC})"
        )
    return (
        f"--ray {addr}: the cluster refused the token from {source}: it is not this cluster's; copy the head "
        f"node's ~/.ray/auth_token here ({AUTH_DOC})"
    )


def _check_gcs(ray: Any, addr: str, stop: Stop, seconds: float) -> None:
    """Ask the cluster's GCS directly: fails fast on a wrong token, where ray.init retries for 20 s."""
    from ray._raylet import GcsClient  # type: ignore[attr-defined]  # compiled: no stub names it
    from ray.exceptions import AuthenticationError

    def ask() -> None:
        GcsClient(address=addr, cluster_id=None).internal_kv_get(b"autorl", None, timeout=seconds)

    done, _, error = _bounded(ask, seconds, stop)
    if stop:
        return
    if isinstance(error, AuthenticationError):
        raise ConfigError(_auth_fix(addr, token_source()))
    if not done or error is not None:
        why = f"{type(error).__name__}: {error}" if error else f"no answer within {seconds:.0f} s"
        raise ConfigError(f"--ray {addr}: this is not a Ray cluster's address (the head's --port): {why}")


def _init(ray: Any, addr: str, stop: Stop) -> bool:
    """ray.init in the main thread (Ray ties the processes it starts to the thread that starts them).

    A signal during it ends it: SIGINT through the trial's handler and a KeyboardInterrupt here, SIGTERM
    through the trial's handler and then the one Ray sets for the call (sys.exit). Returns False after such
    a stop request, with what Ray started ended.
    """
    import signal

    kwargs: dict[str, Any] = {"address": addr, "log_to_driver": True}
    if addr == "local":  # a new instance even if this machine already runs a cluster
        kwargs |= {"num_cpus": os.cpu_count(), "include_dashboard": False}
    if threading.current_thread() is not threading.main_thread():
        ray.init(**kwargs)
        return True
    trial_handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def interrupt(signum: int, frame: Any) -> None:
        if callable(handler := trial_handlers[signal.SIGINT]):
            handler(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        with _trial_first(ray._private.utils, trial_handlers[signal.SIGTERM]):
            ray.init(**kwargs)
    except (KeyboardInterrupt, SystemExit):
        if not stop:  # not a signal's
            raise
    except Exception as exc:
        if not stop:  # else: what Ray's SIGTERM handler killed failed the start
            raise ConfigError(f"--ray {addr}: {type(exc).__name__}: {exc}") from None
    finally:
        for sig, handler in trial_handlers.items():
            signal.signal(sig, handler)
    if stop:
        Cluster(addr, started_here=addr == "local").close()
        return False
    return True


@contextlib.contextmanager
def _trial_first(ray_utils: Any, trial_handler: Any) -> Iterator[None]:
    """While ray.init runs, each SIGTERM handler Ray sets calls the trial's first (the stop request), then
    Ray's, which raises SystemExit wherever the main thread is. Python ignores an exception raised in an
    at-fork callback (logging's runs around every process Ray starts), so until one gets through (the
    `with` ends) the signal is sent again every AGAIN_S."""
    set_handler = ray_utils.set_sigterm_handler
    repeat = False  # a signal came before: this one is its repeat (the trial's handler has it)
    again: list[threading.Timer] = []

    def set_after_trials(ray_handler: Callable[[int, Any], None]) -> None:
        def both(signum: int, frame: Any) -> None:
            nonlocal repeat
            if not repeat and callable(trial_handler):
                trial_handler(signum, frame)
            repeat = True
            timer = threading.Timer(AGAIN_S, os.kill, (os.getpid(), signum))
            timer.daemon = True
            again.append(timer)
            timer.start()
            ray_handler(signum, frame)
            timer.cancel()  # it returned (a handler that already ran): nothing to repeat

        set_handler(both)

    ray_utils.set_sigterm_handler = set_after_trials
    try:
        yield
    finally:
        ray_utils.set_sigterm_handler = set_handler
        for timer in again:
            timer.cancel()


def connect(
    addr: str, ask: dict[str, float], harness: str, stop: Stop, start_timeout: float
) -> Cluster | None:
    """Connect (or start `local`), check that a seed fits on some node, and probe every node's worker.

    Bad input (nothing there, not Ray, a wrong token, a seed no node can hold, another harness on a node):
    ConfigError, nothing started is left running. A stop request: None. A node whose worker does not start
    within `start_timeout`: the Cluster says so (its seeds become crash seeds).
    """
    _say("starting Ray on this machine" if addr == "local" else f"connecting to the Ray cluster at {addr}")
    # Ray reads these at import
    if addr == "local":
        os.environ[LOCAL_MARKER[0]] = LOCAL_MARKER[1]
        os.environ.setdefault("RAY_AUTH_MODE", "token")  # Ray's default for a new instance, said explicitly
    else:
        _check_reachable(addr)
        if "RAY_AUTH_MODE" not in os.environ and token_source():
            os.environ["RAY_AUTH_MODE"] = "token"  # what `ray.init()` does for a local address
    ray = _ray()
    if addr != "local":
        _check_gcs(ray, addr, stop, GCS_ANSWER_S)
    if stop:
        return None
    if not _init(ray, addr, stop):
        return None
    cluster = Cluster(addr, started_here=addr == "local", harness=harness)
    atexit.register(cluster.close)  # also when a stop request ends the trial before its seeds
    try:
        from ray._private.worker import global_worker_stdstream_dispatcher

        global_worker_stdstream_dispatcher.add_handler("autorl_stderr", cluster.keep_stderr)
        cluster.nodes = [
            Node(
                n["NodeID"],
                n["NodeManagerAddress"],
                n["Resources"].get("CPU", 0.0),
                n["Resources"].get("GPU", 0.0),
            )
            for n in ray.nodes()
            if n.get("Alive")
        ]
        _check_fits(cluster, ask)
        _say(f"{len(cluster.nodes)} node(s); starting a worker on each (at most {start_timeout:g} s)")
        _probe(ray, cluster, harness, stop, start_timeout)
        for n in cluster.nodes:
            _say(f"node {n.name()}: " + (n.error.splitlines()[0] if n.error else f"{n.python} in {n.root}"))
    except BaseException:
        cluster.close()
        raise
    if stop:
        cluster.close()
        return None
    return cluster


def cluster_for(
    ray: str | None, start_timeout: float, plan: Plan, harness: str, stop: Stop
) -> Cluster | None:
    """The trial's cluster at the address `ray`: None without one (or after a stop request while
    connecting)."""
    if ray is None:
        return None
    return connect(ray, resources(plan.slots[0]), harness, stop, start_timeout)


def _check_fits(cluster: Cluster, ask: dict[str, float]) -> None:
    if any(n.cpus >= ask["num_cpus"] and n.gpus >= ask["num_gpus"] for n in cluster.nodes):
        return
    have = ", ".join(f"{n.ip}: {n.cpus:g} CPU, {n.gpus:g} GPU" for n in cluster.nodes) or "no node"
    raise ConfigError(
        f"--ray {cluster.address}: each seed asks for {ask['num_cpus']:g} CPU and {ask['num_gpus']:g} GPU "
        f"on one node, and no node of the cluster has that ({have}); add such a node or change the config's "
        "slot (threads, GPUs)"
    )


def _probe(ray: Any, cluster: Cluster, harness: str, stop: Stop, start_timeout: float) -> None:
    """A zero-CPU task pinned to each node: starts its worker (bounded) and reads its checkout."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(node_probe)
    refs = {
        probe.options(
            num_cpus=0,
            max_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(n.node_id, soft=False),
        ).remote(): n
        for n in cluster.nodes
    }
    deadline = time.monotonic() + start_timeout
    pending = list(refs)
    while pending and time.monotonic() < deadline and not stop:
        ready, pending = ray.wait(pending, num_returns=len(pending), timeout=0.2)
        for ref in ready:
            node = refs[ref]
            try:
                info = ray.get(ref)
            except ray.exceptions.RayError as exc:
                node.error = f"the probe failed there: {exc}"
                continue
            node.host, node.python, node.root = info["host"], info["python"], info["root"]
            if info["harness"] != harness:
                raise ConfigError(
                    f"--ray {cluster.address}: node {node.name()} runs the autorl checkout at {node.root} "
                    f"with harness {info['harness']}, this trial {harness}: check out the same commit on "
                    "every node"
                )
    for ref in pending:
        ray.cancel(ref, force=True)
        node = refs[ref]
        if not stop:
            said = "\n".join(cluster.stderr.get(node.ip, [])) or "(nothing on its stderr reached the driver)"
            node.error = (
                f"no Ray worker started on node {node.ip} within {start_timeout:g} s (--ray-start-timeout); "
                f"its worker said:\n{said}"
            )


# --- the seeds ---------------------------------------------------------------------------------------------


def run_ray(cluster: Cluster, run: PoolRun) -> tuple[list[SeedResult], str]:
    """The seeds as Ray tasks, in the plan's waves; the cluster is closed at the end."""
    try:
        if broken := cluster.broken():
            return _unstarted(run.jobs, broken, run.report), ""
        ray = _ray()
        slot = run.plan.slots[0]
        task_slot = Slot(threads=slot.threads)  # Ray assigns cores and GPUs (CUDA_VISIBLE_DEVICES) itself
        remote = ray.remote(seed_task).options(**resources(slot), max_retries=0)
        results: list[SeedResult] = []
        planned = waves(run.jobs, run.plan.parallel, run.done)
        for w, wave in enumerate(planned):
            if run.stop:
                break
            refs = {
                remote.remote(
                    cluster.harness,
                    run.backend,
                    run.cfg,
                    job,
                    runs_relative(job.dir),
                    run.spec,
                    task_slot,
                    Judge(run.judge.rule),  # the trial's abort flag stays here: each seed is judged alone
                ): job
                for job in wave
            }
            results += _gather(cluster, refs, run.stop, run.report, run.spec)
            if w + 1 < len(planned) and not run.stop and (why := run.after_wave(results)):
                return results, why
        return results, ""
    finally:
        cluster.close()


def runs_relative(seed_dir: Path) -> str:
    """Where a seed's directory lies under this machine's runs/ (runs/<run_id>/seed-<k>; confirm and fidelity:
    one level deeper): a worker puts it at the same place under its own."""
    try:
        return str(seed_dir.relative_to(paths.runs_dir()))
    except ValueError:  # outside runs/ (a test's pool): its run and seed directory names
        return f"{seed_dir.parent.name}/{seed_dir.name}"


def _unstarted(jobs: list[SeedJob], broken: list[Node], report: Report) -> list[SeedResult]:
    """No seed runs on a cluster with a node whose workers cannot start: each is a crash seed saying why."""
    why = "\n".join(n.error for n in broken)
    out = []
    for job in jobs:
        result = SeedResult(job.index, job.seed, job.dir, status="crash", error=f"seed {job.seed}: {why}")
        out.append(result)
        report(result)
    return out


def _gather(
    cluster: Cluster, refs: dict[Any, SeedJob], stop: Stop, report: Report, spec: BudgetSpec
) -> list[SeedResult]:
    ray = _ray()
    pending = list(refs)
    out: list[SeedResult] = []
    stopped_at: float | None = None
    forced = False
    while pending:
        if stop and stopped_at is None:
            stopped_at = time.monotonic()
            for ref in pending:  # KeyboardInterrupt in the task: its child gets SIGTERM and saves
                ray.cancel(ref, force=stop.hard.is_set())
        if (
            stopped_at is not None
            and not forced
            and (stop.hard.is_set() or time.monotonic() - stopped_at > min(STOP_ESCALATE_S, spec.grace_s))
        ):
            for ref in pending:
                ray.cancel(ref, force=True)
            forced = True
        ready, pending = ray.wait(pending, num_returns=1, timeout=0.5)
        for ref in ready:
            result = _collect(cluster, ray, ref, refs[ref], stop)
            out.append(result)
            report(result)
    return out


def _collect(cluster: Cluster, ray: Any, ref: Any, job: SeedJob, stop: Stop) -> SeedResult:
    """One finished task as a seed result: its files landed here; a Ray failure as a crash that says where."""
    from ray.exceptions import RayError, RayTaskError

    try:
        result, files, host = ray.get(ref)
    except RayError as exc:
        files, host = {}, ""
        if stop:
            result = SeedResult(job.index, job.seed, job.dir, status="interrupted")
        elif isinstance(exc, RayTaskError):
            cause = exc.cause if isinstance(exc.cause, Exception) else exc
            result = SeedResult(job.index, job.seed, job.dir, status="crash", error=f"Ray task: {cause}")
        else:  # the worker or its node died
            lost = cluster.lost(stop)
            where = (
                f"node {', '.join(n.name() for n in lost)} left the cluster; "
                if lost
                else "its node is alive; "
            )
            error = f"seed {job.seed}: {where}Ray: {type(exc).__name__}: {exc}"
            result = SeedResult(job.index, job.seed, job.dir, status="crash", error=error)
    result.dir, result.host = job.dir, host
    _land(job.dir, files)
    if host and host != socket.gethostname():
        result.log.insert(0, f"seed {job.seed} ran on {host}")
    return result


def _land(seed_dir: Path, files: dict[str, bytes]) -> None:
    """Write the files a worker sent back, unless the worker wrote into this same directory."""
    seed_dir.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        target = seed_dir / name
        if not target.exists():
            atomic.write_bytes(target, data)
