"""The budgeted runner: clock, graceful stop, hard kill, hang detection, crash tail, no survivors."""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from autorl.engine import warm
from autorl.engine.backend import Launch
from autorl.engine.process import BudgetSpec, Stop, run_budgeted

PRELUDE = """
import json, os, signal, subprocess, sys, time
def emit(event, **kw):
    print("@@autorl " + json.dumps({"event": event, **kw}), flush=True)
"""


WARM = False  # set per test by the `start` fixture


@pytest.fixture(autouse=True, params=["cold", "warm"])
def start(request):
    """Every test runs twice: its child started as a new interpreter, and forked from a warm starter
    (autorl/engine/warm.py) that imported the child's modules, with the same assertions."""
    global WARM
    WARM = request.param == "warm"
    if not WARM:
        yield
        return
    with warm.starters() as pool:
        yield
        assert pool is not None and pool.forked > 0  # the children were forked, not started cold
    WARM = False


def launch(tmp_path: Path, body: str) -> Launch:
    script = tmp_path / "child.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    if WARM:  # `python -m child`, its imports done once by the starter
        return Launch(argv=[sys.executable, "-m", "child"], cwd=tmp_path, warm=("json", "subprocess"))
    return Launch(argv=[sys.executable, str(script)], cwd=tmp_path)


def spec(**kw) -> BudgetSpec:
    base = dict(budget_s=1.0, startup_cap_s=20.0, hang_s=20.0, grace_s=2.0)
    return BudgetSpec(**{**base, **kw})


def pid_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_budget_stops_gracefully_and_counts_training_only(tmp_path):
    child = launch(
        tmp_path,
        """
        def on_term(*_):
            open("saved", "w").write("yes")
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)
        time.sleep(1.0)          # start-up: must not count against the budget
        emit("ready")
        step = 0
        while True:
            step += 1
            emit("step", step=step, reward=0.5)
            time.sleep(0.05)
        """,
    )
    events = []
    result = run_budgeted(child, tmp_path / "run.log", spec(), on_event=lambda e, t: events.append(e))
    assert result.stop_reason == "budget"
    assert result.status == "ok"
    assert not result.hard_killed
    assert (tmp_path / "saved").read_text() == "yes"
    assert result.startup_seconds >= 0.9
    assert 0.9 <= result.training_seconds <= 1.0
    assert result.steps >= 5
    assert events[0]["event"] == "ready" and events[-1]["event"] == "step"
    assert "@@autorl" in (tmp_path / "run.log").read_text()


def test_child_ignoring_sigterm_is_killed_with_its_whole_tree(tmp_path):
    child = launch(
        tmp_path,
        """
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        same_group = subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
        escaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                   start_new_session=True)  # left the process group
        open("pids", "w").write(f"{os.getpid()} {same_group.pid} {escaped.pid}")
        emit("ready")
        while True:
            emit("step", step=1)
            time.sleep(0.1)
        """,
    )
    started = time.monotonic()
    result = run_budgeted(child, tmp_path / "run.log", spec(budget_s=0.5, grace_s=1.0))
    assert result.stop_reason == "budget"
    assert result.hard_killed
    assert time.monotonic() - started < 15
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    time.sleep(0.2)
    assert [p for p in pids if pid_alive(p)] == []


def test_hang_is_killed_and_recorded_as_timeout(tmp_path):
    child = launch(
        tmp_path,
        """
        emit("ready")
        emit("step", step=1)
        time.sleep(600)
        """,
    )
    result = run_budgeted(child, tmp_path / "run.log", spec(budget_s=60, hang_s=1.0))
    assert result.stop_reason == "hang"
    assert result.status == "timeout"
    assert result.steps == 1


def test_startup_cap(tmp_path):
    child = launch(tmp_path, "time.sleep(600)\n")
    result = run_budgeted(child, tmp_path / "run.log", spec(startup_cap_s=1.0))
    assert result.stop_reason == "startup_cap"
    assert result.status == "timeout"
    assert result.training_seconds == 0.0


def test_crash_keeps_the_log_tail(tmp_path):
    child = launch(
        tmp_path,
        """
        emit("ready")
        print("about to fail", flush=True)
        raise RuntimeError("boom: out of memory")
        """,
    )
    result = run_budgeted(child, tmp_path / "run.log", spec())
    assert result.status == "crash"
    assert result.returncode not in (0, None)
    assert any("boom: out of memory" in line for line in result.log_tail)
    assert "about to fail" in (tmp_path / "run.log").read_text()


def test_normal_exit_is_ok_and_pause_is_not_charged(tmp_path):
    child = launch(
        tmp_path,
        """
        emit("ready")
        emit("step", step=1)
        emit("pause")
        time.sleep(1.0)
        emit("resume")
        emit("step", step=2)
        emit("done")
        """,
    )
    result = run_budgeted(child, tmp_path / "run.log", spec(budget_s=0.8))
    assert result.stop_reason == "exited"
    assert result.status == "ok"
    assert result.steps == 2
    assert result.paused_seconds >= 0.9
    assert result.training_seconds < 0.8


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX process groups")
def test_grandchild_holding_stdout_does_not_block(tmp_path):
    child = launch(
        tmp_path,
        """
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open("pid", "w").write(str(p.pid))
        emit("ready")
        emit("done")
        """,
    )
    started = time.monotonic()
    result = run_budgeted(child, tmp_path / "run.log", spec(budget_s=60))
    assert result.status == "ok"
    assert time.monotonic() - started < 15
    time.sleep(0.2)
    assert not pid_alive(int((tmp_path / "pid").read_text()))


def test_a_stop_request_ends_the_child_like_the_budget_and_a_hard_one_at_once(tmp_path):
    """The trial's Stop (set by its signal handler): SIGTERM, the child saves, `interrupted`; a hard stop
    SIGKILLs a child that ignores SIGTERM without waiting for the grace period."""
    saving = launch(
        tmp_path,
        """
        def on_term(*_):
            open("saved", "w").write("yes")
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)
        emit("ready")
        while True:
            emit("step", step=1)
            time.sleep(0.05)
        """,
    )
    stop = Stop()
    threading.Timer(1.0, stop.graceful.set).start()
    result = run_budgeted(saving, tmp_path / "run.log", spec(budget_s=60), stop=stop)
    assert (result.stop_reason, result.status, result.hard_killed) == ("interrupted", "interrupted", False)
    assert (tmp_path / "saved").read_text() == "yes"

    deaf = launch(
        tmp_path,
        """
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        emit("ready")
        while True:
            emit("step", step=1)
            time.sleep(0.05)
        """,
    )
    stop = Stop()
    threading.Timer(0.5, stop.graceful.set).start()
    threading.Timer(1.5, stop.hard.set).start()
    started = time.monotonic()
    result = run_budgeted(deaf, tmp_path / "run.log", spec(budget_s=60, grace_s=60), stop=stop)
    assert result.stop_reason == "interrupted" and result.hard_killed
    assert time.monotonic() - started < 15  # not the 60 s grace period
