"""eval_score, bootstrap CI, noise floor and verdicts on constructed per-example data with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from autorl.engine.track import get_track
from autorl.record import stats
from autorl.record.context import ResearchContext
from autorl.record.row import LedgerRow
from autorl.record.stats import NoiseFloor, compare, confidence_interval, eval_score, noise_floor


def rows_from(scores: dict[str, list[float]], seed: int = 0, samples: int = 1) -> list[dict]:
    """One row per (example, sample); each sample of an example gets the example's score."""
    return [
        {"seed": seed, "env": env, "example_id": f"{env}-{i}", "sample": k, "score": s}
        for env, values in scores.items()
        for i, s in enumerate(values)
        for k in range(samples)
    ]


def binary(n: int, ones: int) -> list[float]:
    return [1.0] * ones + [0.0] * (n - ones)


def test_eval_score_is_mean_over_envs_of_env_means() -> None:
    # env a: 2 examples at 1.0; env b: 4 examples at 0.0 -> 0.5 (a flat mean would give 1/3).
    rows = rows_from({"a": [1.0, 1.0], "b": [0.0] * 4}, samples=3)
    assert eval_score(rows) == pytest.approx(0.5)
    # Samples and seeds are averaged within an example: seed 0 scores 1, seed 1 scores 0 -> 0.5.
    two_seeds = rows_from({"a": [1.0] * 3}, seed=0) + rows_from({"a": [0.0] * 3}, seed=1)
    assert eval_score(two_seeds) == pytest.approx(0.5)
    assert stats.seed_scores(two_seeds) == {0: 1.0, 1: 0.0}
    assert stats.env_scores(rows) == {"a": 1.0, "b": 0.0}


def test_ci_matches_binomial_standard_error() -> None:
    rows = rows_from({"a": binary(400, 200)})
    lo, hi = confidence_interval(rows, n_boot=4000)
    se = math.sqrt(0.25 / 400)  # 0.025
    assert lo == pytest.approx(0.5 - 1.96 * se, abs=0.006)
    assert hi == pytest.approx(0.5 + 1.96 * se, abs=0.006)
    assert confidence_interval(rows, n_boot=4000) == (lo, hi)  # deterministic for a given rng_seed


def test_ci_stratifies_by_env() -> None:
    # Each env is constant: resampling within envs cannot move the score, so the CI collapses to a point.
    rows = rows_from({"a": [1.0] * 50, "b": [0.0] * 50})
    lo, hi = confidence_interval(rows)
    assert lo == pytest.approx(0.5) and hi == pytest.approx(0.5)


def test_ci_widens_with_seed_spread() -> None:
    same = rows_from({"a": binary(200, 100)}, seed=0) + rows_from({"a": binary(200, 100)}, seed=1)
    spread = rows_from({"a": binary(200, 140)}, seed=0) + rows_from({"a": binary(200, 60)}, seed=1)
    assert eval_score(same) == eval_score(spread) == pytest.approx(0.5)
    w_same = np.subtract(*confidence_interval(same)[::-1])
    w_spread = np.subtract(*confidence_interval(spread)[::-1])
    assert w_spread > 1.5 * w_same  # the two-level bootstrap sees that seeds disagree
    one_seed = rows_from({"a": binary(200, 100)})
    w_one = np.subtract(*confidence_interval(one_seed)[::-1])
    w_floor = np.subtract(*confidence_interval(one_seed, seed_sd=0.05)[::-1])
    assert w_floor == pytest.approx(2 * 1.96 * math.hypot(0.05, math.sqrt(0.25 / 200)), rel=0.1)
    assert w_floor > w_one


def test_identical_trials_are_inconclusive() -> None:
    rows = rows_from({"a": binary(100, 50), "b": binary(100, 30)})
    c = compare(rows, rows)
    assert c.delta == 0 and c.p_value == pytest.approx(0.5) and c.verdict == "inconclusive"
    assert c.n_common == 200


def test_large_gains_and_losses_are_detected() -> None:
    ref = rows_from({"a": binary(200, 60)})
    better = rows_from({"a": binary(200, 180)}, seed=1)  # +0.6 with one seed per side
    c = compare(better, ref)
    assert c.delta == pytest.approx(0.6) and c.verdict == "improved" and c.p_value < 0.01
    c = compare(ref, better)
    assert c.delta == pytest.approx(-0.6) and c.verdict == "worse" and c.p_value > 0.99


def test_single_seed_gain_within_seed_noise_is_inconclusive() -> None:
    # +0.06 on 1000 examples: a paired test over examples alone calls this significant (z ~ 3), but one
    # training seed per side differs by ~0.04 sd (the default noise floor): not enough evidence.
    ref = rows_from({"a": binary(1000, 500)})
    cand = rows_from({"a": binary(1000, 560)}, seed=1)
    d = np.array(binary(1000, 560)) - np.array(binary(1000, 500))
    assert sps.norm.sf(d.mean() / (d.std(ddof=1) / math.sqrt(d.size))) < 0.01
    c = compare(cand, ref)
    assert c.verdict == "inconclusive"
    expected_se = stats.DEFAULT_SEED_SD * math.sqrt(2)
    assert c.se == pytest.approx(expected_se)
    assert c.p_value == pytest.approx(sps.t.sf(0.06 / expected_se, stats.PRIOR_DF))
    # A measured, small noise floor (many repeats at sd 0.01) makes the same gain convincing.
    quiet = NoiseFloor(prior_sd=0.04, prior_df=4, ss=0.01**2 * 200, df=200, n_configs=10, n_runs=220)
    assert quiet.sd == pytest.approx(math.sqrt((4 * 0.04**2 + 0.01**2 * 200) / 204))
    assert compare(cand, ref, noise=quiet).verdict == "improved"


def seeded(scores_per_seed: list[int], n: int = 200, start: int = 0) -> list[dict]:
    out: list[dict] = []
    for k, ones in enumerate(scores_per_seed):
        out += rows_from({"a": binary(n, ones)}, seed=start + k)
    return out


def test_multi_seed_comparison_is_welch_over_seed_scores() -> None:
    ref = seeded([100, 104, 96, 102])  # per-seed scores 0.50 0.52 0.48 0.51
    cand = seeded([116, 108, 112, 120], start=10)  # 0.58 0.54 0.56 0.60
    c = compare(cand, ref)
    x_c = np.array([116, 108, 112, 120]) / 200
    x_r = np.array([100, 104, 96, 102]) / 200
    welch = sps.ttest_ind(x_c, x_r, equal_var=False, alternative="greater")
    assert c.delta == pytest.approx(x_c.mean() - x_r.mean())
    assert c.p_value == pytest.approx(welch.pvalue, rel=1e-6)
    assert c.verdict == "improved" and "Welch" in c.note
    # Same means, seeds that disagree a lot: inconclusive.
    noisy = seeded([60, 170, 90, 140], start=20)  # mean 0.575, sd ~0.25
    assert compare(noisy, ref).verdict == "inconclusive"


def test_examples_are_matched_by_env_and_id() -> None:
    ref = rows_from({"a": [0.0, 1.0, 0.0, 1.0]})
    cand = list(reversed(rows_from({"a": [0.0, 1.0, 0.0, 1.0, 1.0, 1.0]})))  # 2 extra examples, other order
    c = compare(cand, ref)
    assert c.n_common == 4 and c.delta == 0.0
    other_env = rows_from({"z": [1.0] * 4})
    c = compare(other_env, ref)
    assert c.n_common == 0 and c.verdict == "inconclusive"


def test_seed_noise_does_not_turn_into_keeps() -> None:
    """A/A with a real per-seed model effect: few false keeps, unlike a paired test over examples alone."""
    rng = np.random.default_rng(7)
    n, trials = 400, 150
    difficulty = rng.normal(0, 1.5, n)

    def trial(seed: int) -> list[dict]:
        p = 1 / (1 + np.exp(-(difficulty + rng.normal(0, 0.15))))  # seed shifts every example
        return rows_from({"a": list((rng.random(n) < p).astype(float))}, seed=seed)

    ours = naive = 0
    for t in range(trials):
        ref, cand = trial(2 * t), trial(2 * t + 1)
        ours += compare(cand, ref).verdict == "improved"
        d = np.array([c["score"] for c in cand]) - np.array([r["score"] for r in ref])
        naive += d.mean() > 0 and sps.norm.sf(d.mean() / (d.std(ddof=1) / math.sqrt(n))) < 0.05
    assert naive / trials > 0.10  # the examples-only test is fooled by seed noise
    assert ours / trials <= 0.05


def ledger_row(config: str, score: float, seed_scores: str = "", status: str = "ok", **kw) -> LedgerRow:
    """A row as the ledger reads it from its cells."""
    cells = {"config_hash": config, "eval_score": str(score), "seed_scores": seed_scores, "status": status}
    cells |= {"track": "llm", "eval_hash": "e", "harness_hash": "h", "run_id": f"r{score}"}
    return LedgerRow.read(cells | kw)


def test_noise_floor_pools_repeated_configs() -> None:
    rows = [
        ledger_row("A", 0.50),
        ledger_row("A", 0.60),  # config A twice: ss 0.005, df 1
        ledger_row("B", 0.50, "1=0.4 2=0.5 3=0.6", seeds="1,2,3"),  # one trial, three seeds: ss 0.02, df 2
        ledger_row("C", 0.70),  # never repeated: no information about seed noise
        ledger_row("A", 0.10, status="crash"),  # crashes do not count
        ledger_row("A", 0.90, eval_hash="other"),  # another eval set does not count
    ]
    nf = noise_floor(rows, ResearchContext("llm", "e", "h", None), prior_sd=0.04, prior_df=4)
    assert nf.df == 3 and nf.ss == pytest.approx(0.025)
    assert nf.n_configs == 2 and nf.n_runs == 3
    assert nf.measured_sd == pytest.approx(math.sqrt(0.025 / 3))
    assert nf.sd == pytest.approx(math.sqrt((4 * 0.04**2 + 0.025) / 7))
    assert "measured" in nf.describe()
    empty = noise_floor([], ResearchContext("llm", "e", "h", None))
    assert empty.sd == stats.DEFAULT_SEED_SD and empty.df == 0 and "default" in empty.describe()
    classic_prior = get_track("classic").seed_sd_prior
    assert noise_floor([], prior_sd=classic_prior).prior_sd == 0.11  # 0..1 curve area


# ---- the group-sequential early stop ------------------------------------------------------------------


def interim(delta: float, p: float) -> stats.Comparison:
    return stats.Comparison(
        delta, p, "improved" if p < stats.ALPHA and delta > 0 else "inconclusive", 100, ""
    )


def test_efficacy_boundary_spends_its_alpha_late():
    for looks in (2, 3, 6):
        levels = [stats.efficacy_alpha(k, looks) for k in range(1, looks + 1)]
        assert sum(levels) == pytest.approx(stats.EFFICACY_ALPHA)
        assert levels == sorted(levels) and levels[0] < 0.002  # O'Brien-Fleming shape: almost nothing first
    assert stats.early_decision(interim(-0.01, 0.9), 1, 3) == "futile"
    assert stats.early_decision(interim(0.0, 0.5), 2, 3) == "futile"
    assert stats.early_decision(interim(0.2, 0.001), 1, 6) is None  # too early for p = 0.001
    assert stats.early_decision(interim(0.2, 0.001), 4, 6) == "efficacy"
    assert stats.early_decision(interim(0.05, 0.04), 2, 3) is None  # ahead but not clearly: go on


def test_efficacy_stop_rarely_fires_without_a_gain_and_often_with_a_large_one():
    """Brownian-motion z statistics over 6 equally spaced looks (5 interim): with no gain the interim stops
    for efficacy stay below the spent alpha; with a gain the final test detects 90% of the time, most stop
    early."""
    rng = np.random.default_rng(0)
    looks, n = 6, 5_000

    def stop_rate(drift: float) -> float:
        z = np.cumsum(rng.normal(drift, 1.0, size=(n, looks)), axis=1) / np.sqrt(np.arange(1, looks + 1))
        stopped = np.zeros(n, dtype=bool)
        for k in range(1, looks):
            p = sps.norm.sf(z[:, k - 1])
            stopped |= [
                stats.early_decision(interim(zz, pp), k, looks) == "efficacy"
                for zz, pp in zip(z[:, k - 1], p, strict=True)
            ]
        return float(stopped.mean())

    null = stop_rate(0.0)
    assert 0.0 < null <= stats.EFFICACY_ALPHA
    drift = (sps.norm.ppf(0.95) + sps.norm.ppf(0.9)) / np.sqrt(looks)  # 90% power at the last look
    assert stop_rate(drift) > 0.4


# ---- each look's level: both sides spend at most ALPHA over a trial's looks ---------------------------


def z_comparison(z: float, seeds: int = 6) -> stats.Comparison:
    """A comparison whose statistic is z (normal): delta z, one-sided p, its verdict at ALPHA both ways, on
    `seeds` candidate and reference seeds."""
    p = 0.5 * math.erfc(z / math.sqrt(2))  # the normal's sf: scipy's costs 100x more a call
    verdict = "improved" if p < stats.ALPHA and z > 0 else "worse" if 1 - p < stats.ALPHA and z < 0 else "-"
    return stats.Comparison(
        z, p, verdict if verdict != "-" else "inconclusive", 100, "", 1.0, 1e9, seeds, seeds
    )


def sequential_trials(
    drift: float, looks: int, n: int, rng: np.random.Generator
) -> tuple[list[str], list[str]]:
    """Brownian-motion z statistics over `looks` equally spaced looks, decided by the runner's stops
    (stats.early_decision) and judged (a) by stats.sequential_verdict, (b) at ALPHA at every look (the rule
    before 2026-11-25)."""
    z = np.cumsum(rng.normal(drift, 1.0, size=(n, looks)), axis=1) / np.sqrt(np.arange(1, looks + 1))
    now, before = [], []
    for row in z:
        for k in range(1, looks + 1):
            c = z_comparison(float(row[k - 1]))
            if k == looks or stats.early_decision(c, k, looks) is not None:
                now.append(stats.sequential_verdict(c, k, looks))
                before.append(c.verdict)
                break
    return now, before


def test_sequential_verdict_keeps_both_error_rates_at_alpha_where_every_look_at_alpha_did_not():
    """No gain, 3 and 6 looks (classic's 5 seeds 2 at a time; the LLM's 6 one at a time): the share called
    `improved` and the share called `worse` each stay at or below ALPHA (binomial se ~0.002 at 10,000
    trials). Judged at ALPHA at every look, the futility stop spent all of ALPHA on `worse` at the first look
    already (any excess of a small-sample test over its level went straight into the rate; on real classic
    seeds it came to 5.6%); now each look spends ALPHA / looks."""
    rng = np.random.default_rng(1)
    for looks in (3, 6):
        now, before = sequential_trials(0.0, looks, 10_000, rng)
        assert now.count("improved") / len(now) <= stats.ALPHA + 0.004
        assert now.count("worse") / len(now) <= stats.ALPHA * (looks - 1) / looks + 0.004
        assert before.count("worse") / len(before) >= stats.ALPHA - 0.006


def test_levels_of_the_looks():
    for looks in (2, 3, 6):
        interim = [stats.efficacy_alpha(k, looks) for k in range(1, looks)]
        assert sum(interim) + stats.final_alpha(looks) == pytest.approx(stats.ALPHA)  # a union bound
        assert stats.final_alpha(looks) > stats.ALPHA - stats.EFFICACY_ALPHA
        assert stats.worse_alpha(looks) * looks == pytest.approx(stats.WORSE_ALPHA)
    assert stats.final_alpha(1) == pytest.approx(stats.ALPHA)
    assert stats.levels(1, 1) == (stats.ALPHA, stats.WORSE_ALPHA)
    # a futility stop after 1 of 3 looks at p_decline 0.03: `worse` at ALPHA before, inconclusive now
    behind = z_comparison(-1.9)
    assert behind.verdict == "worse" and stats.sequential_verdict(behind, 1, 3) == "inconclusive"
    assert stats.sequential_verdict(z_comparison(-2.5), 1, 3) == "inconclusive"  # 0.006 > 0.01 / 3
    assert stats.sequential_verdict(z_comparison(-2.8), 1, 3) == "worse"  # p_decline 0.0026 < 0.01 / 3
    # one look (--all-seeds, or every seed in one wave): `worse` at WORSE_ALPHA too, `improved` at ALPHA
    assert stats.sequential_verdict(z_comparison(-1.9), 1, 1) == "inconclusive"
    assert stats.sequential_verdict(z_comparison(-2.5), 1, 1) == "worse"
    assert stats.sequential_verdict(z_comparison(1.9), 1, 1) == "improved"
    # one candidate seed is never `worse`, however far behind (a bad seed of the left tail); two can be
    assert stats.sequential_verdict(z_comparison(-6.0, seeds=1), 1, 3) == "inconclusive"
    assert stats.sequential_verdict(z_comparison(-6.0, seeds=1), 1, 1) == "inconclusive"
    assert stats.sequential_verdict(z_comparison(-6.0, seeds=2), 1, 3) == "worse"
    assert stats.sequential_verdict(z_comparison(6.0, seeds=1), 1, 1) == "improved"  # improved: no such rule
    # the last look: improved at final_alpha, a little below ALPHA
    edge = z_comparison(float(sps.norm.isf(stats.ALPHA - 0.0005)))
    assert edge.verdict == "improved" and stats.sequential_verdict(edge, 3, 3) == "inconclusive"
    assert stats.sequential_verdict(z_comparison(2.0), 3, 3) == "improved"


# ---- power and the seeds it needs -------------------------------------------------------------------


def test_seeds_for_power_gives_the_textbook_sample_sizes():
    """One-sided two-sample t-test at 0.05 for 80% power (G*Power's figures): d 0.2 -> 310 per group,
    0.5 -> 51, 0.8 -> 21, 1.0 -> 14; one seed fewer falls short."""
    for d, n in ((0.2, 310), (0.5, 51), (0.8, 21), (1.0, 14)):
        assert stats.seeds_for_power(d * 0.11, 0.11, most=400) == n
        assert stats.power(d * 0.11, 0.11, n) >= 0.80 > stats.power(d * 0.11, 0.11, n - 1)
    assert stats.seeds_for_power(0.01, 0.11) is None  # more than MAX_SEEDS_NEEDED
    assert stats.seeds_for_power(3.0, 0.11) == stats.MIN_SEEDS_WELCH  # never fewer than Welch needs
    assert stats.power(-0.1, 0.11, 10) == 0.0 and stats.power(0.1, 0.11, 1) == 0.0


def test_power_is_the_rate_at_which_scipy_t_test_rejects():
    rng = np.random.default_rng(0)
    n, d, trials = 14, 1.0, 4000
    a = rng.normal(d, 1.0, size=(trials, n))
    b = rng.normal(0.0, 1.0, size=(trials, n))
    rejected = sps.ttest_ind(a, b, axis=1, alternative="greater").pvalue < stats.ALPHA
    assert rejected.mean() == pytest.approx(stats.power(d, 1.0, n), abs=0.02)  # binomial se 0.006


def test_a_table_restricted_to_examples_is_the_table_of_those_examples():
    """compare() tabulates each side once and restricts it to the common examples: the same table as
    tabulating the rows on those examples (seeds with missing cells included)."""
    rng = np.random.default_rng(0)
    rows = [
        {"seed": s, "env": e, "example_id": str(i), "sample": k, "score": float(rng.random())}
        for s in range(3)
        for e in ("a", "b")
        for i in range(50)
        for k in range(2)
        if rng.random() > 0.1
    ]
    table = stats.tabulate(rows)
    common = {"a": [str(i) for i in range(0, 50, 3)], "b": [str(i) for i in range(40, 0, -7)]}
    common = {e: [x for x in ids if x in table.examples[e]] for e, ids in common.items()}
    direct, restricted = stats.tabulate(rows, common), table.restricted(common)
    assert (restricted.seeds, restricted.envs, restricted.examples) == (
        direct.seeds,
        direct.envs,
        direct.examples,
    )
    for env in direct.envs:
        assert np.array_equal(restricted.matrix[env], direct.matrix[env], equal_nan=True)
