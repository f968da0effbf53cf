"""`autorl fidelity`: the rank statistics against scipy on known inputs, a real run on the classic track at
tiny budgets (recorded, drawn, resumed after a SIGINT without re-running a finished seed), and bad input
refused with nothing recorded."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats as sps

from autorl.commands import cli, fidelity
from autorl.commands.trial import main as run_py
from autorl.commands.tune import parse_summary
from autorl.engine import warm
from autorl.record import ranking
from autorl.record.ledger import Ledger
from autorl.record.row import LedgerRow
from autorl.record.sidetables import FIDELITY

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "classic.toml"


def test_rank_statistics_are_scipy_s_on_known_inputs():
    short, long = [0.1, 0.2, 0.3, 0.4], [0.15, 0.35, 0.25, 0.30]
    got = ranking.rank_stats(short, long)
    assert got["rho"] == pytest.approx(sps.spearmanr(short, long).statistic) == pytest.approx(0.4)
    assert got["tau"] == pytest.approx(sps.kendalltau(short, long).statistic)
    assert got["winner_rank"] == 2 and got["regret"] == pytest.approx(0.05)  # 0.4's long 0.30 < 0.35
    assert ranking.rank_stats([1, 2], [1, 2]) == pytest.approx(
        {"rho": 1, "tau": 1, "winner_rank": 1, "regret": 0}
    )


def test_rho_interval_resamples_configs_and_seeds():
    exact = [[0.1, 0.1], [0.2, 0.2], [0.3, 0.3], [0.4, 0.4], [0.5, 0.5]]
    assert ranking.rho_interval(exact, exact) == pytest.approx((1, 1))  # no seed noise, a perfect ranking
    noisy_long = [[0.1, 0.35], [0.3, 0.15], [0.2, 0.4], [0.45, 0.3], [0.5, 0.6]]
    low, high = ranking.rho_interval(exact, noisy_long)
    point = sps.spearmanr([0.1, 0.2, 0.3, 0.4, 0.5], [sum(x) / 2 for x in noisy_long]).statistic
    assert -1 <= low < point < high <= 1 and high - low > 0.3


def test_choose_takes_the_baseline_every_keep_then_discarded_ones_across_the_range():
    def row(run_id: str, score: float, decision: str, config: str | None = None) -> LedgerRow:
        return LedgerRow(
            run_id=run_id, status="ok", eval_score=score, decision=decision, config_hash=config or run_id
        )

    rows = [row("base", 0.5, "keep"), row("repeat", 0.52, "discard", "base"), row("k1", 0.6, "keep")]
    rows += [row(f"d{i}", 0.3 + i / 20, "discard") for i in range(8)]
    chosen = fidelity.choose(rows, 5)
    assert [(role, r.run_id) for role, r in chosen][:2] == [("baseline", "base"), ("kept", "k1")]
    discarded = [r.run_id for role, r in chosen if role == "discarded"]
    assert discarded == ["d0", "d4", "d7"]  # the lowest, the middle and the highest short score
    assert "repeat" not in [r.run_id for _, r in chosen]  # the baseline's config once


def test_choose_takes_the_baseline_run_again_after_a_contended_one():
    """A contended baseline discarded and run again (program.md): the run again is the baseline, once, and
    not a keep to test (a replay of 2026-12-02 got the discarded run as the baseline and the real one as a
    keep that did not hold)."""

    def row(run_id: str, verdict: str, decision: str, config: str, health: str = "") -> LedgerRow:
        return LedgerRow(
            run_id=run_id,
            status="ok",
            eval_score=0.4,
            verdict=verdict,
            decision=decision,
            config_hash=config,
            health=health,
        )

    rows = [
        row("crowded", "baseline", "discard", "shipped", health="contended"),
        row("base", "baseline", "keep", "shipped"),
        row("k1", "improved", "keep", "lower-lr"),
    ]
    assert rows[0].contended
    assert [(role, r.run_id) for role, r in fidelity.choose(rows, 4)] == [
        ("baseline", "base"),
        ("kept", "k1"),
    ]


@pytest.fixture(scope="module")
def context(tmp_path_factory: pytest.TempPathFactory):
    """A classic context of three real trials at 1.5 s and 2 seeds: the shipped config (the baseline), a
    learning rate of 2e-3 (kept) and of 1e-4 (discarded)."""
    root = tmp_path_factory.mktemp("fidelity")
    text = SHIPPED.read_text()
    with pytest.MonkeyPatch.context() as mp, warm.starters():  # the three trials fork from one starter
        mp.setenv("AUTORL_ROOT", str(root))
        for name, lr, decision in (
            ("base", "5e-4", "keep"),
            ("fast", "2e-3", "keep"),
            ("slow", "1e-4", "discard"),
        ):
            (root / f"{name}.toml").write_text(
                text.replace("learning_rate = 5e-4 ", f"learning_rate = {lr} ")
            )
            argv = [
                "--track",
                "classic",
                "--config",
                str(root / f"{name}.toml"),
                "--budget",
                "1.5",
                "--seeds",
                "2",
            ]
            assert run_py([*argv, "--all-seeds", "--description", name]) == 0
            Ledger(root / "results.tsv").mark(decision, lesson=name, reason="test context")
    return root


def fidelity_cmd(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "AUTORL_ROOT": str(root)}
    cmd = [sys.executable, "-m", "autorl.commands.cli", "fidelity", "--track", "classic", *args]
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.xdist_group("fidelity-context")  # one worker: `context` is set up once
def test_a_fidelity_run_is_recorded_and_resumes_after_a_signal(context, capsys, monkeypatch):
    """SIGINT after the first finished seed: exit 130, that seed kept; `--resume` runs only the rest, then the
    summary, fidelity.tsv (rho = scipy's on its rows) and the scatter plot."""
    proc = fidelity_cmd(context, "--factor", "2", "--seeds", "1", "--png", str(context / "f.png"))
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if " seed " in line and ": ok" in line:  # the first seed finished
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=120)
    out = "".join(lines) + rest
    assert proc.returncode == 130, out
    fid = next(w for w in out.split() if w.startswith("fidelity-")).rstrip(":")
    assert f"autorl fidelity --resume {fid}" in out and not (context / "fidelity.tsv").exists()

    resumed = fidelity_cmd(context, "--resume", fid, "--png", str(context / "f.png"))
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    finished_before = int(out.split(" seeds finished before")[0].split()[-1])
    assert finished_before >= 1 and f"{3 - finished_before} to run" in out
    summary = parse_summary(out)
    assert summary["configs"] == "3" and summary["long_budget"] == "3" and summary["fidelity_id"] == fid
    # Twice the budget is twice the score's horizon on this track: each long seed's curve covers 100k env
    # steps, and rho is read where the long runs stood at 1x (the trial's horizon), two points between, 2x.
    per_budget = ["rho_at_1x", "rho_at_1.33x", "rho_at_1.67x", "rho_at_2x"]
    assert [k for k in summary if k.startswith("rho_at_")] == per_budget
    record = json.loads((context / "runs" / fid / "fidelity.json").read_text())
    assert [p["budget_x"] for p in record["rho_by_budget"]] == [1.0, 1.33, 1.67, 2.0]
    assert record["rho_by_budget"][-1]["rho"] == pytest.approx(float(summary["spearman_rho"]))
    seed_dir = next((context / "runs" / fid).glob("*/seed-0"))
    assert json.loads((seed_dir / "resolved.json").read_text())["harness"]["score_env_steps"] == 100_000
    assert len((seed_dir / "eval.jsonl").read_text().splitlines()) == 50  # grid points 2k..100k
    rows = FIDELITY.read(context / "fidelity.tsv")
    assert [r["role"] for r in rows] == ["baseline", "kept", "discarded"]
    short = [float(r["short_score"]) for r in rows]
    long = [float(r["long_score"]) for r in rows]
    assert float(summary["spearman_rho"]) == pytest.approx(sps.spearmanr(short, long).statistic, abs=1e-3)
    kept = rows[1]
    assert kept["holds"] in ("holds", "does not hold", "inconclusive") and summary["kept_holds"].endswith(
        "/1"
    )
    assert f"kept/{kept['run_id']}: delta " in out and (context / "f.png").stat().st_size > 5000
    for r in rows:  # each config's two scores in the summary, as fidelity.tsv has them
        assert summary[f"long/{r['run_id']}"] == f"{r['role']}, short {short[rows.index(r)]:.4f}, long " + (
            f"{long[rows.index(r)]:.4f}"
        )
    assert not [k for k in summary if k.startswith("over_reference/")]  # its keep's reference: the baseline
    assert "no_longer/" not in out  # the long seeds ran to their budget (or their longer horizon)
    monkeypatch.setenv("AUTORL_ROOT", str(context))
    assert cli.main(["fidelity", "--resume", fid]) == 2  # recorded: nothing to resume
    assert "already recorded" in capsys.readouterr().err
    assert cli.main(["status", "--track", "classic"]) == 0  # the context's latest fidelity, and its keep
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("fidelity ("))
    assert line.startswith(f"fidelity ({fid}, 3 configs at 3 s): rho {float(summary['spearman_rho']):.2f} [")
    assert f"keeps that hold at the long budget: {int(kept['holds'] == 'holds')}/1" in line
    said = {"holds": "", "inconclusive": " (1 inconclusive: its test could not tell, not a failure)"}
    assert line.endswith(said.get(kept["holds"], f" (does not hold: {kept['run_id']})")), line
    assert "note: rho over 3 configs takes only a few values (3 give -1, -0.5, 0.5 or 1)" in out


@pytest.mark.xdist_group("fidelity-context")  # one worker: `context` is set up once
def test_a_dry_run_prints_the_plan_and_its_time_and_trains_nothing(context, monkeypatch, capsys):
    """`--dry-run`: the configs, the slot plan and the expected wall time from the context's trials, exit 0;
    no run directory, no plan.json, no fidelity.tsv row."""
    monkeypatch.setenv("AUTORL_ROOT", str(context))
    before = sorted(p.name for p in (context / "runs").iterdir())
    table = context / "fidelity.tsv"
    recorded = table.read_text() if table.exists() else None  # the other tests of the group may run first
    assert cli.main(["fidelity", "--track", "classic", "--factor", "2", "--seeds", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "3 configs of the classic context at 1.5 s re-trained at 3 s on seeds [" in out
    assert "plan: 3 seed(s)" in out
    expected = r"expected: ~\d+ s \(3 seeds, \d at a time, ~\d+ s each; from \d trials here\)"
    assert re.search(expected, out), out
    assert out.rstrip().endswith("dry run: nothing trained or recorded")
    assert sorted(p.name for p in (context / "runs").iterdir()) == before  # no plan.json, no seed
    assert (table.read_text() if table.exists() else None) == recorded


@pytest.mark.xdist_group("fidelity-context")  # one worker: `context` is set up once
def test_bad_input_is_refused_with_nothing_recorded(tmp_path, monkeypatch, capsys, context):
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    assert cli.main(["fidelity"]) == 2  # no trials: no context
    assert "no trials yet: nothing to re-train" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        cli.main(["fidelity", "--factor", "0.5"])
    assert exit_.value.code == 2
    monkeypatch.setenv("AUTORL_ROOT", str(context))
    before = sorted(p.name for p in (context / "runs").iterdir())
    assert cli.main(["fidelity", "--track", "classic", "--budget", "1"]) == 2  # not longer than 1.5 s
    assert "must exceed the context's 1.5 s" in capsys.readouterr().err
    gone = context / "runs" / Ledger(context / "results.tsv").rows()[1].run_id / "config.toml"
    gone.rename(gone.with_suffix(".bak"))
    try:
        assert cli.main(["fidelity", "--track", "classic"]) == 2
        assert "is missing: the kept trial's config cannot be re-trained" in capsys.readouterr().err
    finally:
        gone.with_suffix(".bak").rename(gone)
    assert sorted(p.name for p in (context / "runs").iterdir()) == before  # no fidelity run directory


def test_llm_long_seeds_are_scored_along_the_run(root, tmp_path):
    """The LLM track's long seeds keep snapshots where Track.lengthen's along_s says (here the test-double
    backend's child keeps them as the embedded trainer does: tests/fakes): the seed runner evaluates each as
    it evaluates the end, into eval-at-<s>s.jsonl and along.jsonl, and removes its weights; LLMTrack.rows_at
    reads them back, and rho_by_budget ranks the configs where the long runs stood at 1x, 2x and 3x."""
    from fakes.fake_backend import FakeBackend

    from autorl.engine.process import BudgetSpec
    from autorl.engine.seed import run_seed
    from autorl.llm.config import load_train_config
    from autorl.llm.track import TRACK

    budget, factor = 1.2, 4
    along_s = [f * budget for f in fidelity.budget_fractions(factor)[:-1]]
    cfg = TRACK.lengthen(load_train_config(root / "train.toml"), factor, along_s)
    assert cfg.snapshot_s == pytest.approx((0.3, 0.6, 0.9))
    assert TRACK.lengthen(load_train_config(root / "train.toml"), factor).snapshot_s == ()  # a confirm's
    spec = BudgetSpec(budget_s=budget, startup_cap_s=30.0, hang_s=30.0, grace_s=5.0)
    scored = []
    for quality in (0.3, 0.5, 0.7):
        backend = FakeBackend(quality=quality, scripts_dir=tmp_path)
        result = run_seed(backend, cfg, 7, 0, tmp_path / f"q{quality}" / "seed-0", spec)
        assert result.status == "ok" and result.evaluated, result.error
        points = [json.loads(line) for line in (result.dir / "along.jsonl").read_text().splitlines()]
        assert [p["at_s"] for p in points] == pytest.approx(along_s)
        assert [p["fraction"] for p in points] == pytest.approx([0.25, 0.5, 0.75])
        for p in points:  # the double's snapshot holds quality x at/(at+1): its eval scores about that
            assert p["eval_score"] == pytest.approx(quality * p["at_s"] / (p["at_s"] + 1), abs=0.01)
            assert (result.dir / p["eval_file"]).exists() and p["step"] >= 1
        assert not list((result.dir / "snapshots").iterdir())  # evaluated: the weights are gone
        at_half = TRACK.rows_at(result.dir, result.eval_rows, 0.5)
        assert at_half is not None and fidelity.stats.eval_score(at_half) == pytest.approx(
            points[1]["eval_score"]
        )
        assert TRACK.rows_at(result.dir, result.eval_rows, 1.0) == result.eval_rows
        assert TRACK.rows_at(result.dir, result.eval_rows, 0.1) is None  # no snapshot there
        scored.append(
            fidelity.Config("kept", {"eval_score": str(quality)}, cfg, [result.eval_rows], [result.dir])
        )
    short = [0.3, 0.5, 0.7]
    table = fidelity.rho_by_budget(TRACK, scored, short, [[s] for s in short], factor)
    assert [p["budget_x"] for p in table] == [1.0, 2.0, 3.0]
    assert all(p["rho"] == pytest.approx(1.0) for p in table)


def test_a_config_that_stops_itself_is_named_in_the_summary(tmp_path, monkeypatch):
    """A config whose long seeds stopped themselves (not at the long budget) after no more steps than its
    trial's seeds (an LLM config's max_steps) measures its short run again: trained_no_longer says so (the
    summary's `no_longer/<run_id>` line). Not named: long seeds that trained longer, ones the budget stopped
    (a machine slow enough to give them no more steps), or steps not recorded."""
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))

    def seeds(where: Path, steps: list[int], stop: str) -> list[Path]:
        dirs = []
        for k, n in enumerate(steps):
            (d := where / f"seed-{k}").mkdir(parents=True)
            (d / "outcome.json").write_text(json.dumps({"status": "ok", "steps": n, "stop_reason": stop}))
            dirs.append(d)
        return dirs

    def config(run_id: str, short: list[int], long: list[int], stop: str = "exited") -> fidelity.Config:
        seeds(tmp_path / "runs" / run_id, short, "exited")
        long_dirs = seeds(tmp_path / run_id, long, stop)
        return fidelity.Config("kept", LedgerRow(run_id=run_id), None, [[]] * len(long), long_dirs)

    why = fidelity.trained_no_longer(config("capped", [800, 800], [800, 800, 800]))
    assert why is not None and "stopped themselves after 800 steps at most, its trial's after 800" in why
    assert fidelity.trained_no_longer(config("longer", [810, 790], [3150, 3422, 3200])) is None
    assert fidelity.trained_no_longer(config("slow", [800, 790], [780, 800, 790], stop="budget")) is None
    assert fidelity.trained_no_longer(config("unknown", [], [800])) is None


def test_a_long_seed_that_ended_before_a_point_scores_its_end_there(root, tmp_path):
    """A config with its own step limit ends its long seed before the points along the run (the recorded
    session's keep stops at max_steps 700 after ~85 s of 360): it had stopped there already, so its score at
    those points is its end's, and rho per budget keeps every config (it dropped the budgets before)."""
    from fakes.fake_backend import FakeBackend

    from autorl.engine.process import BudgetSpec
    from autorl.engine.seed import run_seed
    from autorl.llm.config import load_train_config
    from autorl.llm.track import TRACK

    along_s = [f * 8.0 for f in fidelity.budget_fractions(4)[:-1]]  # 2, 4 and 6 s into an 8 s run
    cfg = TRACK.lengthen(load_train_config(root / "train.toml"), 4, along_s)
    spec = BudgetSpec(budget_s=8.0, startup_cap_s=30.0, hang_s=30.0, grace_s=5.0)
    backend = FakeBackend("finish", quality=0.6, scripts_dir=tmp_path)  # its child exits at step 20
    result = run_seed(backend, cfg, 7, 0, tmp_path / "finish" / "seed-0", spec)
    assert result.status == "ok" and result.child.stop_reason == "exited", result.error
    assert result.child.training_seconds < 6.0  # it ended before the last point
    along = result.dir / "along.jsonl"
    reached = (
        {json.loads(ln)["fraction"] for ln in along.read_text().splitlines()} if along.exists() else set()
    )
    for fraction in (0.25, 0.5, 0.75):
        rows = TRACK.rows_at(result.dir, result.eval_rows, fraction)
        if any(abs(fraction - f) < 1e-4 for f in reached):
            assert rows is not None and rows != []  # its snapshot there
        else:  # it had ended before this point: its end is its state there
            assert rows == result.eval_rows
    assert TRACK.rows_at(result.dir, result.eval_rows, 0.75) == result.eval_rows


def test_status_says_when_a_keep_that_holds_trains_no_longer_at_the_long_budget():
    """A replay's `keeps that hold at the long budget: 2/2` hid that one of them stops itself (max_steps):
    it never trained longer there, which fidelity's `no_longer/<run_id>` said and status dropped."""
    from autorl.commands.status import fidelity_line

    summary = {"spearman_rho": 1.0, "rho_ci": [0.32, 1.0], "long_budget": 60.0, "configs": 4}
    f = {"fidelity_id": "fid", "summary": summary, "kept": {"lr": "holds", "decay": "holds"}}
    plain = "fidelity (fid, 4 configs at 60 s): rho 1.00 [0.32, 1.00]"
    plain += "; keeps that hold at the long budget: 2/2"
    assert fidelity_line(f) == plain
    summary["no_longer"] = {"decay": "its long seeds stopped themselves after 700 steps at most"}
    assert fidelity_line(f) == plain + " (trains no longer at the long budget, its config's own limit: decay)"


def test_a_keep_over_another_keep_is_judged_against_it_at_the_long_budget():
    """`over_reference/<run_id>`: a keep whose reference was an earlier keep, both re-trained, compared on
    their long seeds: whether the decision holds, beside `kept/`'s gain over the baseline. A keep over the
    baseline gets none (kept/ is that line)."""
    from autorl.record import stats

    def seeds(*means: float) -> list[list[dict]]:  # one seed a mean: 40 examples, a share of them right
        return [
            [{"seed": k, "env": "e", "example_id": f"x{i}", "score": float(i < 40 * m)} for i in range(40)]
            for k, m in enumerate(means)
        ]

    base = LedgerRow(run_id="r-base", config_hash="a", eval_score=0.40, status="ok")
    first = LedgerRow(run_id="r-first", config_hash="b", eval_score=0.47, reference_run="r-base", delta=0.06)
    second = LedgerRow(run_id="r-second", config_hash="c", eval_score=0.49, reference_run="r-first")
    second.delta = 0.025
    scored = [
        fidelity.Config("baseline", base, None, seeds(0.4, 0.425, 0.45), []),  # type: ignore[arg-type]
        fidelity.Config("kept", first, None, seeds(0.475, 0.5, 0.475), []),  # type: ignore[arg-type]
        fidelity.Config("kept", second, None, seeds(0.5, 0.475, 0.5), []),  # type: ignore[arg-type]
    ]
    lines = fidelity._config_lines(scored, stats.NoiseFloor(), [base, first, second])
    assert lines["long/r-base"] == "baseline, short 0.4000, long 0.4250"
    assert lines["long/r-second"] == "kept, short 0.4900, long 0.4917"
    assert "over_reference/r-first" not in lines  # its reference is the baseline
    said = lines["over_reference/r-second"]
    assert said.startswith("delta +0.0083 over r-first, +0.0250 in its trial (90% CI -")
    assert said.endswith(": inconclusive")
