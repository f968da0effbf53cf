"""Warm starts (autorl/engine/warm.py): a child forked from a starter is the `python -m` child it replaces.

tests/test_process.py runs every budget, stop, hang and crash test both cold and warm; here are the
properties only a fork can get wrong: where the imports happened, the child's session, cores, environment,
input and random state, a starter that fails or dies, and nothing left running afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from autorl.engine import warm
from autorl.engine.backend import Launch
from autorl.engine.process import BudgetSpec, run_budgeted

# The child reports what a test checks, as one JSON line; `probe_dep` is the module a starter preloads.
PROBE = """
import json, os, random, sys
import probe_dep
what = sys.argv[1] if len(sys.argv) > 1 else "report"
if what == "crash":
    raise RuntimeError("probe crashed on purpose")
if what == "exit":
    sys.exit(int(sys.argv[2]))
if what == "at-exit":  # what the interpreter's exit would do: join threads, run atexit, keep the code
    import atexit, threading, time
    from concurrent.futures import ThreadPoolExecutor
    out = sys.argv[2]
    atexit.register(lambda: open(out, "a").write("atexit\\n"))
    threading.Thread(target=lambda: (time.sleep(0.5), open(out, "a").write("thread\\n"))).start()
    probe_dep.POOL = ThreadPoolExecutor(1)  # kept, its worker idle (torch's compile pool)
    probe_dep.POOL.submit(int).result()
    sys.exit("a message, exit 1")
if what == "sleep":
    print("@@autorl " + json.dumps({"event": "ready"}), flush=True)
    import time
    time.sleep(600)
print("to stderr", file=sys.stderr, flush=True)
print(json.dumps({
    "pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "pgid": os.getpgid(0),
    "dep_imported_in": probe_dep.IMPORTED_IN, "prepared_in": probe_dep.PREPARED_IN,
    "argv": sys.argv[1:], "name": __name__,
    "env": os.environ.get("PROBE_ENV"), "cwd": os.getcwd(), "cpus": sorted(os.sched_getaffinity(0)),
    "stdin": sys.stdin.read(), "random": random.random(),
}), flush=True)
"""

# What a starter preloads; `prepare` and `broken` are prewarms (`probe_dep:prepare` among the warm entries).
PROBE_DEP = """
import os
IMPORTED_IN = os.getpid()
PREPARED_IN = None


def prepare():
    global PREPARED_IN
    PREPARED_IN = os.getpid()


def broken():
    raise RuntimeError("a prewarm that fails")
"""


def spec(**kw) -> BudgetSpec:
    return BudgetSpec(**{**dict(budget_s=5.0, startup_cap_s=60.0, hang_s=60.0, grace_s=2.0), **kw})


@pytest.fixture
def probe(tmp_path: Path):
    (tmp_path / "probe.py").write_text(PROBE)
    (tmp_path / "probe_dep.py").write_text(PROBE_DEP)

    def make(*args: str, deps: tuple[str, ...] = ("probe_dep",)) -> Launch:
        return Launch(
            argv=[sys.executable, "-m", "probe", *args],
            cwd=tmp_path,
            env={"PROBE_ENV": "from-the-launch"},
            cpus=(0,),
            warm=deps,
        )

    return make


def report(log: Path) -> dict:
    lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
    assert len(lines) == 1, log.read_text()
    return json.loads(lines[0])


def test_a_warm_child_is_the_python_m_child_without_its_imports(probe, tmp_path):
    with warm.starters() as pool:
        result = run_budgeted(probe("report", "x y"), tmp_path / "warm.log", spec())
        assert pool is not None and pool.forked == 1
    assert result.status == "ok" and result.returncode == 0
    hot = report(tmp_path / "warm.log")
    cold_result = run_budgeted(probe("report", "x y"), tmp_path / "cold.log", spec())
    cold = report(tmp_path / "cold.log")
    assert cold_result.status == "ok"
    # The imports happened once, in the starter (the child's parent); cold, in the child itself.
    assert hot["dep_imported_in"] == hot["ppid"] != hot["pid"]
    assert cold["dep_imported_in"] == cold["pid"]
    for r in (hot, cold):
        assert r["argv"] == ["report", "x y"] and r["name"] == "__main__"
        assert r["sid"] == r["pgid"] == r["pid"]  # its own session and process group
        assert r["env"] == "from-the-launch" and r["cwd"] == str(tmp_path)
        assert r["cpus"] == [0] and r["stdin"] == ""
    assert "to stderr" in (tmp_path / "warm.log").read_text()  # stderr merged into the log
    assert "RuntimeWarning" not in (tmp_path / "warm.log").read_text()  # runpy found no preloaded probe


def test_a_prewarm_entry_runs_once_in_the_starter_before_it_serves(probe, tmp_path, capsys):
    """`module:function` in a launch's warm entries: called once in the starter after the imports, before its
    first child (which finds what it left); one that raises does not keep the starter from serving. The
    runner says that a new starter runs them (its first child waits for them)."""
    with warm.starters() as pool:
        for i in range(2):
            run_budgeted(probe(deps=("probe_dep:broken", "probe_dep:prepare")), tmp_path / f"{i}.log", spec())
        assert pool is not None and pool.forked == 2
    first, second = (report(tmp_path / f"{i}.log") for i in range(2))
    assert first["prepared_in"] == first["ppid"] == second["prepared_in"] == second["ppid"]
    out = capsys.readouterr().out
    assert out.count("a new warm starter runs probe_dep:broken, probe_dep:prepare once for every child,") == 1
    assert "waiting for the warm starter" not in out  # a wait under WAITING_NOTE_S says nothing more
    plain = run_budgeted(probe(), tmp_path / "plain.log", spec())  # a cold child: nothing prepared
    assert plain.status == "ok" and report(tmp_path / "plain.log")["prepared_in"] is None


def test_warm_children_do_not_share_the_starters_random_state(probe, tmp_path):
    with warm.starters():
        for name in ("a", "b"):
            run_budgeted(probe(), tmp_path / f"{name}.log", spec())
    assert report(tmp_path / "a.log")["random"] != report(tmp_path / "b.log")["random"]


@pytest.mark.parametrize(
    ("args", "code"), [(("crash",), 1), (("exit", "3"), 3)], ids=["exception", "exit-code"]
)
def test_a_warm_crash_is_attributed_like_a_cold_one(probe, tmp_path, args, code):
    with warm.starters() as pool:
        result = run_budgeted(probe(*args), tmp_path / "run.log", spec())
        assert pool is not None and pool.forked == 1
    assert (result.status, result.returncode) == ("crash", code)
    if args[0] == "crash":
        assert "RuntimeError: probe crashed on purpose" in "\n".join(result.log_tail)


def test_a_warm_child_ends_like_an_interpreter(probe, tmp_path):
    """Without the interpreter's teardown, the exit still waits for threads, runs atexit, keeps the code, and
    runs threading's exit hooks: an idle ThreadPoolExecutor's worker ends (joined without them, it held the
    warm child past its budget)."""
    for mode in ("warm", "cold"):
        out = tmp_path / f"{mode}.txt"
        with warm.starters() if mode == "warm" else contextlib.nullcontext():
            result = run_budgeted(probe("at-exit", str(out)), tmp_path / f"{mode}.log", spec())
        assert (result.status, result.returncode) == ("crash", 1)
        assert out.read_text() == "thread\natexit\n"
        assert "a message, exit 1" in (tmp_path / f"{mode}.log").read_text()


def test_a_starter_whose_imports_fail_falls_back_to_a_cold_start(probe, tmp_path):
    with warm.starters() as pool:
        result = run_budgeted(probe(deps=("no_such_module_xyz",)), tmp_path / "run.log", spec())
        assert pool is not None and pool.forked == 0
    assert result.status == "ok"
    r = report(tmp_path / "run.log")
    assert r["dep_imported_in"] == r["pid"]  # started cold


def test_a_starter_not_ready_in_half_the_start_up_cap_serves_no_launch_of_the_trial(
    probe, tmp_path, capsys, monkeypatch
):
    """A starter stuck in its prewarm: the first seed says every WAITING_NOTE_S that it waits, waits half its
    start-up cap, then starts cold with the other half; the starter is killed and the trial's later seeds
    start cold at once."""
    monkeypatch.setattr(warm, "WAITING_NOTE_S", 1.0)
    (tmp_path / "stuck_dep.py").write_text("def hang():\n    import time\n    time.sleep(120)\n")
    launch = probe(deps=("probe_dep", "stuck_dep:hang"))
    with warm.starters() as pool:
        assert pool is not None
        began = time.monotonic()
        first = run_budgeted(launch, tmp_path / "first.log", spec(startup_cap_s=8.0))
        waited = time.monotonic() - began
        (starter,) = pool.starters.values()
        assert starter.started is not None and gone(starter.started.pid, within_s=2.0)
        began = time.monotonic()
        second = run_budgeted(launch, tmp_path / "second.log", spec(startup_cap_s=8.0))
        assert time.monotonic() - began < waited - 3.0 and pool.forked == 0
    assert 4.0 <= waited
    for result, log in ((first, "first.log"), (second, "second.log")):
        assert result.status == "ok", (tmp_path / log).read_text()
        r = report(tmp_path / log)
        assert r["dep_imported_in"] == r["pid"]  # cold
    out = capsys.readouterr().out
    assert out.count("the warm starter was not ready within 4 s: its launches start cold") == 1
    assert 2 <= out.count("[trial] waiting for the warm starter's imports and prewarms: ") <= 4


def test_a_dead_starter_takes_its_child_along_and_the_seed_crashes(probe, tmp_path):
    """A starter killed mid-run (OOM killer): its child dies with it, the run ends as a crash, no hang."""
    with warm.starters() as pool:
        assert pool is not None
        killer_done = threading.Event()

        def kill_the_starter() -> None:
            deadline = time.monotonic() + 60
            while not pool.starters and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)  # the child is running (it printed ready and sleeps)
            for starter in pool.starters.values():
                os.kill(starter.pid, signal.SIGKILL)
            killer_done.set()

        threading.Thread(target=kill_the_starter, daemon=True).start()
        started = time.monotonic()
        result = run_budgeted(probe("sleep"), tmp_path / "run.log", spec(budget_s=120))
        assert killer_done.is_set()
    assert time.monotonic() - started < 30
    assert (result.status, result.returncode) == ("crash", -signal.SIGKILL)


def test_leaving_the_context_ends_every_starter(probe, tmp_path):
    with warm.starters() as pool:
        run_budgeted(probe(), tmp_path / "run.log", spec())
        assert pool is not None
        starters = [s.pid for s in pool.starters.values()]
    assert len(starters) == 1
    for pid in starters:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_trial_stopped_while_its_starter_imports_leaves_no_starter(probe, tmp_path):
    # AUTORL_WARM_KEEP=0 (conftest): a starter ends with its trial, even one that never got ready (CI saw a
    # trial stopped early leave one importing)
    (tmp_path / "slow_dep.py").write_text("import time\ntime.sleep(60)\n")
    with warm.starters() as pool:
        assert warm.fork(probe(deps=("slow_dep",)), 60.0, lambda: True) is None  # the trial's stop request
        assert pool is not None
        (starter,) = pool.starters.values()
        assert starter.started is not None and starter.started.poll() is None
        left = time.monotonic()
    assert gone(starter.started.pid, within_s=2.0) and time.monotonic() - left < 4.0


def test_a_launch_after_a_stop_request_starts_nothing(probe, tmp_path):
    # the shared mechanism under every launch (base eval, seed, eval, confirm): no child, no starter
    from autorl.engine.process import Stop

    stop = Stop()
    stop.request(signal.SIGTERM)
    with warm.starters() as pool:
        result = run_budgeted(probe(), tmp_path / "run.log", spec(), stop=stop)
        assert pool is not None and not pool.starters and pool.forked == 0
    assert (result.status, result.returncode, result.steps) == ("interrupted", None, 0)
    assert "not started: the trial was stopped" in (tmp_path / "run.log").read_text()


def test_autorl_warm_0_starts_every_child_cold(probe, tmp_path, monkeypatch):
    monkeypatch.setenv(warm.ENV_SWITCH, "0")
    with warm.starters() as pool:
        assert pool is None
        run_budgeted(probe(), tmp_path / "run.log", spec())
    r = report(tmp_path / "run.log")
    assert r["dep_imported_in"] == r["pid"]


def test_a_launch_without_modules_or_not_python_m_stays_cold(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent("import os; print(os.getppid())"))
    with warm.starters() as pool:
        plain = Launch(argv=[sys.executable, str(script)], cwd=tmp_path, warm=("json",))
        no_modules = Launch(argv=[sys.executable, "-c", "print(1)"], cwd=tmp_path)
        never = lambda: False  # noqa: E731
        assert warm.fork(plain, 5.0, never) is None and warm.fork(no_modules, 5.0, never) is None
        result = run_budgeted(plain, tmp_path / "run.log", spec())
        assert pool is not None and pool.forked == 0 and not pool.starters
    assert result.status == "ok"
    assert int((tmp_path / "run.log").read_text().split()[0]) == os.getpid()


# --- starters kept between trials (AUTORL_WARM_KEEP > 0) ---------------------------------------------------


@pytest.fixture
def kept(monkeypatch):
    """Starters wait 30 s for the next trial; the test's kept starters are ended at its end."""
    monkeypatch.setenv(warm.KEEP_VAR, "30")
    yield
    for proc in list(warm._STARTED):
        proc.kill()
        proc.wait()
        warm._STARTED.remove(proc)


def gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def one_trial(launch: Launch, log: Path) -> tuple[dict, warm._Starter]:
    """A trial's worth of warm starts: the probe's report and the starter that forked it."""
    with warm.starters() as pool:
        assert pool is not None
        assert run_budgeted(launch, log, spec()).status == "ok"
        assert pool.forked == 1
        (starter,) = pool.starters.values()
    return report(log), starter


def test_the_next_trial_forks_from_the_kept_starter_without_waiting(probe, tmp_path, kept):
    first, starter = one_trial(probe(), tmp_path / "1.log")
    assert starter.started is not None  # the first trial started it
    second, again = one_trial(probe(), tmp_path / "2.log")
    assert again.started is None and again.pid == starter.pid  # the second one found it listening
    assert second["dep_imported_in"] == first["dep_imported_in"] == starter.pid  # imported once, by it
    assert second["pid"] != first["pid"] and second["env"] == "from-the-launch"


def test_a_private_pool_forks_from_a_starter_of_its_own_that_ends_with_it(probe, tmp_path, kept):
    """A Ray task's pool (`private`): a kept starter of the same launch is not used, and not ended either; the
    task's own starter serves both of its launches (training, then eval) and ends with the pool, kept or
    not. (Sharing it let one task's end kill another task's eval: Ray kills a worker's child processes.)"""
    _, public = one_trial(probe(), tmp_path / "public.log")  # kept, idle
    with warm.starters(private=True) as pool:
        assert pool is not None
        first = run_budgeted(probe(), tmp_path / "1.log", spec())
        second = run_budgeted(probe(), tmp_path / "2.log", spec())
        assert first.status == second.status == "ok" and pool.forked == 2
        (own,) = pool.starters.values()
    assert own.started is not None and own.pid != public.pid
    assert report(tmp_path / "1.log")["dep_imported_in"] == report(tmp_path / "2.log")["dep_imported_in"]
    assert gone(own.pid, within_s=10)
    assert not gone(public.pid, within_s=3 * warm.SUPERSEDED_EVERY_S)  # another group: not superseded
    _, again = one_trial(probe(), tmp_path / "again.log")
    assert again.pid == public.pid  # still the one the next trial finds


def test_a_kept_starter_gives_a_child_the_runners_environment_of_now(probe, tmp_path, kept, monkeypatch):
    _, starter = one_trial(probe(), tmp_path / "1.log")
    monkeypatch.setenv("SHLVL", "7")  # shell bookkeeping is not part of the key: the same starter serves
    monkeypatch.setenv("COLUMNS", "133")  # nor is the terminal's size (another terminal, or a resized one)
    (tmp_path / "env.py").write_text(
        "import os, sys\nprint(os.environ.get('SHLVL'), os.environ.get('COLUMNS'), os.getppid())\n"
    )
    launch = Launch(
        argv=[sys.executable, "-m", "env"], cwd=tmp_path, env=probe().env, cpus=(0,), warm=("probe_dep",)
    )
    with warm.starters():
        assert run_budgeted(launch, tmp_path / "env.log", spec()).status == "ok"
    assert (tmp_path / "env.log").read_text().split() == ["7", "133", str(starter.pid)]


def test_a_starter_whose_module_changed_on_disk_is_replaced(probe, tmp_path, kept):
    first, old = one_trial(probe(), tmp_path / "1.log")
    dep = tmp_path / "probe_dep.py"
    dep.write_text(dep.read_text() + "CHANGED = True\n")
    os.utime(dep, ns=(time.time_ns(), time.time_ns() + 10**9))
    second, new = one_trial(probe(), tmp_path / "2.log")
    assert new.started is not None and new.pid != old.pid
    assert second["dep_imported_in"] == new.pid  # the edited module, imported again
    assert gone(old.pid, within_s=10)  # the stale one served no one and ended


def test_a_trial_stopped_by_a_signal_ends_its_starters_kept_or_new(probe, tmp_path, kept):
    """The keep-alive is for trials that end: a stopped trial (its Stop set when it leaves the context)
    leaves no starter, whether it started one or found one kept by the trial before."""
    from autorl.engine.process import Stop

    _, found = one_trial(probe(), tmp_path / "1.log")  # a normal trial: its starter is kept
    assert psutil.pid_exists(found.pid)
    stop = Stop()
    with warm.starters(stop) as pool:
        assert pool is not None and run_budgeted(probe(), tmp_path / "2.log", spec()).status == "ok"
        (starter,) = pool.starters.values()
        stop.request(signal.SIGINT)
    assert starter.pid == found.pid and gone(found.pid, within_s=5)
    stop = Stop()
    with warm.starters(stop) as pool:
        assert pool is not None and run_budgeted(probe(), tmp_path / "3.log", spec()).status == "ok"
        (new,) = pool.starters.values()
        stop.request(signal.SIGTERM)
    assert new.started is not None and gone(new.pid, within_s=5)


def test_a_stop_after_the_seeds_ended_ends_the_starter_they_left_waiting(probe, tmp_path, kept):
    """A signal that comes after the starters' context closed normally (while the trial concludes or records
    its row) found the starter already kept for the next trial: `end_kept`, which the trial calls on its way
    out once stopped, asks it to end, and it does (issue 51: a warm starter outlived a trial's SIGTERM)."""
    _, starter = one_trial(probe(), tmp_path / "1.log")  # the context closed without a stop: kept
    assert psutil.pid_exists(starter.pid) and not gone(starter.pid, within_s=1)
    warm.end_kept()
    assert gone(starter.pid, within_s=5)
    warm.end_kept()  # nothing left to end: a no-op


def test_a_classic_trial_signalled_while_it_records_leaves_no_starter(tmp_path, monkeypatch, kept):
    """The real runner on the classic track, its starters kept between trials: SIGTERM arrives while the trial
    records its row (its seeds done, their starter kept): the trial exits 143 with its row recorded, and the
    starter it started is gone."""
    from autorl.commands import trial
    from autorl.engine import trial_run
    from autorl.record.ledger import Ledger

    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    recorded = trial_run.record

    def record_then_a_signal(result, ledger, failure=""):
        os.kill(os.getpid(), signal.SIGTERM)  # the trial's handler takes it: a stop, after the seeds
        recorded(result, ledger, failure)

    monkeypatch.setattr(trial_run, "record", record_then_a_signal)
    before = set(warm._STARTED)
    repo = Path(__file__).resolve().parent.parent
    argv = ["--track", "classic", "--config", str(repo / "classic.toml"), "--budget", "600", "--seeds", "1"]
    assert trial.main(argv) == 143
    assert Ledger(tmp_path / "results.tsv").rows()[-1].status == "ok"
    started = [p for p in warm._STARTED if p not in before]
    assert started and all(gone(p.pid, within_s=10) for p in started)


def test_a_kept_starter_whose_directory_is_gone_ends(probe, tmp_path, kept):
    _, starter = one_trial(probe(), tmp_path / "1.log")
    assert psutil.pid_exists(starter.pid)
    moved = tmp_path.with_name(tmp_path.name + "-moved")
    tmp_path.rename(moved)  # what `rm -r` of a checkout does to the path the starter serves
    try:
        assert gone(starter.pid, within_s=3 * warm.SUPERSEDED_EVERY_S + 2)
    finally:
        moved.rename(tmp_path)


def test_a_kept_starter_ends_after_its_idle_time(probe, tmp_path, kept, monkeypatch):
    monkeypatch.setenv(warm.KEEP_VAR, "1")
    _, starter = one_trial(probe(), tmp_path / "1.log")
    assert psutil.pid_exists(starter.pid)
    assert gone(starter.pid, within_s=10)


RUNNER = """
import sys
from pathlib import Path
from autorl.engine import warm
from autorl.engine.backend import Launch
from autorl.engine.process import BudgetSpec, run_budgeted
here = Path(sys.argv[1])
launch = Launch(
    argv=[sys.executable, "-m", "probe", "sleep"], cwd=here, env={"PROBE_ENV": "from-the-launch"}, cpus=(0,),
    warm=("probe_dep",),
)
with warm.starters():
    run_budgeted(launch, here / "run.log", BudgetSpec(budget_s=300, startup_cap_s=60, hang_s=300))
"""


def test_a_killed_runner_takes_its_children_but_leaves_the_kept_starter(probe, tmp_path, kept):
    """SIGKILL of a runner mid-seed: the starter sees its connection close and kills the seed's group."""
    (tmp_path / "runner.py").write_text(RUNNER)
    runner = psutil.Popen([sys.executable, str(tmp_path / "runner.py"), str(tmp_path)], cwd=tmp_path)
    deadline = time.monotonic() + 60
    while "@@autorl" not in ((tmp_path / "run.log").read_text() if (tmp_path / "run.log").exists() else ""):
        assert time.monotonic() < deadline and runner.poll() is None
        time.sleep(0.05)
    (starter,) = [p for p in runner.children() if "autorl.engine.warm_starter" in p.cmdline()]
    (child,) = starter.children()
    runner.kill()
    runner.wait()
    assert gone(child.pid, within_s=10)
    assert starter.is_running() and starter.status() != psutil.STATUS_ZOMBIE
    starter.kill()


def test_two_runners_at_once_share_a_kept_starter_and_keep_their_own_children(probe, tmp_path, kept):
    """Two trials in one directory at the same time (two terminals): one starter, each runner's children
    reported to it alone; the first to leave does not take the other's child along."""
    (tmp_path / "runner.py").write_text(RUNNER)
    first = psutil.Popen([sys.executable, str(tmp_path / "runner.py"), str(tmp_path)], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while "@@autorl" not in (
            (tmp_path / "run.log").read_text() if (tmp_path / "run.log").exists() else ""
        ):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.05)
        second, starter = one_trial(probe(), tmp_path / "second.log")  # connects, forks, leaves
        assert second["ppid"] == starter.pid and starter.started is None
        (child,) = psutil.Process(starter.pid).children()  # the first runner's, still sleeping
        assert child.pid != second["pid"] and child.is_running()
    finally:
        first.kill()
        first.wait()
    assert gone(child.pid, within_s=10)
    os.kill(starter.pid, signal.SIGKILL)


def test_a_directory_keeps_one_idle_starter_per_group(probe, tmp_path, kept, monkeypatch):
    """A runner environment that changed (another shell) starts a new starter; the old one, idle, ends
    rather than wait its AUTORL_WARM_KEEP. One with other launch settings (a GPU slot's devices) stays."""
    monkeypatch.setenv("SOME_SHELL_VAR", "1")
    _, old = one_trial(probe(), tmp_path / "1.log")
    monkeypatch.setenv("SOME_SHELL_VAR", "2")
    _, new = one_trial(probe(), tmp_path / "2.log")
    assert new.started is not None and new.pid != old.pid
    assert gone(old.pid, within_s=10)
    other_slot = Launch(**{**probe().__dict__, "env": {"PROBE_ENV": "from-the-launch", "SLOT": "1"}})
    _, other = one_trial(other_slot, tmp_path / "3.log")
    assert other.started is not None and other.pid != new.pid
    time.sleep(3 * warm.SUPERSEDED_EVERY_S)
    assert not gone(new.pid, within_s=0.1) and not gone(other.pid, within_s=0.1)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_the_newer_starter_is_the_one_started_later_on_either_core(probe, tmp_path, kept, monkeypatch):
    """The kernel numbers socket inodes from per-CPU batches: a starter that binds later on another core can
    hold the lower number. In both orders of two cores the older idle starter ends and the newer stays."""
    cores = sorted(os.sched_getaffinity(0))
    try:
        for first, second in (cores[:2], cores[1::-1]):
            os.sched_setaffinity(0, {first})  # the starter a runner starts runs where the runner may
            monkeypatch.setenv("SOME_SHELL_VAR", f"{first}-older")
            _, old = one_trial(probe(), tmp_path / f"{first}-1.log")
            os.sched_setaffinity(0, {second})
            monkeypatch.setenv("SOME_SHELL_VAR", f"{first}-newer")
            _, new = one_trial(probe(), tmp_path / f"{first}-2.log")
            os.sched_setaffinity(0, cores)
            assert gone(old.pid, within_s=10), (first, second)
            assert not gone(new.pid, within_s=3 * warm.SUPERSEDED_EVERY_S), (first, second)
    finally:
        os.sched_setaffinity(0, cores)
