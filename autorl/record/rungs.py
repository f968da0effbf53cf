"""Rungs and the early abort: a seed scores itself at fixed fractions of its run while it trains, and a
candidate whose seed is far behind its reference's seeds at a rung stops there, at a fraction of a seed's
cost.

A rung is scored like the end (the same eval rows, the same eval_score), with the training clock paused. Every
trial that a backend can score rungs for records them, the baseline and every keep included, so that any of
them can serve as a reference: `seed-<k>/rungs.jsonl`, one `RungScore` a line, and each rung's rows in
`seed-<k>/<eval_file>`. Only a candidate's seeds are judged (`AbortRule`): never a baseline,
`--all-seeds`, `--no-abort`, a confirm or a fidelity run. The rule's margin is in units of one seed's spread
at the rung, so it widens where the reference has few seeds or they disagree; docs/statistics.md ("Early
abort") measures it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from autorl.io import atomic
from autorl.io.jsonl import read_jsonl

FILE = "rungs.jsonl"
# The weight of the track's prior single-seed sd in the rung's spread, in pseudo degrees of freedom (as the
# noise floor's, autorl.record.stats.PRIOR_DF): a reference whose few seeds agree by chance still leaves a
# margin.
PRIOR_DF = 4.0
GO, ABORT = "go", "abort"


class RungScore(BaseModel):
    """One rung of one seed, as its rungs.jsonl records it."""

    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)

    rung: int
    """1-based position among the trial's rungs."""
    fraction: float
    """Where the rung is, as a fraction of the seed's run (llm: of the budget's training seconds; classic: of
    the score's env-step horizon)."""
    at_s: float
    """Training seconds when it was scored."""
    step: int = 0
    """Optimizer steps (classic: PPO updates) by then."""
    eval_score: float | None = None
    """The rung's score (None: its eval failed)."""
    eval_file: str = ""
    """Its eval rows, in the seed's directory."""
    eval_seconds: float = 0.0
    """How long scoring it took (the run waited, paused, off the training clock)."""
    decision: str = ""
    """go | abort; "" where no rule judged it (a baseline, --all-seeds, --no-abort, no reference rungs)."""
    reference: float | None = None
    """The reference's mean score at this rung."""
    margin: float | None = None
    """How far behind `reference` the seed could be and go on."""
    reference_seeds: int = 0
    """The reference's seeds that scored this rung."""
    error: str | None = None
    """Why the rung has no score."""

    def describe(self) -> str:
        """The rung in one line: where, its score, and the rule's call when one judged it."""
        where = f"rung {self.rung} ({self.fraction:.0%} of the run, {self.at_s:.0f} s, step {self.step})"
        if self.eval_score is None:
            return f"{where}: not scored ({self.error or 'eval failed'})"
        text = f"{where}: {self.eval_score:.4f}"
        if self.reference is not None and self.margin is not None:
            text += (
                f" vs the reference's {self.reference:.4f} - margin {self.margin:.4f} "
                f"({self.reference_seeds} seeds): {self.decision}"
            )
        return text


def write(seed_dir: Path, scores: Sequence[RungScore]) -> None:
    atomic.write_text(seed_dir / FILE, "".join(s.model_dump_json() + "\n" for s in scores))


def read(seed_dir: Path) -> list[RungScore]:
    """A seed's rungs (none where it scored none: a trial recorded before rungs, or the prime-rl backend)."""
    path = seed_dir / FILE
    if not path.exists():
        return []
    return [RungScore.model_validate(r) for r in read_jsonl(path)]


def at(fraction: float) -> float:
    """A rung's key: its fraction of the run (rungs are matched by where they are, not by their number)."""
    return round(fraction, 4)


def run_rungs(run_dir: Path) -> dict[float, list[float]]:
    """A trial's rung scores by fraction of the run, over its seeds (`seed-<k>/rungs.jsonl`): what a
    reference offers."""
    out: dict[float, list[float]] = {}
    for seed_dir in sorted(run_dir.glob("seed-*")):
        for r in read(seed_dir):
            if r.eval_score is not None and math.isfinite(r.eval_score):
                out.setdefault(at(r.fraction), []).append(r.eval_score)
    return out


@dataclass(frozen=True)
class Threshold:
    """The bar at one rung: the reference's mean, the margin below it, and how many seeds it rests on."""

    reference: float
    margin: float
    seeds: int

    @property
    def bar(self) -> float:
        return self.reference - self.margin


def margin(scores: Sequence[float], margin_sd: float, prior_sd: float, prior_df: float = PRIOR_DF) -> float:
    """`margin_sd` spreads of one new seed around the reference's mean at a rung: margin_sd * s * sqrt(1 +
    1/n), where s pools the reference's own spread there (n - 1 df) with the track's prior sd (`prior_df`
    pseudo-df). Fewer reference seeds, or seeds that disagree, widen it."""
    a = np.asarray(scores, float)
    n = len(a)
    ss = float(((a - a.mean()) ** 2).sum()) if n >= 2 else 0.0
    s = math.sqrt((prior_df * prior_sd**2 + ss) / (prior_df + max(n - 1, 0)))
    return margin_sd * s * math.sqrt(1.0 + 1.0 / max(n, 1))


@dataclass(frozen=True)
class AbortRule:
    """A candidate's seed stops at a rung when its score is below the reference's mean there by more than the
    margin. Plain data (it travels to Ray workers)."""

    reference_run: str
    reference: dict[
        float, tuple[float, ...]
    ]  # a rung's fraction (`at`) -> the reference's seeds' scores there
    margin_sd: float  # the margin in spreads of one seed (Track.abort_margin)
    prior_sd: float  # the track's prior single-seed sd (Track.seed_sd_prior)

    def threshold(self, fraction: float) -> Threshold | None:
        """The bar at the rung at `fraction` of the run; None where the reference has fewer than 2 seeds
        there (nothing to judge by)."""
        scores = self.reference.get(at(fraction), ())
        if len(scores) < 2:
            return None
        return Threshold(float(np.mean(scores)), margin(scores, self.margin_sd, self.prior_sd), len(scores))

    def judge(self, score: RungScore) -> RungScore:
        """`score` with the rule's call: abort when it is below the bar; go otherwise (and where the rung has
        no score or no bar: a failed rung eval never stops a seed)."""
        t = self.threshold(score.fraction)
        if t is None or score.eval_score is None:
            return score.model_copy(update={"decision": GO})
        decision = ABORT if score.eval_score < t.bar else GO
        return score.model_copy(
            update={
                "decision": decision,
                "reference": round(t.reference, 6),
                "margin": round(t.margin, 6),
                "reference_seeds": t.seeds,
            }
        )


def abort_text(seed_position: str, seed: int, score: RungScore, reference_run: str) -> str:
    """The trial's `stopped_early:` line for an abort (`score` judged by the rule: its reference and margin
    set)."""
    assert score.eval_score is not None and score.reference is not None and score.margin is not None
    return (
        f"aborted {seed_position} (seed {seed}) at rung {score.rung} ({score.fraction:.0%} of the run, "
        f"{score.at_s:.0f} s, step {score.step}): rung score {score.eval_score:.4f} below "
        f"{score.reference - score.margin:.4f}, {reference_run}'s mean there {score.reference:.4f} less the "
        f"margin {score.margin:.4f} ({score.reference_seeds} seeds); --no-abort runs on"
    )


def rule_for(
    reference_run: str, reference_dirs: Sequence[Path], margin_sd: float | None, prior_sd: float
) -> tuple[AbortRule | None, str]:
    """The rule against the rungs recorded by a reference trial (and its config's other trials, whose eval
    rows it pools: autorl.record.ledger.reference_evidence), or None with the reason there is none."""
    if margin_sd is None:
        return None, "off on this track by default (docs/statistics.md, 'Early abort')"
    found: dict[float, list[float]] = {}
    for run_dir in reference_dirs:
        for k, v in run_rungs(run_dir).items():
            found.setdefault(k, []).extend(v)
    if not any(len(v) >= 2 for v in found.values()):
        return (
            None,
            f"off: the reference {reference_run} has no rung scores (recorded before rungs, or by prime-rl)",
        )
    rule = AbortRule(reference_run, {k: tuple(v) for k, v in found.items()}, margin_sd, prior_sd)
    return rule, ""
