"""A first look at the LLM pools (too small for the trial-level replay at the track's 6 seeds a side): each
pool's mean score (and its seeds' sd) at the rungs and at the end, and, seed by seed, the product's abort
rule (autorl.record.rungs.AbortRule) against every seed of pool A as the reference (pool A's own seeds left
out one at a time): the share of each pool's seeds aborted at the first rung, or at either rung, per margin.

    uv run python studies/abort-2026-11-27/llm/first_look.py studies/abort-2026-11-27/llm/llm-pools.jsonl.gz
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from abort_replay import read_pool_file  # noqa: E402

from autorl.llm.track import TRACK  # noqa: E402
from autorl.record.rungs import ABORT, AbortRule, RungScore  # noqa: E402

MARGINS = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0)


def rule(reference: list, margin: float) -> AbortRule:
    scores = {f: tuple(s.rungs[k] for s in reference) for k, f in enumerate(TRACK.rungs, 1)}
    return AbortRule("A", scores, margin, TRACK.seed_sd_prior)


def aborted(the_rule: AbortRule, seed, rungs: tuple[int, ...]) -> bool:
    for k in rungs:
        score = RungScore(rung=k, fraction=TRACK.rungs[k - 1], at_s=0.0, eval_score=seed.rungs[k])
        if the_rule.judge(score).decision == ABORT:
            return True
    return False


def share(pool: list, reference: list, margin: float, rungs: tuple[int, ...], own: bool) -> float:
    hits = [
        aborted(rule([r for r in reference if r is not s] if own else reference, margin), s, rungs)
        for s in pool
    ]
    return sum(hits) / len(hits)


def main(path: Path) -> None:
    pools = read_pool_file(path)
    a = pools["A"].seeds
    print("pool, seeds: mean (sd) at 25%, at 50%, at the end")
    for name, pool in pools.items():
        cols = [
            [s.rungs[1] for s in pool.seeds],
            [s.rungs[2] for s in pool.seeds],
            [s.score for s in pool.seeds],
        ]
        text = ", ".join(
            f"{statistics.mean(c):.3f} ({statistics.stdev(c) if len(c) > 1 else 0:.3f})" for c in cols
        )
        print(f"  {name}, {len(pool.seeds)}: {text}")
    print("margin: share of each pool's seeds aborted at rung 1 | at rung 1 or 2 (reference: pool A's seeds)")
    for m in MARGINS:
        cells = []
        for name, pool in pools.items():
            own = name == "A"
            first = share(pool.seeds, a, m, (1,), own)
            either = share(pool.seeds, a, m, (1, 2), own)
            cells.append(f"{name} {first:4.0%} | {either:4.0%}")
        print(f"  {m:>3}: " + "   ".join(cells))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
