"""Measure the keep/revert rule of autorl.record.stats on synthetic trials with a known truth.

    uv run scripts/simulate_decisions.py            # the default eval size and seeds, plus a seeds sweep
    uv run scripts/simulate_decisions.py --seeds 8 --only  # one setting
    uv run scripts/simulate_decisions.py --grid     # power table over eval sizes x seeds

Generative model (binary scores, as the LLM track's verifiers give them):
  * eval example i has a difficulty a_i ~ N(logit(base), difficulty_sd) on the logit scale;
  * a training seed s changes the model globally (u_s ~ N(0, sd_u)) and per example
    (w_si ~ N(0, interaction_sd)): success probability p_si = sigmoid(a_i + u_s + w_si + effect);
  * each of `samples` completions per example scores Bernoulli(p_si).
sd_u is calibrated so that the expected eval_score (an infinite eval) varies across training seeds with
sd --seed-sd (0.02 by default); with eval sampling on top, one trial's eval_score then varies by ~0.03-0.04
at a few hundred binary examples: RL post-training seeds differ by 0.02-0.04 and a re-run moved by 0.07.
The candidate's effect is a logit shift calibrated to raise the expected eval_score by --gain (0.05).

The protocol as program.md runs it: the baseline twice (same config, different seeds; the first is the
reference, both feed the ledger's noise floor), then one candidate: A/A (same config: any `improved` is a
false keep) and A/B (+gain: `improved` is a detection). Each world draws a fresh eval set. With several seeds
a candidate is looked at after each wave of `par` seeds (run.py's --parallel) but the last: `rule` is run.py's
(both early stops, each look's level), `before` the rule until 2026-11-25; `--all-seeds` runs every seed and
takes one look. The seed columns give the mean seeds a candidate ran. The verdict is
autorl.record.stats.compare_tables, the code run.py uses. For contrast, the "examples-only" column is a paired
test over examples alone (what treats each trained model as fixed).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from scipy import stats as sps

from autorl.engine.track import get_track
from autorl.io import paths
from autorl.llm.eval import load_eval_spec
from autorl.record.stats import (
    ALPHA,
    DEFAULT_SEED_SD,
    PRIOR_DF,
    Comparison,
    NoiseFloor,
    Table,
    compare_tables,
    early_decision,
    futile,
    sequential_verdict,
    spent_alpha,
)


def default_eval_size() -> tuple[int, int, int, str]:
    """(envs, examples per env, samples per example) of the repo's eval.toml (the smallest env's size)."""
    spec = load_eval_spec(paths.eval_spec_file())
    n_ex = min(e.num_examples for e in spec.env)
    samples = min(e.samples_per_example for e in spec.env)
    return len(spec.env), n_ex, samples, "from eval.toml"


class World:
    """One generative setting; draws eval sets and trials."""

    def __init__(self, args: argparse.Namespace, rng: np.random.Generator) -> None:
        self.a = args
        self.rng = rng
        self.mu = np.log(args.base / (1 - args.base))
        self.sd_u = self._calibrate_sd_u()
        self.shift = self._calibrate_shift()

    def eval_set(self) -> np.ndarray:
        return self.rng.normal(self.mu, self.a.difficulty_sd, size=(self.a.envs, self.a.examples))

    def trial(self, diff: np.ndarray, n_seeds: int, shift: float = 0.0, sd_u: float | None = None) -> Table:
        sd_u = self.sd_u if sd_u is None else sd_u
        u = self.rng.normal(0.0, sd_u, size=(n_seeds, 1, 1))
        w = self.rng.normal(0.0, self.a.interaction_sd, size=(n_seeds, *diff.shape))
        p = 1.0 / (1.0 + np.exp(-(diff[None] + u + w + shift)))
        scores = self.rng.binomial(self.a.samples, p) / self.a.samples  # mean over samples
        envs = [f"env{e}" for e in range(diff.shape[0])]
        ids = [str(i) for i in range(diff.shape[1])]
        matrix = {e: scores[:, k, :] for k, e in enumerate(envs)}
        return Table(list(range(n_seeds)), envs, {e: ids for e in envs}, matrix)

    def _training_sd(self, sd_u: float, n_seeds: int = 2000, n_examples: int = 2000) -> float:
        """sd over training seeds of the expected eval_score (infinite eval: no sampling noise)."""
        a = self.rng.normal(self.mu, self.a.difficulty_sd, size=n_examples)
        u = self.rng.normal(0.0, sd_u, size=(n_seeds, 1))
        w = self.rng.normal(0.0, self.a.interaction_sd, size=(n_seeds, n_examples))
        return float(np.std((1.0 / (1.0 + np.exp(-(a + u + w)))).mean(1), ddof=1))

    def _calibrate_sd_u(self) -> float:
        """Bisection on sd_u so that the training-seed sd of eval_score is --seed-sd."""
        lo, hi = 0.0, 3.0
        for _ in range(20):
            mid = (lo + hi) / 2
            if self._training_sd(mid) < self.a.seed_sd:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    def total_sd(self, n: int = 2000) -> float:
        """sd of one trial's eval_score on a fixed eval set: training seed + eval sampling."""
        diff = self.eval_set()
        return float(np.std([seed_score(self.trial(diff, 1), 0) for _ in range(n)], ddof=1))

    def _calibrate_shift(self) -> float:
        """Logit shift that raises the expected eval_score by --gain (large Monte Carlo, no Bernoulli)."""
        z = self.rng.normal(self.mu, self.a.difficulty_sd, 200_000)
        z = z + self.rng.normal(0, self.sd_u, z.size) + self.rng.normal(0, self.a.interaction_sd, z.size)
        base = np.mean(1 / (1 + np.exp(-z)))
        lo, hi = 0.0, 5.0
        for _ in range(40):
            mid = (lo + hi) / 2
            if np.mean(1 / (1 + np.exp(-(z + mid)))) - base < self.a.gain:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2


def seed_score(t: Table, i: int) -> float:
    return float(np.mean([t.matrix[e][i].mean() for e in t.envs]))


def examples_only_verdict(cand: Table, ref: Table, alpha: float) -> bool:
    """The naive rule: paired test over examples only (each trained model treated as fixed)."""
    d = np.concatenate([cand.matrix[e].mean(0) - ref.matrix[e].mean(0) for e in cand.envs])
    se = d.std(ddof=1) / np.sqrt(d.size)
    return se > 0 and d.mean() > 0 and sps.norm.sf(d.mean() / se) < alpha


def first_seeds(t: Table, k: int) -> Table:
    return Table(t.seeds[:k], t.envs, t.examples, {e: m[:k] for e, m in t.matrix.items()})


# The rule until 2026-11-25, kept here to measure against: the efficacy stop spent ALPHA / 2 over the interim
# looks and every look's verdict was the test at ALPHA (scripts/aa_pool.py measures it on real seeds too).
EFFICACY_ALPHA_BEFORE = ALPHA / 2


def decide_before(compare_at: Callable[[int], Comparison], looks: int) -> tuple[str, int]:
    """(verdict, looks taken) under the rule before 2026-11-25; `compare_at(k)` compares the seeds of the
    first k waves with the reference."""
    for k in range(1, looks + 1):
        c = compare_at(k)
        level = spent_alpha(k / looks, EFFICACY_ALPHA_BEFORE) - spent_alpha(
            (k - 1) / looks, EFFICACY_ALPHA_BEFORE
        )
        if k == looks or futile(c) or c.p_value < level:
            return c.verdict, k
    raise AssertionError("unreachable")


def decide_rule(compare_at: Callable[[int], Comparison], looks: int) -> tuple[str, int]:
    """(verdict, looks taken) as run.py decides: stats.early_decision after each wave but the last, the
    verdict at the level of the look the trial ended at (stats.sequential_verdict)."""
    for k in range(1, looks + 1):
        c = compare_at(k)
        if k == looks or early_decision(c, k, looks) is not None:
            return sequential_verdict(c, k, looks), k
    raise AssertionError("unreachable")


def decide(cand: Table, ref: Table, nf: NoiseFloor, rule: str, parallel: int = 1) -> tuple[str, int]:
    """(verdict, seeds run) for one candidate, looking after each wave of `parallel` seeds but the last.
    rule: `none` (all seeds, one look: the test at ALPHA), `before` (decide_before) or `rule` (run.py's)."""
    n = len(cand.seeds)
    wave = n if rule == "none" else parallel
    looks = -(-n // wave)

    def compare_at(k: int) -> Comparison:
        return compare_tables(first_seeds(cand, min(n, k * wave)), ref, nf)

    verdict, k = (decide_before if rule == "before" else decide_rule)(compare_at, looks)
    return verdict, min(n, k * wave)


def simulate(
    args: argparse.Namespace, seeds: int, train_sd: float, examples: int, rng_seed: int, parallel: int = 1
) -> dict:
    ns = argparse.Namespace(**{**vars(args), "seed_sd": train_sd, "examples": examples})
    world = World(ns, np.random.default_rng(rng_seed))
    rules = ("none",) if args.all_seeds else ("before", "rule")
    kept = {(r, side): 0 for r in rules for side in ("aa", "ab")}
    worse = dict.fromkeys(rules, 0)  # A/A candidates called `worse`
    used = dict.fromkeys(kept, 0)
    naive_aa = 0
    for _ in range(args.worlds):
        diff = world.eval_set()
        ref = world.trial(diff, seeds)
        repeat = world.trial(diff, seeds)  # the second baseline: same config, other seeds, all of them
        scores = [seed_score(ref, i) for i in range(seeds)] + [seed_score(repeat, i) for i in range(seeds)]
        nf = NoiseFloor(DEFAULT_SEED_SD, PRIOR_DF).with_scores(scores)
        trials = {"aa": world.trial(diff, seeds), "ab": world.trial(diff, seeds, shift=world.shift)}
        for rule, side in kept:
            verdict, u = decide(trials[side], ref, nf, rule, parallel)
            kept[rule, side] += verdict == "improved"
            worse[rule] += side == "aa" and verdict == "worse"
            used[rule, side] += u
        naive_aa += examples_only_verdict(trials["aa"], ref, ALPHA)
    n = args.worlds
    out = {"total_sd": world.total_sd(), "naive_false_keep": naive_aa / n}
    for rule in rules:
        out[rule] = {
            "false_keep": kept[rule, "aa"] / n,
            "false_worse": worse[rule] / n,
            "power": kept[rule, "ab"] / n,
            "seeds_aa": used[rule, "aa"] / n,
            "seeds_ab": used[rule, "ab"] / n,
        }
    return out


RULES = {
    "none": "none = every seed runs",
    "before": "before = the rule until 2026-11-25 (efficacy spends ALPHA/2, every verdict at ALPHA)",
    "rule": "rule = run.py's: stats.early_decision, each look's level (stats.sequential_verdict)",
}


def main() -> None:
    n_env, n_ex, samples, source = default_eval_size()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", type=int, default=n_env)
    p.add_argument("--examples", type=int, default=n_ex, help="eval examples per env")
    p.add_argument("--samples", type=int, default=samples, help="samples per eval example")
    p.add_argument(
        "--seeds",
        type=int,
        default=get_track("llm").default_seeds,
        help="training seeds per trial (run.py's default)",
    )
    p.add_argument("--seed-sd", type=float, default=0.02, help="training-seed sd (no eval noise)")
    p.add_argument("--gain", type=float, default=0.05, help="true improvement to detect")
    p.add_argument("--base", type=float, default=0.5, help="mean success probability of the reference")
    p.add_argument("--difficulty-sd", type=float, default=1.5, help="logit sd of example difficulty")
    p.add_argument("--interaction-sd", type=float, default=0.5, help="logit sd of seed x example effects")
    p.add_argument("--worlds", type=int, default=1000, help="simulated decisions per setting")
    p.add_argument("--only", action="store_true", help="the given setting only (parallel 1, 2, 3, 6)")
    p.add_argument("--grid", action="store_true", help="power table: eval sizes x seeds (a few minutes)")
    p.add_argument("--all-seeds", action="store_true", help="no early stop: every candidate runs all seeds")
    p.add_argument("--rng-seed", type=int, default=0)
    args = p.parse_args()

    t0 = time.time()
    print(f"eval: {args.envs} envs x {args.examples} examples x {args.samples} samples ({source})")
    print(f"true gain {args.gain:+.3f}; {args.worlds} decisions per setting; rule: stats.compare_tables")
    print("train_sd: seed-to-seed sd of the expected eval_score; trial_sd: one trial's sd incl. eval noise")
    header = f"{'setting':<22} {'examples':>8} {'seeds':>5} {'par':>3} {'train_sd':>8} {'trial_sd':>8} |"
    cols = f"{'false_keep':>10} {'false_worse':>11} {'power':>6} {'seeds A/A':>9} {'seeds A/B':>9}"
    rules = ["none"] if args.all_seeds else ["before", "rule"]
    print("rules: " + "; ".join(RULES[r] for r in rules))
    print(f"{header} " + " | ".join(f"{r + ': ' + cols:>56}" for r in rules) + " | examples-only")
    settings = [("default", args.examples, args.seeds, args.seed_sd, p) for p in (1, 2, 3, 6)]
    if args.grid:
        sizes = (50, 100, 250, 500)
        settings = [("grid", n, s, args.seed_sd, 1) for n in sizes for s in (1, 3, 6, 8)]
    elif not args.only:
        sweep = [s for s in (1, 3, 5, 8, 12) if s != args.seeds]
        settings += [("seeds", args.examples, s, args.seed_sd, 1) for s in sweep]
        settings += [
            ("noisier training", args.examples, s, sd, 1) for sd in (0.03, 0.045) for s in (1, 6, 12, 16)
        ]
    for k, (name, n_ex_, s, sd, par) in enumerate(settings):
        r = simulate(args, s, sd, n_ex_, args.rng_seed + k, par)
        figures = " | ".join(
            f"{'':>10}{r[rule]['false_keep']:>10.3f} {r[rule]['false_worse']:>11.3f} "
            f"{r[rule]['power']:>6.3f} "
            f"{r[rule]['seeds_aa']:>9.2f} {r[rule]['seeds_ab']:>9.2f}"
            for rule in rules
        )
        print(
            f"{name:<22} {n_ex_:>8} {s:>5} {par:>3} {sd:>8.3f} {r['total_sd']:>8.3f} | {figures} | "
            f"{r['naive_false_keep']:>8.3f}",
            flush=True,
        )
    se = np.sqrt(ALPHA * (1 - ALPHA) / args.worlds)
    print(f"binomial se of a 5% rate over {args.worlds} decisions: {se:.3f}; took {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
