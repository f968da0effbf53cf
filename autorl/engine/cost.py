"""What decisions cost on this machine: the seconds of a seed (start-up, training, eval, other; the start-up a
trial pays once) measured from the context's latest comparable trials, and from them the expected wall time
of a trial (its plan line), a re-run, a confirm and a fidelity run. `autorl status` prints the cost line."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from autorl.io import paths
from autorl.record.context import ResearchContext, baseline, baseline_repeats, config_repeats
from autorl.record.outcome import SeedOutcome
from autorl.record.row import LedgerRow, counted

COST_TRIALS = 10  # the expected cost is the median over this many latest ok trials of the context
RERUN_SEEDS = 12  # program.md's labelled re-run of a promising inconclusive


def seed_cost(rows: Sequence[LedgerRow], context: ResearchContext) -> tuple[int, dict[str, float]] | None:
    """The median seconds per seed (start-up, training, eval, other, total) over the context's latest ok
    trials, the start-up a trial pays once (`once`: the first wave's wait for its warm starter's imports,
    autorl/engine/warm.py), and how many trials it is from; None before a trial finished.

    `total` is a wave's wall time, from each trial's total_seconds (less its own `once` and the base eval it
    ran, over its waves; not from a trial that kept seeds of a stopped one);
    `other` what the seeds' own figures leave out of it (the classic track's in-training evaluations, off the
    training clock; saves; children's exits; the runner between seeds). So the next trial's estimate, `once`
    + waves x `total`, is the wall time a comparable trial took, not the sum of its parts."""
    per_seed: list[tuple[float, ...]] = []
    firsts: list[float] = []  # per trial: the slowest start-up of its first wave
    laters: list[float] = []  # the start-ups of seeds after the first wave
    waves: list[float] = []  # per trial: its wall time per wave, its own `once` left out
    # a contended trial's seconds are the machine's: like its score, they measure nothing of the config
    trials = [r for r in context.rows(rows) if r.status == "ok" and not r.contended and not aborted(r)]
    trials = trials[-COST_TRIALS:]
    for r in trials:
        n = len(r.seed_list)
        parts = (r.startup_seconds, r.training_seconds, r.eval_seconds)
        if n and parts[0] is not None and parts[1] is not None and parts[2] is not None:
            per_seed.append((parts[0] / n, parts[1] / n, parts[2] / n))
        if (r.extras or {}).get("kept_seeds"):  # some of its seeds ran in another trial's wall time
            continue
        parallel = max(1, r.parallel or 1)
        once = 0.0
        if starts := _seed_startups(r.run_id, n):
            firsts.append(max(starts[:parallel]))
            laters += starts[parallel:]
            if starts[parallel:]:
                once = max(0.0, firsts[-1] - statistics.median(starts[parallel:]))
        if n and (total := r.total_seconds) is not None:  # less the base eval it ran (once a context)
            base_eval = float((r.extras or {}).get("base_eval_seconds") or 0.0)
            waves.append((total - once - base_eval) / wave_count(n, parallel))
    if not per_seed:
        return None
    startup, training, evaluation = (statistics.median(x) for x in zip(*per_seed, strict=True))
    once = 0.0
    if firsts and laters:  # the seeds' own files split the start-up into once a trial + per seed
        startup = statistics.median(laters)
        once = max(0.0, statistics.median(firsts) - startup)
    parts_total = startup + training + evaluation
    other = max(0.0, statistics.median(waves) - parts_total) if waves else 0.0
    cost = {
        "startup": startup,
        "training": training,
        "eval": evaluation,
        "other": other,
        "total": parts_total + other,
        "once": once,
    }
    return len(per_seed), cost


def aborted(row: LedgerRow) -> bool:
    """Whether the early abort ended the trial (its seeds' figures are a rung's, not a seed's)."""
    return row.stopped_early.startswith("aborted ")


def dead_idea_cost(
    rows: Sequence[LedgerRow], context: ResearchContext, seed_training: float
) -> dict[str, float] | None:
    """What an idea that was not kept cost in training, over the context's latest candidates decided other
    than `improved`: the median training seconds, that as a multiple of a seed's (`seed_training`: one
    seed's median training: a slower config's idea costs more than one) and the share the early abort
    ended. A void trial (interrupted, contended: `LedgerRow.void`) decided no idea and is left out. None
    before such a trial or a seed's cost."""
    same = context.rows(rows)
    # a repeat (the baseline's, a keep's) measures noise: it is no idea; nor is an idea's first trial that
    # its labelled re-run stands for
    repeats = baseline_repeats(same) | config_repeats(same)
    dead = [
        r
        for r in same
        if r.status == "ok"
        and not r.void
        and r.reference_run
        and r.verdict != "improved"
        and r.run_id not in repeats
    ][-COST_TRIALS:]
    spent = [v for r in dead if (v := r.training_seconds) is not None]
    if not spent or seed_training <= 0:
        return None
    median = statistics.median(spent)
    return {
        "trials": len(spent),
        "training": median,
        "seeds": median / seed_training,
        "aborted": sum(aborted(r) for r in dead) / len(dead),
    }


def _seed_startups(run_id: str, n: int) -> list[float]:
    """Each seed's start-up (runs/<run_id>/seed-<k>/outcome.json), in seed order; [] when one is missing."""
    out = []
    for k in range(n):
        startup = SeedOutcome.read(paths.runs_dir() / run_id / f"seed-{k}").startup_seconds
        if startup is None:
            return []
        out.append(startup)
    return out


def wave_count(seeds: int, parallel: int) -> int:
    """How many waves `seeds` seeds take, `parallel` at a time."""
    return -(-seeds // max(1, parallel))


def waves_seconds(seed: Mapping[str, float], seeds: int, parallel: int) -> float:
    """Wall seconds of `seeds` seeds run `parallel` at a time: the start-up paid once, then each wave."""
    return seed["once"] + wave_count(seeds, parallel) * seed["total"]


def expected_cost(
    rows: Sequence[LedgerRow],
    context: ResearchContext,
    default_seeds: int,
    confirm: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """What the next decisions cost on this machine (`seed_cost`): at the seeds run.py gives a trial here
    (the context's baseline's) and the latest trial's parallelism, the wall time of the next trial (the
    context's median: a slower config takes longer, the early stop can end it sooner), a 12-seed re-run and
    a confirm (both sides' seeds on the same slots): of `confirm["seeds"]` a side, the size `autorl
    confirm` would choose for the best keep now (its `chosen_by` and `power` are passed on), else of
    `default_seeds`. None before a trial finished."""
    if (measured := seed_cost(rows, context)) is None:
        return None
    trials, seed = measured
    same = context.rows(rows)
    parallel = max(1, same[-1].parallel or 1)
    base = baseline(same)  # a trial given --seeds sets no later trial's seeds
    planned = (base.seeds_planned if base is not None else None) or default_seeds

    def cost(seeds: int) -> dict[str, float]:
        return {"seeds": seeds, "seconds": waves_seconds(seed, seeds, parallel)}

    return {
        "trials": trials,
        "seed": seed,
        "parallel": parallel,
        "next_trial": cost(planned),
        "rerun": cost(RERUN_SEEDS),
        "confirm": {**(confirm or {}), **cost(2 * (confirm["seeds"] if confirm else default_seeds))},
        "dead_idea": dead_idea_cost(rows, context, seed["training"]),
    }


def expected_wall(
    rows: Sequence[LedgerRow],
    context: ResearchContext,
    seeds: int,
    parallel: int,
    longer: tuple[float, float] | None = None,
) -> tuple[float, int, dict[str, float]] | None:
    """(wall seconds, trials measured, the seed's cost) of `seeds` seeds run `parallel` at a time, from the
    context's trials measured here; with `longer` = (factor, budget) (fidelity) each seed trains factor x
    the measured training, at most the budget (a wall-clock budget is spent whole; the classic track's
    env-step horizon ends sooner), and its `other` grows as its training: what happens along the run off
    the training clock (the classic track's in-training evaluations on the longer horizon's grid, saves);
    None before a trial of the context finished."""
    if (measured := seed_cost(rows, context)) is None:
        return None
    trials, seed = measured
    if longer is not None and seed["training"] > 0:
        training = min(seed["training"] * longer[0], longer[1])
        other = seed["other"] * training / seed["training"]
        total = seed["startup"] + training + seed["eval"] + other
        seed = {**seed, "training": training, "other": other, "total": total}
    return waves_seconds(seed, seeds, parallel), trials, seed


def trial_estimate(
    rows: Sequence[LedgerRow],
    context: ResearchContext,
    seeds: int,
    parallel: int,
    may_stop: bool = True,
    training_s: float | None = None,
) -> str | None:
    """A starting trial's expected wall time from the context's trials measured here (its plan line);
    `may_stop`: an early stop can end it sooner (a reference to look at after a wave, or the abort). Before
    any trial of the context was measured, the least it takes where every seed trains `training_s` (a track
    whose budget is the training time: its waves of training alone), else None."""
    if (expected := expected_wall(rows, context, seeds, parallel)) is None:
        if not training_s or seeds <= 0:
            return None
        waves = wave_count(seeds, parallel)
        return (
            f"expected: at least {minutes(waves * training_s)} ({counted(waves, 'wave')} of {training_s:g} s "
            "training; the start-up and the evals are not measured here yet: the next trial's line has them)"
        )
    wall, trials, seed = expected
    median = f"median of the {counted(trials, 'latest comparable trial')} here"
    return (
        f"expected: ~{minutes(wall)} ({_seed_text(seed)}, {median}; a config slower per seed takes longer"
        + (", the early stop can end it sooner)" if may_stop else ")")
    )


def _seed_text(seed: Mapping[str, float]) -> str:
    other = f" + {seed['other']:.0f} s other" if seed["other"] >= 1 else ""
    once = f" (+ {seed['once']:.0f} s once a trial)" if seed["once"] >= 1 else ""
    return (
        f"a seed {seed['startup']:.0f} s start-up + {seed['training']:.0f} s training + {seed['eval']:.0f} s "
        f"eval{other}{once}"
    )


def minutes(seconds: float) -> str:
    """`45 s`, `3.4 min` (a replay read `~3 min` for 3.4 and took 3.7: whole minutes rounded it down), `12
    min` from 10 minutes on."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 600 else f"{seconds / 60:.0f} min"


def cost_line(cost: Mapping[str, Any] | None) -> str | None:
    if cost is None:
        return None
    return (
        f"cost here (median of {counted(cost['trials'], 'trial')}): "
        f"{_seed_text(cost['seed'])}, {cost['parallel']} at a "
        "time; next trial "
        f"({cost['next_trial']['seeds']} seeds) ~{minutes(cost['next_trial']['seconds'])}, a "
        f"{cost['rerun']['seeds']}-seed re-run {minutes(cost['rerun']['seconds'])}, a confirm of "
        f"{cost['confirm']['seeds'] // 2} seeds a side {minutes(cost['confirm']['seconds'])} "
        + _confirm_size_text(cost["confirm"])
        + _dead_idea_text(cost.get("dead_idea"))
    )


def _dead_idea_text(dead: Mapping[str, float] | None) -> str:
    if not dead:
        return ""
    return (
        f"; an idea not kept cost {dead['training']:.0f} s of training ({dead['seeds']:.2f}x a median "
        "seed's training here, "
        f"median of {dead['trials']:.0f}; {dead['aborted']:.0%} ended by the early abort)"
    )


def _confirm_size_text(confirm: Mapping[str, Any]) -> str:
    """How the confirm's seeds were counted: as `autorl confirm` would size it for the best keep now (its
    power; `capped`: at --max-seeds, too few), else the track's default seeds (nothing kept to size for)."""
    if "chosen_by" not in confirm:
        return "(at the track's seeds: nothing kept yet to size it for)"
    capped = ", capped at --max-seeds" if confirm["chosen_by"] == "capped" else ""
    return f"(as autorl confirm sizes it for the best keep now: power {confirm['power']:.2f}{capped})"
