"""Rungs and the early abort (autorl/record/rungs.py): the rule on curves with known answers, and trials end
to end with the LLM track's test-double backend (tests/fakes: its child pauses at the trial's rungs as the
embedded trainer does; its eval scores the quality its weights hold). The classic track's end-to-end abort is
in tests/test_classic.py (it shares that file's reference trial)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import signal
from pathlib import Path

import pytest
from conftest import make_root
from fakes.fake_backend import FakeBackend

from autorl.commands import show, status, trial
from autorl.commands.tune import parse_summary
from autorl.engine.process import BudgetSpec, Stop
from autorl.engine.seed import Judge, run_seed
from autorl.llm.config import load_train_config
from autorl.llm.track import LLMTrack
from autorl.record import rungs
from autorl.record.ledger import Ledger
from autorl.record.rungs import AbortRule, RungScore, margin


def score(rung: int, value: float | None) -> RungScore:
    return RungScore(rung=rung, fraction=0.25 * rung, at_s=10.0 * rung, eval_score=value)


REFERENCE = {0.25: (0.40, 0.42, 0.38, 0.41, 0.39, 0.40), 0.5: (0.50, 0.52, 0.48, 0.51, 0.49, 0.50)}


def test_a_clear_loser_is_aborted_at_the_first_rung_and_a_slow_starter_goes_on():
    rule = AbortRule("ref", REFERENCE, margin_sd=1.0, prior_sd=0.04)
    bar = rule.threshold(0.25)
    assert bar is not None and bar.reference == pytest.approx(0.40) and bar.seeds == 6
    # the margin pools the reference's own spread (sd 0.0141, 5 df) with the prior (0.04, 4 df)
    s = ((4 * 0.04**2 + 5 * 0.0141421**2) / 9) ** 0.5
    assert bar.margin == pytest.approx(s * (1 + 1 / 6) ** 0.5, rel=1e-3)
    loser = rule.judge(score(1, 0.25))
    assert loser.decision == rungs.ABORT and loser.reference == pytest.approx(0.40)
    slow = rule.judge(score(1, 0.40 - 0.9 * bar.margin))  # behind, within the margin
    assert slow.decision == rungs.GO
    assert rule.judge(score(2, 0.47)).decision == rungs.GO


def test_the_margin_widens_with_fewer_or_disagreeing_reference_seeds_and_needs_two():
    six, two = margin([0.4] * 6, 1.0, 0.04), margin([0.4] * 2, 1.0, 0.04)
    assert two > six > 0
    assert margin([0.3, 0.5, 0.4, 0.45, 0.35, 0.4], 1.0, 0.04) > six
    assert margin([0.4] * 6, 2.0, 0.04) == pytest.approx(2 * six)
    rule = AbortRule("ref", {0.25: (0.4,)}, 1.0, 0.04)
    assert rule.threshold(0.25) is None and rule.judge(score(1, 0.0)).decision == rungs.GO
    assert rule.judge(score(3, 0.0)).decision == rungs.GO  # a rung the reference never scored (at 75%)
    moved = AbortRule("ref", {0.3: REFERENCE[0.25]}, 1.0, 0.04)  # its rung 1 was elsewhere in the run
    assert moved.threshold(0.25) is None and moved.judge(score(1, 0.0)).decision == rungs.GO


def test_a_failed_rung_eval_never_stops_a_seed():
    rule = AbortRule("ref", REFERENCE, 1.0, 0.04)
    assert rule.judge(score(1, None)).decision == rungs.GO


def test_an_aa_candidate_is_rarely_aborted_and_never_kept_by_an_abort():
    """Seeds drawn from the reference's own distribution: aborted about as often as one seed falls a margin
    below a reference mean (a normal tail), and `conclude` never turns an aborted trial into `improved`."""
    import numpy as np

    rng = np.random.default_rng(0)
    aborted = 0
    for _ in range(2000):
        ref = tuple(rng.normal(0.4, 0.03, 6))
        rule = AbortRule("ref", {0.25: ref}, 1.5, 0.03)
        aborted += rule.judge(score(1, float(rng.normal(0.4, 0.03)))).decision == rungs.ABORT
    assert 0.03 < aborted / 2000 < 0.12  # ~Phi(-1.5 * sqrt(pooled / true)) with a t-like spread


def use_backend(monkeypatch, root, quality: float, mode: str = "ok") -> FakeBackend:
    backend = FakeBackend(mode, quality, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    return backend


def run_trial(capsys, *argv: str) -> dict[str, str]:
    code = trial.main(["--budget", "1.2", *argv])
    out = capsys.readouterr().out
    assert code == 0, out
    return parse_summary(out) | {"_log": out}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A baseline of 2 seeds at quality 0.6, run once for the tests below (in a root of its own): every seed
    scored at 25% and 50% of the budget."""
    site = tmp_path_factory.mktemp("rungs-baseline")
    with pytest.MonkeyPatch.context() as mp:
        make_root(site, mp)
        mp.setattr(LLMTrack, "abort_margin", 1.0)  # the LLM track ships the abort off
        use_backend(mp, site, 0.6)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = trial.main(["--budget", "1.2", "--seeds", "2", "--description", "baseline"])
    assert code == 0, out.getvalue()
    s = parse_summary(out.getvalue()) | {"_log": out.getvalue()}
    assert s["verdict"] == "baseline" and "early abort off: no reference" in s["_log"]
    for k in (0, 1):
        scored = rungs.read(site / s["run_dir"] / f"seed-{k}")
        assert [(r.rung, r.fraction, r.decision) for r in scored] == [(1, 0.25, ""), (2, 0.5, "")]
        assert all(r.eval_score == pytest.approx(0.6, abs=0.01) for r in scored)
        assert all(r.at_s == pytest.approx(0.3 * r.rung) for r in scored)
        assert all(0 < r.eval_seconds < 30 for r in scored)  # the fake eval's process, paused
    return site, s


@pytest.fixture
def reference(root, monkeypatch, baseline) -> dict[str, str]:
    """The baseline's root copied into this test's (its ledger, run directories and caches), the abort on."""
    site, s = baseline
    shutil.copytree(site, root, dirs_exist_ok=True)
    monkeypatch.setattr(LLMTrack, "abort_margin", 1.0)  # the LLM track ships the abort off
    return s


def test_a_losing_candidate_is_aborted_at_the_first_rung(root, monkeypatch, capsys, reference):
    with open(root / "train.toml", "a") as f:  # the idea (the test double trains the quality it is given)
        f.write("[trainer.optim]\nlr = 3e-5\n")
    use_backend(monkeypatch, root, 0.2)
    s = run_trial(capsys, "--seeds", "3", "--description", "a loser")
    assert "early abort on: a seed stops at rung 1 (25%) below" in s["_log"]
    assert s["verdict"] == "inconclusive" and s["status"] == "ok" and s["eval_score"] == "nan"
    assert s["stopped_early"].startswith("aborted seed 1 (seed ")
    assert (
        "rung 1 (25% of the run" in s["stopped_early"] and "rung score 0.2000 below 0.5" in s["stopped_early"]
    )
    run_dir = root / s["run_dir"]
    assert not (run_dir / "seed-1").exists()  # the trial ended: no second seed
    (only,) = rungs.read(run_dir / "seed-0")
    assert only.decision == rungs.ABORT and only.margin is not None and only.reference_seeds == 2
    assert float(s["training_seconds"]) < 0.6  # a quarter of 1.2 s, not the budget
    outcome = json.loads((run_dir / "seed-0" / "outcome.json").read_text())
    assert outcome["stop_reason"] == "aborted" and outcome["status"] == "ok"
    assert not (run_dir / "seed-0" / "eval.jsonl").exists()  # the end it never reached is not scored
    row = Ledger(root / "results.tsv").rows()[-1]
    assert row.verdict == "inconclusive" and row.stopped_early == s["stopped_early"]
    assert row.seed_scores == {} and row.eval_score is None
    assert row.reference_run == reference["run_dir"].split("/")[-1]  # a tried idea, for status's memory

    # what the agent sees: the rungs next to the reference's, and what an idea not kept costs now
    assert show.main(row.run_id) == 0
    shown = capsys.readouterr().out
    assert "rungs: at 25% 0.2000 (1 seeds) vs reference 0.6000 (2); aborted: seed-0" in shown
    assert status.main() == 0
    out = capsys.readouterr().out.splitlines()
    line = next(x for x in out if x.startswith("cost here"))
    assert "an idea not kept cost 0 s of training (0.2" in line and "100% ended by the early abort" in line
    assert "  trainer.optim.lr: 1e-06 -> 3e-05: aborted, pending" in out  # the memory: as it ran (a default)
    assert any(x.startswith(f"  {row.run_id}") and " aborted " in x for x in out)  # the last trials


def test_a_slow_starter_within_the_margin_runs_to_the_end(root, monkeypatch, capsys, reference):
    use_backend(monkeypatch, root, 0.6, mode="slow_start")  # 0.03 behind at its rungs, level at its end
    s = run_trial(capsys, "--seeds", "1", "--description", "slow starter")
    assert "stopped_early" not in s and float(s["eval_score"]) == pytest.approx(0.6, abs=0.01)
    scored = rungs.read(root / s["run_dir"] / "seed-0")
    assert [r.decision for r in scored] == [rungs.GO, rungs.GO]
    assert all(r.eval_score is not None and r.eval_score < r.reference for r in scored)


def test_no_abort_scores_the_rungs_and_never_stops(root, monkeypatch, capsys, reference):
    use_backend(monkeypatch, root, 0.2)
    s = run_trial(capsys, "--seeds", "1", "--no-abort")
    assert "early abort off: --no-abort" in s["_log"] and "stopped_early" not in s
    # trained and scored to the end; one candidate seed is never `worse` (stats.MIN_SEEDS_WORSE)
    assert s["verdict"] == "inconclusive" and float(s["eval_score"]) == pytest.approx(0.2, abs=0.01)
    assert [r.decision for r in rungs.read(root / s["run_dir"] / "seed-0")] == ["", ""]


def test_two_candidate_seeds_far_behind_are_worse(root, monkeypatch, capsys, reference):
    """The end-to-end `worse`: 2 candidate seeds (stats.MIN_SEEDS_WORSE) in one look, far behind."""
    use_backend(monkeypatch, root, 0.2)
    s = run_trial(capsys, "--seeds", "2", "--all-seeds")
    assert s["verdict"] == "worse" and "and 2 seeds" not in s["levels"], s["levels"]
    assert len(s["seeds"].split(",")) == 2 and float(s["delta"]) == pytest.approx(-0.4, abs=0.02)


def test_a_reference_recorded_before_rungs_still_runs_without_abort(root, monkeypatch, capsys, reference):
    for f in (root / reference["run_dir"]).glob("seed-*/rungs.jsonl"):
        f.unlink()  # as a trial recorded before this change left it
    use_backend(monkeypatch, root, 0.2)
    s = run_trial(capsys, "--seeds", "1")
    assert (
        f"early abort off: the reference {reference['run_dir'].split('/')[-1]} has no rung scores"
        in s["_log"]
    )
    assert "stopped_early" not in s and float(s["eval_score"]) == pytest.approx(0.2, abs=0.01)
    assert s["verdict"] == "inconclusive"  # one candidate seed, far behind: never `worse`


def test_the_reference_side_pools_its_configs_repeat_in_the_verdict_and_at_the_rungs(
    root, monkeypatch, capsys, reference
):
    """A candidate is compared with every seed of the reference's config (the baseline and its repeat),
    not with the baseline's own seeds alone: the verdict's delta and the rungs' bar both rest on 4 seeds."""
    use_backend(monkeypatch, root, 0.4)  # the baseline's config again: its repeat, drawn lower
    rep = run_trial(capsys, "--seeds", "2", "--all-seeds", "--description", "baseline repeat")
    base_id, rep_id = (x["run_dir"].split("/")[-1] for x in (reference, rep))
    assert rep["reference"] == base_id and rep["reference_seeds"] == f"2 ({base_id})"
    with open(root / "train.toml", "a") as f:
        f.write("[trainer.optim]\nlr = 3e-5\n")
    use_backend(monkeypatch, root, 0.5)
    s = run_trial(capsys, "--seeds", "1", "--description", "level with the config")
    assert s["reference"] == base_id and s["reference_seeds"] == f"4 ({base_id} + {rep_id})"
    assert float(s["delta"]) == pytest.approx(0.0, abs=0.02)  # 0.1 behind the baseline's own 2 seeds
    scored = rungs.read(root / s["run_dir"] / "seed-0")
    assert [(r.decision, r.reference_seeds) for r in scored] == [(rungs.GO, 4), (rungs.GO, 4)]
    assert all(r.reference == pytest.approx(0.5, abs=0.01) for r in scored)
    assert Ledger(root / "results.tsv").rows()[-1].reference_run == base_id
    # autorl show: the delta's reference side is the config's 4 seeds, and its per-env comparison is with
    # the baseline's own trial (the one whose files it reads), so the two never seem to disagree.
    assert show.main(s["run_dir"].split("/")[-1]) == 0
    shown = capsys.readouterr().out
    assert f"the verdict's reference seeds (its config's trials pooled): 4 ({base_id} + {rep_id})" in shown
    env_line = next(ln for ln in shown.splitlines() if ln.startswith("  eval/"))
    assert f" vs reference {base_id} alone 0.6" in env_line


def test_rung_scores_survive_a_signal_mid_run(root, tmp_path):
    """A stop (SIGTERM to the trial) after the first rung: the seed is interrupted, its rung is on disk."""
    cfg = LLMTrack().with_rungs(load_train_config(root / "train.toml"), 2.0)
    assert cfg.rungs == ((0.25, 0.5), (0.5, 1.0))
    stop = Stop()

    def on_event(event: dict, training_s: float) -> None:
        if event["event"] == "resume":
            stop.request(signal.SIGTERM)

    backend = FakeBackend(quality=0.5, scripts_dir=tmp_path)
    spec = BudgetSpec(budget_s=2.0, startup_cap_s=30.0, hang_s=30.0, grace_s=5.0)
    result = run_seed(
        backend, cfg, 7, 0, tmp_path / "seed-0", spec, on_event=on_event, stop=stop, judge=Judge()
    )
    assert result.status == "interrupted"
    (first,) = rungs.read(result.dir)
    assert first.rung == 1 and first.eval_score == pytest.approx(0.5, abs=0.01)
    assert json.loads((result.dir / "outcome.json").read_text())["status"] == "interrupted"
    assert not (result.dir / "snapshots" / "rung-1").exists()  # scored: the weights are gone
