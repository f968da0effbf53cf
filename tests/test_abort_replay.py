"""scripts/abort_replay.py: the early abort replayed on pools of seeds, decided with the product's own rule.

Synthetic pools in the export format (classic-like learning curves, no training): a clear loser is aborted at
the first rung, a late winner whose rungs equal the reference's is never aborted and is kept, a huge margin
changes nothing, an aborted trial is never `improved` and is concluded as autorl/engine/result.py does.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from autorl.classic.track import TRACK as CLASSIC
from autorl.engine.process import ChildResult
from autorl.engine.result import Judging, TrialIdentity, conclude
from autorl.engine.seed import SeedResult
from autorl.engine.trial_types import Reference, Trained
from autorl.record import rungs, stats
from autorl.record.context import ResearchContext
from autorl.record.ledger import Ledger, eval_rows_hash
from autorl.record.outcome import SeedOutcome
from autorl.record.row import LedgerRow
from autorl.record.rungs import AbortRule, RungScore

REPO = Path(__file__).resolve().parent.parent
GRID = [2000 * g for g in range(1, 26)]  # CartPole's curve: 25 points to 50k env steps
ENV = "CartPole-v1"


def _load():
    spec = importlib.util.spec_from_file_location("abort_replay", REPO / "scripts" / "abort_replay.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["abort_replay"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


ar = _load()


def curve(early: float, late: float) -> list[dict]:
    """A seed's score rows: `early` up to half the horizon (the rungs' part), `late` after."""
    return [
        {"env": ENV, "example_id": f"steps-{g:09d}", "sample": 0, "score": early if g <= 25_000 else late}
        for g in GRID
    ]


def cut(rows: list[dict]) -> dict[str, float]:
    """The rung scores the live classic rung gives: the curve up to each rung's fraction of the horizon."""
    return {
        str(k): round(stats.eval_score(CLASSIC.rows_at(Path("."), rows, f)), 6)
        for k, f in enumerate(CLASSIC.rungs, 1)
    }


def write_pools(path: Path, pools: dict[str, list[list[dict]]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for name, seeds in pools.items():
            header = {"pool": name, "header": True, "track": "classic", "run_ids": [], "config_hash": name}
            f.write(json.dumps({**header, "description": name}) + "\n")
            for k, rows in enumerate(seeds):
                line = {"pool": name, "seed": k, "rows": rows, "rungs": cut(rows)}
                f.write(json.dumps({**line, "training_seconds": 100.0, "overhead_seconds": 10.0}) + "\n")
    return path


@pytest.fixture(scope="module")
def pool_file(tmp_path_factory) -> Path:
    """A: 40 seeds, early 0.40..0.46, late 0.6 +- 0.05; L (loser): early ~0.05; W (winner): A's early
    rows, late 0.95 (a gain that shows only after the rungs); M: A's early rows, late 0.7 (a smaller gain)."""
    rng = np.random.default_rng(7)
    a_early = rng.uniform(0.40, 0.46, 40)
    a = [curve(e, float(rng.normal(0.6, 0.05))) for e in a_early]
    loser = [curve(float(rng.uniform(0.03, 0.07)), float(rng.normal(0.3, 0.05))) for _ in range(20)]
    winner = [curve(float(e), float(rng.normal(0.95, 0.02))) for e in a_early[:20]]
    middling = [curve(float(e), float(rng.normal(0.7, 0.03))) for e in a_early[20:]]
    path = tmp_path_factory.mktemp("pools") / "pools.jsonl.gz"
    return write_pools(path, {"A": a, "L": loser, "W": winner, "M": middling})


def analyze(pool_file: Path, *extra: str) -> dict:
    argv = ["analyze", "--pool-file", str(pool_file), "--reference", "A", "--track", "classic"]
    return ar.main([*argv, "--seeds", "5", "--lucky-pairs", "40", *extra])


def test_a_clear_loser_is_aborted_at_the_first_rung_for_a_quarter_of_a_wave(pool_file, tmp_path, capsys):
    report = analyze(
        pool_file, "--candidates", "L", "W", "--parallel", "2", "--pairs", "60", "--margins", "0,1,2,1e9"
    )
    at_1 = report["margins"][1]
    assert at_1["margin"] == 1.0
    loser = at_1["dead"]["L"]
    assert loser["pairs"] == 60 and loser["aborted_by_30pct"]["rate"] >= 0.95
    assert loser["median_cost"] == pytest.approx(0.25 * 2)  # the first wave's 2 seeds, a quarter each
    assert loser["median_cost_none"] >= 1  # without the abort the first wave runs to the end at least
    assert at_1["throughput"]["L"]["ratio"] > 1.5  # far more decisions an hour
    out = capsys.readouterr().out
    assert "A/A false improved" in out and "L: margin, dead ideas' median / mean cost" in out
    # without the abort: the loser never improved, the winner always, each kind's seeds and early stops
    assert report["verdicts"]["L"]["improved"]["k"] == 0 and report["verdicts"]["W"]["improved"]["k"] == 60
    assert sum(report["verdicts"]["L"][v]["k"] for v in ("improved", "worse", "inconclusive")) == 60
    assert 1 <= report["verdicts"]["L"]["median_seeds"] <= 5
    assert "kind: without the abort, improved / worse / inconclusive" in out


def test_a_winner_whose_rungs_equal_the_reference_is_never_aborted_and_is_kept(pool_file):
    report = analyze(pool_file, "--candidates", "W", "--parallel", "1", "--pairs", "60", "--margins", "2")
    winners = report["margins"][0]["winners"]["W"]
    assert winners["pairs"] == 60  # the plain rule keeps every pair: a large late gain
    assert winners["false_abort"]["k"] == 0 and winners["false_abort"]["high"] < 0.07
    assert report["margins"][0]["dead"]["W"]["pairs"] == 0


def test_a_huge_margin_never_aborts_and_changes_no_verdict(pool_file):
    a = ar.read_pool_file(pool_file)
    s = ar.Setting(2, CLASSIC.rungs, CLASSIC.seed_sd_prior, (1.0, 1e9))
    rng = np.random.default_rng(3)
    for cand in (None, a["L"], a["W"]):
        r = ar.replay_pairs(a["A"], cand, ar.draw(a["A"], cand, 5, 30, rng), s)
        assert not r.aborted[:, 1].any()
        assert list(r.verdict[:, 1]) == list(r.plain_verdict)
        assert np.array_equal(r.cost[:, 1], r.plain_cost) and np.allclose(r.wall[:, 1], r.plain_wall)


def test_the_plain_verdict_is_aa_pools_decision_on_the_same_seeds(pool_file):
    """Without the abort a pair is decided exactly as scripts/aa_pool.py decides it (2 seeds a wave: one
    candidate seed is never `worse`)."""
    import aa_pool  # scripts/ is on sys.path: abort_replay put it there

    pools = ar.read_pool_file(pool_file)
    a, s = pools["A"], ar.Setting(2, CLASSIC.rungs, CLASSIC.seed_sd_prior, (1.0,))
    legacy = aa_pool.Pool([a.ledger_row], [x.rows for x in a.seeds])
    rng = np.random.default_rng(5)
    verdicts = set()
    for other in (None, pools["W"], pools["L"]):
        for ref, cand in ar.draw(a, other, 5, 8, rng):
            ref_seeds, cand_seeds = [a.seeds[i] for i in ref], [(other or a).seeds[i] for i in cand]
            plain, _ = ar.replay_pair(ref_seeds, cand_seeds, a.ledger_row, a.medians(), s)
            ref_rows, cand_rows = ar.relabel(ref_seeds, 0), ar.relabel(cand_seeds, 1000)
            theirs = aa_pool.decide(ref_rows, cand_rows, 2, legacy, CLASSIC.seed_sd_prior)
            assert (plain.verdict, plain.cost) == (theirs["verdict"], theirs["seeds"])
            verdicts.add(plain.verdict)
    assert {"improved", "worse"} <= verdicts  # the check saw both kinds of decision


def _concluded(ref, cand, ending, parallel: int, prior: float, ledger_row) -> str:
    """The product's own conclude (autorl/engine/result.py) on the seeds as the replay says they ran."""
    ref_rows = [r for rows in ar.relabel(ref, 0) for r in rows]
    noise = ar.reference_noise(ref_rows, ledger_row, prior)
    ctx = TrialIdentity(
        "cand", Path("/nonexistent"), "c", ResearchContext("classic", "e", "h", 1.0), "x", "c"
    )
    ctx.seeds_planned = len(cand)
    results = []
    for k, (seed, rows) in enumerate(zip(cand, ar.relabel(cand, 1000), strict=True)):
        if k >= ending.waves * parallel:
            break
        aborted = k >= (ending.waves - 1) * parallel and ending.abort_wave
        child = ChildResult("aborted" if aborted else "budget", 0, 0.0, 1.0, 0.0, 1, None, False, 0, 0.0)
        rung = RungScore(rung=1, fraction=ending.abort_fraction, at_s=1.0, eval_score=seed.rungs.get(1))
        sr = SeedResult(k, 1000 + k, Path("/nonexistent"), child=child, eval_rows=[] if aborted else rows)
        sr.rungs = [rung.model_copy(update={"decision": "abort"})] if aborted else []
        results.append(sr)
    reference = Reference([], LedgerRow(run_id="ref"), ref_rows, noise)
    result = conclude(ctx, Trained(results=results), reference, Judging(parallel))
    return result.verdict


def test_an_aborted_aa_trial_is_never_improved_and_is_concluded_as_the_product_does(pool_file):
    pools = ar.read_pool_file(pool_file)
    a = pools["A"]
    margins = (0.0, 0.25, 0.5)
    s = ar.Setting(1, CLASSIC.rungs, CLASSIC.seed_sd_prior, margins)
    rng = np.random.default_rng(11)
    draws = ar.draw(a, None, 5, 80, rng)
    r = ar.replay_pairs(a, None, draws, s)
    assert r.aborted.mean() > 0.3 and (r.abort_wave > 1).sum() >= 5  # some after completed waves
    assert not (r.aborted & (r.verdict == "improved")).any()
    assert (r.verdict[r.abort_wave == 1] == "inconclusive").all()  # no seed ran to the end
    checked = 0
    for (ref, cand), waves in zip(draws, r.abort_wave, strict=True):
        if waves[0] > 1 and checked < 6:
            ref_seeds, cand_seeds = [a.seeds[i] for i in ref], [a.seeds[i] for i in cand]
            _, endings = ar.replay_pair(ref_seeds, cand_seeds, a.ledger_row, a.medians(), s)
            product = _concluded(ref_seeds, cand_seeds, endings[0], 1, s.prior, a.ledger_row)
            assert endings[0].verdict == product
            checked += 1
    assert checked == 6


def test_a_gain_seen_before_the_abort_is_not_kept_as_the_product_concludes(pool_file):
    """Four middling winners run to the end (kept at the last look's level on their own), then a loser's seed
    aborts the fifth wave: the verdict is `inconclusive`, as result.conclude says, never `improved`."""
    pools = ar.read_pool_file(pool_file)
    a, s = pools["A"], ar.Setting(1, CLASSIC.rungs, CLASSIC.seed_sd_prior, (1.0,))
    rng = np.random.default_rng(1)
    suppressed = 0
    for _ in range(10):
        ref = [a.seeds[j] for j in rng.permutation(40)[:5]]
        cand = [pools["M"].seeds[j] for j in rng.permutation(20)[:4]] + [pools["L"].seeds[0]]
        _, (ending,) = ar.replay_pair(ref, cand, a.ledger_row, a.medians(), s)
        assert ending.verdict != "improved" and ending.abort_wave == 5  # the loser's rung 1
        assert ending.cost == pytest.approx(4.25)
        ref_rows = [r for rows in ar.relabel(ref, 0) for r in rows]
        run = stats.compare(
            [r for rows in ar.relabel(cand[:4], 1000) for r in rows],
            ref_rows,
            noise=ar.reference_noise(ref_rows, a.ledger_row, s.prior),
        )
        suppressed += stats.sequential_verdict(run, 5, 5) == "improved"
        assert ending.verdict == _concluded(ref, cand, ending, 1, s.prior, a.ledger_row)
    assert suppressed >= 5  # the seeds run to the end alone would have been kept


def test_the_rule_and_the_bar_are_the_products(pool_file):
    """A seed aborts exactly when its rung score is below AbortRule.threshold(k).bar."""
    a = ar.read_pool_file(pool_file)["A"]
    ref = a.seeds[:5]
    fractions = dict(enumerate(CLASSIC.rungs, 1))
    rule = AbortRule(
        "ref", {f: tuple(x.rungs[k] for x in ref) for k, f in fractions.items()}, 1.0, CLASSIC.seed_sd_prior
    )
    bar = rule.threshold(fractions[1]).bar
    low = ar.Seed([], {1: bar - 1e-6, 2: 1.0}, None, 0.0, 0.0)
    high = ar.Seed([], {1: bar + 1e-6, 2: 1.0}, None, 0.0, 0.0)
    bars = {1: bar, 2: rule.threshold(fractions[2]).bar}
    assert ar.abort_fraction([high, low], bars, CLASSIC.rungs) == 0.25
    assert ar.abort_fraction([high], bars, CLASSIC.rungs) is None
    assert ar.abort_fraction([ar.Seed([], {}, None, 0.0, 0.0)], bars, CLASSIC.rungs) is None  # no score: go


def test_lucky_references_and_the_report_files(pool_file, tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    report = analyze(pool_file, "--parallel", "2", "--pairs", "30", "--margins", "0,1", "--json", str(out))
    lucky = report["margins"][1]["lucky"]
    assert lucky["pairs"] == 40 and report["lucky"]["cut"] > np.mean(
        [s.score for s in ar.read_pool_file(pool_file)["A"].seeds[:40]]
    )
    assert json.loads(out.read_text())["margins"][0]["margin"] == 0.0
    worse = lucky["worse_by_seeds_none"]  # where the plain rule called the lucky pairs `worse`
    assert sum(worse.values()) == lucky["false_worse"]["none"]["k"]
    assert set(worse) <= {"1", "2", "3", "4", "5"}
    analyze(pool_file, "--parallel", "2", "--pairs", "10", "--margins", "1", "--png", str(png))
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_a_reference_of_more_seeds_than_the_candidate_is_less_lucky(pool_file):
    """--reference-seeds: the reference side holds r seeds (run.py pools the baseline and its repeat), the
    candidate n others; the top 5% of r-seed means lies nearer the pool's mean than that of n-seed means."""
    a = ar.read_pool_file(pool_file)["A"]
    pairs, cut_10 = ar.lucky_draws(a, 5, 0.05, 40, np.random.default_rng(0), r=10)
    assert all(len(ref) == 10 and len(cand) == 5 and not set(ref) & set(cand) for ref, cand in pairs)
    _, cut_5 = ar.lucky_draws(a, 5, 0.05, 40, np.random.default_rng(0))
    assert np.mean([s.score for s in a.seeds]) < cut_10 < cut_5
    report = analyze(
        pool_file, "--parallel", "2", "--pairs", "10", "--margins", "1", "--reference-seeds", "10"
    )
    assert report["reference_seeds"] == 10 and report["margins"][0]["lucky"]["pairs"] == 40
    with pytest.raises(SystemExit, match="too few"):
        analyze(pool_file, "--parallel", "2", "--pairs", "10", "--reference-seeds", "36")


def test_drop_tail_leaves_out_a_pools_rare_bad_seed_and_pool_boot_spreads_the_aa_rates(pool_file, tmp_path):
    """--drop-tail K leaves out the seeds K sds below their pool's mean (a pool with one bad seed loses just
    it); --pool-boot B replays the A/A pairs on B copies of the reference pool drawn with replacement and
    reports each verdict's rate as 5%, 50% and 95% quantiles over the copies."""
    pools = ar.read_pool_file(pool_file)
    bad = [*pools["A"].seeds[:19], ar.Seed(curve(0.42, 0.1), {}, 100.0, 10.0, 0.1)]
    file = write_pools(tmp_path / "bad.jsonl.gz", {"A": [s.rows for s in bad]})
    report = ar.main(
        ["analyze", "--pool-file", str(file), "--reference", "A", "--track", "classic", "--seeds", "5"]
        + ["--parallel", "5", "--pairs", "12", "--margins", "1", "--lucky", "0", "--drop-tail", "3"]
        + ["--pool-boot", "4"]
    )
    assert report["pools"] == {"A": 19} and report["drop_tail"] == 3.0
    boot = report["pool_boot"]
    assert boot["pools"] == 4 and boot["pairs_each"] == 12
    for low, mid, high in boot["quantiles_5_50_95"].values():
        assert 0.0 <= low <= mid <= high <= 1.0
    kept = ar.read_pool_file(file)
    ar.drop_tail(kept, 10.0)
    assert len(kept["A"].seeds) == 20  # 10 sds: nothing is that far below


def test_export_reads_the_ledger_and_the_seed_directories(tmp_path, capsys):
    """seed-<k> is the k-th seed of the ledger's `seeds`; a seed without its own eval.jsonl takes its rows
    from the run's eval.jsonl (checked against the row's hash); rungs are the curve cut at the fractions."""
    root, run = tmp_path, "20261201-000000-abc"
    rows = [curve(0.4, 0.7), curve(0.2, 0.5)]
    pooled = [{**r, "seed": 500 + k} for k, seed in enumerate(rows) for r in seed]
    text = "".join(json.dumps(r) + "\n" for r in pooled)
    (root / "runs" / run).mkdir(parents=True)
    (root / "runs" / run / "eval.jsonl").write_text(text)
    for k in range(2):
        SeedOutcome(seed=500 + k, training_seconds=90.0 + k, startup_seconds=4.0).write(
            root / "runs" / run / f"seed-{k}"
        )
    (root / "runs" / run / "seed-0" / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[0]))
    row = {"run_id": run, "track": "classic", "status": "ok", "seeds": "500,501", "eval_seconds": 6.0}
    row |= {"description": "pool A: shipped", "config_hash": "cfg", "eval_rows_hash": eval_rows_hash(text)}
    Ledger(root / "results.tsv").append(row)
    Ledger(root / "results.tsv").append({**row, "run_id": "other", "description": "something else"})
    out = tmp_path / "p.jsonl.gz"
    ar.main(["export", "--root", str(root), "--pool", "A=pool A", "--track", "classic", "--out", str(out)])
    pool = ar.read_pool_file(out)["A"]
    assert pool.header["run_ids"] == [run] and pool.header["config_hash"] == "cfg"
    assert [s.rows for s in pool.seeds] == rows
    assert [s.rungs for s in pool.seeds] == [{1: 0.4, 2: 0.4}, {1: 0.2, 2: 0.2}]
    assert [s.training_seconds for s in pool.seeds] == [90.0, 91.0]
    assert [s.overhead_seconds for s in pool.seeds] == [7.0, 7.0]  # start-up + the eval seconds' share
    # a seed that shared the machine (its CPU wait above --max-cpu-wait) is left out, and said so
    SeedOutcome(seed=501, training_seconds=91.0, startup_seconds=4.0, cpu_wait_share=0.2).write(
        root / "runs" / run / "seed-1"
    )
    argv = ["export", "--root", str(root), "--pool", "A=pool A", "--track", "classic", "--out", str(out)]
    ar.main([*argv, "--max-cpu-wait", "0.1"])
    assert [s.rows for s in ar.read_pool_file(out)["A"].seeds] == rows[:1]
    assert "seed-1: left out, cpu_wait_share 0.2 > 0.1 (a busy machine)" in capsys.readouterr().out
    # one session's trials (run ids start with their start time): the trial in the window, or none
    ar.main([*argv, "--runs-from", "20261201", "--runs-before", "20261202"])
    assert ar.read_pool_file(out)["A"].header["run_ids"] == [run]
    with pytest.raises(SystemExit, match="no ok classic trial"):
        ar.main([*argv, "--runs-from", "20261201-000001"])


def test_export_takes_an_llm_seeds_rungs_from_rungs_jsonl_else_from_its_snapshots(tmp_path):
    root, run = tmp_path, "20261201-000000-llm"
    rows = [
        {"env": "arith", "example_id": str(i), "sample": 0, "score": float(i % 2), "completion": "x"}
        for i in range(4)
    ]
    for k in range(2):
        seed_dir = root / "runs" / run / f"seed-{k}"
        SeedOutcome(seed=7 + k, training_seconds=90.0, startup_seconds=30.0).write(seed_dir)
        (seed_dir / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    scored = [
        RungScore(rung=k, fraction=f, at_s=90 * f, eval_score=0.1 * k) for k, f in ((1, 0.25), (2, 0.5))
    ]
    rungs.write(root / "runs" / run / "seed-0", scored)
    points = [
        {"at_s": 22.5, "fraction": 0.25, "eval_score": 0.2},
        {"at_s": 45, "fraction": 0.5, "error": "x"},
    ]
    (root / "runs" / run / "seed-1" / "along.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    row = {
        "run_id": run,
        "track": "llm",
        "status": "ok",
        "seeds": "7,8",
        "description": "lr pool",
        "config_hash": "c",
    }
    Ledger(root / "results.tsv").append(row)
    out = tmp_path / "llm.jsonl.gz"
    ar.main(["export", "--root", str(root), "--pool", "B=lr", "--track", "llm", "--out", str(out)])
    pool = ar.read_pool_file(out)["B"]
    assert [s.rungs for s in pool.seeds] == [{1: 0.1, 2: 0.2}, {1: 0.2}]  # a failed snapshot: no score there
    assert pool.seeds[0].rows == [{k: r[k] for k in ("env", "example_id", "sample", "score")} for r in rows]
    assert [s.overhead_seconds for s in pool.seeds] == [30.0, 30.0]  # the ledger recorded no eval seconds


def test_pools_split_over_two_exports_merge_by_name_and_another_config_is_refused(pool_file, tmp_path):
    """A pool collected in two clones (two exports) is read as one: its seeds in order, its run ids joined;
    a pool of the same name whose config differs is refused rather than mixed."""
    whole = ar.read_pool_file(pool_file)
    a = [s.rows for s in whole["A"].seeds]
    first = write_pools(tmp_path / "1.jsonl.gz", {"A": a[:25], "L": [s.rows for s in whole["L"].seeds]})
    second = write_pools(tmp_path / "2.jsonl.gz", {"A": a[25:]})
    merged = ar.read_pool_files([first, second])
    assert [s.rows for s in merged["A"].seeds] == a and len(merged["L"].seeds) == len(whole["L"].seeds)
    assert [s.rungs for s in merged["A"].seeds] == [s.rungs for s in whole["A"].seeds]
    other = write_pools(tmp_path / "3.jsonl.gz", {"B": a[25:]})
    with gzip.open(other, "rt") as f:
        text = f.read().replace('"pool": "B"', '"pool": "A"')
    with gzip.open(other, "wt") as f:
        f.write(text)  # pool A again, with config_hash "B": another config under the same name
    with pytest.raises(SystemExit, match="pool A: another config"):
        ar.read_pool_files([first, other])
