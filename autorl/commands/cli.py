"""The `autorl` console script: status, show, mark, loop, swarm, confirm, fidelity, tune, report, ledger.

Each subcommand's flags are declared once, as the fields of its options class
(autorl/commands/cli_options.py); the parser is built from them and the command is called with the parsed
values, named as the fields are. The commands are imported only when run, so `autorl mark` does not pay for
matplotlib or Optuna.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autorl.commands.cli_options import (
    ConfirmOptions,
    EventsOptions,
    FidelityOptions,
    LedgerOptions,
    LoopOptions,
    MarkOptions,
    ReportOptions,
    ShowOptions,
    StatusOptions,
    SwarmOptions,
    TuneOptions,
)
from autorl.io import paths
from autorl.io.cliargs import add_flags, from_args
from autorl.record.ledger import Ledger, LedgerError

COMMANDS: dict[str, tuple[type, str, str]] = {  # name -> (its options, its help, the function that runs it)
    "status": (
        StatusOptions,
        "short bounded state: best kept trial, noise floor, last trials",
        "autorl.commands.status:main",
    ),
    "show": (
        ShowOptions,
        "one trial against its reference: curves, steps, causes, health flags",
        "autorl.commands.show:main",
    ),
    "mark": (
        MarkOptions,
        "record your decision on a trial (the latest by default)",
        "autorl.commands.cli:mark",
    ),
    "loop": (
        LoopOptions,
        "re-invoke a coding agent until a time/trial limit or a STOP file",
        "autorl.commands.loop:main",
    ),
    "swarm": (
        SwarmOptions,
        "N agents at once on one ledger, each in its own git worktree (autorl loop each)",
        "autorl.commands.swarm:main",
    ),
    "confirm": (
        ConfirmOptions,
        "re-train a kept config and the baseline with fresh seeds, score both on the test split",
        "autorl.commands.confirm:main",
    ),
    "fidelity": (
        FidelityOptions,
        "re-train the context's configs at a longer budget: does the short budget's ranking hold?",
        "autorl.commands.fidelity:main",
    ),
    "tune": (
        TuneOptions,
        "Optuna TPE over space.toml, every trial through run.py",
        "autorl.commands.tune:main",
    ),
    "report": (
        ReportOptions,
        "progress.png and a markdown table of kept trials",
        "autorl.commands.report:main",
    ),
    "events": (
        EventsOptions,
        "TensorBoard event files for recorded runs (tensorboard --logdir runs); trials write their own",
        "autorl.commands.events:main",
    ),
    "ledger": (
        LedgerOptions,
        "check or repair results.tsv, or append a row a trial saved in result.json",
        "autorl.commands.cli:ledger",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autorl", description="autorl research tools (trials: uv run run.py)")
    sub = p.add_subparsers(dest="command", required=True)
    for name, (options, help, _) in COMMANDS.items():
        add_flags(sub.add_parser(name, help=help, description=options.__doc__), options)
    return p


def parse(argv: list[str] | None) -> tuple[str, Any]:
    """The subcommand and its options object (a bad value exits 2 with argparse's usage line)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    opts: Any = from_args(COMMANDS[args.command][0], args)
    if isinstance(opts, LedgerOptions) and (opts.action == "append") != (opts.result_json is not None):
        parser.error("`autorl ledger append` takes the result.json to append; check and repair take none")
    return args.command, opts


def main(argv: list[str] | None = None) -> int:
    name, opts = parse(argv)
    if problem := paths.root_problem():
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        code = command(name)(**dataclasses.asdict(opts))
        sys.stdout.flush()  # inside the try: a closed pipe (`autorl status | head -1`) is not an error
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 1
    except LedgerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path given on the command line that cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


def command(name: str) -> Callable[..., int]:
    """The function that runs the subcommand `name`, imported only now (`autorl mark` does not pay for
    matplotlib or Optuna); it is called with the options' fields as keyword arguments."""
    module, function = COMMANDS[name][2].split(":")
    return getattr(importlib.import_module(module), function)


def mark(decision: str, run: str | None, lesson: str | None, reason: str | None) -> int:
    ledger = Ledger()
    row = ledger.mark(decision, run_id=run, lesson=lesson, reason=reason)
    print(f"{row.run_id}: decision {row.decision}" + (f"; lesson: {row.lesson}" if row.lesson else ""))
    entry = ledger.history()[-1]
    if entry.reference_before != entry.reference_after:
        print(f"the reference is now {entry.reference_after or 'none'} (was {entry.reference_before})")
    if decision == "keep" and row.verdict not in ("improved", "baseline"):
        print(
            f"note: verdict {row.verdict or 'missing'}; program.md keeps only improved trials",
            file=sys.stderr,
        )
    return 0


def ledger(action: str, result_json: Path | None) -> int:
    book = Ledger()
    if action == "append":
        assert result_json is not None  # parse() refuses an append without it
        row = book.append_saved(result_json)
        print(f"{book.path}: appended the row of run {row.run_id}")
        return 0
    if action == "repair":
        done = book.repair()
        print("\n".join(done) if done else f"{book.path}: nothing to repair")
    book.check()
    print(f"{book.path}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
