"""A run directory read back: typed views of its seeds and of the trial (`SeedView`, `TrialView`) from any
backend's files (the embedded trainer's and the classic track's metrics.jsonl, the prime-rl backend's copy of
prime-rl's metrics; `outcome.json`, `eval.jsonl` and `train_state.json` per seed), and the health flags
computed from them (`health_flags`, thresholds in `THRESHOLDS`) that a trial's summary and `autorl show`
print."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autorl.io import inputs, paths
from autorl.io.jsonl import eval_rows_problem, read_jsonl
from autorl.record import stats
from autorl.record.outcome import SeedOutcome
from autorl.record.row import LedgerRow

TREND_KEYS = ("loss", "mismatch_kl", "approx_kl", "entropy")  # shown where the backend logs them


@dataclass(frozen=True)
class Thresholds:
    """The health flags' thresholds: the one place they are set (the summary and `autorl show` use them)."""

    collapse_share: float = 0.5  # a seed's smoothed reward fell back by this share of its rise (its size when
    # it never rose) or more...
    collapse_min_fall: float = 0.25  # ...and by at least this share of its peak's size: a collapse. Healthy
    # seeds of the default at --budget 90 fall back 0-11% from their (noisy, smoothed) peak; past the lr
    # cliff, 55-78% (docs/train-toml.md)
    zero_advantage: float = 0.5  # mean share of groups whose rewards were all equal: no learning signal
    truncated: float = 0.3  # mean share of completions cut at max_completion_tokens
    min_steps: int = 20  # fewer optimizer steps than this in the budget: the trial hardly trained
    contended: float = 0.08  # a seed stopped by the budget during whose training tasks waited for a CPU this
    # share of the time or more (outcome.json's cpu_wait_share): other work shared its CPUs, so it trained
    # fewer steps than a quiet machine gives it. Alone on the 2-core VM the LLM track's seeds read
    # 0.012-0.032 (the 41 quiet seeds of studies/abort-2026-11-27/llm/seeds.tsv and
    # studies/fidelity-llm-2026-11-27/seeds; the 360 s night's 0.016-0.018); beside other work 0.059-0.22
    # (one at 0.082 trained 9% fewer steps than its quiet twin), beside the test suite 0.17-0.73. It was 0.25
    # until the 360 s night's first trials ran at 0.12-0.14 unflagged (docs/agentview.md)
    speed_drift: float = 0.15  # a repeat's steps per training second this share off its config's earlier
    # trials': the machine's pace moved (a replay of 2026-12-04: 748-815 steps in 30 s, 888-1019 forty minutes
    # later, nothing else running; one trial's seeds spread by about +-4%)


THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Curve:
    """A logged series in a few numbers, smoothed by a moving average over a tenth of its points."""

    key: str
    start: float
    peak: float
    peak_step: int
    end: float
    points: int

    @classmethod
    def of(cls, key: str, steps: Sequence[int], values: Sequence[float]) -> Curve | None:
        if not values:
            return None
        at, smooth = smoothed(steps, values)
        top = max(range(len(smooth)), key=smooth.__getitem__)
        return cls(key, smooth[0], smooth[top], at[top], smooth[-1], len(values))

    @property
    def collapsed(self) -> bool:
        rise, fall = self.peak - self.start, self.peak - self.end
        t = THRESHOLDS
        if fall < t.collapse_min_fall * abs(self.peak):
            return False
        # A reward that rose gave back a share of its rise; one that fell from its first steps (an lr past the
        # cliff: smoothing folds the early fall into the start) lost that share of its own size.
        return fall >= t.collapse_share * (rise if rise > 0 else abs(self.peak))

    def text(self) -> str:
        return f"{short(self.start)}→{short(self.peak)}@{self.peak_step}→{short(self.end)}"


def smoothed(steps: Sequence[int], values: Sequence[float]) -> tuple[list[int], list[float]]:
    """The moving average over a tenth of the points (at least one), each mean at its window's middle step:
    the curve `Curve` sums up and `autorl show --png` draws."""
    w = max(1, len(values) // 10)
    means = [statistics.fmean(values[i : i + w]) for i in range(len(values) - w + 1)]
    return [int(steps[i + w // 2]) for i in range(len(means))], means


def short(v: float | None) -> str:
    """A number in 3 significant figures (whole above 1000); "-" when there is none."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def _series(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[list[int], list[float]]:
    pairs = [(int(r.get("step", i)), _number(r.get(key))) for i, r in enumerate(rows)]
    kept = [(s, v) for s, v in pairs if v is not None]
    return [s for s, _ in kept], [v for _, v in kept]


def _mean_of(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = _series(rows, key)[1]
    return statistics.fmean(values) if values else None


@dataclass
class SeedView:
    """One seed of a trial, from its directory."""

    index: int
    seed: int | None
    status: str  # ok | crash | timeout | interrupted ("?" before outcome.json was written)
    stop_reason: str | None
    cause: str | None  # the crash or timeout cause
    steps: int
    training_seconds: float | None
    cpu_wait_share: float | None  # outcome.json: the share of its training some task waited for a CPU
    curves: list[Curve]  # reward_mean first, then reward_mean/<source>, then eval_return (classic)
    zero_advantage: float | None  # mean share of zero-advantage groups
    truncated: float | None  # mean share of completions cut at max_completion_tokens
    trends: dict[str, tuple[float, float]]  # key -> (first tenth mean, last tenth mean)
    env_scores: dict[str, float]  # this seed's eval per env
    solving: bool = False  # classic: the seed records when its in-training eval solved the env
    solved_seconds: float | None = None  # classic: time / env steps to solve (None: not solved)
    solved_env_steps: int | None = None
    env_steps: int | None = None  # classic: env steps trained, and where training ends unless stopped
    last_env_steps: int | None = None  # (train_state.json: min(total_env_steps, the score's horizon))
    series: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict, repr=False)

    @property
    def seconds_per_step(self) -> float | None:
        return self.training_seconds / self.steps if self.training_seconds and self.steps else None

    @property
    def reward(self) -> Curve | None:
        return self.curves[0] if self.curves else None


def curve_keys(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The reward curves a backend logged: reward_mean, per training source, the classic in-training eval."""
    keys = {k for r in rows for k in r}
    sources = sorted(k for k in keys if k.startswith("reward_mean/"))
    return [k for k in ("reward_mean", *sources, "eval_return") if k in keys]


def _trend(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[float, float] | None:
    values = _series(rows, key)[1]
    if len(values) < 2:
        return None
    w = max(1, len(values) // 10)
    return statistics.fmean(values[:w]), statistics.fmean(values[-w:])


def load_seed(seed_dir: Path, index: int) -> SeedView:
    rows = read_jsonl(seed_dir / "metrics.jsonl")
    outcome = SeedOutcome.read(seed_dir)
    state = inputs.read_json_object(seed_dir / "train_state.json")  # classic only
    series = {k: _series(rows, k) for k in curve_keys(rows)}
    curves = [c for k, (s, v) in series.items() if (c := Curve.of(k, s, v)) is not None]
    trends = {k: t for k in TREND_KEYS if (t := _trend(rows, k)) is not None}
    eval_rows = read_jsonl(seed_dir / "eval.jsonl")
    last_step = int(rows[-1].get("step", len(rows))) if rows else 0
    return SeedView(
        index=index,
        seed=outcome.seed,
        status=outcome.status,
        stop_reason=outcome.stop_reason,
        cause=outcome.error or (outcome.reason if outcome.status == "timeout" else None),
        steps=outcome.steps if outcome.steps is not None else last_step,
        training_seconds=outcome.training_seconds,
        cpu_wait_share=outcome.cpu_wait_share,
        curves=curves,
        zero_advantage=_mean_of(rows, "zero_adv_frac"),
        truncated=_mean_of(rows, "truncated_frac"),
        trends=trends,
        env_scores=stats.env_scores(eval_rows) if eval_rows and not eval_rows_problem(eval_rows) else {},
        solving="time_to_solve_seconds" in state,
        solved_seconds=_number(state.get("time_to_solve_seconds")),
        solved_env_steps=state.get("env_steps_to_solve"),
        env_steps=state.get("env_steps"),
        last_env_steps=state.get("last_env_steps"),
        series=series,
    )


def load_seeds(run_dir: Path) -> list[SeedView]:
    dirs = [d for d in Path(run_dir).glob("seed-*") if d.is_dir() and d.name[5:].isdigit()]
    return [load_seed(d, int(d.name[5:])) for d in sorted(dirs, key=lambda d: int(d.name[5:]))]


# ----------------------------------------------------------------------------------------------------
# Health flags
# ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Flag:
    name: str  # the summary key is health/<name>
    text: str


def _share(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def contended(seeds: Sequence[SeedView]) -> Flag | None:
    """The `contended` flag: seeds that trained while other work on this machine held its CPUs (their
    outcome.json's cpu_wait_share, /proc/pressure/cpu). Only a seed the budget stopped trained less for it:
    one that ran to its end (the classic track's step horizon) did the same work, only later."""
    crowded = [
        s
        for s in seeds
        if s.stop_reason in ("budget", "aborted") and (s.cpu_wait_share or 0.0) >= THRESHOLDS.contended
    ]
    if not crowded:
        return None
    worst = max(crowded, key=lambda s: s.cpu_wait_share or 0.0)
    return Flag(
        "contended",
        f"{len(crowded)}/{len(seeds)} seeds trained while tasks on this machine waited for a "
        f"CPU (seed-{worst.index}: {worst.cpu_wait_share:.0%} of its training, /proc/pressure/cpu): "
        "other work shared their CPUs, so they trained fewer steps than a quiet machine gives; the "
        "score and the verdict may be the machine's, not the config's: run it again when it is quiet (work "
        "that ran a while and ended counts too)",
    )


def health_flags(
    seeds: Sequence[SeedView],
    score: float | None,
    base_score: float | None,
    training_budget: float | None = None,
) -> list[Flag]:
    """What looks wrong in a trial, one flag each, from the seeds' numbers and the trial's scores.
    `training_budget`: the seconds every seed trains unless its config stops it (None where seeds end at a
    horizon by design: Track.budget_is_training_time)."""
    t = THRESHOLDS
    flags = [f for f in (stops_itself(seeds, training_budget), cut(seeds, training_budget)) if f is not None]
    collapsed = [s for s in seeds if s.reward is not None and s.reward.collapsed]
    if collapsed:
        worst = max(collapsed, key=lambda s: s.reward.peak - s.reward.end)  # type: ignore[union-attr]
        flags.append(
            Flag(
                "reward_collapse",
                f"reward collapsed on {len(collapsed)}/{len(seeds)} seeds (seed-{worst.index}: "
                f"{worst.reward.text()})",  # type: ignore[union-attr]
            )
        )
    zero = _share([s.zero_advantage for s in seeds])
    if zero is not None and zero >= t.zero_advantage:
        flags.append(
            Flag("zero_advantage", f"{zero:.0%} of groups had zero advantage (all rewards equal): no signal")
        )
    truncated = _share([s.truncated for s in seeds])
    if truncated is not None and truncated >= t.truncated:
        flags.append(Flag("truncated", f"{truncated:.0%} of completions were cut at max_completion_tokens"))
    budget_bound = [s for s in seeds if s.stop_reason == "budget"]
    if budget_bound and (few := max(s.steps for s in budget_bound)) < t.min_steps:
        flags.append(
            Flag(
                "few_steps", f"only {few} steps fit the budget (fewer than {t.min_steps}): it hardly trained"
            )
        )
    if (crowded := contended(seeds)) is not None:
        flags.append(crowded)
    if score is not None and base_score is not None and score < base_score:
        flags.append(
            Flag("below_base", f"eval_score {score:.4f} is below the untrained base model's {base_score:.4f}")
        )
    return flags


def stops_itself(seeds: Sequence[SeedView], training_budget: float | None) -> Flag | None:
    """Every seed ended training on its own (none stopped by the budget, whose seeds say `budget`): the
    config has its own limit (an LLM config's `max_steps`), so at a longer budget it trains no longer: what
    the user trains later is this run again (`autorl fidelity` names it `no_longer`)."""
    ended = [s for s in seeds if s.status == "ok" and s.stop_reason == "exited" and s.training_seconds]
    if not training_budget or not ended or len(ended) < len(seeds):
        return None
    longest = max(s.training_seconds or 0.0 for s in ended)
    steps = max(s.steps for s in ended)
    told = (
        f"all {len(seeds)} seeds ended training on their own after {longest:.0f} s at most of the "
        f"{training_budget:g} s budget ({steps} steps at most"
        if len(seeds) > 1
        else f"its seed ended training on its own after {longest:.0f} s of the {training_budget:g} s budget "
        f"({steps} steps"
    )
    return Flag(
        "stops_itself",
        f"{told}: the config's own limit, such as max_steps): at a longer budget it trains no longer",
    )


def cut(seeds: Sequence[SeedView], training_budget: float | None) -> Flag | None:
    """Seeds the budget stopped before their env-step horizon, on a track whose seeds end there by design
    (`training_budget` None: the classic track, whose budget is a cap): the score grid past the cut keeps
    the last evaluation's value, so the score is of a shorter run than the horizon, one this machine's
    speed set."""
    if training_budget is not None:
        return None
    stopped = [s for s in seeds if s.stop_reason == "budget" and s.env_steps is not None]
    if not stopped:
        return None
    least = min(stopped, key=lambda s: s.env_steps or 0)
    of = f" of {least.last_env_steps:,}" if least.last_env_steps else ""
    return Flag(
        "cut",
        f"{len(stopped)}/{len(seeds)} seeds were stopped by the budget before their env-step horizon "
        f"(seed-{least.index} at {least.env_steps:,}{of} env steps): the rest of the score's curve keeps "
        "its last value, so the score is of a run cut short, as far as this machine's speed took it: the "
        "config is too slow for this budget",
    )


def trial_health(
    run_dir: Path, score: float | None, base_score: float | None, training_budget: float | None = None
) -> dict[str, str]:
    """The summary's `health/<name>` lines of a trial that just ran."""
    flags = health_flags(load_seeds(run_dir), score, base_score, training_budget)
    return {f"health/{f.name}": f.text for f in flags}


# ----------------------------------------------------------------------------------------------------
# The trial against its reference
# ----------------------------------------------------------------------------------------------------
@dataclass
class TrialView:
    run_id: str
    run_dir: Path
    row: LedgerRow  # the trial's ledger row (as its result.json saved it)
    summary: dict[str, str]  # summary.txt
    seeds: list[SeedView]
    reference: TrialView | None = None

    @classmethod
    def load(cls, run_dir: Path, with_reference: bool = True) -> TrialView:
        row = LedgerRow.from_json(inputs.read_json_object(run_dir / "result.json"))
        summary = {}
        if (run_dir / "summary.txt").is_file():
            for line in (run_dir / "summary.txt").read_text().splitlines():
                key, sep, value = line.partition(": ")
                if sep:
                    summary[key] = value
        view = cls(row.run_id or run_dir.name, run_dir, row, summary, load_seeds(run_dir))
        ref = row.reference_run
        if with_reference and ref and (paths.runs_dir() / ref).is_dir():
            view.reference = cls.load(paths.runs_dir() / ref, with_reference=False)
        return view

    def env_scores(self) -> dict[str, float]:
        return dict(self.row.env_scores or {})

    def flags(self, training_budget: float | None = None) -> list[Flag]:
        return health_flags(self.seeds, self.row.eval_score, self.row.base_score, training_budget)
