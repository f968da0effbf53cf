"""run.py's command: flags -> validate -> refuse -> (prepare) -> run the trial (autorl/engine/trial_run.py).

`uv run run.py` calls main(). Nothing heavy is imported before the config is validated, so a bad config
is refused in well under two seconds with no model loaded and no GPU touched; a refusal is exit 2 with
nothing run or recorded. The research context's budget and seeds are filled in here (`context_defaults`).
"""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from autorl.commands.options import RunOptions
from autorl.engine import warm
from autorl.engine.backend import Backend, TrialConfig
from autorl.engine.console import EXIT_CRASH, EXIT_OK, EXIT_SIGNAL, invalid, print_summary, say
from autorl.engine.track import Track, get_track
from autorl.engine.trial_run import run_trial
from autorl.engine.trial_types import Setup
from autorl.io import paths
from autorl.io.cliargs import DEFAULT_BUDGET_S, QUICK_BUDGET_S, add_flags, from_args
from autorl.io.harness import dirty_harness_files
from autorl.io.machine import Machine, MachineFileError, load_machine
from autorl.io.tomlcheck import ConfigError


def build_parser() -> argparse.ArgumentParser:
    """run.py's parser: one flag per RunOptions field (autorl.commands.options), declared there."""
    p = argparse.ArgumentParser(prog="run.py", description="Run one budgeted, validated, recorded trial.")
    add_flags(p, RunOptions)
    return p


def parse_options(argv: list[str] | None) -> RunOptions:
    """run.py's flags, checked (a bad value exits 2 with argparse's usage line)."""
    return from_args(RunOptions, build_parser().parse_args(argv))


def resolved_toml(resolved: dict[str, Any]) -> str:
    """The resolved config as TOML, the format train.toml and prime-rl's `rl @ file` use (TOML has no null:
    a None left by a backend is written as prime-rl's "None" string)."""
    import tomlkit

    def no_null(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: no_null(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [no_null(v) for v in value]
        if isinstance(value, Path):
            return str(value)
        return "None" if value is None else value

    return tomlkit.dumps(no_null(resolved))


# --- the trial -------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """run.py: the flags, then the trial validated, refused, prepared and run; exit 2 on bad input."""
    opts = parse_options(argv)
    if opts.explain is not None:  # documentation only: nothing validated, run or recorded
        from autorl.commands.configdoc import explain

        return explain(opts.explain, opts.track, paths.repo_root(), opts.config)
    try:
        opts, setup, machine = _validated(opts)  # 1. the config, before anything heavy
        if opts.dry_run:
            return dry_run(setup)
        ready = ready_to_train(opts, setup, machine)  # 2.-4. refusals, data, the machine prepared
        return EXIT_CRASH if ready is None else run_trial(ready)
    except Invalid as exc:
        return invalid(str(exc))
    except KeyboardInterrupt:  # before the trial's own handlers are installed (validation, prepare)
        print("\n[trial] interrupted before training started: nothing recorded", file=sys.stderr, flush=True)
        return EXIT_SIGNAL[signal.SIGINT]


class Invalid(Exception):
    """Bad input found while setting a trial up: exit 2 with this message, nothing run, nothing recorded."""


def ready_to_train(opts: RunOptions, setup: Setup, machine: Machine | None) -> Setup | None:
    """2.-3. The committed harness, a ledger and directories a row can be recorded in, the backend found, the
    training data readable; 4. the machine prepared once, and again when the builtin model's recipe changed
    (None: preparing failed). Raises Invalid."""
    if problem := refusal_before_training(opts, setup.root, setup.backend):
        raise Invalid(problem)
    if problems := setup.track.data_problems(setup.cfg):
        raise Invalid("\n".join(problems))
    if reason := setup.track.prepare_reason(machine):
        return _prepare(setup, reason, backend_given=opts.backend != "auto")
    return setup


def _validated(opts: RunOptions) -> tuple[RunOptions, Setup, Machine | None]:
    """1. The config validated before anything heavy (no model loaded, no GPU touched): the flags resolved
    (the config path, the context's budget and seeds), the setup the engine runs, and the machine file it
    was validated against. Raises Invalid."""
    if problem := paths.root_problem() or warm.keep_problem():
        raise Invalid(problem)
    root = paths.repo_root()
    track = get_track(opts.track)
    config_path = opts.config or root / track.default_config
    opts = replace(opts, config=config_path)
    if not config_path.exists():
        raise Invalid(f"config file {config_path} not found")
    try:
        machine = load_machine()
    except MachineFileError as exc:
        raise Invalid(str(exc)) from None
    backend_name = track.backend_name(opts.backend, machine)
    prepared_model = machine.model_name if machine and not opts.dry_run else None
    try:
        cfg, backend = _load(track, config_path, backend_name, prepared_model)
    except ConfigError as exc:
        raise Invalid(str(exc)) from None
    opts = context_defaults(opts, track, cfg)
    return opts, Setup(opts.request(), config_path, track, backend_name, backend, cfg, root), machine


def context_defaults(opts: RunOptions, track: Track[Any], cfg: TrialConfig) -> RunOptions:
    """The budget and seeds not given on the command line, from the research context: the track's latest
    baseline on this eval set (a trial compares only under its budget), else the defaults. A --budget other
    than the baseline's needs --new-context. Parallelism stays `auto` unless given: on the same machine it is
    the baseline's, and a difference is noted in the summary. Raises Invalid."""
    if opts.quick:
        if opts.seeds not in (None, 1):
            raise Invalid("--quick is one seed: leave --seeds out (a trial of more seeds is a real trial)")
        budget = opts.budget or QUICK_BUDGET_S
        say(f"quick look: 1 seed x {budget:g} s; no verdict, and its row is never a baseline or reference")
        return replace(opts, budget=budget, seeds=1)
    base = None if opts.new_context else context_baseline(track, cfg)
    if base is None:
        return replace(opts, budget=opts.budget or DEFAULT_BUDGET_S, seeds=opts.seeds or track.default_seeds)
    budget, seeds = base.budget, base.seeds or track.default_seeds
    if opts.budget is not None and f"{opts.budget:g}" != f"{budget:g}":
        raise Invalid(
            f"--budget {opts.budget:g}: the {track.name} track's baseline {base.run_id} ran at {budget:g} s, "
            f"and trials compare only under one budget; leave --budget out (it defaults to {budget:g}), "
            "or add --new-context to start a new baseline at this budget"
        )
    named = ((opts.budget, f"budget {budget:g} s"), (opts.seeds, f"{seeds} seeds"))
    taken = [text for given, text in named if not given]
    if taken:
        say(
            f"{' and '.join(taken)}: from the baseline {base.run_id}, the research context (--seeds sets "
            "other seeds; another budget is a new context: --new-context)"
        )
    if opts.seeds is not None and opts.seeds != seeds:
        say(
            f"--seeds {opts.seeds}: the baseline {base.run_id} ran {seeds}; the verdict compares this "
            f"trial's {opts.seeds} with the reference's seeds; "
            + (
                f"more seeds cost {opts.seeds / seeds:.2g}x the time and detect a smaller gain"
                if opts.seeds > seeds
                else "fewer seeds cost less and miss a real gain more often"
            )
        )
    return replace(opts, budget=budget, seeds=opts.seeds or seeds)


@dataclass(frozen=True)
class Baseline:
    """What a research context fixes: its baseline's budget and seeds (None: not recorded)."""

    run_id: str
    budget: float
    seeds: int | None


def context_baseline(track: Track[Any], cfg: TrialConfig) -> Baseline | None:
    """The latest ok baseline of `track` on this config's eval set in results.tsv; None when there is none
    (or the eval set cannot be read here: the trial's own checks say why)."""
    from autorl.io.inputs import InputError
    from autorl.record.ledger import Ledger, LedgerError

    try:
        rows = Ledger(paths.results_file()).rows()
    except LedgerError as exc:
        raise Invalid(str(exc)) from None
    baselines = [r for r in rows if r.track == track.name and r.verdict == "baseline" and r.status == "ok"]
    if not baselines:
        return None
    try:
        eval_hash = track.eval_hash(cfg)
    except (OSError, ConfigError, InputError):
        return None
    for r in reversed(baselines):
        if r.eval_hash == eval_hash and r.budget:
            return Baseline(r.run_id, r.budget, r.seeds_planned or None)
    return None


def _load(track: Track, config_path: Path, backend_name: str, model: str | None) -> tuple[Any, Backend]:
    """The config loaded for `backend_name` and checked by that backend; raises ConfigError."""
    cfg = track.load_config(config_path, backend_name, model)
    backend = track.make_backend(backend_name)
    backend.check(cfg)
    return cfg, backend


def _prepare(setup: Setup, reason: str, backend_given: bool) -> Setup | None:
    """Prepare the machine; unless --backend named one (`backend_given`), validate again for the backend
    prepare chose (Invalid when it refuses the config). None: prepare failed (said; exit 1, nothing
    recorded)."""
    from autorl.llm.prepare import PrepareError

    say(reason)
    try:
        machine = setup.track.prepare(setup.config_path)
    except PrepareError as exc:  # not a usage error (exit 2): nothing was recorded, exit 1
        print(f"error: prepare failed: {exc}", file=sys.stderr, flush=True)
        print_summary({"status": "crash"}, None)
        return None
    if backend_given or machine.backend == setup.backend_name:
        return setup
    try:
        cfg, backend = _load(setup.track, setup.config_path, machine.backend, machine.model_name)
        backend.preflight()
    except Exception as exc:
        raise Invalid(str(exc)) from None
    return replace(setup, backend_name=machine.backend, cfg=cfg, backend=backend)


def refusal_before_training(opts: RunOptions, root: Path, backend) -> str | None:
    """Why the trial must not start (exit 2), checked before prepare and training; None when it may.

    The harness must be the committed one; results.tsv readable, its lock usable and writable, runs/ and
    .autorl/ directories it can write (a trial that trains must be able to record its row); the backend
    able to run here (e.g. prime-rl found).
    """
    dirty = dirty_harness_files(root)
    if dirty and not opts.allow_dirty_harness:
        return (
            "the fixed harness differs from the last commit; only train.toml / classic.toml may change "
            "between trials.\n  modified: "
            + "\n  modified: ".join(dirty)
            + "\n(commit or revert these files; "
            "--allow-dirty-harness exists for developing the harness itself)"
        )
    from autorl.record.ledger import Ledger, LedgerError

    try:
        Ledger(paths.results_file()).check()
    except LedgerError as exc:
        return str(exc)
    for directory in (paths.runs_dir(), paths.state_dir()):
        if problem := paths.writable_dir_problem(directory):
            return problem
    try:
        backend.preflight()
    except Exception as exc:
        return str(exc)
    return None


def dry_run(setup: Setup) -> int:
    from autorl.engine.slots import plan

    backend, cfg = setup.backend, setup.cfg
    resolved = backend.resolve(cfg, paths.runs_dir() / "dry-run", 0)
    print(f"# backend: {setup.backend_name}; config {cfg.path} is valid (config_hash {cfg.config_hash})")
    asked = setup.request
    print(f"# {plan(backend, cfg, asked.seeds, asked.parallel, asked.ray).describe()}")
    print(resolved_toml(resolved))
    if text := backend.availability_note():
        print(f"# note: {text}")
    return EXIT_OK
