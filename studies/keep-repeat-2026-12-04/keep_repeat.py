"""After a keep: the next ideas against the keep's one trial, or against it and a repeat of it (6 more seeds).

On a pool of real seeds of one config (the 2026-11-25 LLM pool A: 60 seeds of train.toml at --budget 90),
each world draws, from one permutation of the pool (every seed used once a world):
  * the baseline: 12 seeds (the baseline and its repeat, program.md's setup), the first reference;
  * a keep: config K = the pool's config + `gain` (every eval row of its seeds shifted by `gain`: real seed
    noise, a known gain), 6 seeds, one at a time, decided by the product's rule (simulate_decisions'
    decide_rule: the futility and efficacy stops, stats.sequential_verdict) against the baseline. Only the
    worlds where it reads `improved` go on: a keep is selected by its luck (the winner's curse);
  * the reference for the next ideas, two ways: `one` (the keep's trial alone: what program.md gives now;
    4-6 seeds, fewer after an efficacy stop) or `repeat` (that trial pooled with an --all-seeds repeat of K,
    6 fresh seeds: reference_evidence pools every trial of the reference's config);
  * an idea: K + `delta`, 6 seeds one at a time, decided by the rule against that reference; the noise floor
    the ledger would hold (stats.noise_floor over the baseline's two trials, the keep, its repeat).
Printed per gain, delta and reference: `improved` (a false keep at delta 0, power above), the share stopped
by the futility stop after one seed, the seeds an idea ran, and the reference's bias (its mean minus K's
true mean, the pool's mean + gain). The last block: ideas against the baseline's 12 seeds (no keep yet), the
one-seed futility stop's power curve for small gains, beside the same ideas' with no early stop (all six
seeds, one look: --all-seeds).

    uv run python studies/keep-repeat-2026-12-04/keep_repeat.py --worlds 4000 > keep-repeat.log
    # the 360 s pool (42 seeds of train.toml, studies/abort-2026-11-27/llm/analyze-3.sh's files)
    uv run python studies/keep-repeat-2026-12-04/keep_repeat.py --worlds 4000 \
        --pool-file studies/abort-2026-11-27/llm/llm-pools-3.jsonl.gz \
        --pool-file studies/abort-2026-11-27/llm/llm-night-baselines.jsonl.gz > keep-repeat-360.log
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

import aa_pool  # noqa: E402
from simulate_decisions import decide_rule, first_seeds  # noqa: E402

from autorl.engine.track import get_track  # noqa: E402
from autorl.record import stats  # noqa: E402
from autorl.record.row import LedgerRow  # noqa: E402

POOL = REPO / "studies/validity-2026-11-25/llm-pool/llm-pool.jsonl.gz"
SEEDS = 6  # the LLM track's default; one at a time on the 2-core VM: 6 looks


class Pool:
    """The pool's seeds as one stats.Table (seeds x examples per env), tabulated once; a trial's table is
    some of its rows, every score moved by the trial's gain (a seed's score moves by the same)."""

    def __init__(self, seeds: list[list[dict]]) -> None:
        self.table = stats.tabulate([{**r, "seed": k} for k, s in enumerate(seeds) for r in s])
        self.scores = np.array([stats._seed_score(self.table, i) for i in range(len(seeds))])
        self.mean = float(self.scores.mean())

    def trial(self, idx: np.ndarray, gain: float) -> stats.Table:
        t = self.table
        return stats.Table(
            list(range(len(idx))), t.envs, t.examples, {e: t.matrix[e][idx] + gain for e in t.envs}
        )


def joined(*tables: stats.Table) -> stats.Table:
    t = tables[0]
    matrix = {e: np.concatenate([x.matrix[e] for x in tables]) for e in t.envs}
    return stats.Table(list(range(len(matrix[t.envs[0]]))), t.envs, t.examples, matrix)


def noise(groups: dict[str, list[list[float]]], prior: float) -> stats.NoiseFloor:
    """The ledger's noise floor over the trials named (config -> each trial's seed scores)."""
    rows = [
        LedgerRow(status="ok", config_hash=name, seed_scores=dict(enumerate(scores)))
        for name, trials in groups.items()
        for scores in trials
    ]
    return stats.noise_floor(rows, None, prior_sd=prior)


def trial(cand: stats.Table, ref: stats.Table, nf: stats.NoiseFloor) -> tuple[str, int]:
    """(verdict, seeds run) of a candidate of its table's seeds, one at a time, as run.py decides it."""

    @functools.cache
    def compare_at(look: int) -> stats.Comparison:
        return stats.compare_tables(first_seeds(cand, look), ref, noise=nf)

    return decide_rule(compare_at, len(cand.seeds))


def all_seeds(cand: stats.Table, ref: stats.Table, nf: stats.NoiseFloor) -> tuple[str, int]:
    """The same candidate with no early stop (--all-seeds): one look, on every seed."""
    c = stats.compare_tables(cand, ref, noise=nf)
    return stats.sequential_verdict(c, 1, 1), len(cand.seeds)


def world(
    pool: Pool, rng: np.random.Generator, gain: float, deltas: list[float], prior: float
) -> dict | None:
    perm = rng.permutation(len(pool.scores))
    base_idx = [perm[0:6], perm[6:12]]
    base = [list(pool.scores[i]) for i in base_idx]
    base_ref = pool.trial(perm[0:12], 0.0)
    verdict, ran = trial(pool.trial(perm[12 : 12 + SEEDS], gain), base_ref, noise({"base": base}, prior))
    if verdict != "improved":
        return None
    keep_idx, repeat_idx = perm[12 : 12 + ran], perm[18:24]
    refs = {"one": [keep_idx], "repeat": [keep_idx, repeat_idx]}
    out: dict = {"keep_seeds": ran}
    for name, trials in refs.items():
        ref = joined(*(pool.trial(i, gain) for i in trials))
        out[f"bias_{name}"] = float(np.mean(pool.scores[np.concatenate(trials)])) + gain
        nf = noise({"base": base, "keep": [list(pool.scores[i] + gain) for i in trials]}, prior)
        for d in deltas:
            out[name, d] = trial(pool.trial(perm[24 : 24 + SEEDS], gain + d), ref, nf)
    return out


def rate(xs: list[bool]) -> str:
    from scipy.stats import binomtest

    k, n = sum(xs), len(xs)
    ci = binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"{k / n:6.1%} ({ci.low:.1%}..{ci.high:.1%})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worlds", type=int, default=4000)
    ap.add_argument("--gains", default="0.015,0.025,0.04", help="the keep's true gain over the baseline")
    ap.add_argument("--deltas", default="0,0.01,0.02,0.03,0.05", help="an idea's true gain over the keep")
    ap.add_argument("--rng", type=int, default=0)
    ap.add_argument(
        "--pool-file",
        type=Path,
        action="append",
        default=[],
        help="scripts/abort_replay.py exports (repeatable) instead of the 90 s pool: --pool-name's seeds",
    )
    ap.add_argument("--pool-name", default="A")
    args = ap.parse_args()
    if args.pool_file:
        import abort_replay

        pool = Pool([s.rows for s in abort_replay.read_pool_files(args.pool_file)[args.pool_name].seeds])
    else:
        pool = Pool(aa_pool.read_pool_file(POOL)["pool A"].seeds)
    prior = get_track("llm").seed_sd_prior
    deltas = [float(x) for x in args.deltas.split(",")]
    print(
        f"pool A: {len(pool.scores)} seeds, mean {pool.mean:.4f} (sd {pool.scores.std(ddof=1):.4f}); "
        f"prior sd {prior}; {args.worlds} worlds a gain"
    )
    for gain in [float(x) for x in args.gains.split(",")]:
        rng = np.random.default_rng(args.rng)
        kept = [w for w in (world(pool, rng, gain, deltas, prior) for _ in range(args.worlds)) if w]
        seeds = np.mean([w["keep_seeds"] for w in kept])
        print(f"\nkeep gain +{gain}: kept in {len(kept)}/{args.worlds} worlds, {seeds:.2f} seeds on average")
        for name in ("one", "repeat"):
            bias = np.mean([w[f"bias_{name}"] for w in kept]) - (pool.mean + gain)
            print(f"  reference {name:6s}: its mean - K's true mean {bias:+.4f}")
            for d in deltas:
                print(f"    idea +{d:<5}: " + ends_line([w[name, d] for w in kept]))
    rng = np.random.default_rng(args.rng)
    print("\nno keep yet: ideas against the baseline's 12 seeds")
    for d in deltas:
        ends, fixed = [], []
        for _ in range(args.worlds):
            perm = rng.permutation(len(pool.scores))
            nf = noise({"base": [list(pool.scores[perm[0:6]]), list(pool.scores[perm[6:12]])]}, prior)
            cand, ref = pool.trial(perm[12 : 12 + SEEDS], d), pool.trial(perm[0:12], 0.0)
            ends.append(trial(cand, ref, nf))
            fixed.append(all_seeds(cand, ref, nf))
        print(f"    idea +{d:<5}: " + ends_line(ends))
        print(f"      no early stop: improved {rate([v == 'improved' for v, _ in fixed])}, seeds {SEEDS}")


def ends_line(ends: list[tuple[str, int]]) -> str:
    improved = rate([v == "improved" for v, _ in ends])
    one_seed = np.mean([n == 1 and v != "improved" for v, n in ends])
    ran = np.mean([n for _, n in ends])
    return f"improved {improved}, stopped after 1 seed {one_seed:5.1%}, seeds {ran:.2f}"


if __name__ == "__main__":
    main()
