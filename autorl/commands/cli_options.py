"""The `autorl` subcommands' options, each declared once: a field per flag (its type with the range check,
its help, its default). autorl/commands/cli.py builds each subcommand's parser from these fields
(`autorl.io.cliargs.add_flags`) and calls the command with the parsed values, named as the fields are.
Cheap to import: nothing of the commands themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.engine.track import track_names
from autorl.io.cliargs import (
    CONFIRM_MAX_SEEDS,
    MAX_SEEDS,
    budget_seconds,
    flag,
    float_in,
    int_in,
    nonempty_str,
    positive_float,
    positive_int,
    ray_flag,
)

MAX_HOURS = 24 * 365  # loop --hours
MAX_TRIALS = 100_000  # loop --max-trials, tune --trials


def track_flag(default: str | None, help: str) -> Any:
    """`--track`, the same choices everywhere."""
    return flag(default, help, choices=tuple(track_names()))


def auto_or_count(text: str) -> int | None:
    """tune --parallel-trials: `auto` (None) or a count."""
    return None if text == "auto" else positive_int(64)(text)


@dataclass(frozen=True)
class StatusOptions:
    """`autorl status`: the research state, bounded."""

    as_json: bool = flag(False, "machine-readable", name="--json")
    last: int = flag(8, "how many recent trials to list (shows at most 20)", type=positive_int(MAX_TRIALS))
    track: str | None = track_flag(None, "show this track (default: the latest trial's)")
    all_contexts: bool = flag(
        False, "also list every context (track, eval, harness, budget) recorded", name="--all"
    )


@dataclass(frozen=True)
class ShowOptions:
    """`autorl show`: one trial against its reference."""

    run: str | None = flag(
        None, "run id (or a unique prefix) or run dir; default: latest", positional=True, nargs="?"
    )
    png: Path | None = flag(None, "also draw the seeds' learning curves to this PNG", type=Path)


@dataclass(frozen=True)
class MarkOptions:
    """`autorl mark`: the decision on a trial."""

    decision: str = flag("", "keep, discard or crash", positional=True, choices=("keep", "discard", "crash"))
    run: str | None = flag(None, "run id (or a unique prefix); default: the latest trial")
    lesson: str | None = flag(None, "one line: what this trial taught")
    reason: str | None = flag(
        None,
        "required to change a decision that is not pending (kept in results-marks.jsonl)",
        type=nonempty_str,
    )


@dataclass(frozen=True)
class LoopOptions:
    """`autorl loop`: an agent CLI re-invoked all night."""

    agent: str = flag(
        "", 'agent command, e.g. "claude -p" (prompt appended)', type=nonempty_str, required=True
    )
    hours: float | None = flag(None, "stop after this many hours", type=positive_float(MAX_HOURS))
    max_trials: int | None = flag(
        None, "stop after this many new results.tsv rows", type=positive_int(MAX_TRIALS)
    )
    confirm_every: int | None = flag(
        None,
        "run `autorl confirm` after every K new keeps and when the loop ends (the agent then does not)",
        type=positive_int(MAX_TRIALS),
        metavar="K",
    )
    confirm_factor: float | None = flag(
        None,
        "with --confirm-every: confirm at F x the trial's budget (`autorl confirm --factor F`: does the "
        "best keep hold when trained longer?)",
        type=float_in(1, 1000),
        metavar="F",
    )


@dataclass(frozen=True)
class SwarmOptions:
    """`autorl swarm`: several agents on one ledger, each in its own git worktree."""

    agents: int = flag(2, "how many agents run at once", type=positive_int(64), metavar="N")
    agent: str = flag(
        "",
        'agent command (as `autorl loop --agent`), run in each agent\'s worktree; e.g. "claude -p"',
        type=nonempty_str,
        required=True,
    )
    hours: float | None = flag(None, "stop every agent after this many hours", type=positive_float(MAX_HOURS))
    max_trials: int | None = flag(
        None, "stop once this many new results.tsv rows (all agents')", type=positive_int(MAX_TRIALS)
    )
    confirm_every: int | None = flag(
        None,
        "confirm the swarm's best after every K new keeps (all agents') and at the end, once",
        type=positive_int(MAX_TRIALS),
        metavar="K",
    )


@dataclass(frozen=True)
class ConfirmOptions:
    """`autorl confirm`: the sealed test split."""

    run: str | None = flag(None, "the kept trial to confirm (default: the current best kept)")
    seeds: int | None = flag(
        None,
        "fresh seeds per side (default: sized for 80% power, at most --max-seeds)",
        type=positive_int(MAX_SEEDS),
    )
    max_seeds: int = flag(
        CONFIRM_MAX_SEEDS, "the sized confirm's most seeds per side", type=positive_int(MAX_SEEDS)
    )
    factor: float | None = flag(
        None, "confirm at factor x the trial's budget (a long-budget confirm)", type=float_in(1, 1000)
    )
    budget: float | None = flag(
        None, "confirm at this budget in seconds (instead of --factor)", type=budget_seconds
    )
    resume: str | None = flag(
        None, "go on with this stopped confirm: only its missing seeds run, then it records", metavar="ID"
    )
    ray: str | None = ray_flag()


@dataclass(frozen=True)
class TuneOptions:
    """`autorl tune`: Optuna TPE over space.toml, every trial through run.py."""

    trials: int = flag(0, "run.py trials to run", type=positive_int(MAX_TRIALS), required=True)
    space: Path | None = flag(
        None, "search space (default: the track's: space.toml, classic: docs/classic-space.toml)", type=Path
    )
    budget: float | None = flag(None, "training budget per trial, seconds", type=budget_seconds)
    config: Path | None = flag(None, "config to tune (default: the track's, train.toml)", type=Path)
    track: str = track_flag("llm", "the track to tune")
    seed: int = flag(0, "TPE sampler seed", type=int_in(0, 2**32 - 1))
    parallel_trials: int | None = flag(
        None,
        "candidates run at once (default auto: as many as the machine's slots hold)",
        type=auto_or_count,
        metavar="auto|N",
    )


@dataclass(frozen=True)
class ReportOptions:
    """`autorl report`: progress.png and the kept trials' table."""

    out: Path | None = flag(None, "PNG path (default: progress.png)", type=Path)
    md: Path | None = flag(None, "also write the table to this markdown file", type=Path)
    track: str | None = track_flag(None, "report this track (default: the latest trial's)")


@dataclass(frozen=True)
class EventsOptions:
    """`autorl events`: TensorBoard event files (runs/<run>/tb/) for recorded runs; trials write their own."""

    runs: tuple[str, ...] = flag(
        (),
        "run ids (or unique prefixes) or run directories; default: every trial of results.tsv",
        positional=True,
        nargs="*",
    )


@dataclass(frozen=True)
class LedgerOptions:
    """`autorl ledger`: check, repair or append to results.tsv."""

    action: str = flag(
        "",
        "check: exit 2 naming file:line if results.tsv is malformed; repair: CRLF -> LF, drop empty lines, "
        "move unusable or duplicate rows to results-rejected.tsv (keeps a backup); append: append "
        "runs/<id>/result.json (when writing results.tsv failed)",
        positional=True,
        choices=("check", "repair", "append"),
    )
    result_json: Path | None = flag(
        None, "append: the trial's runs/<id>/result.json", positional=True, nargs="?", type=Path
    )


@dataclass(frozen=True)
class FidelityOptions:
    """`autorl fidelity`: the context's configs re-trained at a longer budget, the two rankings compared."""

    track: str | None = track_flag(None, "the latest context of this track (default: the latest trial's)")
    factor: float = flag(4.0, "long budget = factor x the context's budget", type=float_in(1, 1000))
    budget: float | None = flag(None, "the long budget in seconds (instead of --factor)", type=budget_seconds)
    seeds: int = flag(3, "fresh seeds per config (the same for every config)", type=positive_int(MAX_SEEDS))
    configs: int = flag(
        8, "configs re-trained: the baseline, every keep, then discarded ones", type=int_in(2, 64)
    )
    resume: str | None = flag(None, "go on with this fidelity run: only its missing seeds run", metavar="ID")
    dry_run: bool = flag(
        False, "print the plan and how long it takes; train and record nothing", name="--dry-run"
    )
    png: Path | None = flag(None, "also draw short vs long scores to this PNG", type=Path)
    ray: str | None = ray_flag()
