"""The agent's view on real tiny trials: `autorl show`, the health flags, the seeds an inconclusive delta
would need (against scripts/simulate_decisions.py), the memory of what was tried in `autorl status`."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fakes.fake_backend import TRAIN_TOML, FakeBackend

from autorl.commands import cli, memory, show, status, trial
from autorl.commands.tune import parse_summary
from autorl.engine import process, warm
from autorl.llm.track import LLMTrack
from autorl.record import runview, stats
from autorl.record.ledger import Ledger
from autorl.record.row import LedgerRow

REPO = Path(__file__).resolve().parent.parent
SHIPPED_CLASSIC = REPO / "classic.toml"


# One pytest-xdist worker runs this module, in order: the module-scoped classic_runs fixture runs once
pytestmark = pytest.mark.xdist_group("agentview")


def fake_trial(monkeypatch, root: Path, capsys, *argv: str, mode: str = "ok", quality: float = 0.6) -> dict:
    """A trial through the real runner with the test-double backend (tests/fakes/fake_backend.py), at its
    own --budget (--new-context: these tests set budgets side by side in one ledger)."""
    backend = FakeBackend(mode, quality, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    trial.main(["--seeds", "1", "--new-context", *argv])
    return parse_summary(capsys.readouterr().out)


def flag_names(summary: dict) -> set[str]:
    return {k.removeprefix("health/") for k in summary if k.startswith("health/")}


# ---------------------------------------------------------------------------------------------- classic


@pytest.fixture(scope="module")
def classic_runs(tmp_path_factory: pytest.TempPathFactory):
    """Two real classic trials (2 seeds, 2 s of training each): the shipped config, kept, then a learning
    rate of 1e-3 against it. Returns (root, the baseline's summary, the candidate's summary)."""
    root = tmp_path_factory.mktemp("classic")
    with pytest.MonkeyPatch.context() as mp, warm.starters():  # both trials fork from one starter
        mp.setenv("AUTORL_ROOT", str(root))
        (root / "classic.toml").write_text(SHIPPED_CLASSIC.read_text())
        text = SHIPPED_CLASSIC.read_text()
        assert text.count("learning_rate = 5e-4 ") == 1
        (root / "lr.toml").write_text(text.replace("learning_rate = 5e-4 ", "learning_rate = 1e-3 "))
        summaries = []
        for config in ("classic.toml", "lr.toml"):
            argv = ["--track", "classic", "--config", str(root / config), "--budget", "2", "--seeds", "2"]
            code, out = _run_captured(argv)
            assert code == 0, out
            summaries.append(parse_summary(out))
            if config == "classic.toml":
                Ledger(root / "results.tsv").mark("keep", lesson="baseline")
        yield root, summaries[0], summaries[1]


def _run_captured(argv: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = trial.main(argv)
    return code, buf.getvalue()


def test_show_reads_a_real_classic_trial_against_its_reference(classic_runs, tmp_path, monkeypatch, capsys):
    root, base, cand = classic_runs
    monkeypatch.setenv("AUTORL_ROOT", str(root))
    png = tmp_path / "curves.png"
    assert cli.main(["show", "--png", str(png)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) <= show.MAX_LINES + 1  # + the "wrote" line
    run_id = cand["run_dir"].split("/")[-1]
    assert lines[0].startswith(f"run {run_id} (classic track, classic): status ok")
    assert f"reference {base['run_dir'].split('/')[-1]}: delta {cand['delta']}" in out
    seeds = [ln for ln in lines if ln.startswith("  seed-")]
    assert len(seeds) == 2
    for (
        ln
    ) in seeds:  # steps in the budget, seconds per step, the return curves (training and in-training eval)
        assert "ok (budget)" in ln and " s/step" in ln and "reward_mean " in ln and "eval_return " in ln
        assert "solved at " in ln or ln.endswith("not solved")  # time and env steps to solve
    [ref] = [ln for ln in lines if ln.startswith(f"  reference {base['run_dir'].split('/')[-1]}: 2 seeds")]
    pooled = cand["reference_seeds"]  # what the verdict compared with, said next to the reference's own seeds
    assert f"  the verdict's reference seeds (its config's trials pooled): {pooled}" in lines
    solved = sum(not x.endswith("=none") for x in base["time_to_solve_per_seed"].split(","))
    assert f"solved on {solved}/2 seeds" in ref  # the in-training eval's, as time_to_solve counts them
    assert "trends (first → last tenth" in out and "entropy" in out and "approx_kl" in out
    assert f"eval/CartPole-v1: {float(cand['eval_score']):.4f}" in out and "vs reference" in out
    assert f"final return sd {cand['seed_return_std']}" in out
    assert png.stat().st_size > 10_000
    # The PNG draws what the text sums up: each seed's curve smoothed (runview.smoothed, whose peak is the
    # text's), solid over its faint raw steps; the reference's dashed.
    import matplotlib.pyplot as plt

    from autorl.record.runview import TrialView, smoothed

    view = TrialView.load(show.resolve_run(None))
    fig, ax = plt.subplots()
    show.draw(ax, view)
    drawn = [
        (line.get_linestyle(), list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()
    ]
    plt.close(fig)
    assert view.reference is not None
    for shown, style in ((view, "-"), (view.reference, "--")):
        for s in shown.seeds:
            steps, values = s.series[s.curves[0].key]
            at, means = smoothed(steps, values)
            assert (style, steps, values) in drawn and (style, at, means) in drawn
            assert max(means) == s.curves[0].peak
            assert len(values) - len(means) == max(1, len(values) // 10) - 1  # a tenth of the points a mean
    assert len(drawn) == 2 * (len(view.seeds) + len(view.reference.seeds))
    assert ax.get_ylabel() == "reward_mean"
    # A prefix of the baseline's run id shows the baseline, which has no reference.
    assert cli.main(["show", base["run_dir"].split("/")[-1][:15]]) == 0
    assert "reference" not in capsys.readouterr().out.splitlines()[1]


def test_a_real_classic_trial_has_its_outcome_and_the_few_steps_flag_only_when_short(classic_runs):
    root, _, cand = classic_runs
    seeds = runview.load_seeds(root / cand["run_dir"])
    assert [s.status for s in seeds] == ["ok", "ok"] and all(s.stop_reason == "budget" for s in seeds)
    assert sum(s.steps for s in seeds) == int(cand["steps"])
    most = max(s.steps for s in seeds)
    assert ("few_steps" in flag_names(cand)) == (most < runview.THRESHOLDS.min_steps)
    # The same seeds under a higher bar raise it (the flag reads the threshold from its one place), and only
    # it: a real 2 s run may also show another flag (a reward that fell back), with either bar.
    before = [f.text for f in runview.health_flags(seeds, None, None) if f.name != "few_steps"]
    high = dataclasses.replace(runview.THRESHOLDS, min_steps=most + 1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runview, "THRESHOLDS", high)
        texts = [f.text for f in runview.health_flags(seeds, None, None)]
    few = f"only {most} steps fit the budget (fewer than {most + 1}): it hardly trained"
    assert sorted(texts) == sorted([*before, few])


def test_a_classic_seed_the_budget_stopped_before_its_horizon_is_flagged_cut(classic_runs):
    """At --budget 2 no seed reaches the score's 50,000 env steps: the summary says the score is of a run
    cut short (the replay's short-budget trial raised no line); a seed that ran to its horizon, or a track
    whose budget is the training time, raises none."""
    root, base, cand = classic_runs
    assert "cut" in flag_names(base) and "cut" in flag_names(cand)
    seeds = runview.load_seeds(root / cand["run_dir"])
    states = [
        json.loads((root / cand["run_dir"] / f"seed-{s.index}" / "train_state.json").read_text())
        for s in seeds
    ]
    assert [s.env_steps for s in seeds] == [st["env_steps"] for st in states]
    assert all(st["last_env_steps"] == 50_000 > st["env_steps"] for st in states)
    least = min(seeds, key=lambda s: s.env_steps or 0)
    assert cand["health/cut"].startswith(
        f"2/2 seeds were stopped by the budget before their env-step horizon (seed-{least.index} at "
        f"{least.env_steps:,} of 50,000 env steps)"
    )
    assert runview.cut(seeds, training_budget=2.0) is None  # the LLM track's seeds end at the budget
    ended = [dataclasses.replace(s, stop_reason="exited") for s in seeds]
    assert runview.cut(ended, None) is None
    assert runview.cut([ended[0], seeds[1]], None).text.startswith("1/2 seeds")  # type: ignore[union-attr]


def test_status_remembers_the_key_tried_with_its_value_and_outcome(classic_runs, monkeypatch, capsys):
    root, _, cand = classic_runs
    monkeypatch.setenv("AUTORL_ROOT", str(root))
    assert cli.main(["status", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    [entry] = st["tried"]
    assert entry["key"] == "learning_rate"
    [tried] = entry["tries"]
    assert tried["from"] == 5e-4 and tried["value"] == 1e-3
    decision = Ledger(root / "results.tsv").rows()[-1].decision
    assert tried["verdict"] == cand["verdict"] and tried["decision"] == decision
    assert cli.main(["status"]) == 0
    out = capsys.readouterr().out
    assert f"  learning_rate: 0.0005 -> 0.001: {cand['verdict']}" in out
    # the budget is a cap on this track: the score's horizon is in env steps (the replay read "budget 600 s")
    assert "\nbudget: a cap per seed: the score covers a fixed env-step horizon (CartPole-v1 50,000, " in out


def write_configs(root: Path, configs: dict[str, str]) -> None:
    """Each run's config.toml in runs/<run_id>/, as a trial leaves it."""
    for run_id, text in configs.items():
        (root / "runs" / run_id).mkdir(parents=True)
        (root / "runs" / run_id / "config.toml").write_text(text)


def test_tried_says_which_keys_were_changed_together(root):
    """A combination's outcome is charged to each of its keys: the try says what it was combined with, so
    "never retry a discarded value" does not read a discarded combination as the value's own failure."""
    configs = {
        "base": "[trainer.optim]\nlr = 1e-4\n[orchestrator]\ngroup_size = 8\n",
        "lr": "[trainer.optim]\nlr = 3e-5\n[orchestrator]\ngroup_size = 8\n",
        "both": "[trainer.optim]\nlr = 6e-5\n[orchestrator]\ngroup_size = 4\n",
    }
    write_configs(root, configs)
    row = {"verdict": "inconclusive", "delta": "0.01", "decision": "discard"}
    rows = [
        LedgerRow.read({"run_id": "base", "reference_run": "", **row}),
        LedgerRow.read({"run_id": "lr", "reference_run": "base", **row}),
        LedgerRow.read({"run_id": "both", "reference_run": "base", **row}),
    ]
    by_key = {t["key"]: t["tries"] for t in memory.tried(rows)}
    assert [x["with"] for x in by_key["trainer.optim.lr"]] == [[], ["orchestrator.group_size"]]
    assert by_key["orchestrator.group_size"][0]["with"] == ["trainer.optim.lr"]
    lines = memory.tried_lines(memory.tried(rows))
    lr_line = next(ln for ln in lines if ln.startswith("  trainer.optim.lr:"))
    assert lr_line.endswith(
        "0.0001 -> 3e-05: inconclusive +0.0100, discard; 0.0001 -> 6e-05: inconclusive "
        "+0.0100, discard (with group_size)"
    )


def test_tried_shows_inherited_values_and_sources_by_name(root):
    """The 360 s night's agent read `orchestrator.train.source.1.sampling.temperature: None -> 0.5` where the
    source inherited 0.7: the memory compares the configs as the schema reads them (Track.config_keys), so an
    inherited value is the value it inherited and a source is named; a source that only followed the
    orchestrator's temperature is not a change of its own; the report's kept table says the same. A config
    this commit's schema refuses is compared as written, on both sides."""
    from autorl.commands import report
    from autorl.engine.track import get_track

    shipped = (REPO / "train.toml").read_text()
    configs = {
        "base": shipped,
        "cold": shipped + "\n[orchestrator.train.source.sampling]\ntemperature = 0.5\n",  # reverse's own
        "hot": shipped.replace("temperature = 0.7", "temperature = 1.0", 1),  # every source follows it
        "old": "[trainer.optim]\nlr = 1e-4\n",  # refused now (no source): as written
        "old2": "[trainer.optim]\nlr = 3e-5\n",
    }
    write_configs(root, configs)
    row = {"track": "llm", "verdict": "inconclusive", "delta": "0.01", "decision": "discard"}
    rows = [
        LedgerRow.read({"run_id": "base", "reference_run": "", **row}),
        LedgerRow.read({"run_id": "cold", "reference_run": "base", **row}),
        LedgerRow.read({"run_id": "old2", "reference_run": "old", **row}),
        LedgerRow.read({"run_id": "hot", "reference_run": "base", **row}),
    ]
    by_key = {t["key"]: t["tries"] for t in memory.tried(rows, get_track("llm"))}
    assert sorted(by_key) == [
        "orchestrator.train.sampling.temperature",
        "orchestrator.train.source.reverse.sampling.temperature",
        "trainer.optim.lr",
    ]
    [hot] = by_key["orchestrator.train.sampling.temperature"]
    assert (hot["from"], hot["value"], hot["with"]) == (0.7, 1.0, [])
    [cold] = by_key["orchestrator.train.source.reverse.sampling.temperature"]
    assert (cold["from"], cold["value"], cold["with"]) == (0.7, 0.5, [])
    [old] = by_key["trainer.optim.lr"]
    assert (old["from"], old["value"]) == (1e-4, 3e-5)
    lines = memory.tried_lines(memory.tried(rows, get_track("llm")))
    key = "  orchestrator.train.source.reverse.sampling.temperature: "
    assert f"{key}0.7 -> 0.5: inconclusive +0.0100, discard" in lines
    written = {t["key"]: t["tries"] for t in memory.tried(rows)}  # without the track: as written, as before
    assert written["orchestrator.train.source.1.sampling.temperature"][0]["from"] is None
    changes = report.config_changes(rows[1], rows[0])
    assert changes == "orchestrator.train.source.reverse.sampling.temperature: 0.7 -> 0.5"
    assert report.config_changes(rows[3], rows[0]) == "orchestrator.train.sampling.temperature: 0.7 -> 1.0"


def test_status_shows_what_the_next_decisions_cost_from_the_trials_measured_here(
    classic_runs, monkeypatch, capsys
):
    """The cost line: the median per-seed start-up, training and eval of the context's trials, and what the
    next trial, a 12-seed re-run and a confirm cost at the latest trial's parallelism."""
    from autorl.classic.track import ClassicTrack

    root, _, _ = classic_runs
    monkeypatch.setenv("AUTORL_ROOT", str(root))
    rows = Ledger(root / "results.tsv").rows()
    assert cli.main(["status", "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    per_seed = [
        [getattr(r, k) / len(r.seed_list) for r in rows]
        for k in ("startup_seconds", "training_seconds", "eval_seconds")
    ]
    seed = cost["seed"]
    assert [seed["startup"], seed["training"], seed["eval"]] == pytest.approx([sum(v) / 2 for v in per_seed])
    assert 2 <= seed["training"] < 4  # the fixture's budget is 2 s a seed
    parallel = rows[-1].parallel
    assert cost["parallel"] == parallel
    waves = -(-2 // parallel)
    assert cost["next_trial"] == {"seeds": 2, "seconds": pytest.approx(waves * seed["total"])}
    n = ClassicTrack().default_seeds
    assert cost["confirm"]["seconds"] == pytest.approx(-(-2 * n // parallel) * seed["total"])
    assert cost["rerun"]["seconds"] == pytest.approx(-(-12 // parallel) * seed["total"])
    assert cli.main(["status"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("cost here"))
    assert "(median of 2 trials)" in line and f"{parallel} at a time" in line and "a 12-seed re-run" in line


def test_status_sizes_the_confirm_of_the_best_keep_as_confirm_would(root, monkeypatch, capsys):
    """The cost line's confirm is the size `autorl confirm` picks for the best keep now (its seeds a side,
    power and cap), not the track's default seeds: the classic replay's status said "5 seeds a side 5 min"
    for a confirm that ran 16 a side."""
    from autorl.commands import confirm

    fake_trial(monkeypatch, root, capsys, "--budget", "0.3", quality=0.5)
    assert cli.main(["status", "--json"]) == 0
    assert "chosen_by" not in json.loads(capsys.readouterr().out)["cost"]["confirm"]  # only the baseline
    Ledger(root / "results.tsv").mark("keep", lesson="baseline")
    fake_trial(monkeypatch, root, capsys, "--budget", "0.3", "--seeds", "2", quality=0.56)
    Ledger(root / "results.tsv").mark("keep", lesson="a gain", reason="kept for the test")
    assert cli.main(["status", "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]["confirm"]
    base, best = Ledger(root / "results.tsv").rows()
    noise = stats.noise_floor([base, best], prior_sd=LLMTrack().seed_sd_prior)
    sized = confirm.size(best, base, [base, best], noise, 16, None)
    assert cost["seeds"] == 2 * sized.seeds and cost["chosen_by"] == sized.chosen_by
    assert cost["power"] == pytest.approx(sized.power)
    assert cli.main(["status"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("cost here"))
    assert f"a confirm of {sized.seeds} seeds a side" in line and "as autorl confirm sizes it" in line
    assert "budget: " not in out  # llm: the budget is the training time, nothing to add


def test_a_trial_says_its_expected_wall_time_from_the_comparable_trials_before_it(root, monkeypatch, capsys):
    backend = FakeBackend("ok", 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    assert trial.main(["--seeds", "3", "--parallel", "2", "--budget", "0.5"]) == 0
    # nothing measured yet: the least it takes, its waves of training (a replay's first trial said nothing)
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "expected: " in ln]
    assert line.endswith(
        "expected: at least 1 s (2 waves of 0.5 s training; the start-up and the evals are not measured here "
        "yet: the next trial's line has them)"
    )
    assert trial.main(["--seeds", "2", "--parallel", "1", "--budget", "0.5"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "expected: " in ln]
    (first, _) = Ledger(root / "results.tsv").rows()
    # two waves: the wall time of a wave is the trial's, less the base eval it ran (once a context), halved
    wave_s = (first.total_seconds - float((first.extras or {}).get("base_eval_seconds", 0))) / 2
    assert f"expected: ~{2 * wave_s:.0f} s (a seed " in line and "median of the 1 latest comparable" in line
    assert line.endswith("a config slower per seed takes longer, the early stop can end it sooner)")
    # all its seeds run whatever they show (--all-seeds): no early stop, so no upper bound
    assert trial.main(["--seeds", "2", "--parallel", "1", "--budget", "0.5", "--all-seeds"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "expected: " in ln]
    assert "early stop" not in line and line.endswith("trials here; a config slower per seed takes longer)")


def test_the_estimate_of_the_next_trial_is_the_wall_time_a_comparable_trial_took(root, monkeypatch, capsys):
    """The seeds' own figures leave time out: the classic track's in-training evaluations are off the training
    clock, and children exit and the runner works between seeds. A 5-seed classic trial that took 39.4 s
    was estimated at `<= 27 s` (2026-11-25). The estimate now counts each comparable trial's wall time per
    wave: after one trial, the next one at its seeds and parallelism is estimated at what that one took."""
    backend = FakeBackend("ok", 0.6, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    assert trial.main(["--seeds", "3", "--parallel", "1", "--budget", "0.3"]) == 0
    capsys.readouterr()
    (row,) = Ledger(root / "results.tsv").rows()
    assert cli.main(["status", "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    seed = cost["seed"]
    parts = seed["startup"] + seed["training"] + seed["eval"]
    assert seed["other"] > 0 and seed["total"] == pytest.approx(parts + seed["other"])
    # the wall time it took, less the base eval it ran (once a context: the row records its seconds)
    took = row.total_seconds - float(row.extras["base_eval_seconds"])
    assert cost["next_trial"] == {"seeds": 3, "seconds": pytest.approx(took, abs=0.06)}
    assert trial.main(["--seeds", "3", "--parallel", "1", "--budget", "0.3"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "expected: " in ln]
    assert f"expected: ~{took:.0f} s (a seed " in line
    assert "base_eval_seconds" not in (Ledger(root / "results.tsv").rows()[-1].extras or {})  # from the cache
    # a candidate given --seeds 1 does not set the next trial's seeds: run.py gives it the baseline's 3
    assert trial.main(["--seeds", "1", "--parallel", "1"]) == 0
    capsys.readouterr()
    assert cli.main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost"]["next_trial"]["seeds"] == 3


def test_the_start_up_a_trial_pays_once_is_not_charged_to_every_seed(root, monkeypatch, capsys):
    """A warm trial's first seed waits for its starter's imports and the others start at once (an LLM seed
    at --budget 90 on 2 cores: 15 s, then 0.3 s). The seeds' outcome.json split that into once a trial
    plus per seed: dividing the sum by the seeds made a 1-seed trial say 15 s a seed, and the estimate of
    a 6-seed trial grow by 5 x 15 s."""
    backend = FakeBackend("ok", 0.6, scripts_dir=root, modes={0: "slow_ready"})
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    assert trial.main(["--seeds", "3", "--parallel", "1", "--budget", "0.3"]) == 0
    capsys.readouterr()
    (row,) = Ledger(root / "results.tsv").rows()
    starts = [
        json.loads((root / "runs" / row.run_id / f"seed-{k}" / "outcome.json").read_text())["startup_seconds"]
        for k in range(3)
    ]
    assert starts[0] >= 1.5 > max(starts[1:])
    assert cli.main(["status", "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    seed = cost["seed"]
    assert seed["startup"] == pytest.approx(statistics.median(starts[1:]))
    assert seed["once"] == pytest.approx(starts[0] - seed["startup"])
    per_seed = seed["startup"] + seed["training"] + seed["eval"] + seed["other"]
    assert seed["total"] == pytest.approx(per_seed)
    assert cost["next_trial"] == {"seeds": 3, "seconds": pytest.approx(seed["once"] + 3 * per_seed)}
    took = row.total_seconds - float(row.extras["base_eval_seconds"])  # its base eval is paid once
    assert cost["next_trial"]["seconds"] == pytest.approx(took, abs=0.06)
    assert trial.main(["--seeds", "1", "--budget", "0.3"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if "expected: " in ln]
    assert f"(+ {seed['once']:.0f} s once a trial)" in line
    assert "early stop" not in line  # one seed is one wave: no look, nothing ends it sooner


def test_confirm_runs_both_sides_on_the_slots_and_reports_the_interval_of_its_test(
    classic_runs, monkeypatch, capsys
):
    """`autorl confirm` after a keep: both sides' seeds run in one pool on the machine's slots (the plan says
    how many at a time), and the interval is the 90% one: its low end is above zero exactly when p < 0.05."""
    from autorl.engine.slots import current_machine
    from autorl.record.sidetables import CONFIRMED

    root, _, cand = classic_runs
    monkeypatch.setenv("AUTORL_ROOT", str(root))
    Ledger(root / "results.tsv").mark("keep", lesson="lr 1e-3", reason="test of confirm")
    # --run: the candidate may score below the baseline after 2 s of training (then it is not the best kept)
    assert cli.main(["confirm", "--seeds", "1", "--run", cand["run_dir"].split("/")[-1]]) == 0
    out = capsys.readouterr().out
    at_once = min(2, current_machine().cpus)  # classic: one core per seed
    assert f"plan: 2 seed(s), {at_once} at a time" in out
    (row,) = CONFIRMED.read(root / "confirmed.tsv")
    low, high, p = float(row["ci_low"]), float(row["ci_high"]), float(row["p_value"])
    assert low < float(row["delta"]) < high
    assert (low > 0) == (p < stats.ALPHA)
    assert float(row["budget"]) == 2  # the trial's budget
    power = float(row["power"])  # recorded as printed: of 1 seed a side for the eval delta's low end
    assert 0 <= power < 1 and f"power: {power:.2f} for delta " in out
    # one eval delta: the size line's (each side pooled as a verdict pools it) is the one recorded and shown
    eval_delta = float(row["eval_delta"])
    assert f"eval delta {eval_delta:+.4f} (" in out and f"\neval_delta: {eval_delta:+.4f}\n" in out


def test_a_long_budget_confirm_trains_both_sides_longer(classic_runs, monkeypatch, capsys):
    """`autorl confirm --factor 2`: both sides at twice the trial's budget (classic: twice the score's
    horizon), recorded with that budget; --factor with --budget, or a budget below the trial's, refused
    with nothing run or recorded."""
    from autorl.record.sidetables import CONFIRMED

    root, _, cand = classic_runs
    monkeypatch.setenv("AUTORL_ROOT", str(root))
    run_id = cand["run_dir"].split("/")[-1]
    if Ledger(root / "results.tsv").find(run_id).decision != "keep":
        Ledger(root / "results.tsv").mark("keep", lesson="lr 1e-3", reason="test of confirm")
    before = CONFIRMED.read(root / "confirmed.tsv") if (root / "confirmed.tsv").exists() else []
    for bad, reason in (
        (["--factor", "2", "--budget", "5"], "give one"),
        (["--budget", "1"], "below the trial"),
    ):
        assert cli.main(["confirm", "--seeds", "1", "--run", run_id, *bad]) == 2
        assert reason in capsys.readouterr().err
    with pytest.raises(SystemExit):  # not longer than the trial: argparse refuses it
        cli.main(["confirm", "--factor", "0.5"])
    capsys.readouterr()
    assert cli.main(["confirm", "--seeds", "1", "--run", run_id, "--factor", "2"]) == 0
    out = capsys.readouterr().out
    assert "budget 4 s per seed (2x the trial's: a long-budget confirm)" in out
    rows = CONFIRMED.read(root / "confirmed.tsv")
    assert len(rows) == len(before) + 1 and float(rows[-1]["budget"]) == 4
    seed_dir = root / "runs" / rows[-1]["confirm_id"] / "candidate" / "seed-0"
    assert json.loads((seed_dir / "resolved.json").read_text())["harness"]["score_env_steps"] == 100_000


def test_a_stopped_confirm_keeps_its_seeds_and_resumes_under_its_plan(classic_runs, monkeypatch, capsys):
    """SIGINT after the first finished seed: exit 130, nothing recorded, the finished seeds kept and the
    command that goes on named; `--resume` runs only the others under the saved plan (its seeds, its size),
    then records; resuming again, resuming with other settings or an unknown id: exit 2."""
    import signal

    from autorl.record.sidetables import CONFIRMED

    root, _, cand = classic_runs
    run_id = cand["run_dir"].split("/")[-1]
    if Ledger(root / "results.tsv").find(run_id).decision != "keep":
        Ledger(root / "results.tsv").mark("keep", lesson="lr 1e-3", reason="test of confirm")
    before = CONFIRMED.read(root / "confirmed.tsv")
    one_cpu = min(os.sched_getaffinity(0))  # one seed at a time: the signal lands while the second trains
    proc = subprocess.Popen(
        [sys.executable, "-m", "autorl.commands.cli", "confirm", "--seeds", "2", "--run", run_id],
        cwd=REPO,
        env={**os.environ, "AUTORL_ROOT": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {one_cpu}),
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith(("[confirm] candidate: ", "[confirm] baseline: ")):  # the first seed finished
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=120)
    out = "".join(lines) + rest
    assert proc.returncode == 130, out
    confirm_id = out.split("[confirm] ")[1].split(":")[0]
    assert f"`uv run autorl confirm --resume {confirm_id}` runs the rest" in out
    assert CONFIRMED.read(root / "confirmed.tsv") == before  # nothing recorded
    plan = json.loads((root / "runs" / confirm_id / "plan.json").read_text())
    # the child read the machine's real CPU pressure, pinned to one CPU beside the suite: its seeds may read
    # contended (conftest's quiet_machine reaches this process only); this test is of the resume
    for outcome in (root / "runs" / confirm_id).glob("*/seed-*/outcome.json"):
        outcome.write_text(json.dumps({**json.loads(outcome.read_text()), "cpu_wait_share": None}))

    monkeypatch.setenv("AUTORL_ROOT", str(root))
    assert cli.main(["confirm", "--resume", confirm_id]) == 0
    out = capsys.readouterr().out
    done = int(out.split("resumed: ")[1].split()[0])
    assert 1 <= done < 4 and f"{4 - done} to run" in out and f"plan: {4 - done} seed(s)" in out
    (row,) = CONFIRMED.read(root / "confirmed.tsv")[len(before) :]
    assert row["confirm_id"] == confirm_id and [int(s) for s in row["seeds"].split(",")] == plan["seeds"]
    assert row["status"] == "ok" and "seeds_per_side: 2 (--seeds)" in out
    for side in ("candidate", "baseline"):
        for k in range(2):
            assert (root / "runs" / confirm_id / side / f"seed-{k}" / "eval.jsonl").exists()
    for argv, reason in (
        (["--resume", confirm_id], "already recorded"),
        (["--resume", confirm_id, "--seeds", "3"], "its own plan"),
        (["--resume", "confirm-nope"], "plan.json is missing"),
        (["--resume", "confirm-bad"], "not a confirm's plan"),
    ):
        if argv[1] == "confirm-bad":
            (root / "runs" / "confirm-bad").mkdir()
            (root / "runs" / "confirm-bad" / "plan.json").write_text('{"confirm_id": "confirm-bad"}')
        assert cli.main(["confirm", *argv]) == 2
        assert reason in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- flags


def test_reward_collapse_is_flagged_on_a_run_that_collapses_only(root, monkeypatch, capsys):
    collapsed = fake_trial(monkeypatch, root, capsys, "--budget", "1.5", mode="collapse")
    assert collapsed["health/reward_collapse"].startswith("reward collapsed on 1/1 seeds (seed-0: ")
    steady = fake_trial(monkeypatch, root, capsys, "--budget", "1.5")
    assert "reward_collapse" not in flag_names(steady)


def test_a_reward_that_falls_from_its_first_steps_is_a_collapse():
    """lr 5e-4 on the default (docs/train-toml.md): the reward fell within ~60 steps and never rose; the
    smoothed curve starts at its peak. A flat noisy reward, and a small decline, are not collapses."""
    steps = list(range(1, 1201))
    cliff = [0.3 * 0.97**s + 0.02 for s in steps]
    assert runview.Curve.of("reward", steps, cliff).collapsed
    flat = [0.35 + 0.02 * ((s * 7919) % 11 - 5) / 5 for s in steps]
    assert not runview.Curve.of("reward", steps, flat).collapsed
    slow = [0.35 - 0.03 * s / 1200 for s in steps]
    assert not runview.Curve.of("reward", steps, slow).collapsed


def test_a_noisy_peak_that_gives_back_a_tenth_is_not_a_collapse():
    """A healthy seed of the default at --budget 90 (lr 1.5e-5, 2026-11-25) rose 0.307 -> 0.366 at step
    1105 and ended at 0.326: an 11% fall from a smoothed peak that the noise lifts. It was flagged as a
    collapse; it is not one. A seed past the lr cliff that rose a little, then lost most of its reward,
    still is."""
    steps = list(range(1, 1301))
    # up 0.307 -> 0.366 by step 700, held, down to 0.326 over steps 900-1000, held
    noisy_peak = [0.307 + 0.059 * min(s, 700) / 700 - 0.04 * min(max(0, s - 900), 100) / 100 for s in steps]
    curve = runview.Curve.of("reward", steps, noisy_peak)
    assert curve.peak - curve.end > 0.5 * (curve.peak - curve.start)  # gave back over half its rise...
    assert not curve.collapsed  # ...but a tenth of its size
    cliff = [0.12 + 0.01 * min(s, 60) / 60 - 0.08 * max(0, s - 60) / 1240 for s in steps]
    assert runview.Curve.of("reward", steps, cliff).collapsed


def test_few_steps_is_flagged_when_the_budget_holds_only_a_handful(root, monkeypatch, capsys):
    short = fake_trial(monkeypatch, root, capsys, "--budget", "0.2")
    assert int(short["steps"]) < runview.THRESHOLDS.min_steps
    assert short["health/few_steps"].startswith(f"only {short['steps']} steps fit the budget")
    longer = fake_trial(monkeypatch, root, capsys, "--budget", "1.5")
    assert int(longer["steps"]) >= runview.THRESHOLDS.min_steps
    assert "few_steps" not in flag_names(longer)


def test_a_config_that_ends_training_on_its_own_is_flagged(root, monkeypatch, capsys):
    """Seeds that all end training on their own well inside a wall-clock budget (the recorded session's keep
    stopped at max_steps 700 after ~85 of 90 s) say the config has its own limit; a budget-bound trial and
    the classic track (whose seeds end at their step horizon by design) do not."""
    from autorl.engine.track import training_budget

    ended = fake_trial(monkeypatch, root, capsys, "--budget", "5", mode="finish")  # exits at step 20
    text = ended["health/stops_itself"]
    # one seed is "its seed", not "all 1 seeds" (a replay's trial stopped early after 1/6 read so)
    assert text.startswith("its seed ended training on its own after") and "s of the 5 s budget" in text
    assert "(20 steps: the config's own limit" in text
    bound = fake_trial(monkeypatch, root, capsys, "--budget", "0.5")
    assert "stops_itself" not in flag_names(bound)
    assert training_budget("llm", 90.0) == 90.0 and training_budget("classic", 600.0) is None
    assert cli.main(["show", ended["run_dir"].split("/")[-1]]) == 0  # autorl show raises it too
    assert "health: its seed ended training on its own" in capsys.readouterr().out


def test_a_score_below_the_untrained_base_is_flagged(root, monkeypatch, capsys):
    worse = fake_trial(monkeypatch, root, capsys, "--budget", "0.5", quality=0.2)
    assert float(worse["eval_score"]) < float(worse["base_score"])
    assert worse["health/below_base"].startswith("eval_score 0.2")
    moved = float(worse["eval_score"]) - float(worse["base_score"])
    assert worse["vs_base"] == f"{moved:+.4f} (eval_score - base_score)" and moved < 0
    better = fake_trial(monkeypatch, root, capsys, "--budget", "0.5", quality=0.6)
    assert "below_base" not in flag_names(better)


def test_a_crash_cause_is_shown(root, monkeypatch, capsys):
    """The summary's `error` line names the seeds' cause (program.md's grep reads it); `autorl show` names
    each cause once, with the seeds it ended."""
    s = fake_trial(monkeypatch, root, capsys, "--budget", "5", "--seeds", "2", mode="crash")
    assert s["status"] == "crash"
    crashed = len(s["seeds"].split(","))
    assert s["error"] == (
        "RuntimeError: CUDA out of memory (simulated) "
        f"({crashed} of {crashed} seeds; autorl show: each seed's)"
    )
    assert cli.main(["show"]) == 0
    out = capsys.readouterr().out
    seeds = ", ".join(f"seed-{k}" for k in range(crashed))
    assert f"cause {seeds}: RuntimeError: CUDA out of memory (simulated)" in out
    assert out.count("CUDA out of memory (simulated)") == 1


def test_zero_advantage_and_truncation_flags(root, monkeypatch, capsys):
    """The test double logs the embedded trainer's `zero_adv_frac` and `truncated_frac` (0.8 and 0.6 in its
    `nosignal` mode, 0.1 and 0.05 otherwise): the flags follow the thresholds; `show` prints the shares."""
    flat = fake_trial(monkeypatch, root, capsys, "--budget", "0.5", mode="nosignal")
    assert flat["health/zero_advantage"].startswith("80% of groups had zero advantage")
    assert flat["health/truncated"] == "60% of completions were cut at max_completion_tokens"
    assert cli.main(["show"]) == 0
    out = capsys.readouterr().out
    assert "zero-adv 80%; truncated 60%" in out and "health: 80% of groups had zero advantage" in out
    fine = fake_trial(monkeypatch, root, capsys, "--budget", "0.5")
    assert not {"zero_advantage", "truncated"} & flag_names(fine)


# ---------------------------------------------------------------------------------------------- seeds needed


def _simulation():
    spec = importlib.util.spec_from_file_location(
        "simulate_decisions", REPO / "scripts" / "simulate_decisions.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_trial_beside_busy_work_is_flagged_contended(root, monkeypatch, capsys, cpu_pressure):
    """The runner reads the machine's CPU stall counter (/proc/pressure/cpu) when each seed's clock starts and
    ends: a trial that trains while more busy processes than CPUs run beside it says so in a health line (its
    score may be the machine's), the share in the seed's outcome.json; the same seeds at a quiet share would
    raise nothing."""
    if process.cpu_stall_us() is None:
        pytest.skip("this kernel reports no CPU pressure (/proc/pressure/cpu)")
    assert process.cpu_wait_share(1_000_000, 1_500_000, 2.0) == 0.25  # 0.5 s of waiting in 2 s
    assert process.cpu_wait_share(None, 5, 1.0) is None and process.cpu_wait_share(1, 5, 0.0) is None
    spin = [sys.executable, "-c", "while True: pass"]
    busy = [subprocess.Popen(spin) for _ in range((os.cpu_count() or 1) + 1)]
    try:
        loaded = fake_trial(monkeypatch, root, capsys, "--budget", "1.0")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    text = loaded["health/contended"]
    assert text.startswith("1/1 seeds trained while tasks on this machine waited for a CPU (seed-0: ")
    (recorded,) = Ledger(root / "results.tsv").rows()
    assert recorded.contended and not recorded.measured  # the ledger's health column names the flag
    seeds = runview.load_seeds(root / loaded["run_dir"])
    outcome = json.loads((root / loaded["run_dir"] / "seed-0" / "outcome.json").read_text())
    assert seeds[0].cpu_wait_share == outcome["cpu_wait_share"] >= runview.THRESHOLDS.contended
    assert cli.main(["show"]) == 0  # the share on the seed's line
    assert f"CPU wait {outcome['cpu_wait_share']:.0%}" in capsys.readouterr().out
    at = runview.THRESHOLDS.contended
    quiet = [dataclasses.replace(s, cpu_wait_share=at - 0.01) for s in seeds]
    assert "contended" not in {f.name for f in runview.health_flags(quiet, None, None)}
    edge = [dataclasses.replace(s, cpu_wait_share=at) for s in seeds]
    assert "contended" in {f.name for f in runview.health_flags(edge, None, None)}


def test_the_cpu_pressure_is_read_from_the_file_autorl_cpu_pressure_names(tmp_path, monkeypatch):
    """A container's own pressure file in place of the machine's; empty (the suite's children): none read."""
    psi = tmp_path / "cpu.pressure"
    psi.write_text("some avg10=1.00 avg60=0.50 avg300=0.10 total=4242\nfull avg10=0 avg60=0 total=7\n")
    monkeypatch.setenv(process.PRESSURE_VAR, str(psi))
    assert process.cpu_stall_us() == 4242
    monkeypatch.setenv(process.PRESSURE_VAR, str(tmp_path / "absent"))
    assert process.cpu_stall_us() is None
    monkeypatch.setenv(process.PRESSURE_VAR, "")
    assert process.cpu_stall_us() is None


def test_seeds_needed_gives_the_power_it_promises_in_the_simulation():
    """Pilot comparisons at 3 seeds a side, with the true gain as the delta: the median of seeds_needed (both
    sides) is the number of seeds at which scripts/simulate_decisions.py's worlds detect that gain about
    POWER of the time; half of it falls well short."""
    sim = _simulation()
    args = argparse.Namespace(
        envs=1,
        examples=200,
        samples=1,
        seed_sd=0.02,
        gain=0.05,
        base=0.5,
        difficulty_sd=1.5,
        interaction_sd=0.5,
        worlds=300,
        all_seeds=True,
    )
    world = sim.World(args, np.random.default_rng(1))
    needed = []
    for _ in range(30):
        diff = world.eval_set()
        ref, repeat = world.trial(diff, 3), world.trial(diff, 3)
        scores = [sim.seed_score(t, i) for t in (ref, repeat) for i in range(3)]
        nf = stats.NoiseFloor(stats.DEFAULT_SEED_SD, stats.PRIOR_DF).with_scores(scores)
        pilot = stats.compare_tables(world.trial(diff, 3, shift=world.shift), ref, nf)
        n = stats.seeds_needed(dataclasses.replace(pilot, delta=args.gain), both_sides=True)
        needed.append(n if n is not None else stats.MAX_SEEDS_NEEDED + 1)
    n = round(statistics.median(needed))
    assert 3 <= n <= 20
    power = sim.simulate(args, n, args.seed_sd, args.examples, 5)["none"]["power"]
    assert stats.POWER - 0.12 <= power <= stats.POWER + 0.13, (n, power)
    half = sim.simulate(args, max(1, n // 2), args.seed_sd, args.examples, 6)["none"]["power"]
    assert half < stats.POWER - 0.15, (n, half)


def test_an_inconclusive_summary_says_how_many_seeds_its_delta_needs(root, monkeypatch, capsys):
    """The figure in the summary is stats.seeds_needed of the comparison the verdict made (recomputed here
    from the two trials' eval rows and the ledger's noise floor, as the runner does)."""
    from autorl.engine.result import seeds_needed_text
    from autorl.io.jsonl import read_jsonl

    ref = fake_trial(monkeypatch, root, capsys, "--budget", "0.3", quality=0.5)
    s = fake_trial(monkeypatch, root, capsys, "--budget", "0.3", quality=0.52)
    assert s["verdict"] == "inconclusive"
    ledger_rows = Ledger(root / "results.tsv").rows()[:1]
    noise = stats.noise_floor(ledger_rows, prior_sd=LLMTrack().seed_sd_prior)
    c = stats.compare(
        read_jsonl(root / s["run_dir"] / "eval.jsonl"),
        read_jsonl(root / ref["run_dir"] / "eval.jsonl"),
        noise,
    )
    assert f"{c.delta:+.4f}" == s["delta"]
    assert s["seeds_needed"] == seeds_needed_text(c)
    assert f"for delta {s['delta']} at one-sided alpha 0.05 with power 80%" in s["seeds_needed"]
    # Tiny gain, one seed on each side: the reference's single seed cannot carry it, both sides must grow.
    assert "seeds on each side" in s["seeds_needed"]


def test_seeds_needed_names_no_rerun_for_a_delta_that_is_no_gain():
    """A negative delta: more seeds could at best decide it `worse`, so the line says no re-run applies
    instead of a seed count (the classic replay read "22 seeds on each side for delta -0.0265")."""
    import dataclasses

    from autorl.engine.result import seeds_needed_text

    c = stats.Comparison(0.03, 0.2, "inconclusive", 100, "welch", 0.03, 8.0, 5, 5)
    assert "candidate seeds" in seeds_needed_text(c) or "seeds on each side" in seeds_needed_text(c)
    for delta in (-0.0265, 0.0):
        text = seeds_needed_text(dataclasses.replace(c, delta=delta, p_value=0.8))
        assert text.startswith("none: delta") and "no re-run" in text, text
    assert stats.seeds_needed(dataclasses.replace(c, delta=-0.03), both_sides=True) is not None  # hidden


def test_the_summary_prints_the_levels_its_verdict_was_judged_at(root, monkeypatch, capsys):
    """`levels`: the p_value `improved` needed and the 1 - p_value `worse` needed at the look the verdict
    was made at (stats.levels); the printed verdict is the one those levels give."""
    import re

    fake_trial(monkeypatch, root, capsys, "--budget", "0.3", quality=0.5)
    for quality, seeds in ((0.52, "1"), (0.9, "3"), (0.1, "3")):
        s = fake_trial(monkeypatch, root, capsys, "--budget", "0.3", "--seeds", seeds, quality=quality)
        m = re.fullmatch(
            r"improved needs p_value < (\S+), worse needs 1 - p_value < (\S+)( and 2 seeds)? "
            r"\(look (\d+) of (\d+)\)",
            s["levels"],
        )
        assert m, s["levels"]
        improved, worse = stats.levels(int(m[4]), int(m[5]))
        assert float(m[1]) == pytest.approx(improved, rel=1e-3) and float(m[2]) == pytest.approx(
            worse, rel=1e-3
        )
        one_seed = m[3] is not None  # `worse` needs stats.MIN_SEEDS_WORSE candidate seeds
        assert one_seed == (len(s["seeds"].split(",")) < 2)
        p, delta = float(s["p_value"]), float(s["delta"])
        expected = (
            "improved"
            if delta > 0 and p < improved
            else "worse"
            if delta < 0 and 1 - p < worse and not one_seed
            else "inconclusive"
        )
        assert s["verdict"] == expected, s
    assert stats.levels(1, 1) == (stats.ALPHA, stats.WORSE_ALPHA)
    assert stats.levels(3, 3)[0] == stats.final_alpha(3) and stats.levels(1, 3)[0] == stats.efficacy_alpha(
        1, 3
    )


def test_status_does_not_count_the_baseline_repeat_as_a_trial_not_kept(root, monkeypatch, capsys):
    """program.md's setup: the baseline, kept, then its repeat, discarded: the repeat's summary says it is
    one (its verdict is chance), and it is neither a decided trial of the keep rate nor a trial since the
    last keep."""
    fake_trial(monkeypatch, root, capsys, "--budget", "0.3", "--description", "baseline")
    Ledger(root / "results.tsv").mark("keep", lesson="baseline")
    # The test double scores by `quality`, not by the config: the repeat of the same config comes out ahead,
    # as chance can make it, and its summary says what such a verdict is.
    again = fake_trial(
        monkeypatch, root, capsys, "--budget", "0.3", "--all-seeds", "--description", "repeat", quality=0.9
    )
    assert again["verdict"] == "improved"
    first = Ledger(root / "results.tsv").rows()[0].run_id
    assert again["note"].startswith(
        f"this trial ran the reference's own config ({first}): a repeat, no idea (`improved` here is chance: "
        "the two sides ran one config); its seeds join the reference's"
    )
    Ledger(root / "results.tsv").mark("discard", lesson="baseline repeat: noise floor")
    assert cli.main(["status", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert len(st["baseline_repeats"]) == 1
    assert st["keep_rate"] == {"kept": 0, "decided": 0}  # the baseline is not an idea kept
    assert (
        "keep rate: 0/0 (ideas decided, each config once; the baseline and its repeats not counted)"
        in status.render(st)
    )
    assert st["since_last_keep"] == 0 and st["not_kept_streak"] == 0
    # The best kept's own score is not the bar of the next delta: its config's two trials pooled are.
    scores = [s for r in Ledger(root / "results.tsv").rows() for s in r.per_seed_scores()]
    assert st["best_pooled"] == [2, 2, pytest.approx(statistics.fmean(scores))]
    assert (
        f"  its config's 2 trials pooled (2 seeds): {statistics.fmean(scores):.4f}, the bar of a delta"
        in status.render(st).splitlines()
    )


def test_a_keep_is_repeated_before_the_next_idea(root, monkeypatch, capsys):
    """program.md: the reference's config runs twice before an idea is compared with it (the baseline in the
    setup, each keep after it). An `improved` idea's note names its repeat's command, `status` names it
    while the reference ran once, and the repeat run by that command joins the bar: its seeds pooled, no
    idea decided, no dead idea's cost."""
    fake_trial(monkeypatch, root, capsys, "--budget", "0.3", "--description", "baseline", quality=0.3)
    ledger = Ledger(root / "results.tsv")
    ledger.mark("keep", lesson="baseline")
    base = ledger.rows()[0].run_id
    assert cli.main(["status"]) == 0
    due = "  its config ran once (1 seed): run its repeat before the next idea (program.md): uv run run.py "
    assert due + f'--track llm --all-seeds --rerun {base} --description "repeat of {base}"' in (
        capsys.readouterr().out.splitlines()
    )
    fake_trial(monkeypatch, root, capsys, "--budget", "0.3", "--all-seeds", "--rerun", base, quality=0.3)
    ledger.mark("discard", lesson="baseline repeat: noise floor")
    (root / "train.toml").write_text(TRAIN_TOML.replace("max_steps = 100", "max_steps = 101"))
    idea = fake_trial(monkeypatch, root, capsys, "--budget", "0.3", "--description", "idea", quality=0.9)
    assert idea["verdict"] == "improved"
    kept = ledger.rows()[-1].run_id
    command = f'uv run run.py --track llm --all-seeds --rerun {kept} --description "repeat of {kept}"'
    assert f"if you keep it, run its repeat next ({command}, then mark it discard)" in idea["note"]
    ledger.mark("keep", lesson="idea")
    assert cli.main(["status", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["best"]["run_id"] == kept and st["best_repeat_due"]
    assert due + command.removeprefix("uv run run.py ") in status.render(st).splitlines()

    args = shlex.split(command)[3:]  # the command as a shell splits it, after `uv run run.py`
    again = fake_trial(monkeypatch, root, capsys, "--budget", "0.3", *args, quality=0.9)
    assert again["note"].startswith(f"this trial ran the reference's own config ({kept}): a repeat")
    assert "if you keep it" not in again["note"]
    ledger.mark("discard", lesson="keep repeat")
    assert cli.main(["status", "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert not st["best_repeat_due"] and st["best_pooled"][:2] == [2, 2]
    assert "its config ran once" not in status.render(st)
    assert st["keep_rate"] == {"kept": 1, "decided": 1}  # neither repeat is an idea
    assert st["cost"]["dead_idea"] is None  # nor a dead one: no idea was discarded


def test_a_repeat_whose_seeds_train_at_another_pace_says_the_machine_moved(root, monkeypatch, capsys):
    """A repeat of the reference's config whose seeds step three times slower (the test double's FAKE_STEP_S:
    a slower machine, the config the same): its note says the pace moved and by how much; a repeat at the
    same pace, and an idea (another config, whose pace is its own), say nothing of it."""
    monkeypatch.setenv("FAKE_STEP_S", "0.05")  # long steps: the runner's own jitter is small beside them
    fake_trial(monkeypatch, root, capsys, "--budget", "1", "--description", "baseline")
    Ledger(root / "results.tsv").mark("keep", lesson="baseline")
    same = fake_trial(monkeypatch, root, capsys, "--budget", "1", "--all-seeds")
    assert "steps a second" not in same["note"]
    monkeypatch.setenv("FAKE_STEP_S", "0.15")
    slow = fake_trial(monkeypatch, root, capsys, "--budget", "1", "--all-seeds")
    said = re.search(
        r"its seeds trained ([\d.]+) steps a second, its config's earlier trials ([\d.]+) \(-", slow["note"]
    )
    assert said and float(said[1]) < 0.5 * float(said[2]), slow["note"]
    assert "this machine's speed moved (no other work flagged)" in slow["note"]
    assert "a trial now trains less than the trials before it did" in slow["note"]
    (root / "train.toml").write_text(TRAIN_TOML.replace("max_steps = 100", "max_steps = 101"))
    idea = fake_trial(monkeypatch, root, capsys, "--budget", "1")
    assert "steps a second" not in idea.get("note", "")


def test_each_interim_look_prints_one_line(root, monkeypatch, capsys):
    """A candidate of 3 seeds, one at a time, against a reference: a line per interim look (seeds done, delta,
    p, the efficacy boundary, continue or stop), in the output an agent redirects to run.log."""
    import re

    fake_trial(monkeypatch, root, capsys, "--budget", "0.3", quality=0.5)
    backend = FakeBackend("ok", 0.55, scripts_dir=root)
    monkeypatch.setattr(LLMTrack, "make_backend", lambda self, name: backend)
    trial.main(["--budget", "0.3", "--seeds", "3"])
    out = capsys.readouterr().out
    looks = re.findall(
        r"interim look (\d) of 3 after (\d)/3 seeds: delta \+0\.\d{4}, p \S+, efficacy boundary \S+: (\w+)",
        out,
    )
    assert looks and looks[0][:2] == ("1", "1")
    assert [x[2] for x in looks] == ["continue"] * (len(looks) - 1) + [looks[-1][2]]
    assert len(looks) == 2 or looks[-1][2] == "stop"


@pytest.mark.parametrize("n", [1, 2, 5, 40])
def test_progress_labels_stay_inside_the_figure_at_any_ledger_length(n):
    """Kept trials with long descriptions, rising scores (the last ones at the top right corner): every
    label drawn by `autorl report` lies inside the plot's axes (before, labels ran off to the right and
    tight_layout shrank the axes to make room, or they left the figure)."""
    from autorl.commands import report

    rows = [
        LedgerRow.read(
            {
                "run_id": f"r{i}",
                "track": "llm",
                "status": "ok",
                "decision": "keep",
                "eval_score": f"{0.1 + 0.8 * i / max(n - 1, 1):.4f}",
                "eval_ci_low": f"{0.05 + 0.8 * i / max(n - 1, 1):.4f}",
                "eval_ci_high": f"{0.15 + 0.8 * i / max(n - 1, 1):.4f}",
                "base_score": "0.1",
                "description": f"trial {i}: " + "a long hypothesis about the learning rate " * 5,
            }
        )
        for i in range(n)
    ]
    fig = report.figure(rows)
    # every row is kept and none has a verdict: the first is the baseline, the rest count as keeps (status's)
    assert f"{n} trials (llm track), the baseline and {n - 1} kept, 0 failed" in fig.axes[0].get_title()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.axes[0].get_window_extent(renderer)
    assert box.width > 0.8 * fig.bbox.width  # the axes keep the figure's width
    labels = fig.axes[0].texts
    assert len(labels) == n
    for label in labels:
        ext = label.get_window_extent(renderer)
        assert box.x0 <= ext.x0 and ext.x1 <= box.x1 and box.y0 <= ext.y0 and ext.y1 <= box.y1, (
            label.get_text()
        )
        # above every other trial's mark, error bar and line, on a pale box: none crosses its text
        marks = [*fig.axes[0].collections, *fig.axes[0].lines]
        assert label.get_zorder() > max(m.get_zorder() for m in marks)
        patch = label.get_bbox_patch()
        assert patch is not None and patch.get_facecolor()[:3] == (1.0, 1.0, 1.0) and patch.get_alpha() >= 0.5


def test_a_seed_outcome_has_one_shape_for_its_writer_and_its_readers(tmp_path):
    """outcome.json through its model (autorl/record/outcome.py): what the writer records the readers get
    back typed; a file a crash left half-written, or a field of the wrong type, reads as nothing known."""
    from autorl.record.outcome import SeedOutcome, seed_outcomes

    written = SeedOutcome(seed=7, status="ok", stop_reason="budget", steps=12, slot=[0], slot_held=(1.0, 2.5))
    written.write(tmp_path / "seed-0")
    (tmp_path / "seed-1").mkdir()
    (tmp_path / "seed-1" / "outcome.json").write_text('{"seed": 8, "status": "ok", "ste')  # cut mid-write
    (tmp_path / "seed-2").mkdir()
    (tmp_path / "seed-2" / "outcome.json").write_text('{"seed": "eight", "status": "ok"}')
    first, cut, wrong = seed_outcomes(tmp_path)
    assert first == written and first.slot_held == (1.0, 2.5)
    assert cut == SeedOutcome() and cut.status == "?" and wrong.status == "?"
    view = runview.load_seed(tmp_path / "seed-0", 0)  # the health flags' reader
    assert (view.status, view.stop_reason, view.steps) == ("ok", "budget", 12)


def test_a_contended_or_interrupted_trial_decides_nothing_and_sets_no_bar(root, monkeypatch):
    """The replay of 2026-12-02: a contended baseline discarded and run again, its repeat, a keep, the same
    idea contended twice (discarded, as program.md says: not measured), a crash, an interrupted trial. The
    run again is the baseline for confirm, report and the repeats; the contended trials are no decided idea,
    no tried value, no comparison, no noise-floor or reference sample; the crash is a tried value."""
    from autorl.commands import confirm, report
    from autorl.record.context import ResearchContext, baseline, baseline_repeats, same_config

    monkeypatch.setattr(status, "confirm_plan", lambda *a: None)  # sizing reads eval rows: not this test's
    configs = {
        "b0": "[trainer.optim]\nlr = 1e-4\n",
        "b1": "[trainer.optim]\nlr = 1e-4\n",
        "rep": "[trainer.optim]\nlr = 1e-4\n",
        "lr": "[trainer.optim]\nlr = 3e-5\n",
        "big1": "[trainer.optim]\nlr = 3e-5\n[orchestrator]\nbatch_size = 128\n",
        "big2": "[trainer.optim]\nlr = 3e-5\n[orchestrator]\nbatch_size = 128\n",
        "boom": "[trainer.optim]\nlr = 1e-2\n",
        "cut": "[trainer.optim]\nlr = 5e-5\n",
    }
    write_configs(root, configs)
    same = {"track": "llm", "eval_hash": "e", "harness_hash": "h", "budget": "30", "status": "ok"}
    scored = {"eval_score": "0.41", "eval_ci_low": "0.39", "eval_ci_high": "0.43"}

    def row(run_id, config, **cells):
        seeds = cells.pop("seed_scores", "1=0.40 2=0.42")
        return LedgerRow.read(
            {**same, **scored, "run_id": run_id, "config_hash": config, "seed_scores": seeds, **cells}
        )

    contended = {"health": "contended", "decision": "discard", "lesson": "contended: not measured"}
    rows = [
        row("b0", "base", verdict="baseline", seed_scores="1=0.10 2=0.70", eval_score="0.45", **contended),
        row("b1", "base", verdict="baseline", decision="keep"),
        row("rep", "base", verdict="inconclusive", reference_run="b1", delta="0.0", decision="discard"),
        row(
            "lr",
            "lr",
            verdict="improved",
            reference_run="b1",
            delta="0.06",
            decision="keep",
            eval_score="0.46",
        ),
        row("big1", "big", verdict="improved", reference_run="lr", delta="0.02", **contended),
        row("big2", "big", verdict="inconclusive", reference_run="lr", delta="0.01", **contended),
        row("boom", "boom", status="crash", verdict="n/a", decision="crash", eval_score=""),
        row("cut", "cut", status="interrupted", verdict="n/a", decision="discard", eval_score=""),
    ]
    ctx = ResearchContext.of(rows[0])
    assert baseline(rows).run_id == "b1" and confirm.baseline_of(rows).run_id == "b1"
    assert baseline_repeats(rows) == {"b0", "rep"}
    assert "| 2 | b1 |" in report.kept_table(rows) and "(baseline)" in report.kept_table(rows)
    points = [(x, r.eval_score, r) for x, r in enumerate(rows, 1) if r.scored]
    assert report.running_best(points, baseline(rows)) == ([2, 3, 4, 5, 6], [0.41, 0.41, 0.46, 0.46, 0.46])
    fig, ax = report.plt.subplots()
    assert report.unscored_marks(ax, [(x, r) for x, r in enumerate(rows, 1) if not r.scored], points) == 1
    assert sorted(c.get_label() for c in ax.collections) == ["crash / timeout", "interrupted (not measured)"]
    report.plt.close(fig)
    assert [r.run_id for r in same_config(rows, ctx, rows[1])] == ["rep"]  # b0's seeds join no pool
    nf = stats.noise_floor(rows, ctx)  # b1 with rep, and lr alone (2 seeds); b0's 0.10 and 0.70 left out
    assert nf.n_runs == 3 and nf.ss == pytest.approx(0.0004 + 0.0002)
    by_key = {t["key"]: t["tries"] for t in memory.tried(rows)}
    assert "orchestrator.batch_size" not in by_key  # measured nothing
    assert [(x["value"], x["verdict"], x["decision"]) for x in by_key["trainer.optim.lr"]] == [
        (3e-05, "improved", "keep"),
        (0.01, "crash", "crash"),  # against the best kept before it
    ]
    for r in rows:  # the view reads the ledger file
        Ledger(root / "results.tsv").append(r.as_dict())
    st = status.collect(Ledger(root / "results.tsv").rows())
    assert st["keep_rate"] == {"kept": 1, "decided": 1}  # lr; not big1, big2 (contended) or cut
    assert st["since_last_keep"] == 1 and st["not_kept_streak"] == 1  # the crash alone
    assert st["chance"]["comparisons"] == 2 and st["chance"]["improved"] == 1  # rep and lr
    # a trial that measured nothing says so in the table, whatever its description (the lesson is the agent's)
    text = status.render(st).split("trials (oldest first):\n")[1].split("lessons (oldest first)")[0]
    table = {ln.split()[0]: ln for ln in text.splitlines()[1:] if ln.startswith("  ")}
    assert "contended, not measured:" in table["big1"] and "not measured" not in table["lr"]
    assert next(r for r in st["last"] if r["run_id"] == "big1")["health"] == ["contended"]


def test_show_of_a_many_seed_trial_counts_the_seeds_it_does_not_list(root, monkeypatch, capsys):
    """Nine seeds: eight seed lines and a count of the ninth; each eval env's line lists six seeds' scores and
    counts the other three (before, it cut the list at six and said nothing)."""
    fake_trial(monkeypatch, root, capsys, "--budget", "0.2", "--seeds", "9", "--all-seeds")
    assert cli.main(["show"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(ln.startswith("  seed-") for ln in lines) == show.MAX_SEED_LINES == 8
    assert "  ... 1 more seeds (--png draws them all)" in lines
    envs = [ln for ln in lines if ln.startswith("  eval/")]
    assert envs and all(re.search(r"\(seeds( \d\.\d{3}){6} … 3 more\)", ln) for ln in envs), envs


def test_the_tried_list_writes_a_key_the_reference_does_not_set_as_report_does():
    """A replay read `trainer.scheduler.decay_steps: None -> 700` in status and `- -> 700` in the report:
    the key was not set, not set to None. Both write `-` now; --json keeps null."""
    tried = [
        {
            "key": "trainer.scheduler.decay_steps",
            "tries": [
                {"from": None, "value": 700, "verdict": "improved", "delta": 0.0254, "decision": "keep"}
            ],
        }
    ]
    lines = memory.tried_lines(tried)
    assert "(-: not set)" in lines[0]
    assert lines[1] == "  trainer.scheduler.decay_steps: - -> 700: improved +0.0254, keep"
