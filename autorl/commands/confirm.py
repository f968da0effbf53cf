"""`autorl confirm`: re-train a kept config and the baseline with fresh seeds, score both on the test split.

Picking the best of many trials on one eval set inflates its score (the winner's curse). The test split is
sealed: no trial is ever evaluated on it (llm: each eval env's `test` split; classic: episodes from seeds no
trial sees). `confirm` re-trains the chosen kept trial's config (default: the current best) and the
baseline's (record.context.baseline, of the same context) under the same budget, with seeds no trial drew,
runs each seed through `autorl.engine.seed.run_seed` with its eval on the test split, and compares the two
with `autorl.record.stats.compare`. The result (delta, its 90% interval: the one that matches the one-sided
test at 0.05, and p) goes to confirmed.tsv, next to results.tsv; `autorl report` shows it next to the
eval delta. Both sides' seeds run in one pool, on the machine's slots, as a trial's do.

Recorded, never lost: runs/<confirm_id>/plan.json (what runs, written before any seed starts) and
runs/<confirm_id>/{candidate,baseline}/seed-<k>/ (every seed's files). A stopped confirm keeps its finished
seeds; `--resume CONFIRM_ID` runs only the missing ones, then records.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from autorl.engine import warm
from autorl.engine.retrain import (
    RetrainError,
    recorded_config,
    retrain_plan,
    run_jobs,
    same_harness,
)
from autorl.engine.seed import SeedResult, finished_rows, worst_status
from autorl.io import atomic, inputs, paths
from autorl.io.cliargs import CONFIRM_MAX_SEEDS
from autorl.record import context as research
from autorl.record import events, runview, stats
from autorl.record.context import ResearchContext, best_kept
from autorl.record.ledger import Ledger, LedgerError
from autorl.record.row import LedgerRow, as_float, counted, format_cell
from autorl.record.sidetables import CONFIRMED, seeds_a_side, strongest

# Fresh seeds: trials draw theirs from [0, 10^6 + 64) (autorl.engine.trial_run.harness_seeds); confirm from
# here up.
CONFIRM_SEED_BASE = 2_000_000


NEEDED_MOST = 100_000  # the seeds a side the size line names at most ("more than" beyond)
ROLES = ("candidate", "baseline")


class ConfirmError(RetrainError):
    """The confirmation cannot start (nothing to confirm, the harness or eval changed): exit 2."""


@dataclass
class Side:
    """One config of the confirmation (the candidate or the baseline), re-trained on the fresh seeds."""

    row: LedgerRow
    seeds: list[SeedResult]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [r for s in self.seeds for r in s.eval_rows]

    @property
    def status(self) -> str:
        return worst_status(s.status for s in self.seeds)

    def contended(self) -> str:
        """The `contended` health flag's text where other work shared the machine's CPUs while its seeds
        trained (autorl.record.runview, as a trial's summary raises it); "" when it did not."""
        if not self.seeds:
            return ""
        crowded = runview.contended(runview.load_seeds(self.seeds[0].dir.parent))
        return crowded.text if crowded is not None else ""


def choose(
    rows: list[LedgerRow], run_id: str | None, ledger: Ledger
) -> tuple[LedgerRow, LedgerRow, ResearchContext]:
    """(candidate, baseline, their research context): the kept trial `run_id` (default: the best kept trial
    of the latest context) and its context's baseline (record.context.baseline)."""
    if run_id is not None:
        candidate = ledger.find(run_id)
        if candidate.decision != "keep" or candidate.status != "ok":
            raise ConfirmError(f"trial {candidate.run_id} is not kept: only kept trials are confirmed")
    else:
        if not rows:
            raise ConfirmError("no trials yet: nothing to confirm")
        best = best_kept(rows, ResearchContext.of(rows[-1]))
        if best is None or best.decision != "keep":
            raise ConfirmError("nothing kept yet under the latest trial's context: nothing to confirm")
        candidate = best
    context = ResearchContext.of(candidate)
    if context.budget is None:
        raise ConfirmError(f"trial {candidate.run_id} has no budget recorded: re-run it to confirm it")
    baseline = baseline_of(context.rows(rows))
    if baseline.run_id == candidate.run_id:
        raise ConfirmError(f"{candidate.run_id} is the baseline: keep a better trial, then confirm it")
    return candidate, baseline, context


def baseline_of(same: list[LedgerRow]) -> LedgerRow:
    """The baseline a confirm compares with: the context's (`same`: its rows; autorl.record.context.baseline,
    as status, report and the reference choose it). The context holds a scored trial: its candidate."""
    base = research.baseline(same)
    assert base is not None
    return base


def planned_size(same: list[LedgerRow], best: LedgerRow | None, noise: stats.NoiseFloor) -> Size | None:
    """The size `autorl confirm` would choose now for `best` (the context's best kept trial; `same`: the
    context's rows) at the default --max-seeds, for `autorl status`'s cost line; None when nothing but the
    baseline is kept or the two trials' eval rows cannot be read."""
    if best is None or best.decision != "keep":
        return None
    baseline = baseline_of(same)
    if best.run_id == baseline.run_id:
        return None
    try:
        return size(best, baseline, same, noise, CONFIRM_MAX_SEEDS, None)
    except ConfirmError:
        return None


@dataclass(frozen=True)
class Size:
    """How many fresh seeds a side gets, and the power that buys: sized for the eval delta being confirmed,
    discounted for the winner's curse (a kept trial was picked because its delta came out high), so for
    the low end of its 90% interval, and the context's noise floor (single-seed sd)."""

    seeds: int  # per side
    eval_delta: float  # candidate - baseline eval_score (their eval rows, on the examples both scored)
    low: float  # the low end of its 90% interval: the delta sized for
    sd: float  # single-seed sd (the noise floor the verdict uses)
    power: float  # of `seeds` per side for `low` (stats.power)
    needed: int | None  # seeds per side for stats.POWER at `low` (None: more than NEEDED_MOST)
    chosen_by: str  # "sized" | "capped" (--max-seeds) | "--seeds"
    power_at_delta: float = math.nan  # of `seeds` per side for the eval delta itself (no discount)
    pooled: tuple[int, int] = (1, 1)  # (candidate, baseline) trials of each side's config the delta pools

    def describe(self) -> str:
        if not math.isfinite(self.low):
            return f"--seeds {self.seeds} a side (the eval delta is unknown: power not computed)"
        if self.needed is not None:
            need = f"{self.needed} seeds a side are the fewest that give {stats.POWER:.0%} or more"
        elif self.low > 0:
            need = f"more than {NEEDED_MOST} seeds a side would be needed for {stats.POWER:.0%}"
        else:
            need = "no seed count gives power for a low end <= 0"
        text = (
            f"eval delta {self.eval_delta:+.4f} ({counted(self.pooled[0], 'trial')} of the candidate's "
            f"config vs {counted(self.pooled[1], 'trial')} of the baseline's), 90% interval low end "
            f"{self.low:+.4f} "
            f"(sized for it: the winner's curse), seed sd {self.sd:.4g}: {need}"
        )
        if self.chosen_by == "capped":
            text += f"; capped at {self.seeds} a side (--max-seeds): power {self.power:.2f}, too little"
        elif self.chosen_by == "--seeds":
            text += f"; --seeds {self.seeds} a side: power {self.power:.2f}"
        return text + f" ({self.power_at_delta:.2f} if the eval delta itself is the true gain)"


def size(
    cand: LedgerRow,
    base: LedgerRow,
    rows: list[LedgerRow],
    noise: stats.NoiseFloor,
    cap: int,
    given: int | None,
) -> Size:
    """Seeds per side for the confirmation: `given` (--seeds) when set, else the fewest that give
    stats.POWER for the low end of the eval delta's 90% interval, at most `cap`. The delta is the one a
    trial's verdict would see: each side's eval rows pooled with those of its config's other trials in the
    context (`rows`; autorl.record.ledger.reference_evidence), so a baseline or a keep that was lucky once
    is pulled back to its config by its repeats. When the two trials' own rows cannot be read
    (reference_rows' check) only --seeds can size it (ConfirmError otherwise), its power unknown (nan)."""
    from autorl.record.ledger import reference_evidence

    context = ResearchContext.of(cand)
    try:
        sides = [reference_evidence(t, rows, context, paths.runs_dir()) for t in (cand, base)]
        c = stats.compare(sides[0].rows, sides[1].rows, noise=noise)
    except LedgerError as exc:
        if given is None:
            raise ConfirmError(
                f"{exc}\n  without its eval rows the confirm cannot be sized: give --seeds"
            ) from None
        return Size(given, math.nan, math.nan, noise.sd, math.nan, None, "--seeds")
    low = stats.matching_interval(c)[0]
    needed = stats.seeds_for_power(low, noise.sd, most=NEEDED_MOST) if math.isfinite(low) else None
    if given is not None:
        n, how = given, "--seeds"
    elif needed is not None and needed <= cap:
        n, how = needed, "sized"
    else:
        n, how = cap, "capped"
    at_delta = stats.power(c.delta, noise.sd, n)
    pooled = (len(sides[0].runs), len(sides[1].runs))
    return Size(n, c.delta, low, noise.sd, stats.power(low, noise.sd, n), needed, how, at_delta, pooled)


@dataclass(frozen=True)
class ConfirmPlan:
    """What a confirm trains, written to runs/<confirm_id>/plan.json before any seed starts: a stopped
    confirm keeps its finished seeds, and `--resume CONFIRM_ID` runs only the others under this plan."""

    confirm_id: str
    run_id: str  # the kept trial confirmed
    baseline_run: str
    times: float  # the confirm's budget over the trial's (1: the trial's own)
    budget: float  # seconds per seed
    seeds: list[int]  # the same fresh seeds on both sides
    size: Size
    noise: stats.NoiseFloor  # the context's when it started: a resumed confirm decides as it would have

    @property
    def dir(self) -> Path:
        return paths.runs_dir() / self.confirm_id

    def seed_dir(self, role: str, k: int) -> Path:
        return self.dir / role / f"seed-{k}"

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic.write_text(self.dir / "plan.json", json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, confirm_id: str) -> ConfirmPlan:
        path = paths.runs_dir() / confirm_id / "plan.json"
        data = (
            inputs.read_json_object(path)
            if confirm_id.startswith("confirm-") and "/" not in confirm_id
            else {}
        )
        if not data:
            raise ConfirmError(f"{path}: no confirm {confirm_id!r} to resume (its plan.json is missing)")
        try:
            sized = {**data["size"], "pooled": tuple(data["size"].get("pooled", (1, 1)))}
            plan = cls(**{**data, "size": Size(**sized), "noise": stats.NoiseFloor(**data["noise"])})
        except (TypeError, KeyError) as exc:
            raise ConfirmError(f"{path}: not a confirm's plan ({exc}): it cannot be resumed") from None
        if plan.confirm_id != confirm_id:
            raise ConfirmError(f"{path}: the plan of {plan.confirm_id!r}, not of {confirm_id!r}")
        return plan


def confirm_seeds(confirm_id: str, n: int) -> list[int]:
    base = int(hashlib.sha256(confirm_id.encode()).hexdigest()[:8], 16) % 1_000_000
    return [CONFIRM_SEED_BASE + base + k for k in range(n)]


def say(msg: str) -> None:
    print(f"[confirm] {msg}", flush=True)


def long_factor(trial_budget: float, factor: float | None, budget: float | None) -> float:
    """How many times the trial's budget the confirm trains: --factor, or --budget over the trial's (at
    least 1), else 1 (the trial's own budget)."""
    if factor is not None and budget is not None:
        raise ConfirmError("--factor and --budget both given: give one")
    if budget is not None:
        if budget < trial_budget:
            raise ConfirmError(f"--budget {budget:g}: below the trial's {trial_budget:g} s")
        return budget / trial_budget
    return factor or 1.0


def run_confirm(
    run_id: str | None = None,
    n_seeds: int | None = None,
    ledger: Ledger | None = None,
    max_seeds: int = CONFIRM_MAX_SEEDS,
    factor: float | None = None,
    budget: float | None = None,
    ray: str | None = None,
    resume: str | None = None,
) -> int:
    from autorl.engine.track import get_track

    if problem := warm.keep_problem():
        raise ConfirmError(problem)
    ledger = ledger or Ledger()
    rows = ledger.rows()
    if resume is None:
        candidate, baseline, context = choose(rows, run_id, ledger)
        plan = new_plan(rows, candidate, baseline, context, (n_seeds, max_seeds), (factor, budget))
    else:
        plan, candidate, baseline = resumed(ledger, resume, (run_id, n_seeds, factor, budget))
        context = ResearchContext.of(candidate)
    track = get_track(candidate.track)
    same_harness(candidate, "confirmed")
    configs = {  # a long-budget confirm trains both `times` longer (Track.lengthen: classic, its horizon)
        role: track.lengthen(recorded_config(row, track, role), plan.times)
        for role, row in zip(ROLES, (candidate, baseline), strict=True)
    }
    plan.save()
    done, jobs = pending(plan, configs)
    announce(plan, candidate, baseline, len(done))
    if note := repeat_note(CONFIRMED.read(CONFIRMED.beside(ledger)), plan):
        say(note)
    backend = track.make_backend(candidate.backend)
    results = train(backend, configs["candidate"], jobs, plan, (rows, context), ray) if jobs else []
    if results is None:
        say(
            "stopped: the seeds that finished are kept; "
            f"`uv run autorl confirm --resume {plan.confirm_id}` runs the rest"
        )
        return 130
    sides = {
        role: Side(
            row, sorted((r for r in done + results if r.dir.parent.name == role), key=lambda r: r.seed)
        )
        for role, row in zip(ROLES, (candidate, baseline), strict=True)
    }
    return record(ledger, plan.confirm_id, plan.seeds, sides, plan.noise, plan.size, plan.budget)


def new_plan(
    rows: list[LedgerRow],
    candidate: LedgerRow,
    baseline: LedgerRow,
    context: ResearchContext,
    seeds: tuple[int | None, int],
    longer: tuple[float | None, float | None],
) -> ConfirmPlan:
    """A new confirm of `candidate` against `baseline`: `seeds` (--seeds, --max-seeds) sized by `size` at
    the context's noise floor, `longer` (--factor, --budget) by `long_factor`."""
    from autorl.engine.track import get_track

    assert context.budget is not None  # choose() refuses a trial without one
    times = long_factor(context.budget, *longer)
    noise = stats.noise_floor(rows, context, prior_sd=get_track(context.track).seed_sd_prior)
    sized = size(candidate, baseline, rows, noise, seeds[1], seeds[0])
    confirm_id = f"confirm-{datetime.now().strftime('%Y%m%d-%H%M%S')}-{candidate.run_id[-7:]}"
    seed_list = confirm_seeds(confirm_id, sized.seeds)
    return ConfirmPlan(
        confirm_id, candidate.run_id, baseline.run_id, times, context.budget * times, seed_list, sized, noise
    )


def resumed(
    ledger: Ledger, confirm_id: str, given: tuple[str | None, int | None, float | None, float | None]
) -> tuple[ConfirmPlan, LedgerRow, LedgerRow]:
    """(the plan of the stopped confirm `confirm_id`, its candidate's row, its baseline's); `given`: --run,
    --seeds, --factor, --budget, none of which a resumed confirm takes."""
    if any(g is not None for g in given):
        raise ConfirmError(
            "--resume goes on under its own plan: give none of --run, --seeds, --factor, --budget"
        )
    plan = ConfirmPlan.load(confirm_id)
    if any(r["confirm_id"] == confirm_id for r in CONFIRMED.read(CONFIRMED.beside(ledger))):
        raise ConfirmError(f"{confirm_id} is already recorded in confirmed.tsv: nothing to resume")
    candidate = ledger.find(plan.run_id)
    if candidate.decision != "keep":
        raise ConfirmError(f"trial {candidate.run_id} is no longer kept: only kept trials are confirmed")
    return plan, candidate, ledger.find(plan.baseline_run)


def pending(plan: ConfirmPlan, configs: dict[str, Any]) -> tuple[list[SeedResult], list[Any]]:
    """(the seeds that finished before, the jobs (autorl.engine.pool.SeedJob) still to run), interleaved:
    seed k of both sides before seed k+1 of either, so the machine's drift in speed falls on both alike."""
    from autorl.engine.pool import SeedJob

    done: list[SeedResult] = []
    jobs: list[SeedJob] = []
    for k, seed in enumerate(plan.seeds):
        for role in ROLES:
            seed_dir = plan.seed_dir(role, k)
            if (rows := finished_rows(seed_dir, seed)) is not None:
                done.append(SeedResult(k, seed, seed_dir, eval_rows=rows))
            else:
                jobs.append(SeedJob(len(jobs), seed, seed_dir, configs[role], "test"))
    return done, jobs


def train(
    backend: Any,
    cfg: Any,
    jobs: list[Any],
    plan: ConfirmPlan,
    measured: tuple[list[LedgerRow], ResearchContext],
    ray: str | None,
) -> list[SeedResult] | None:
    """The jobs on the machine's slots (or Ray's), planned for `cfg` (the candidate's config), their plan and
    expected time said first; None when a signal stopped them. `measured`: the ledger's rows and the context
    whose seconds per seed estimate the time."""
    the_plan = retrain_plan(backend, cfg, plan.budget, len(jobs), ray)
    say(the_plan.describe())
    if estimate := confirm_estimate(*measured, len(jobs), the_plan.parallel, (plan.times, plan.budget)):
        say(estimate)
    return run_jobs(backend, jobs, plan.budget, the_plan, report, ray)


def announce(plan: ConfirmPlan, candidate: LedgerRow, baseline: LedgerRow, n_done: int) -> None:
    n = len(plan.seeds)
    say(
        f"{plan.confirm_id}: {candidate.run_id} vs the baseline {baseline.run_id}, {n} fresh seeds a side "
        f"{plan.seeds}, budget {plan.budget:g} s per seed"
        + (f" ({plan.times:g}x the trial's: a long-budget confirm)" if plan.times > 1 else "")
        + ", scored on the sealed test split"
    )
    say(f"size: {plan.size.describe()}")
    if n_done:
        say(f"resumed: {n_done} of {2 * n} seeds finished before, {2 * n - n_done} to run")


def repeat_note(confirmed: list[dict[str, str]], plan: ConfirmPlan) -> str:
    """When the same keep was confirmed at the same budget before: this confirm repeats that test ("" when
    it is the first)."""
    earlier = [
        c
        for c in confirmed
        if c["run_id"] == plan.run_id and as_float(c, "budget") == plan.budget and c["status"] == "ok"
    ]
    if not earlier:
        return ""
    c = strongest(earlier)
    return (
        f"note: {plan.run_id} was confirmed at {plan.budget:g} s before ({c['confirm_id']}: {c['verdict']}, "
        f"{seeds_a_side(c)} seeds a side): this confirm repeats that test and adds no evidence "
        "for it; autorl status names the one with the most seeds"
    )


def report(result: SeedResult) -> None:
    """A finished seed's lines, as it ends."""
    role = result.dir.parent.name
    for line in result.log:
        say(f"{role}: {line}")
    if result.error:
        print(result.error, flush=True)


def confirm_estimate(
    rows: list[LedgerRow],
    context: ResearchContext,
    seeds: int,
    parallel: int,
    longer: tuple[float, float] | None = None,
) -> str | None:
    """The confirmation's expected wall time from the context's trials measured here (None before one);
    `longer`: (factor, budget) of a long-budget confirm."""
    from autorl.engine.cost import expected_wall, minutes

    if (expected := expected_wall(rows, context, seeds, parallel, longer)) is None:
        return None
    wall, trials, _ = expected
    return f"expected: ~{minutes(wall)} ({seeds} seeds, {parallel} at a time, from {trials} trials here)"


def record(
    ledger: Ledger,
    confirm_id: str,
    seeds: list[int],
    sides: dict[str, Side],
    noise: stats.NoiseFloor,
    sized: Size,
    budget: float,
) -> int:
    """Compare the two sides, print the block and append it to confirmed.tsv."""
    cand, base = sides["candidate"], sides["baseline"]
    status = worst_status((cand.status, base.status))
    # a side trained beside other work measured the machine, not the config: recorded, never a confirmation
    crowded = {role: text for role, side in sides.items() if (text := side.contended())}
    if crowded and status == "ok":
        status = "contended"
    ok = status in ("ok", "contended") and cand.rows and base.rows
    test_score = stats.eval_score(cand.rows) if cand.rows else None
    base_score = stats.eval_score(base.rows) if base.rows else None
    ctx = ResearchContext.of(cand.row)
    c = stats.compare(cand.rows, base.rows, noise=noise) if ok else None
    low, high = stats.matching_interval(c) if c is not None else (None, None)  # 90%: the test's own
    # the eval delta being confirmed: as the size saw it (each side pooled with its config's other trials,
    # as a verdict pools them), else the two trials' scores
    eval_delta = sized.eval_delta
    if not math.isfinite(eval_delta):
        eval_delta = (cand.row.eval_score or math.nan) - (base.row.eval_score or math.nan)
    row = {
        "timestamp": datetime.now().isoformat(timespec="seconds"),
        "confirm_id": confirm_id,
        "run_id": cand.row.run_id,
        "baseline_run": base.row.run_id,
        "track": ctx.track,
        "budget": budget,  # the confirm's: the context's, or longer (--factor, --budget)
        "seeds": seeds,
        "test_score": test_score,
        "baseline_test_score": base_score,
        "delta": c.delta if c else None,
        "ci_low": low,
        "ci_high": high,
        "p_value": c.p_value if c else None,
        "verdict": c.verdict if c else "n/a",
        "eval_delta": eval_delta,
        "status": status,
        "power": sized.power if math.isfinite(sized.power) else None,
    }
    path = CONFIRMED.beside(ledger)
    CONFIRMED.append(ledger, [row])
    events.write_quietly(paths.runs_dir() / confirm_id, f"confirm {cand.row.run_id}", say)
    lines = {k: shown(k, v) for k, v in row.items() if k not in ("timestamp", "power")}
    lines |= {f"health/contended ({role})": text for role, text in crowded.items()}
    lines["confirmed"] = "yes" if c is not None and c.verdict == "improved" and not crowded else "no"
    if crowded:
        lines["confirmed"] += " (contended: not measured; run it again when the machine is quiet)"
    lines["seeds_per_side"] = f"{sized.seeds} ({sized.chosen_by})"
    lines["power"] = (
        f"{sized.power:.2f} for delta {sized.low:+.4f} (the eval delta's 90% low end), "
        f"{sized.power_at_delta:.2f} for the eval delta {sized.eval_delta:+.4f}; seed sd {sized.sd:.4g} "
        "(the eval split's)"
        if math.isfinite(sized.power)
        else "not computed (the eval delta is unknown)"
    )
    if ok and (test_sd := test_split_sd(cand.rows, base.rows)) is not None:
        lines["power"] += f"; seed sd measured on the test split {test_sd[0]:.4g} (df {test_sd[1]})"
    sys.stdout.write("---\n" + "".join(f"{k}: {v}\n" for k, v in lines.items()))
    say(f"recorded in {path.name}")
    return 0 if status in ("ok", "contended") else 1


SIGNED = ("delta", "ci_low", "ci_high", "eval_delta")  # the confirm's summary shows these with their sign


def shown(key: str, value: Any) -> str:
    """A summary line's value as the trial's summary writes its own: deltas signed to 4 decimals, scores to
    4, p to 3 significant digits; confirmed.tsv keeps the full figures (format_cell)."""
    if isinstance(value, float) and math.isfinite(value):
        if key in SIGNED:
            return f"{value:+.4f}"
        if key in ("test_score", "baseline_test_score"):
            return f"{value:.4f}"
        if key == "p_value":
            return f"{value:.3g}"
    return format_cell(key, value)


def test_split_sd(
    cand_rows: list[dict[str, Any]], base_rows: list[dict[str, Any]]
) -> tuple[float, int] | None:
    """The single-seed sd the confirm's own seeds show on the test split (each side's seeds about their
    mean, pooled) and its df: what the size, taken from the eval split's noise floor, assumed (a test
    split of other size or difficulty has another); None with fewer than two seeds a side."""
    floor = stats.NoiseFloor(prior_df=0)
    for rows in (cand_rows, base_rows):
        floor = floor.with_scores(list(stats.seed_scores(rows).values()))
    return (floor.measured_sd, floor.df) if floor.measured_sd is not None and floor.n_runs == 2 else None


def main(
    run: str | None = None,
    seeds: int | None = None,
    max_seeds: int = CONFIRM_MAX_SEEDS,
    factor: float | None = None,
    budget: float | None = None,
    ray: str | None = None,
    resume: str | None = None,
) -> int:
    """`autorl confirm` (autorl.commands.cli_options.ConfirmOptions): exit 2 when it cannot start."""
    try:
        return run_confirm(
            run, seeds, max_seeds=max_seeds, factor=factor, budget=budget, ray=ray, resume=resume
        )
    except RetrainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
