"""A trial's result: its seeds pooled, compared with the reference, and the two ways it is written down.

`conclude(...)` builds the `TrialResult` (statistics computed once, health flags read from the seeds' files);
the trial only stamps its wall time on it when it ends (`total_seconds`). `TrialResult.summary_lines()` (the
block after `---` and summary.txt) and `TrialResult.ledger_row()` (results.tsv and result.json) are the only
places those two are built.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from autorl.engine.seed import SeedResult, worst_status
from autorl.engine.track import training_budget
from autorl.engine.trial_types import Reference, Trained
from autorl.io import paths
from autorl.record import stats
from autorl.record.context import QUICK, ResearchContext, repeat_command
from autorl.record.ledger import eval_rows_hash
from autorl.record.row import LedgerRow, format_number
from autorl.record.runview import THRESHOLDS, trial_health


def fmt(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    return f"{value:.{digits}f}"


@dataclass
class TrialIdentity:
    """What a trial is, before any seed ran."""

    run_id: str
    run_dir: Path
    commit: str
    context: ResearchContext  # the track, eval set, harness and budget it is compared under
    backend: str
    config_hash: str
    description: str = ""
    agent: str = ""  # who runs it (AUTORL_AGENT), as its claim and its row say
    seeds_planned: int | None = None
    score_range: tuple[float, float] = (-math.inf, math.inf)  # Track.score_range: eval_ci is clipped to it
    uncommitted: str = ""  # the config file's name when it has changes the commit does not hold

    def uncommitted_note(self) -> str:
        """What to do when the config ran with changes `commit` does not hold ("" when it holds them all)."""
        if not self.uncommitted:
            return ""
        return (
            f"{self.uncommitted} has changes not committed: this trial ran them, its row names commit "
            f'{self.commit}, which does not hold them; commit them now (git commit -am "<hypothesis>") '
            f"before you decide, or a revert (git reset --hard HEAD~1) drops {self.commit} instead of them"
        )


@dataclass
class TrialResult:
    ctx: TrialIdentity
    seeds: list[SeedResult]
    status: str  # ok | crash | timeout | interrupted: the worst seed's
    rows: list[dict[str, Any]]  # pooled eval rows (with `seed`)
    score: float | None
    ci: tuple[float | None, float | None]
    env_scores: dict[str, float]
    base_score: float | None
    comparison: stats.Comparison | None
    reference_run: str
    verdict: str
    stopped_early: str = ""
    note: str = ""  # e.g. the reference is at the ceiling of the score
    extras: dict[str, str] = field(default_factory=dict)
    total_seconds: float = 0.0
    parallel: int = 1  # seeds run at once
    health: dict[str, str] = field(default_factory=dict)  # health/<flag>: text (runview.trial_health)
    look: tuple[int, int] = (1, 1)  # the look the verdict was judged at, of the looks planned (stats.levels)
    reference_seeds: str = ""  # the seeds compared with, and whose (ReferenceEvidence.describe)
    base_eval_seconds: float = 0.0  # the untrained model's eval, where this trial ran it (0: from the cache)
    kept: int = 0  # how many of its seeds finished in its config's stopped trial `kept_from`, not here
    kept_from: str = ""

    @property
    def run_dir_shown(self) -> str:
        """The run directory as printed: relative to the records' root (the repository's) when inside it."""
        root = paths.records_root()
        run_dir = self.ctx.run_dir
        return str(run_dir.relative_to(root) if run_dir.is_relative_to(root) else run_dir)

    @property
    def done(self) -> list[SeedResult]:
        return [s for s in self.seeds if s.child is not None]

    @property
    def training_seconds(self) -> float:
        return sum(s.child.training_seconds for s in self.done if s.child is not None)

    @property
    def startup_seconds(self) -> float:
        return sum(s.child.startup_seconds for s in self.done if s.child is not None)

    @property
    def eval_seconds(self) -> float:
        return sum(s.eval_seconds for s in self.seeds)

    @property
    def steps(self) -> int:
        return sum(s.steps for s in self.done)

    @property
    def peak_memory_gb(self) -> float:
        return max((s.peak_memory_gb for s in self.done), default=0.0)

    def fail(self, reason: str) -> None:
        """The trial failed outside its seeds (a fault of the harness, a file it could not save): status
        `crash`, no verdict, the reason in the summary and the row (`error`)."""
        self.status = "crash"
        self.comparison = None
        self.reference_run = ""
        self.verdict = "n/a"
        self.extras = {**self.extras, "error": " ".join(reason.split())}

    def seeds_failed(self) -> str:
        """The `error` line of a trial whose seeds crashed or timed out: the first cause told, and how many
        ("" when none did)."""
        failed = [s for s in self.seeds if s.status in ("crash", "timeout")]
        if not failed:
            return ""
        told = (s.cause or (s.child.reason_text if s.child else None) for s in failed)
        cause = next((c for c in told if c), f"a seed's {failed[0].status}")
        return f"{cause} ({len(failed)} of {len(self.seeds)} seeds; autorl show: each seed's)"

    def eval_jsonl(self) -> str:
        """runs/<run_id>/eval.jsonl: the pooled eval rows, one JSON object a line."""
        return "".join(json.dumps(r) + "\n" for r in self.rows)

    @property
    def seed_list(self) -> str:
        return ",".join(str(s.seed) for s in self.seeds)

    def summary_lines(self) -> dict[str, str]:
        lines: dict[str, str] = {"eval_score": fmt(self.score)}
        lines["eval_ci"] = f"{fmt(self.ci[0], 3)} {fmt(self.ci[1], 3)}"
        lines["score_range"] = " ".join(f"{v:g}" for v in self.ctx.score_range)
        for env, value in self.env_scores.items():
            lines[f"eval/{env}"] = fmt(value)
        lines["base_score"] = fmt(self.base_score)
        if self.score is not None and self.base_score is not None:  # what training moved, baseline included
            lines["vs_base"] = f"{self.score - self.base_score:+.4f} (eval_score - base_score)"
        if self.comparison is not None:
            lines["reference"] = self.reference_run
            if self.reference_seeds:
                lines["reference_seeds"] = self.reference_seeds
            # from the value results.tsv records (6 digits), so that status and report print the same figure
            lines["delta"] = f"{float(format_number(self.comparison.delta)):+.4f}"
            lines["p_value"] = fmt(self.comparison.p_value)
            improved, worse = stats.levels(*self.look)
            too_few = self.comparison.n_candidate < stats.MIN_SEEDS_WORSE
            lines["levels"] = (
                f"improved needs p_value < {improved:.4g}, worse needs 1 - p_value < {worse:.4g}"
                + (f" and {stats.MIN_SEEDS_WORSE} seeds" if too_few else "")
                + f" (look {self.look[0]} of {self.look[1]})"
            )
        else:
            lines["delta"] = "nan"
            lines["p_value"] = "nan"
        lines["verdict"] = self.verdict
        if self.verdict == "inconclusive" and self.comparison is not None:
            lines["seeds_needed"] = seeds_needed_text(self.comparison)
        if self.note:
            lines["note"] = self.note
        lines.update(self.health)
        lines["training_seconds"] = f"{self.training_seconds:.1f}"
        lines["startup_seconds"] = f"{self.startup_seconds:.1f}"
        lines["eval_seconds"] = f"{self.eval_seconds:.1f}"
        if self.base_eval_seconds:  # the first trial of a context: its time is in total_seconds, not above
            lines["base_eval_seconds"] = f"{self.base_eval_seconds:.1f}"
        lines["steps"] = str(self.steps)
        lines["peak_memory_gb"] = f"{self.peak_memory_gb:.2f}"
        lines["seeds"] = self.seed_list
        lines["parallel"] = str(self.parallel)
        if waited := [s.slot_wait_s for s in self.seeds if s.slot_wait_s >= 1]:  # another trial held its slot
            lines["slot_wait_seconds"] = f"{sum(waited):.1f} ({len(waited)} seed(s) waited for their slot)"
        if self.stopped_early:
            lines["stopped_early"] = self.stopped_early
        if self.kept:
            lines["kept_seeds"] = f"{self.kept} of {len(self.seeds)}, finished in {self.kept_from} (stopped)"
        lines.update(self.extras)
        if "error" not in lines and (failed := self.seeds_failed()):
            lines["error"] = failed
        lines["backend"] = self.ctx.backend
        lines["status"] = self.status
        lines["run_dir"] = self.run_dir_shown
        lines["total_seconds"] = f"{self.total_seconds:.1f}"
        return lines

    def ledger_row(self) -> dict[str, Any]:
        """The row results.tsv and result.json record, built as the typed row model (autorl.record.row)."""
        ctx, c = self.ctx, self.comparison
        return LedgerRow(
            timestamp=datetime.now().isoformat(timespec="seconds"),
            run_id=ctx.run_id,
            commit=ctx.commit,
            track=ctx.context.track,
            backend=ctx.backend,
            eval_score=self.score,
            eval_ci_low=self.ci[0],
            eval_ci_high=self.ci[1],
            base_score=self.base_score,
            env_scores=self.env_scores,
            delta=c.delta if c else None,
            p_value=c.p_value if c else None,
            verdict=self.verdict,
            reference_run=self.reference_run,  # "" unless compared (or aborted against it)
            agent=ctx.agent,
            training_seconds=round(self.training_seconds, 1),
            startup_seconds=round(self.startup_seconds, 1),
            eval_seconds=round(self.eval_seconds, 1),
            total_seconds=round(self.total_seconds, 1),
            peak_memory_gb=round(self.peak_memory_gb, 3),
            steps=self.steps,
            seeds=self.seed_list,
            seed_scores=stats.seed_scores(self.rows) if self.rows else None,
            budget=ctx.context.budget,
            seeds_planned=ctx.seeds_planned,
            parallel=self.parallel,
            stopped_early=self.stopped_early,
            health=" ".join(k.removeprefix("health/") for k in self.health),
            status=self.status,
            decision="pending",
            config_hash=ctx.config_hash,
            harness_hash=ctx.context.harness_hash,
            eval_hash=ctx.context.eval_hash,
            eval_rows_hash=eval_rows_hash(self.eval_jsonl()),
            description=ctx.description,
            lesson="",
            # the base eval's seconds, where this trial ran it: in total_seconds, not in any seed's (cost.py)
            extras={
                **self.extras,
                **({"base_eval_seconds": round(b, 1)} if (b := self.base_eval_seconds) else {}),
                # seeds trained in another trial: their seconds are not in total_seconds (cost.py)
                **({"kept_seeds": self.kept, "kept_from": self.kept_from} if self.kept else {}),
            },
        ).as_dict()


def seeds_needed_text(c: stats.Comparison) -> str:
    """How many seeds a gain as large as the measured delta would need to be decided `improved`
    (stats.seeds_needed): candidate seeds against the reference as it is, else seeds on both sides; for a
    delta that is no gain, that no re-run applies."""
    at = f"for delta {c.delta:+.4f} at one-sided alpha {stats.ALPHA:g} with power {stats.POWER:.0%}"
    if not c.delta > 0:  # more seeds could at best call it `worse`: no re-run keeps it
        return (
            f"none: delta {c.delta:+.4f} is not a gain (more seeds could at best decide it worse; no re-run)"
        )
    if (n := stats.seeds_needed(c)) is not None:
        return f"{n} candidate seeds {at} (the reference's {c.n_reference} seeds as they are)"
    if (n := stats.seeds_needed(c, both_sides=True)) is not None:
        return (
            f"{n} seeds on each side {at} (the reference's {c.n_reference} seeds alone are too few: "
            "re-running the candidate cannot decide it)"
        )
    return f"more than {stats.MAX_SEEDS_NEEDED} seeds on each side {at}: too small a delta to decide"


def ceiling_note(reference: LedgerRow | None, ci: tuple[float | None, float | None], high: float) -> str:
    """Why no candidate can be `improved`: the reference's interval (or, without one, this trial's) touches
    the top of the score range."""
    top = reference.eval_ci_high if reference and reference.eval_ci_high is not None else ci[1]
    if top is None or math.isnan(top) or top < high:
        return ""
    return (
        f"the reference's eval_ci reaches the top of score_range ({high:g}): no improvement is possible; "
        "make the task harder (a shorter budget, a harder env or eval) so that scores can rise"
    )


def repeat_note(reference: LedgerRow | None, config_hash: str, verdict: str) -> str:
    """A trial of the reference's own config (program.md's noise-floor repeat, a keep run again) measures
    noise: any verdict but `inconclusive` is chance; the next trial pools its seeds with the reference's."""
    if reference is None or not config_hash or reference.config_hash != config_hash:
        return ""
    said = (
        f" (`{verdict}` here is chance: the two sides ran one config)"
        if verdict in ("improved", "worse")
        else ""
    )
    return (
        f"this trial ran the reference's own config ({reference.run_id}): a repeat, no idea{said}; its "
        "seeds join the reference's in the next comparison and the noise floor; record it discard, as "
        "program.md says"
    )


def keep_repeat_note(ref: Reference, ctx: TrialIdentity, verdict: str) -> str:
    """An `improved` trial of a config that ran once (not a repeat, not a labelled re-run, whose first trial
    pools in): the ideas after a keep are compared with its seeds, which drew high to be kept, so a keep's
    repeat (program.md) pools fresh ones into that bar (docs/statistics.md, a keep's repeat)."""
    if verdict != "improved" or ref.row is None or ref.row.config_hash == ctx.config_hash:
        return ""
    if any(r.config_hash == ctx.config_hash and r.measured for r in ctx.context.rows(ref.ledger_rows)):
        return ""
    return (
        f"if you keep it, run its repeat next ({repeat_command(ctx.context.track, ctx.run_id)}, then mark it "
        "discard): the ideas after a keep are compared with its seeds, and a trial kept drew high to be kept"
    )


def speed_note(ref: Reference, ctx: TrialIdentity, seeds: list[SeedResult]) -> str:
    """A repeat (the reference's own config) at a wall-clock budget whose seeds trained at another pace than
    its config's earlier trials (steps per training second, THRESHOLDS.speed_drift apart or more): with the
    config the same, the machine's speed moved, which `contended` (other work) does not see."""
    budget = training_budget(ctx.context.track, ctx.context.budget)
    if ref.row is None or ref.row.config_hash != ctx.config_hash or budget is None:
        return ""
    done = [s for s in seeds if s.child is not None]
    training = sum(s.child.training_seconds for s in done if s.child is not None)
    steps = sum(s.steps for s in done)
    earlier = [
        r.steps / r.training_seconds
        for r in ctx.context.rows(ref.ledger_rows)
        if r.config_hash == ctx.config_hash and r.measured and r.steps and r.training_seconds
    ]
    if training <= 0 or not earlier:
        return ""
    now, was = steps / training, statistics.median(earlier)
    if abs(now / was - 1) < THRESHOLDS.speed_drift:
        return ""
    return (
        f"its seeds trained {now:.1f} steps a second, its config's earlier trials {was:.1f} "
        f"({now / was - 1:+.0%}): this machine's speed moved (no other work flagged), so at this wall-clock "
        f"budget a trial now trains {'more' if now > was else 'less'} than the trials before it did; say so "
        "in the lesson"
    )


def parallel_note(reference: LedgerRow | None, parallel: int) -> str:
    """Seeds that share a machine may buy less per budget than seeds alone: say when the reference ran with
    another parallelism (scripts/bench_parallel.py measures the difference)."""
    theirs = reference.parallel if reference else None
    if not theirs or theirs == parallel:
        return ""
    return (
        f"the reference ran {theirs} seed(s) at once, this trial {parallel}: shared cores may "
        "buy a little less training per budget (see scripts/bench_parallel.py)"
    )


@dataclass(frozen=True)
class Judging:
    """How a trial's verdict is judged: `parallel` seeds a wave; `sequential`: it looked after each wave (no
    --all-seeds), so its verdict is judged at the level of the look it ended at (stats.sequential_verdict);
    `interrupted`: a signal stopped it; `quick`: run.py --quick, whose verdict is `quick` (no reference,
    never a baseline)."""

    parallel: int = 1
    sequential: bool = True
    interrupted: bool = False
    quick: bool = False


def conclude(
    ctx: TrialIdentity,
    trained: Trained,
    ref: Reference,
    judging: Judging = Judging(),  # noqa: B008 (frozen: one shared default is safe)
    extras_fn: Callable[[list[dict[str, Any]]], dict[str, str]] | None = None,
) -> TrialResult:
    """Pool the seeds' eval rows and compare them with the reference (`ref.noise`: the ledger's noise floor,
    with the track's prior). `extras_fn(rows)` returns the backend's summary extras."""
    seeds = sorted(trained.results, key=lambda s: s.index)
    rows = [r for s in seeds for r in s.eval_rows]
    status = "interrupted" if judging.interrupted else worst_status(s.status for s in seeds)
    score = stats.eval_score(rows) if rows else None
    base_score = stats.eval_score(trained.base_rows) if trained.base_rows else None
    ci: tuple[float | None, float | None] = (None, None)
    if rows:
        # One seed: widen the interval by the seed-to-seed spread, which a bootstrap over examples can't see.
        ci = stats.confidence_interval(rows, seed_sd=ref.noise.sd if len(seeds) == 1 else None)
        low, high = ctx.score_range
        ci = (min(max(ci[0], low), high), min(max(ci[1], low), high))
    comparison = None
    if ref.row is not None and rows and status == "ok" and ref.eval_rows:
        comparison = stats.compare(rows, ref.eval_rows, noise=ref.noise)
    # judged at the level of the look it ended at: with interim looks, each look spends part of ALPHA
    planned = ctx.seeds_planned or len(seeds)
    look = stats.looks(len(seeds), planned, judging.parallel) if judging.sequential else (1, 1)
    aborted = any(s.aborted is not None for s in seeds)
    reference = ref.row
    verdict = verdict_of(comparison, look, reference is not None, status, aborted, judging.quick)
    return TrialResult(
        ctx=ctx,
        seeds=seeds,
        status=status,
        rows=rows,
        score=score,
        ci=ci,
        env_scores=stats.env_scores(rows) if rows else {},
        base_score=base_score,
        comparison=comparison,
        reference_run=reference.run_id
        if reference is not None and (comparison is not None or aborted)
        else "",
        verdict=verdict,
        stopped_early=trained.stopped_early,
        note="; ".join(
            n
            for n in (
                ceiling_note(reference, ci, ctx.score_range[1]),
                repeat_note(reference if comparison is not None else None, ctx.config_hash, verdict),
                keep_repeat_note(ref, ctx, verdict),
                speed_note(ref, ctx, seeds),
                parallel_note(reference, judging.parallel),
                ctx.uncommitted_note(),
            )
            if n
        ),
        extras=extras_fn(rows) if extras_fn is not None and rows else {},
        parallel=judging.parallel,
        health=health(ctx.run_dir, score, base_score, training_budget(ctx.context.track, ctx.context.budget)),
        look=look,
        reference_seeds=ref.evidence.describe() if ref.evidence else "",
        base_eval_seconds=trained.base_eval_seconds,
        kept=trained.kept,
        kept_from=trained.kept_from,
    )


def verdict_of(
    comparison: stats.Comparison | None,
    look: tuple[int, int],
    has_reference: bool,
    status: str,
    aborted: bool,
    quick: bool,
) -> str:
    """The trial's verdict. A seed stopped at a rung (the early abort): the seeds that ran to the end may
    say `worse` (2 or more: stats.MIN_SEEDS_WORSE), never `improved`; none ran to the end: nothing decided
    (`inconclusive`)."""
    if quick:  # run.py --quick: compared with nothing, never a baseline
        return QUICK
    if comparison is not None:
        verdict = stats.sequential_verdict(comparison, *look)
        return "inconclusive" if aborted and verdict == "improved" else verdict
    if aborted and status == "ok":
        return "inconclusive"
    return "baseline" if not has_reference and status == "ok" else "n/a"


def health(
    run_dir: Path, score: float | None, base_score: float | None, budget: float | None = None
) -> dict[str, str]:
    """The summary's `health/<flag>` lines (diagnostics only: a fault reading the seeds' files is said and
    never costs the row)."""
    try:
        return trial_health(run_dir, score, base_score, budget)
    except Exception as exc:
        print(f"[trial] warning: health flags not computed: {type(exc).__name__}: {exc}", flush=True)
        return {}
