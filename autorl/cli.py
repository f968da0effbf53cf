"""The `autorl` console script: status, mark, confirm, loop, tune, report (trials: `uv run run.py`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autorl import paths
from autorl.cliargs import (
    CONFIRM_MAX_SEEDS,
    MAX_SEEDS,
    budget_seconds,
    int_in,
    nonempty_str,
    positive_float,
    positive_int,
)
from autorl.ledger import Ledger, LedgerError
from autorl.track import track_names

MAX_HOURS = 24 * 365  # loop --hours
MAX_TRIALS = 100_000  # loop --max-trials, tune --trials


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autorl", description="autorl research tools (trials: uv run run.py)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("status", help="short bounded state: best kept trial, noise floor, last trials")
    s.add_argument("--json", action="store_true", help="machine-readable")
    s.add_argument(
        "--last",
        type=positive_int(MAX_TRIALS),
        default=8,
        help="how many recent trials to list (shows at most 20)",
    )
    s.add_argument(
        "--track", choices=track_names(), default=None, help="show this track (default: the latest trial's)"
    )
    s.add_argument(
        "--all", action="store_true", help="also list every context (track, eval, harness, budget) recorded"
    )

    sh = sub.add_parser("show", help="one trial against its reference: curves, steps, causes, health flags")
    sh.add_argument(
        "run", nargs="?", default=None, help="run id (or a unique prefix) or run dir; default: latest"
    )
    sh.add_argument("--png", type=Path, default=None, help="also draw the seeds' learning curves to this PNG")

    m = sub.add_parser("mark", help="record your decision on a trial (the latest by default)")
    m.add_argument("decision", choices=["keep", "discard", "crash"])
    m.add_argument("--run", default=None, help="run id (or a unique prefix); default: the latest trial")
    m.add_argument("--lesson", default=None, help="one line: what this trial taught")
    m.add_argument(
        "--reason",
        type=nonempty_str,
        default=None,
        help="required to change a decision that is not pending (kept in results-marks.jsonl)",
    )

    lp = sub.add_parser("loop", help="re-invoke a coding agent until a time/trial limit or a STOP file")
    lp.add_argument(
        "--agent", type=nonempty_str, required=True, help='agent command, e.g. "claude -p" (prompt appended)'
    )
    lp.add_argument(
        "--hours", type=positive_float(MAX_HOURS), default=None, help="stop after this many hours"
    )
    lp.add_argument(
        "--max-trials",
        type=positive_int(MAX_TRIALS),
        default=None,
        help="stop after this many new results.tsv rows",
    )
    lp.add_argument(
        "--confirm-every",
        type=positive_int(MAX_TRIALS),
        default=None,
        metavar="K",
        help="run `autorl confirm` after every K new keeps and when the loop ends",
    )

    c = sub.add_parser(
        "confirm",
        help="re-train a kept config and the baseline with fresh seeds, score both on the test split",
    )
    c.add_argument("--run", default=None, help="the kept trial to confirm (default: the current best kept)")
    c.add_argument(
        "--seeds",
        type=positive_int(MAX_SEEDS),
        default=None,
        help="fresh seeds per side (default: sized for 80%% power, at most --max-seeds)",
    )
    c.add_argument(
        "--max-seeds",
        type=positive_int(MAX_SEEDS),
        default=CONFIRM_MAX_SEEDS,
        help="the sized confirm's most seeds per side (default %(default)s)",
    )

    t = sub.add_parser("tune", help="Optuna TPE over space.toml, every trial through run.py")
    t.add_argument("--trials", type=positive_int(MAX_TRIALS), required=True, help="run.py trials to run")
    t.add_argument("--space", type=Path, default=None, help="search space (default: space.toml)")
    t.add_argument("--budget", type=budget_seconds, default=None, help="training budget per trial, seconds")
    t.add_argument("--config", type=Path, default=None, help="config to tune (default: train.toml)")
    t.add_argument("--track", choices=track_names(), default="llm")
    t.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0, help="TPE sampler seed")
    t.add_argument(
        "--parallel-trials",
        type=lambda s: None if s == "auto" else positive_int(64)(s),
        default=None,
        metavar="auto|N",
        help="candidates run at once (default auto: as many as the machine's slots hold)",
    )

    r = sub.add_parser("report", help="progress.png and a markdown table of kept trials")
    r.add_argument("--out", type=Path, default=None, help="PNG path (default: progress.png)")
    r.add_argument("--md", type=Path, default=None, help="also write the table to this markdown file")
    r.add_argument(
        "--track", choices=track_names(), default=None, help="report this track (default: the latest trial's)"
    )

    lg = sub.add_parser("ledger", help="check results.tsv, or append a row a trial saved in result.json")
    lg_sub = lg.add_subparsers(dest="ledger_command", required=True)
    lg_sub.add_parser("check", help="exit 2 naming file:line if results.tsv is malformed")
    lg_sub.add_parser(
        "repair",
        help="CRLF -> LF, drop empty lines, move unusable or duplicate rows to results-rejected.tsv "
        "(keeps a backup)",
    )
    la = lg_sub.add_parser("append", help="append runs/<id>/result.json (when writing results.tsv failed)")
    la.add_argument("result_json", type=Path, help="the trial's runs/<id>/result.json")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if problem := paths.root_problem():
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        code = _run(args)
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


def _run(args: argparse.Namespace) -> int:
    if args.command == "status":
        from autorl import status

        return status.main(as_json=args.json, last=args.last, track=args.track, all_contexts=args.all)
    if args.command == "show":
        from autorl import show

        return show.main(args.run, args.png)
    if args.command == "mark":
        ledger = Ledger()
        row = ledger.mark(args.decision, run_id=args.run, lesson=args.lesson, reason=args.reason)
        print(
            f"{row['run_id']}: decision {row['decision']}"
            + (f"; lesson: {row['lesson']}" if row["lesson"] else "")
        )
        mark = ledger.history()[-1]
        if mark.reference_before != mark.reference_after:
            print(f"the reference is now {mark.reference_after or 'none'} (was {mark.reference_before})")
        if args.decision == "keep" and row["verdict"] not in ("improved", "baseline"):
            print(
                f"note: verdict {row['verdict'] or 'missing'}; program.md keeps only improved trials",
                file=sys.stderr,
            )
        return 0
    if args.command == "loop":
        from autorl import loop

        return loop.main(
            args.agent, hours=args.hours, max_trials=args.max_trials, confirm_every=args.confirm_every
        )
    if args.command == "confirm":
        from autorl import confirm

        return confirm.main(args.run, args.seeds, args.max_seeds)
    if args.command == "tune":
        from autorl import tune

        try:
            return tune.run_tune(
                args.trials,
                args.space,
                args.budget,
                args.config,
                track=args.track,
                seed=args.seed,
                parallel_trials=args.parallel_trials,
            )
        except tune.SpaceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.command == "report":
        from autorl import report

        return report.main(args.out, args.md, track=args.track)
    if args.command == "ledger":
        return _ledger(args)
    return 2


def _ledger(args: argparse.Namespace) -> int:
    ledger = Ledger()
    if args.ledger_command == "repair":
        done = ledger.repair()
        print("\n".join(done) if done else f"{ledger.path}: nothing to repair")
    if args.ledger_command in ("check", "repair"):
        ledger.check()
        print(f"{ledger.path}: ok")
        return 0
    row = ledger.append_saved(args.result_json)
    print(f"{ledger.path}: appended the row of run {row['run_id']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
