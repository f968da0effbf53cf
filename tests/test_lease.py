"""Slot leases (autorl/engine/lease.py): a seed holds its slot's cores and GPU share machine-wide, so two
trials on one machine wait for each other instead of sharing cores; a killed holder leaves nothing taken."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autorl.engine import lease
from autorl.engine.backend import Slot
from autorl.engine.process import BudgetSpec, Stop

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    return tmp_path


def hold_in_thread(slot: Slot, seconds: float, name: str = "a") -> threading.Thread:
    """Another seed holding `slot` for `seconds` (a flock is per open file: a thread's conflicts too)."""
    taken = threading.Event()

    def body() -> None:
        with lease.hold(slot, Path(f"runs/{name}/seed-0")):
            taken.set()
            time.sleep(seconds)

    t = threading.Thread(target=body)
    t.start()
    assert taken.wait(10)
    return t


def test_a_seed_waits_for_the_cores_another_seed_holds_and_says_for_whom():
    holder = hold_in_thread(Slot(cpus=(0, 1)), 0.8)
    with lease.hold(Slot(cpus=(3,)), Path("runs/c/seed-0")) as free:  # other cores: no wait
        assert free is not None and free[1] == "" and free[0] < 0.3
    with lease.hold(Slot(cpus=(1, 2)), Path("runs/b/seed-0")) as held:
        assert held is not None
        waited, waited_for = held
        assert waited >= 0.5 and waited_for == f"pid {os.getpid()} runs/a/seed-0"
    holder.join()


def test_a_gpu_is_shared_by_its_shares_and_a_whole_gpu_waits_for_every_share():
    half = Slot(gpus=(0,), gpu_share=0.5)
    first = hold_in_thread(half, 0.8, "a")
    with lease.hold(half, Path("runs/b/seed-0")) as second:  # the other half: at once
        assert second is not None and second[0] < 0.3
    with lease.hold(Slot(gpus=(0,)), Path("runs/c/seed-0")) as whole:  # all of it: after the first half
        assert whole is not None and whole[0] >= 0.5
    first.join()
    assert [count for _, count in lease.wanted(Slot(gpus=(0, 1), gpu_share=0.25))] == [5, 5]


def test_a_stop_while_waiting_gives_up_the_wait():
    holder = hold_in_thread(Slot(cpus=(0,)), 1.0)
    stop = Stop()
    threading.Timer(0.3, stop.request, args=(signal.SIGINT,)).start()
    with lease.hold(Slot(cpus=(0,)), Path("runs/b/seed-0"), stop) as held:
        assert held is None
    holder.join()


def test_a_killed_holder_leaves_its_slot_free(root):
    code = (
        "import time; from pathlib import Path; from autorl.engine import lease; "
        "from autorl.engine.backend import Slot\n"
        "with lease.hold(Slot(cpus=(0,)), Path('runs/x/seed-0')):\n"
        "    print('held', flush=True); time.sleep(600)\n"
    )
    env = {**os.environ, "AUTORL_ROOT": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    assert lease.holder("cpu-0") == f"pid {proc.pid} runs/x/seed-0"
    proc.kill()
    proc.wait()
    with lease.hold(Slot(cpus=(0,)), Path("runs/b/seed-0")) as held:
        assert held is not None and held[0] < 0.3


def test_a_seed_on_a_held_slot_trains_after_it_and_records_the_wait(root, tmp_path):
    """run_seed takes its slot before anything starts: a seed of another trial holding the same core makes
    it wait; its log and outcome.json say how long (the test-double backend: tests/fakes)."""
    from fakes.fake_backend import FakeBackend

    from autorl.engine.seed import run_seed

    slot = Slot(index=0, cpus=(0,))
    before = time.time()
    holder = hold_in_thread(slot, 0.8)
    spec = BudgetSpec(budget_s=0.3, startup_cap_s=30.0, hang_s=30.0, grace_s=5.0)
    result = run_seed(FakeBackend(scripts_dir=tmp_path), None, 5, 0, tmp_path / "seed-0", spec, slot=slot)
    holder.join()
    assert result.status == "ok" and result.slot_wait_s >= 0.5
    assert any(line.startswith("seed 5: waited ") and "for slot 0 (cpus 0)" in line for line in result.log)
    outcome = json.loads((tmp_path / "seed-0" / "outcome.json").read_text())
    assert outcome["slot_wait_seconds"] == pytest.approx(result.slot_wait_s, abs=1e-3)
    start, end = outcome["slot_held"]  # when it held the core: after the holder let go, for its training
    assert outcome["slot"] == [0] and end - start >= 0.3 and start >= before + 0.5


def test_a_trial_s_summary_says_how_long_its_seeds_waited_for_slots(tmp_path):
    """The trial's summary adds the seeds' slot waits (a second or more: another trial held the slot); a
    trial that waited for nothing has no such line."""
    from autorl.engine.result import TrialIdentity, conclude
    from autorl.engine.seed import SeedResult
    from autorl.engine.trial_types import Reference, Trained
    from autorl.record import stats
    from autorl.record.context import ResearchContext

    rows = [{"env": "toy", "example_id": str(i), "sample": 0, "score": float(i % 2)} for i in range(20)]
    ctx = TrialIdentity("r", tmp_path, "c", ResearchContext("classic", "e", "h", 1.0), "b", "x")

    def summary(waits: list[float]) -> dict[str, str]:
        seeds = [
            SeedResult(index=k, seed=k, dir=tmp_path / f"seed-{k}", eval_rows=rows, slot_wait_s=w)
            for k, w in enumerate(waits)
        ]
        nothing = Reference([], None, [], stats.NoiseFloor(prior_sd=0.05))
        return conclude(ctx, Trained(results=seeds), nothing).summary_lines()

    assert summary([12.0, 0.2, 30.5])["slot_wait_seconds"] == "42.5 (2 seed(s) waited for their slot)"
    assert "slot_wait_seconds" not in summary([0.0, 0.4])
