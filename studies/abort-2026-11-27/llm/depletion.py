"""Synthetic check (normal seeds, not real ones) of what a finite pool does to the lucky-reference figure.

A lucky reference is a draw of r seeds whose mean is in the top 5% of draws; its A/A candidate is n other
seeds of the same pool. A finite pool of N seeds that gives the reference its best seeds leaves the candidate
the rest (the pool's depletion), so the candidate is further behind than a candidate of fresh seeds would
be. Here one Welch test at the rule's last-look `worse` level (0.01 / 6, one-sided) stands in for the rule:
the figures show the size of the depletion, not the rule's rate.
    python depletion.py   (numpy, scipy; ~5 s)
"""

import numpy as np
from scipy import stats as st

rng = np.random.default_rng(0)


def rate(pool_seeds, r, n, pools=40, pairs=2000, q=0.05, alpha=0.01 / 6, shift=0.0):
    hits = total = 0
    for _ in range(1 if pool_seeds is None else pools):
        draws = int(pairs / q)
        if pool_seeds is None:  # fresh seeds on both sides: no depletion
            ref, cand = rng.normal(0, 1, (draws, r)), rng.normal(0, 1, (draws, n))
        else:
            pool = rng.normal(0, 1, pool_seeds)
            pool[: pool_seeds // 2] += shift  # two sessions at different machine speeds
            perm = np.argsort(rng.random((draws, pool_seeds)), axis=1)
            ref, cand = pool[perm[:, :r]], pool[perm[:, r : r + n]]
        means = ref.mean(1)
        lucky = means >= np.quantile(means, 1 - q)
        t = st.ttest_ind(cand[lucky], ref[lucky], axis=1, equal_var=False)
        p_worse = np.where(t.statistic < 0, t.pvalue / 2, 1 - t.pvalue / 2)
        hits += int((p_worse < alpha).sum())
        total += len(p_worse)
    return hits / total


print("pool seeds, reference seeds, candidate seeds, shift of half the pool (sds): lucky A/A worse")
for pool_seeds, r, n, shift in [
    (None, 6, 6, 0),
    (19, 6, 6, 0),
    (40, 6, 6, 0),
    (60, 6, 6, 0),
    (None, 12, 6, 0),
    (19, 12, 6, 0),
    (40, 12, 6, 0),
    (19, 6, 6, 1.0),
]:
    print(f"{pool_seeds or 'fresh':>6} {r:>3} {n:>3} {shift:>4}: {rate(pool_seeds, r, n, shift=shift):.3f}")
