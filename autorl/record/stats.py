"""Statistics of a trial: eval_score, its confidence interval, and the keep/revert verdict.

Input: eval rows `{"seed", "env", "example_id", "sample", "score"}`, one per (training seed, eval example,
sample). Scores may be 0/1 (LLM track) or episode returns (classic track): nothing here assumes a range.

Two sources of noise make two trials of one config differ:
  * eval sampling: which completions were sampled on which examples (shrinks with a bigger eval);
  * training seed: the trained model itself differs from seed to seed (does NOT shrink with the eval).
A paired test over examples alone sees only the first and calls seed noise "improved" far too often.
The verdict therefore uses the spread of whole-trial scores across training seeds:
  * both sides trained with >= 3 seeds: Welch's t-test on the per-seed eval_scores (each computed on the
    common examples, so example difficulty cancels: the comparison is paired over examples);
  * otherwise: the single-seed score sd from the ledger's "noise floor" (the spread of repeated trials of
    the same config), pooled with a conservative prior so that it is never taken from one pair alone.
In both cases the standard error is at least the paired example-level standard error.
Verdict: `improved` when the one-sided p < alpha (0.05) and delta > 0; `worse` when the one-sided p
for a decline is < alpha; else `inconclusive`. `scripts/simulate_decisions.py` measures the rule.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from autorl.record.context import ResearchContext
from autorl.record.row import LedgerRow, counted

ALPHA = 0.05  # one-sided test level of the verdict
N_BOOT = 2000  # bootstrap replicates for the CI (enough for 2 decimals of a 95% interval)

# Conservative prior for the single-seed eval_score sd of the LLM track, used until the ledger has
# repeated trials: the upper end of the seed-to-seed spread RL post-training runs show (0.02-0.04;
# one re-run of the same config moved eval_score by 0.07, i.e. sd ~0.05 for a difference of two runs).
DEFAULT_SEED_SD = 0.04
# Weight of that prior in pseudo degrees of freedom: measured repeats outweigh it after a few trials.
PRIOR_DF = 4.0
# With at least this many seeds on both sides, each side's own seed spread is used (Welch); with fewer,
# a 2-vs-2 Welch test has ~2 df and almost no power, so the pooled noise floor is used instead.
MIN_SEEDS_WELCH = 3
# The interim looks' stop for efficacy spends at most this much of ALPHA in all (O'Brien-Fleming-type
# spending); the last look gets the rest (final_alpha). Measured with scripts/simulate_decisions.py and
# scripts/aa_pool.py: docs/statistics.md.
EFFICACY_ALPHA = ALPHA / 5
# The power the default seed count was chosen for (docs/statistics.md: 6 seeds detect +0.05 80-90% of the
# time): the `seeds_needed` figure of an inconclusive trial is for this power at ALPHA.
POWER = 0.80
# `worse` spends at most this over all the looks (split evenly, `worse_alpha`). Not ALPHA: the reference is
# the best kept trial, so it is often lucky, and a candidate as good as its config is then behind it by
# chance. On real classic seeds against references drawn from the top 5% of their config's trials, an A/A
# candidate was called `worse` 11.8% of the time at ALPHA, 3.2% at 0.01 (docs/statistics.md, "A lucky
# reference").
WORSE_ALPHA = 0.01
# `worse` needs at least this many candidate seeds. One seed is one draw from its config's seed
# distribution, whose left tail is longer than a normal's on the LLM track (pool A at --budget 360: a seed 3.5
# sds below the mean in 42); against a lucky reference every false `worse` came after one candidate seed, at
# the futility stop (docs/statistics.md, "A lucky reference"). A single seed's stop is `inconclusive`.
MIN_SEEDS_WORSE = 2
MAX_SEEDS_NEEDED = 64  # run.py's --seeds limit: beyond it the figure says "more than"


# ----------------------------------------------------------------------------------------------------
# Eval rows -> arrays
# ----------------------------------------------------------------------------------------------------
@dataclass
class Table:
    """Per env: a (seeds x examples) matrix of scores averaged over samples (NaN where missing)."""

    seeds: list[int]
    envs: list[str]
    examples: dict[str, list[str]]
    matrix: dict[str, np.ndarray]

    def restricted(self, examples: Mapping[str, Sequence[str]]) -> Table:
        """The table on these envs and examples only (each present here), in their order: what
        `tabulate(rows, examples)` gives, without reading the rows again."""
        envs = sorted(examples)
        matrix = {}
        for env in envs:
            column = {ex: i for i, ex in enumerate(self.examples[env])}
            matrix[env] = self.matrix[env][:, [column[ex] for ex in examples[env]]]
        return Table(self.seeds, envs, {e: list(examples[e]) for e in envs}, matrix)


def tabulate(rows: Iterable[Mapping[str, Any]], examples: Mapping[str, Sequence[str]] | None = None) -> Table:
    """Average samples per (seed, env, example); optionally restricted to a given example set per env."""
    sums: dict[tuple[Any, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    seeds: set[Any] = set()
    found: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        key = (r.get("seed", 0), str(r["env"]), str(r["example_id"]))
        cell = sums[key]
        cell[0] += float(r["score"])
        cell[1] += 1.0
        seeds.add(key[0])
        found[key[1]].add(key[2])
    seed_list = sorted(seeds)
    if examples is None:
        examples = {env: sorted(ids) for env, ids in found.items()}
    envs = sorted(examples)
    matrix = {}
    for env in envs:
        ids = list(examples[env])
        m = np.full((len(seed_list), len(ids)), np.nan)
        for si, seed in enumerate(seed_list):
            for ei, ex in enumerate(ids):
                total = sums.get((seed, env, ex))
                if total is not None:
                    m[si, ei] = total[0] / total[1]
        matrix[env] = m
    return Table(seed_list, envs, {e: list(examples[e]) for e in envs}, matrix)


def _score(table: Table) -> float:
    """Mean over envs of the per-env mean over examples (each example averaged over seeds)."""
    per_env = [np.nanmean(np.nanmean(table.matrix[e], axis=0)) for e in table.envs if table.matrix[e].size]
    return float(np.mean(per_env)) if per_env else float("nan")


def eval_score(rows: Iterable[Mapping[str, Any]]) -> float:
    """Mean over environments of the per-environment mean score (samples and seeds averaged)."""
    return _score(tabulate(rows))


def env_scores(rows: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    t = tabulate(rows)
    return {e: float(np.nanmean(np.nanmean(t.matrix[e], axis=0))) for e in t.envs}


def seed_scores(rows: Iterable[Mapping[str, Any]]) -> dict[Any, float]:
    """eval_score of each training seed separately (what the ledger's `seed_scores` column holds)."""
    t = tabulate(rows)
    return {seed: _seed_score(t, i) for i, seed in enumerate(t.seeds)}


def _seed_score(t: Table, i: int) -> float:
    return float(np.mean([np.nanmean(t.matrix[e][i]) for e in t.envs]))


# ----------------------------------------------------------------------------------------------------
# Confidence interval
# ----------------------------------------------------------------------------------------------------
def confidence_interval(
    rows: Iterable[Mapping[str, Any]],
    level: float = 0.95,
    n_boot: int = N_BOOT,
    rng_seed: int = 0,
    seed_sd: float | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap CI of eval_score.

    Examples are resampled within each env (stratified); with >= 2 training seeds the seeds are resampled
    too (two-level bootstrap: seeds and examples are crossed, every seed scored the same examples).
    With one seed the interval covers eval sampling only, unless `seed_sd` (the single-seed sd from the
    noise floor) is given: then a normal seed-level term is added to every replicate.
    """
    t = tabulate(rows)
    if not t.envs:
        return float("nan"), float("nan")
    rng = np.random.default_rng(rng_seed)
    n_seeds = len(t.seeds)
    if n_seeds >= 2:
        seed_counts = rng.multinomial(n_seeds, np.full(n_seeds, 1.0 / n_seeds), size=n_boot)
    else:
        seed_counts = np.ones((n_boot, 1), dtype=np.int64)
    total = np.zeros(n_boot)
    for env in t.envs:
        m = t.matrix[env]
        # Missing (seed, example) cells count as the example's mean over the seeds that have it.
        m = np.where(np.isnan(m), np.nanmean(m, axis=0, keepdims=True), m)
        n_ex = m.shape[1]
        ex_counts = rng.multinomial(n_ex, np.full(n_ex, 1.0 / n_ex), size=n_boot)
        total += np.einsum("bs,si,bi->b", seed_counts, m, ex_counts) / (seed_counts.sum(1) * n_ex)
    boot = total / len(t.envs)
    if n_seeds < 2 and seed_sd:
        boot = boot + rng.normal(0.0, seed_sd, size=n_boot)
    lo, hi = np.quantile(boot, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


# ----------------------------------------------------------------------------------------------------
# Noise floor from the ledger
# ----------------------------------------------------------------------------------------------------
@dataclass
class NoiseFloor:
    """Single-seed eval_score sd: a prior (prior_sd with prior_df pseudo-df) pooled with measured repeats.

    `ss`/`df` are the within-config sum of squares and degrees of freedom of per-seed scores in the ledger
    (trials with the same config_hash, and the seeds of multi-seed trials).
    """

    prior_sd: float = DEFAULT_SEED_SD
    prior_df: float = PRIOR_DF
    ss: float = 0.0
    df: int = 0
    n_configs: int = 0  # configs with repeated measurements
    n_runs: int = 0  # trials that contributed

    @property
    def measured_sd(self) -> float | None:
        return math.sqrt(self.ss / self.df) if self.df > 0 else None

    @property
    def total_df(self) -> float:
        return self.prior_df + self.df

    @property
    def sd(self) -> float:
        """Posterior-mean-like pooled sd: (prior_df * prior_sd^2 + ss) / (prior_df + df)."""
        if self.total_df <= 0:
            return self.prior_sd
        return math.sqrt((self.prior_df * self.prior_sd**2 + self.ss) / self.total_df)

    def with_scores(self, scores: Sequence[float]) -> NoiseFloor:
        """This floor plus one more group of replicate scores (the candidate's own seeds)."""
        if len(scores) < 2:
            return self
        a = np.asarray(scores, float)
        return NoiseFloor(
            self.prior_sd,
            self.prior_df,
            self.ss + float(((a - a.mean()) ** 2).sum()),
            self.df + len(a) - 1,
            self.n_configs + 1,
            self.n_runs + 1,
        )

    def describe(self) -> str:
        if self.df == 0:
            return f"sd {self.sd:.4f} (default prior, no repeated trials yet)"
        return (
            f"sd {self.sd:.4f} (measured {self.measured_sd:.4f} from the seeds of "
            f"{counted(self.n_runs, 'trial')} of {counted(self.n_configs, 'config')}, df {self.df}; prior "
            f"{self.prior_sd:.3g} x{self.prior_df:g})"
        )


def noise_floor(
    ledger_rows: Iterable[LedgerRow],
    context: ResearchContext | None = None,
    prior_sd: float | None = None,
    prior_df: float = PRIOR_DF,
) -> NoiseFloor:
    """The single-seed eval_score sd from repeated trials of the same config in the ledger.

    Groups ok trials by config_hash (of `context` when given: the research context's trials), a contended
    one left out (not measured: `LedgerRow.contended`); every group with >= 2 per-seed scores (two trials of
    one config, or one trial with --seeds >= 2) adds its within-group sum of squares. Pooled with the prior
    `prior_sd` (default `DEFAULT_SEED_SD`; each track has its own, `Track.seed_sd_prior`).
    """
    groups: dict[str, list[float]] = defaultdict(list)
    runs: dict[str, int] = defaultdict(int)
    for r in ledger_rows:
        if r.status != "ok" or r.contended or not r.config_hash:
            continue
        if context is not None and not context.holds(r):
            continue
        scores = r.per_seed_scores()
        if scores:
            groups[r.config_hash].extend(scores)
            runs[r.config_hash] += 1
    nf = NoiseFloor(DEFAULT_SEED_SD if prior_sd is None else prior_sd, prior_df)
    for key, scores in groups.items():
        if len(scores) >= 2:
            a = np.asarray(scores, float)
            nf.ss += float(((a - a.mean()) ** 2).sum())
            nf.df += len(a) - 1
            nf.n_configs += 1
            nf.n_runs += runs[key]
    return nf


# ----------------------------------------------------------------------------------------------------
# Comparison and verdict
# ----------------------------------------------------------------------------------------------------
@dataclass
class Comparison:
    delta: float  # candidate - reference eval_score on the common examples
    p_value: float  # one-sided p for "candidate better than reference"
    verdict: str  # improved | worse | inconclusive
    n_common: int  # eval examples both sides scored
    note: str  # which test and which noise estimate were used
    se: float = float("nan")
    df: float = float("inf")
    n_candidate: int = 0  # training seeds on each side
    n_reference: int = 0


def matching_interval(c: Comparison, alpha: float = ALPHA) -> tuple[float, float]:
    """The interval of `c.delta` that matches its one-sided test at `alpha`: two-sided 1 - 2 alpha (90%),
    delta +- t(1 - alpha, df) SE; its low end is above zero exactly when p < alpha (docs/protocol.md).
    (nan, nan) when the comparison has no standard error."""
    if not (math.isfinite(c.se) and math.isfinite(c.delta)):
        return math.nan, math.nan
    half = float(sps.t.ppf(1 - alpha, c.df)) * c.se
    return c.delta - half, c.delta + half


def seeds_needed(
    c: Comparison, power: float = POWER, alpha: float = ALPHA, both_sides: bool = False
) -> int | None:
    """Seeds for which the measured delta, with the per-seed spread behind this comparison's standard error,
    would be decided (`improved`, or `worse` for a negative delta) with probability `power` at `alpha`.

    The spread is s = se / sqrt(1/n_cand + 1/n_ref). The answer is the smallest n with |delta| / se_n >=
    t_(1-alpha) + t_power, where se_n = s sqrt(1/n + 1/n_ref) (candidate seeds, the reference's seeds as they
    are) or s sqrt(2/n) (`both_sides`: n seeds on each side), and t has the df the verdict would use then:
    Welch's n_c + n_r - 2 once both sides have MIN_SEEDS_WELCH seeds, else the comparison's (noise floor) df.
    None: no delta, or more than MAX_SEEDS_NEEDED. tests/test_agentview.py checks the figure against
    scripts/simulate_decisions.py."""
    ok = c.n_candidate and c.n_reference and c.se > 0 and math.isfinite(c.se) and math.isfinite(c.delta)
    if not ok or c.delta == 0:
        return None
    s = c.se / math.sqrt(1 / c.n_candidate + 1 / c.n_reference)
    for n in range(1, MAX_SEEDS_NEEDED + 1):
        n_ref = n if both_sides else c.n_reference
        welch = min(n, n_ref) >= MIN_SEEDS_WELCH
        df = n + n_ref - 2 if welch else (c.df if math.isfinite(c.df) else 1e9)
        if abs(c.delta) / (s * math.sqrt(1 / n + 1 / n_ref)) >= sps.t.ppf(1 - alpha, df) + sps.t.ppf(
            power, df
        ):
            return n
    return None


def power(delta: float, sd: float, n: int, alpha: float = ALPHA) -> float:
    """The chance that n seeds on each side decide a true gain `delta` (`improved` at one-sided `alpha`),
    seed scores spread by `sd` on both sides: the two-sample t-test's power, from the noncentral t with
    2n - 2 df (what Welch's df come to with equal spreads and sizes). 0 for n < 2 or delta <= 0."""
    if n < 2 or not delta > 0 or not sd > 0:
        return 0.0
    df = 2 * n - 2
    return float(sps.nct.sf(sps.t.ppf(1 - alpha, df), df, delta / (sd * math.sqrt(2 / n))))


def seeds_for_power(
    delta: float, sd: float, target: float = POWER, alpha: float = ALPHA, most: int = MAX_SEEDS_NEEDED
) -> int | None:
    """The fewest seeds per side (at least MIN_SEEDS_WELCH, where the verdict is Welch's over seeds) whose
    `power` reaches `target`; None when not even `most` do (or delta <= 0). Power grows with n: bisection."""
    if power(delta, sd, most, alpha) < target:
        return None
    low, high = MIN_SEEDS_WELCH - 1, most  # power(low) < target (or low below the range) <= power(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if power(delta, sd, mid, alpha) >= target else (mid, high)
    return high


def futile(interim: Comparison) -> bool:
    """Stop adding seeds to a trial: after some of its seeds the candidate is not ahead (delta <= 0).

    A stop for futility only ever ends a trial that was not going to be kept on the seeds run so far, and the
    trial stopped early is never `improved`, so the false-keep rate cannot rise above the fixed-seeds rule's;
    it costs some power and saves seeds on the many candidates that are no better.
    scripts/simulate_decisions.py measures both with this function."""
    return not interim.delta > 0


@functools.cache  # a handful of (t, alpha) pairs, asked for at every look of every simulated trial
def spent_alpha(t: float, alpha: float = EFFICACY_ALPHA) -> float:
    """The one-sided alpha an O'Brien-Fleming-type spending function (Lan-DeMets) has spent by the share `t`
    of the looks: 2 (1 - Phi(z_{1-alpha/2} / sqrt(t))); almost nothing early, `alpha` at t = 1."""
    z = sps.norm.ppf(1 - alpha / 2)
    return 2 * float(sps.norm.sf(z / math.sqrt(t))) if t > 0 else 0.0


def efficacy_alpha(looks_done: int, looks_planned: int) -> float:
    """The one-sided level of an interim stop for efficacy at look `looks_done` of `looks_planned`: what the
    spending function spends between the previous look and this one, so a stop needs an overwhelming lead
    early. The interim looks spend less than EFFICACY_ALPHA in all; `final_alpha` gives the last look the
    rest of ALPHA. scripts/simulate_decisions.py and scripts/aa_pool.py measure the rule."""
    return spent_alpha(looks_done / looks_planned) - spent_alpha((looks_done - 1) / looks_planned)


def final_alpha(looks_planned: int) -> float:
    """The last look's level for `improved`: ALPHA less what the interim looks can spend, so that over all
    the looks a candidate no better than the reference is called `improved` at most ALPHA of the time (a
    union bound). One look (no interim look): ALPHA."""
    return ALPHA - spent_alpha((looks_planned - 1) / looks_planned)


def worse_alpha(looks_planned: int) -> float:
    """The level for `worse` at every look: WORSE_ALPHA split evenly over the looks (Bonferroni), so a
    candidate no worse than the reference is called `worse` at most WORSE_ALPHA of the time. A candidate
    behind stops at the first look it is behind (the futility stop), so the `worse` side is spent at the
    interim looks, where an O'Brien-Fleming boundary would never call anything `worse`."""
    return WORSE_ALPHA / max(1, looks_planned)


def early_decision(interim: Comparison, looks_done: int, looks_planned: int) -> str | None:
    """After an interim look (a wave of seeds, not the last): `futile` (behind: stop, never kept),
    `efficacy` (ahead beyond the O'Brien-Fleming-type boundary: stop, the verdict on the seeds run is
    `improved`) or None (run the next wave)."""
    if futile(interim):
        return "futile"
    if interim.p_value < efficacy_alpha(looks_done, looks_planned):
        return "efficacy"
    return None


def looks(seeds_run: int, seeds_planned: int, parallel: int) -> tuple[int, int]:
    """(looks done, looks planned) of a trial that ran `seeds_run` of `seeds_planned` seeds, `parallel` at a
    time: one look after each wave (the last look is the final verdict)."""
    return -(-seeds_run // parallel), -(-seeds_planned // parallel)


def interim_look(
    candidate_rows: Iterable[Mapping[str, Any]],
    reference_rows: Iterable[Mapping[str, Any]],
    noise: NoiseFloor,
    looks_done: int,
    looks_planned: int,
) -> tuple[Comparison, str | None]:
    """The look after a wave of a trial's seeds (not the last): the comparison of the seeds run so far with
    the reference, and `early_decision`'s call on it. run.py calls this after each wave;
    scripts/aa_pool.py calls it on real seeds to measure the rule."""
    interim = compare(candidate_rows, reference_rows, noise=noise)
    return interim, early_decision(interim, looks_done, looks_planned)


def levels(looks_done: int, looks_planned: int) -> tuple[float, float]:
    """(improved's level, worse's level) at look `looks_done` of `looks_planned`: `improved` needs p below
    the first, `worse` needs 1 - p below the second (`sequential_verdict`). One look: ALPHA, WORSE_ALPHA."""
    if looks_planned <= 1:
        return ALPHA, WORSE_ALPHA
    if looks_done < looks_planned:
        return efficacy_alpha(looks_done, looks_planned), worse_alpha(looks_planned)
    return final_alpha(looks_planned), worse_alpha(looks_planned)


def sequential_verdict(c: Comparison, looks_done: int, looks_planned: int) -> str:
    """The verdict of a trial compared at look `looks_done` of `looks_planned` (1 of 1: no interim look).

    `improved` needs p below the look's level: `efficacy_alpha` at an interim look (the efficacy stop),
    `final_alpha` at the last; `worse` needs the decline's p below `worse_alpha` at any look. Both sides
    then spend at most ALPHA over all the looks. Judging every look at ALPHA, as the rule did before
    2026-11-25, spent a new ALPHA on `worse` at each futility stop: an A/A candidate was called `worse`
    5.4% of the time on real classic seeds (docs/statistics.md). `worse` spends WORSE_ALPHA, not ALPHA, and
    needs MIN_SEEDS_WORSE candidate seeds."""
    if not math.isfinite(c.p_value):
        return c.verdict
    improved, worse = levels(looks_done, looks_planned)
    if c.delta > 0 and c.p_value < improved:
        return "improved"
    if c.delta < 0 and 1.0 - c.p_value < worse and c.n_candidate >= MIN_SEEDS_WORSE:
        return "worse"
    return "inconclusive"


def _common_examples(a: Table, b: Table) -> dict[str, list[str]]:
    out = {}
    for env in a.envs:
        if env in b.examples:
            ids = sorted(set(a.examples[env]) & set(b.examples[env]))
            if ids:
                out[env] = ids
    return out


def compare(
    candidate_rows: Iterable[Mapping[str, Any]],
    reference_rows: Iterable[Mapping[str, Any]],
    noise: NoiseFloor | None = None,
    alpha: float = ALPHA,
) -> Comparison:
    """Candidate vs reference on the same eval examples (matched by env + example_id).

    `noise`: the ledger's noise floor (`noise_floor(ledger.rows(), ...)`), used when a side has one seed;
    it must already contain the reference trial (it comes from the ledger), so only the candidate's own
    seeds are added here. None means the default prior alone.
    """
    cand, ref = tabulate(candidate_rows), tabulate(reference_rows)
    common = _common_examples(cand, ref)
    if not common:
        return Comparison(float("nan"), float("nan"), "inconclusive", 0, "no common eval examples")
    return compare_tables(cand.restricted(common), ref.restricted(common), noise, alpha)


def compare_tables(
    cand: Table, ref: Table, noise: NoiseFloor | None = None, alpha: float = ALPHA
) -> Comparison:
    """The verdict on two tables over the same envs and examples (compare() builds them from eval rows)."""
    common = cand.examples
    n_common = sum(len(v) for v in common.values())
    delta = _score(cand) - _score(ref)

    # Example level: per-example differences of seed/sample means; analytic SE of the env-weighted mean.
    n_env = len(common)
    var_ex = 0.0
    for env in common:
        d = np.nanmean(cand.matrix[env], axis=0) - np.nanmean(ref.matrix[env], axis=0)
        if len(d) >= 2:
            var_ex += float(np.var(d, ddof=1)) / len(d) / n_env**2
    se_ex = math.sqrt(var_ex)

    # Seed level: whole-trial scores per training seed.
    xs_c = np.array([_seed_score(cand, i) for i in range(len(cand.seeds))])
    xs_r = np.array([_seed_score(ref, i) for i in range(len(ref.seeds))])
    n_c, n_r = len(xs_c), len(xs_r)
    if n_c >= MIN_SEEDS_WELCH and n_r >= MIN_SEEDS_WELCH:
        v_c, v_r = xs_c.var(ddof=1) / n_c, xs_r.var(ddof=1) / n_r
        se_seed = math.sqrt(v_c + v_r)
        denom = v_c**2 / (n_c - 1) + v_r**2 / (n_r - 1)
        df_seed = (v_c + v_r) ** 2 / denom if denom > 0 else float("inf")
        how = f"Welch over seeds ({n_c} vs {n_r})"
    else:
        nf = (noise or NoiseFloor()).with_scores(xs_c.tolist())
        se_seed = nf.sd * math.sqrt(1.0 / n_c + 1.0 / n_r)
        df_seed = nf.total_df if nf.total_df > 0 else float("inf")
        how = f"noise floor sd {nf.sd:.4g} (df {nf.total_df:g}), seeds {n_c} vs {n_r}"

    # The example-level SE is a floor (a small eval, or seeds agreeing by chance); the df stay the
    # seed-level ones: the seed-level noise is still there, only its estimate came out small.
    se, df = max(se_seed, se_ex), df_seed
    if se_ex > se_seed:
        how += f"; example-level SE {se_ex:.4g} dominates"
    if se <= 0:
        p = 0.5 if delta == 0 else (0.0 if delta > 0 else 1.0)
    else:
        p = float(sps.t.sf(delta / se, df))
    if p < alpha and delta > 0:
        verdict = "improved"
    elif 1.0 - p < alpha and delta < 0:
        verdict = "worse"
    else:
        verdict = "inconclusive"
    return Comparison(
        float(delta), p, verdict, n_common, f"{how}; SE {se:.4g}", float(se), float(df), n_c, n_r
    )
