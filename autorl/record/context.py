"""The research context: what makes two trials comparable, and the reference a trial is compared with.

Trials are compared only under one track, eval set, harness and training budget. `ResearchContext` holds those
four, built once: by run.py for a trial (autorl.commands.trial), and from a ledger row by `autorl confirm`,
`status`, `report` and `mark`. It is passed whole to reference selection (`best_kept`), to the noise floor
(autorl.record.stats.noise_floor) and to the cost estimate (autorl.engine.cost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from autorl.io import paths
from autorl.record.row import LedgerRow, format_number


@dataclass(frozen=True)
class ResearchContext:
    """Trials of one context are compared with each other, never with another context's."""

    track: str  # llm | classic
    eval_hash: str  # the fixed evaluation (Track.eval_hash)
    harness_hash: str  # the harness the trials ran under (autorl.io.harness.harness_hash)
    # training seconds per seed, as the ledger writes it (6 digits); None: a row recorded before the ledger
    # had a budget column, comparable with no new trial
    budget: float | None

    def __post_init__(self) -> None:
        if self.budget is not None:  # compared as the ledger writes it, so a row read back matches
            object.__setattr__(self, "budget", float(format_number(self.budget)))

    @classmethod
    def of(cls, row: LedgerRow) -> ResearchContext:
        """The context of a ledger row."""
        return cls(row.track, row.eval_hash, row.harness_hash, row.budget)

    def holds(self, row: LedgerRow) -> bool:
        """Whether the row's trial belongs to this context (its score may be compared with ours). A quick
        look (run.py --quick) belongs to none: never a baseline, a reference or a noise-floor sample."""
        return not is_quick(row) and ResearchContext.of(row) == self

    def rows(self, rows: Sequence[LedgerRow]) -> list[LedgerRow]:
        """The rows of this context, in ledger order."""
        return [r for r in rows if self.holds(r)]


QUICK = "quick"  # the verdict of a quick look (run.py --quick): it was compared with nothing


def is_quick(row: LedgerRow) -> bool:
    return row.verdict == QUICK


def baseline(same: Sequence[LedgerRow]) -> LedgerRow | None:
    """The baseline of one context (`same`: its rows), the trial its first ideas were compared with: the
    first scored trial with the verdict `baseline` not marked discard or crash (a contended baseline
    discarded and run again: the run again, as `best_kept` chose), else the first scored trial (rows from
    before verdicts; a baseline discarded and not run again). None: no scored trial."""
    scored = [r for r in same if r.scored]
    standing = [r for r in scored if r.verdict == "baseline" and r.decision not in ("discard", "crash")]
    return standing[0] if standing else (scored[0] if scored else None)


def baseline_repeats(same: Sequence[LedgerRow]) -> set[str]:
    """Run ids of the trials of one context (`same`) other than its baseline that ran the baseline's config
    (program.md's noise-floor repeat, a contended baseline's first run): not ideas."""
    base = baseline(same)
    if base is None or not base.config_hash:
        return set()
    return {
        r.run_id for r in same if r.status == "ok" and r.config_hash == base.config_hash and r is not base
    }


def config_repeats(same: Sequence[LedgerRow]) -> set[str]:
    """Run ids of the trials of one context (`same`) that ran a config another of its trials ran too (a
    labelled re-run, a keep run again), but for the one that stands for that config's idea: its kept trial,
    else its latest. An idea tried twice is one idea decided; the baseline's config is `baseline_repeats`'."""
    by_config: dict[str, list[LedgerRow]] = {}
    for r in same:
        if r.config_hash and not r.void:
            by_config.setdefault(r.config_hash, []).append(r)
    out: set[str] = set()
    for trials in by_config.values():
        kept = [r for r in trials if r.decision == "keep"]
        stands = (kept or trials)[-1]
        out |= {r.run_id for r in trials if r is not stands}
    return out


def best_kept(rows: Sequence[LedgerRow], context: ResearchContext) -> LedgerRow | None:
    """The reference a new trial of `context` is compared against.

    The kept (`decision == keep`, `status == ok`) trial with the highest eval_score in the context. Until one
    is kept, the earliest `ok` trial of the context that was not marked discard or crash counts: it is the
    baseline (program.md runs the baseline first), so the first experiments are compared with the baseline.
    None when there is no such trial (the next trial is a new baseline).
    """
    same = [r for r in context.rows(rows) if r.scored]
    kept = [r for r in same if r.decision == "keep"]
    if kept:
        return max(kept, key=lambda r: r.eval_score or 0.0)
    undecided = [r for r in same if r.decision not in ("discard", "crash")]
    return undecided[0] if undecided else None


def same_config(rows: Sequence[LedgerRow], context: ResearchContext, reference: LedgerRow) -> list[LedgerRow]:
    """The other trials of `context` that ran the reference's exact config (the baseline's repeat, a keep's
    labelled re-run), measured (scored, not contended) and not marked crash, in ledger order: their seeds are
    the reference's evidence too (the noise floor already pools them by config). A reference whose score is
    the best of several trials is lucky as often as not; its repeats pull its mean back to its config's."""
    if not reference.config_hash:
        return []
    return [
        r
        for r in context.rows(rows)
        if r.measured
        and r.decision != "crash"
        and r.config_hash == reference.config_hash
        and r.run_id != reference.run_id
    ]


def repeat_command(track: str, run_id: str) -> str:
    """program.md's repeat of trial `run_id` (after the baseline, after each keep): its config again on fresh
    seeds, all of them (--all-seeds: no early stop), said to be a repeat of it (--rerun: refused unless the
    config run is that trial's)."""
    return f'uv run run.py --track {track} --all-seeds --rerun {run_id} --description "repeat of {run_id}"'


def repeat_due(rows: Sequence[LedgerRow], context: ResearchContext, reference: LedgerRow) -> bool:
    """Whether the reference's config ran once in `context` (no measured repeat: `same_config`): its seeds
    alone are the next delta's bar, and a trial that became the reference drew high to get there."""
    return not same_config(rows, context, reference)


def config_pool(
    rows: Sequence[LedgerRow], context: ResearchContext, reference: LedgerRow
) -> tuple[int, int, float] | None:
    """(trials, seeds, mean per-seed eval_score) of the reference's config in `context` when it ran more
    than once (`same_config`), else None: the bar a trial's delta is measured against, which is not the
    reference's own eval_score once its config has repeats."""
    trials = [reference, *same_config(rows, context, reference)]
    scores = [s for r in trials for s in r.per_seed_scores()]
    if len(trials) == 1 or not scores:
        return None
    return len(trials), len(scores), sum(scores) / len(scores)


def kept_config_to_adopt(kept_run_id: str, config: Path) -> Path | None:
    """The kept trial's config file (runs/<id>/config.toml) when `config` is not that config: another
    agent's keep moved the reference and this worktree builds on an older one. None when they are the same
    or the kept trial's file is gone. (The stand-in agent adopts it; `autorl status` tells an agent to.)"""
    kept = paths.run_config_file(kept_run_id)
    if not kept.exists() or (config.exists() and config.read_text() == kept.read_text()):
        return None
    return kept
