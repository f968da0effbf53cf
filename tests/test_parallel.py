"""Seeds side by side: the slot plan, waves and the early stop across them, a crash beside a running sibling,
signals (SIGINT/SIGTERM stop the trial and leave no process; a SIGKILLed runner takes its children along).
Ray's seeds side by side (`--ray local`): tests/test_ray.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from fakes.fake_backend import FakeBackend

from autorl.commands import trial
from autorl.commands.tune import parse_summary
from autorl.engine.slots import plan
from autorl.llm.track import LLMTrack
from autorl.record.ledger import Ledger

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


def use(monkeypatch, root: Path, **kw) -> FakeBackend:
    backend = FakeBackend(scripts_dir=root, **kw)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    return backend


# --- the plan ----------------------------------------------------------------------------------------------


def test_auto_runs_as_many_seeds_as_slots_in_waves(root):
    backend = FakeBackend(scripts_dir=root, slots=4)
    p = plan(backend, None, seeds=6)
    assert (p.parallel, p.waves, len(p.slots), p.oversubscribed) == (4, 2, 4, False)
    assert "6 seed(s), 4 at a time (2 wave(s))" in p.describe()
    assert plan(backend, None, seeds=3).parallel == 3  # never more than the seeds
    assert plan(backend, None, seeds=6, parallel=1).waves == 6


def test_after_seeds_kept_from_a_stopped_trial_the_first_wave_fills_theirs():
    """Each look falls after the number of seeds the trial planned it after: with k seeds kept, the first
    wave holds what completes k's wave, the rest go `parallel` at a time."""
    from autorl.engine.pool import waves

    jobs = list(range(5))
    assert waves(jobs, 2) == [[0, 1], [2, 3], [4]]
    assert waves(jobs, 2, done=1) == [[0], [1, 2], [3, 4]]
    assert waves(jobs, 2, done=2) == waves(jobs, 2)
    assert waves(jobs, 3, done=2) == [[0], [1, 2, 3], [4]]
    assert waves(jobs, 1, done=3) == [[0], [1], [2], [3], [4]]
    assert waves([], 2, done=1) == []


def test_more_parallel_than_slots_is_oversubscribed_and_unpinned(root):
    p = plan(FakeBackend(scripts_dir=root, slots=2), None, seeds=6, parallel=3)
    assert p.parallel == 3 and p.oversubscribed and all(not s.cpus for s in p.slots)
    assert "oversubscribed" in p.describe()


def test_ray_plan_lets_the_cluster_place_every_seed(root):
    p = plan(FakeBackend(scripts_dir=root, slots=1), None, seeds=5, ray="local")
    assert (p.parallel, p.waves, p.where) == (5, 1, "ray local")


@pytest.mark.parametrize("flag", [["--parallel", "0"], ["--parallel", "x"], ["--ray", " "]])
def test_bad_parallel_flags_exit_2(root, flag):
    with pytest.raises(SystemExit) as exc:
        trial.main(flag)
    assert exc.value.code == 2


# --- trials ------------------------------------------------------------------------------------------------


def test_two_seeds_run_side_by_side_and_the_row_records_it(root, monkeypatch, capsys):
    use(monkeypatch, root, slots=2)
    assert trial.main(["--budget", "1.5", "--seeds", "2"]) == 0
    s = parse_summary(capsys.readouterr().out)
    assert s["parallel"] == "2" and s["status"] == "ok" and len(s["seeds"].split(",")) == 2
    run = root / s["run_dir"]
    # seed 1 started before seed 0 had finished training
    assert (run / "seed-1" / "resolved.json").stat().st_mtime < (
        run / "seed-0" / "eval.jsonl"
    ).stat().st_mtime
    row = Ledger(root / "results.tsv").rows()[-1]
    assert row.parallel == 2 and row.seeds_planned == 2 and row.budget == 1.5


def test_a_crashed_seed_does_not_stop_its_running_sibling(root, monkeypatch, capsys):
    use(monkeypatch, root, slots=2, modes={1: "crash"})
    assert trial.main(["--budget", "1.5", "--seeds", "2"]) == 1
    out = capsys.readouterr().out
    s = parse_summary(out)
    assert s["status"] == "crash" and out.count("CRASH") == 1  # the crash report, once
    pooled = [json.loads(line) for line in (root / s["run_dir"] / "eval.jsonl").read_text().splitlines()]
    seed0 = int(s["seeds"].split(",")[0])
    assert pooled and {r["seed"] for r in pooled} == {seed0}  # the sibling trained and was evaluated
    assert len(Ledger(root / "results.tsv").rows()) == 1


def test_early_stop_is_checked_after_each_wave(root, monkeypatch, capsys):
    use(monkeypatch, root, quality=0.6)
    trial.main(["--budget", "0.3", "--seeds", "1"])
    Ledger(root / "results.tsv").mark("keep")
    capsys.readouterr()
    use(monkeypatch, root, quality=0.3, slots=2)
    trial.main(["--budget", "0.3", "--seeds", "6"])
    s = parse_summary(capsys.readouterr().out)
    assert s["stopped_early"].startswith("after 2/6 seeds") and len(s["seeds"].split(",")) == 2
    assert "the reference ran 1 seed(s) at once, this trial 2" in s["note"]


def test_seeds_kept_from_a_stopped_trial_get_their_look_before_any_seed_trains(root, monkeypatch, capsys):
    """A candidate behind the reference, stopped by a signal once its first seed finished (one at a time):
    run again, the kept seed completes a wave, so the trial looks first and stops as futile, training none."""
    import os

    from autorl.engine import trial_run

    use(monkeypatch, root, quality=0.6)
    trial.main(["--budget", "0.3", "--seeds", "1"])
    Ledger(root / "results.tsv").mark("keep")
    use(monkeypatch, root, quality=0.3, slots=1)
    report = trial_run.report_seed

    def stop_after_the_first(result):
        report(result)
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(trial_run, "report_seed", stop_after_the_first)
    assert trial.main(["--budget", "0.3", "--seeds", "4", "--grace", "1"]) == 143
    monkeypatch.setattr(trial_run, "report_seed", report)
    capsys.readouterr()
    assert trial.main(["--budget", "0.3", "--seeds", "4"]) == 0
    out = capsys.readouterr().out
    s = parse_summary(out)
    assert "kept: 1 of 4 seeds" in out and "interim look 1 of 4 after 1/4 seeds" in out
    assert s["stopped_early"].startswith("after 1/4 seeds: delta") and s["kept_seeds"].startswith("1 of 1,")
    assert "stopped at the training budget" not in out  # no seed trained


# --- signals -----------------------------------------------------------------------------------------------

DRIVER = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from fakes.fake_backend import FakeBackend
from autorl.llm.track import LLMTrack
from autorl.commands import trial
backend = FakeBackend({mode!r}, 0.6, scripts_dir=Path({root!r}), slots=2)
LLMTrack.make_backend = lambda self, name: backend
sys.exit(trial.main(["--seeds", "2", "--budget", "120", "--grace", "{grace}"]))
"""


TWO_AT_ONCE = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from fakes.fake_backend import FakeBackend
from autorl.llm.track import LLMTrack
from autorl.commands import trial
backend = FakeBackend("ok", 0.6, scripts_dir=Path({scripts!r}))
LLMTrack.make_backend = lambda self, name: backend
sys.exit(trial.main(["--seeds", "1", "--budget", "1", "--config", {config!r}]))
"""


def test_two_trials_started_together_on_an_empty_cache_both_record_the_right_base_score(root, tmp_path):
    """Two run.py trials at once (as `autorl tune --parallel-trials` starts them: two configs) both evaluate
    the base model into the same, empty cache entry, with a slow eval: neither reads the other's half-written
    rows."""
    from fakes.fake_backend import FakeBackend

    from autorl.io.jsonl import read_jsonl
    from autorl.record import stats

    env = {**os.environ, "AUTORL_ROOT": str(root), "FAKE_EVAL_ROW_DELAY": "0.002"}
    procs = []
    for k in range(2):  # each its own scripts: the test double writes them on construction
        scripts = tmp_path / f"scripts-{k}"
        scripts.mkdir()
        config = root / f"train-{k}.toml"  # one config each: the same one twice at once is refused (claims)
        text = (root / "train.toml").read_text()
        config.write_text(text.replace("max_steps = 100", f"max_steps = {100 + k}"))
        code = TWO_AT_ONCE.format(tests=str(TESTS), scripts=str(scripts), config=str(config))
        cmd = [sys.executable, "-c", code]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("evaluating the untrained base model" in out for out in outs)  # both computed it
    rows = Ledger(root / "results.tsv").rows()
    assert len(rows) == 2
    # the right base score: the test double's base eval alone, with all of its rows
    alone = tmp_path / "alone.jsonl"
    FakeBackend(scripts_dir=tmp_path)  # writes fake_eval.py there
    subprocess.run([sys.executable, str(tmp_path / "fake_eval.py"), str(alone), "base"], check=True)
    expected = stats.eval_score(read_jsonl(alone))
    assert len(read_jsonl(alone)) == 400
    assert [r.base_score for r in rows] == [pytest.approx(expected, abs=1e-4)] * 2
    (cache,) = (root / ".autorl" / "cache").glob("base-*.jsonl")
    assert read_jsonl(cache) == read_jsonl(alone)
    assert not [p for p in (root / ".autorl" / "cache").iterdir() if p != cache]  # no temp file left


def start_driver(
    root: Path, mode: str = "grandchild", grace: float = 5
) -> tuple[subprocess.Popen[str], list[psutil.Process]]:
    """run.py's trial with two fake seeds (by default each with a grandchild, like the sampler), training."""
    env = {**os.environ, "AUTORL_ROOT": str(root)}
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER.format(tests=str(TESTS), root=str(root), mode=mode, grace=grace)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        logs = [p.read_text() for p in (root / "runs").glob("*/seed-*/run.log")]
        ready = "grandchild up" if mode == "grandchild" else '"step"'
        if len(logs) == 2 and all(ready in log for log in logs):  # (the grandchild asked to die with us)
            return proc, psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the seeds did not start: {proc.communicate()}")


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_trial_records_it_interrupted_and_leaves_no_process(root, sig, code):
    proc, tree = start_driver(root)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in out + err
    assert parse_summary(out)["status"] == "interrupted"
    rows = Ledger(root / "results.tsv").rows()
    assert len(rows) == 1 and rows[0].status == "interrupted"
    time.sleep(0.5)
    assert alive(tree) == []
    # the graceful stop let both trainers save their weights
    assert len(list((root / "runs").glob("*/seed-*/weights/quality.txt"))) == 2


def test_one_ctrl_c_under_uv_run_arrives_twice_and_still_stops_gracefully(root):
    """`uv run` forwards SIGINT to run.py, which also gets it from the terminal: one request, not two."""
    proc, tree = start_driver(root)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "killing every process" not in err
    assert len(list((root / "runs").glob("*/seed-*/weights/quality.txt"))) == 2  # saved, not killed
    assert alive(tree) == []


def test_a_second_signal_later_kills_at_once(root):
    """Trainers that ignore SIGTERM would take the 30 s grace period; a second signal kills them at once."""
    proc, tree = start_driver(root, mode="ignore_term", grace=30)
    proc.send_signal(signal.SIGTERM)
    time.sleep(1.5)
    first = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - first < 20  # not the grace period
    assert proc.returncode == 143 and "killing every process" in err
    assert parse_summary(out)["status"] == "interrupted"
    time.sleep(0.5)
    assert alive(tree) == []


def test_a_killed_runner_takes_its_trainers_and_their_children_along(root):
    proc, tree = start_driver(root)
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(tree) == []
