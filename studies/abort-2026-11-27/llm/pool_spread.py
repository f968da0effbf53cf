"""Synthetic check (normal seeds, not real ones) of how far one finite pool's A/A rate can sit from the rate
of the test itself: the spread that the replays' `--pool-boot` cannot measure without bias.

Each pool is N seeds drawn from one normal distribution; its A/A pairs are r reference seeds and n other
seeds of the pool (as scripts/abort_replay.py draws them), 2000 pairs a pool; one one-sided Welch test at the
rule's last-look `improved` level (autorl.record.stats.final_alpha(6) = 0.0452 for 6 looks) stands in for
the rule, whose `improved` comes at that look. Printed: the rate with fresh seeds on both sides (the
test's own), and over 200 pools of N seeds its 5%, 50% and 95% quantiles and the share of pools at or above
a rate seen on the real pool.
    python pool_spread.py   (numpy, scipy; ~2 s)
"""

import numpy as np
from scipy import stats as st

rng = np.random.default_rng(0)
ALPHA = 0.0452  # stats.final_alpha(6)


def improved(ref: np.ndarray, cand: np.ndarray) -> np.ndarray:
    t = st.ttest_ind(cand, ref, axis=1, equal_var=False)
    return (t.statistic > 0) & (t.pvalue / 2 < ALPHA)


def pool_rates(pool_seeds: int, r: int, n: int, pools: int = 200, pairs: int = 2000) -> np.ndarray:
    out = []
    for _ in range(pools):
        pool = rng.normal(0, 1, pool_seeds)
        perm = np.argsort(rng.random((pairs, pool_seeds)), axis=1)
        out.append(improved(pool[perm[:, :r]], pool[perm[:, r : r + n]]).mean())
    return np.array(out)


fresh = improved(rng.normal(0, 1, (200_000, 12)), rng.normal(0, 1, (200_000, 6))).mean()
print(f"fresh seeds, 12 v 6: A/A improved {fresh:.1%} (the test's own rate)")
print(
    "pool seeds, reference seeds, candidate seeds: A/A improved over 200 pools: 5% / 50% / 95%; pools >= seen"
)
for pool_seeds, r, n, seen in [(42, 12, 6, 0.052), (37, 12, 6, 0.059), (42, 6, 6, 0.029)]:
    rates = pool_rates(pool_seeds, r, n)
    q = np.quantile(rates, [0.05, 0.5, 0.95])
    print(
        f"  {pool_seeds} {r:3d} {n:3d}: {q[0]:.1%} / {q[1]:.1%} / {q[2]:.1%}; "
        f"{(rates >= seen).mean():.0%} of pools at or above {seen:.1%}"
    )
