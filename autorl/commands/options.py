"""run.py's flags, typed: `RunOptions`, each flag declared once as a field (its type carries the range check,
its help and metavar); run.py's parser is built from these fields. The command resolves them (the config
path, the research context's budget and seeds) and hands the engine what a trial needs of them:
`RunOptions.request()`, a `TrialRequest`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autorl.engine.process import BudgetSpec
from autorl.engine.track import track_names
from autorl.engine.trial_types import RAY_START_TIMEOUT_S, TrialRequest
from autorl.io.cliargs import (
    MAX_SEEDS,
    QUICK_BUDGET_S,
    auto_or_seeds,
    budget_seconds,
    config_path,
    flag,
    float_in,
    positive_int,
    ray_flag,
)


@dataclass(frozen=True)
class RunOptions:
    """run.py's flags, each declared once, here: a field's `flag` carries its type (the range check), help
    and metavar; run.py's parser is built from these fields (autorl.io.cliargs.add_flags), in this order."""

    config: Path | None = flag(  # None: the track's default config file
        None, "config file (default train.toml; classic.toml)", type=config_path
    )
    track: str = flag("llm", "the track: " + ", ".join(track_names()), choices=tuple(track_names()))
    budget: float | None = flag(  # None: the budget of the track's baseline (its research context), else 600
        None,
        "training seconds per seed (default: the track's baseline's, else 600)",
        type=budget_seconds,
    )
    seeds: int | None = flag(  # None: the track's default
        None,
        f"trainings with harness-chosen seeds (llm 6, classic 5; at most {MAX_SEEDS})",
        type=positive_int(MAX_SEEDS),
    )
    new_context: bool = flag(  # without it, a --budget other than the baseline's is refused
        False, "leave the baseline's context: another --budget (a new baseline, or that budget's context)"
    )
    quick: bool = flag(  # one seed, QUICK_BUDGET_S unless --budget: never a baseline, reference or sample
        False,
        f"a quick look: 1 seed x {QUICK_BUDGET_S:g} s (or --budget), no verdict; its row never becomes a "
        "baseline, a reference or a noise-floor sample",
    )
    all_seeds: bool = flag(  # no early stop
        False, "run every seed even when the candidate is behind the reference after some (no early stop)"
    )
    no_abort: bool = flag(  # rungs are still scored (a later trial may compare with them)
        False, "never stop a seed at a rung when it is behind the reference's seeds there (no early abort)"
    )
    parallel: int | None = flag(  # seeds at once; None: as many as the machine has slots for
        None,
        "seeds run at once (default auto: as many as the machine has slots for)",
        type=auto_or_seeds,
        metavar="auto|N",
    )
    ray: str | None = ray_flag()  # Ray address ("local" starts one); None: the local pool
    ray_start_timeout: float = flag(  # a broken venv on a node must not hang the trial
        RAY_START_TIMEOUT_S,
        "seconds for each Ray node's first worker to start (1..3600)",
        type=float_in(1, 3600, low_open=False),
    )
    description: str = flag("", "one line recorded in results.tsv")
    rerun: str | None = flag(  # a swarm's agents (AUTORL_AGENT set) never run a config the context ran
        None,
        "in a swarm: this trial runs RUN_ID's exact config again on purpose (program.md's labelled re-run, "
        "a contended trial); without it such a trial is refused (an interrupted one needs no flag); "
        "one naming no trial of this config is refused",
        metavar="RUN_ID",
    )
    dry_run: bool = flag(False, "validate, print the resolved config, exit")
    explain: str | None = flag(  # documentation only: nothing validated, run or recorded
        None,
        "print a config key's meaning, type, range, default and where the config sets it, exit",
        metavar="KEY",
    )
    backend: str = flag("auto", "llm track backend", choices=("auto", "embedded", "prime-rl"))
    allow_dirty_harness: bool = flag(False, "run although harness files are modified")
    hang_timeout: float = flag(
        BudgetSpec.hang_s, "seconds without output = hung (1..86400)", type=float_in(1, 86400, low_open=False)
    )
    startup_cap: float = flag(
        BudgetSpec.startup_cap_s,
        "max seconds of start-up before training (1..86400)",
        type=float_in(1, 86400, low_open=False),
    )
    grace: float = flag(
        BudgetSpec.grace_s,
        "seconds between SIGTERM and SIGKILL (0.5..3600)",
        type=float_in(0.5, 3600, low_open=False),
    )

    def request(self) -> TrialRequest:
        """What the engine needs of these flags, once the command resolved the budget and the seeds
        (autorl.commands.trial.context_defaults)."""
        assert self.budget is not None and self.seeds is not None, "resolved by trial.context_defaults"
        budget = BudgetSpec(
            budget_s=self.budget, startup_cap_s=self.startup_cap, hang_s=self.hang_timeout, grace_s=self.grace
        )
        return TrialRequest(
            budget=budget,
            seeds=self.seeds,
            parallel=self.parallel,
            ray=self.ray,
            ray_start_timeout=self.ray_start_timeout,
            all_seeds=self.all_seeds,
            no_abort=self.no_abort,
            quick=self.quick,
            description=self.description,
            rerun=self.rerun,
        )
