"""How well one ranking of configs predicts another (`autorl fidelity`: their trials' scores against their
long-budget re-runs'): Spearman's rho, Kendall's tau, the short winner's rank and regret, and rho's bootstrap
interval over configs and their seeds."""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats as sps

BOOT = 2000  # bootstrap replicates of rho's interval


def rank_stats(short: list[float], long: list[float]) -> dict[str, float]:
    """Spearman's rho and Kendall's tau of the two scorings (scipy), the short winner's rank at the long
    budget (1 = the best) and the regret of choosing it: the best long score minus its long score."""
    rho = float(sps.spearmanr(short, long).statistic)
    tau = float(sps.kendalltau(short, long).statistic)
    winner = int(np.argmax(short))
    rank = 1 + sum(x > long[winner] for x in long)
    return {"rho": rho, "tau": tau, "winner_rank": rank, "regret": max(long) - long[winner]}


def rho_interval(
    short_seeds: list[list[float]], long_seeds: list[list[float]], level: float = 0.90, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap of Spearman's rho: configs resampled, and within each config its seeds at
    both budgets (a config's score is the mean of its seed scores). Replicates whose scores tie
    everywhere (rho undefined) are left out."""
    rng = np.random.default_rng(seed)
    k = len(short_seeds)
    values = []
    for _ in range(BOOT):
        pick = rng.integers(0, k, k)
        s = [float(np.mean(rng.choice(short_seeds[i], len(short_seeds[i])))) for i in pick]
        lo = [float(np.mean(rng.choice(long_seeds[i], len(long_seeds[i])))) for i in pick]
        with warnings.catch_warnings():  # a replicate that drew one config only: rho undefined, left out
            warnings.simplefilter("ignore", sps.ConstantInputWarning)
            r = sps.spearmanr(s, lo).statistic
        if np.isfinite(r):
            values.append(float(r))
    if not values:
        return math.nan, math.nan
    low, high = np.quantile(values, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(low), float(high)
