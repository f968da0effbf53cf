"""A scripted stand-in agent: one trial per invocation, from a list of changes (for tests and demos).

    python -m autorl.agents.standin --changes changes.toml [--track classic] [--prompt P] [-- RUN.PY FLAGS]

(as an agent command: `autorl swarm --agent "python -m autorl.agents.standin --changes F --prompt {prompt}
-- --budget 2"`: the loop puts its prompt where `{prompt}` is.)

`changes.toml` holds `[[change]]` tables: `key` (a dotted key of the track's config file) and `value` (an
A/A swarm's: a key with no effect on the run, e.g. on CartPole `clip_obs` while `norm_obs` is off; a comment
is no change: the config's hash ignores it). Each invocation does what
program.md's loop does, as `autorl loop` or `autorl swarm` re-invokes an agent: it brings its config onto
the context's best kept config when that is not its own (another agent's keep), takes the first change
that no trial on the ledger has tried or is training (the trials' and the claims' descriptions are its
memory), edits the file,
commits, runs the trial (`run.py --description "<change>"`), and decides: `improved` keeps the commit and
marks it keep; anything else resets it and marks discard (crash: crash), as does a `health/contended`
trial whatever its verdict (program.md: it measured nothing). It runs no repeat (the baseline's, a keep's):
it stands in for the loop's mechanics, not for its statistics. A trial refused because the same
config is training elsewhere (another agent's claim) is reset and skipped. With no change left it exits at
once without a trial (the loop then stops re-invoking it). An invocation killed before it decided (its
trial may go on and record its row) is finished by the next one first, as program.md's loop prompt asks
("finish or mark any pending trial"): it waits while that trial still trains, then decides by its row,
or resets the commit when the trial recorded none.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import tomlkit

from autorl.commands.tune import parse_summary
from autorl.engine.track import get_track
from autorl.io import harness, paths
from autorl.record import claims
from autorl.record.context import ResearchContext, best_kept, kept_config_to_adopt
from autorl.record.ledger import Ledger
from autorl.record.row import AGENT_VAR, format_cell


def say(msg: str) -> None:
    print(f"[standin] {msg}", flush=True)


IDENTITY = ["-c", "user.name=autorl stand-in", "-c", "user.email=standin@autorl.invalid"]


def git(*args: str) -> str:
    return harness.git(paths.repo_root(), *IDENTITY, *args)


def me() -> str:
    return os.environ.get(AGENT_VAR) or "standin"


def skipped_file() -> Path:
    """The changes this agent's trials were refused for (not to be tried again by it)."""
    return paths.state_dir() / "standin" / f"{me()}.skipped"


def current_file() -> Path:
    """The change this agent committed and ran, until its trial is decided."""
    return paths.state_dir() / "standin" / f"{me()}.current"


def revert(what: str) -> None:
    """Undo the change's commit, when it is still HEAD (a killed invocation may have undone it already)."""
    if git("log", "-1", "--format=%s").strip() == what:
        git("reset", "-q", "--hard", "HEAD~1")


def finish_pending(ledger: Ledger) -> None:
    """Decide the change an earlier invocation ran but did not decide (it was killed): after its trial, which
    may still train (its claim is live), by its row; with no row (the trial recorded none), undo it."""
    if not current_file().exists():
        return
    what = current_file().read_text().strip()
    while any(c.description == what for c in claims.in_flight()):
        time.sleep(1.0)
    mine = [r for r in ledger.rows() if r.description == what and r.agent == me()]
    row = mine[-1] if mine else None
    if row is None:
        revert(what)
        say(f"{what}: its trial recorded no row (killed before it trained): undone, to be tried again")
    elif row.decision == "pending":
        delta = format_cell("delta", row.delta)
        summary = {"status": row.status, "verdict": row.verdict, "delta": delta, "run_dir": row.run_id}
        summary |= {f"health/{flag}": "(from its row)" for flag in row.health.split()}
        say(f"{what}: an earlier invocation's trial, " + decide(ledger, summary, what))
    elif row.decision != "keep":
        revert(what)
    current_file().unlink()


def describe(change: dict[str, Any]) -> str:
    return f"{change['key']} = {change['value']}"


def apply(path: Path, change: dict[str, Any]) -> None:
    """The change written into the config file (comments and layout kept: tomlkit)."""
    doc = tomlkit.parse(path.read_text())
    *tables, last = change["key"].split(".")
    node: Any = doc
    for t in tables:
        node = node.setdefault(t, tomlkit.table())
    node[last] = change["value"]
    path.write_text(tomlkit.dumps(doc))


def onto_best(ledger: Ledger, track: str, config: Path) -> None:
    """Bring the config onto the best kept trial's (another agent's keep moved the reference)."""
    rows = [r for r in ledger.rows() if r.track == track]
    best = best_kept(rows, ResearchContext.of(rows[-1])) if rows else None
    if best is None or best.decision != "keep":
        return
    if kept := kept_config_to_adopt(best.run_id, config):
        config.write_text(kept.read_text())
        git("commit", "-qam", f"onto the best kept config, {best.run_id}")
        say(f"brought {config.name} onto the best kept config ({best.run_id}, {best.agent or '-'})")


def decide(ledger: Ledger, summary: dict[str, str], what: str) -> str:
    """program.md's decision on the trial's summary; the action taken, in words."""
    run_id = summary.get("run_dir", "").rsplit("/", 1)[-1]
    if summary.get("status") == "invalid" or not run_id:
        revert(what)
        skipped_file().parent.mkdir(parents=True, exist_ok=True)
        with open(skipped_file(), "a") as f:
            f.write(what + "\n")
        return "refused (nothing recorded): reset, skipped from now on"
    if "health/contended" in summary:  # program.md: not measured, whatever the verdict
        revert(what)
        ledger.mark("discard", run_id=run_id, lesson=f"{what}: contended: not measured")
        return f"{run_id} marked discard (contended: not measured)"
    if summary.get("verdict") in ("improved", "baseline"):
        ledger.mark("keep", run_id=run_id, lesson=f"{what}: improved {summary.get('delta', '')}")
        return f"{run_id} kept"
    revert(what)
    decision = "crash" if summary.get("status") in ("crash", "timeout") else "discard"
    ledger.mark(decision, run_id=run_id, lesson=f"{what}: {summary.get('verdict') or summary.get('status')}")
    return f"{run_id} marked {decision}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="a scripted stand-in agent: one trial per invocation")
    p.add_argument("--changes", type=Path, required=True, help="a TOML file of [[change]] tables")
    p.add_argument("--track", default="classic", help="the track (its config file is edited)")
    p.add_argument("--prompt", default="", help="the loop's prompt: a scripted agent ignores it")
    p.add_argument("run_args", nargs="*", help="more run.py flags (after --), e.g. --budget 2 --seeds 2")
    args = p.parse_args(argv)
    changes = tomllib.loads(args.changes.read_text()).get("change", [])
    root = paths.repo_root()
    config = root / get_track(args.track).default_config
    ledger = Ledger(paths.results_file())
    finish_pending(ledger)
    tried = {r.description for r in ledger.rows()} | {c.description for c in claims.in_flight()}
    if skipped_file().exists():
        tried |= set(skipped_file().read_text().splitlines())
    todo = [c for c in changes if describe(c) not in tried]
    if not todo:
        say("every change is tried: nothing to do")
        return 0
    onto_best(ledger, args.track, config)
    what = describe(todo[0])
    apply(config, todo[0])
    git("commit", "-qam", what)
    current_file().parent.mkdir(parents=True, exist_ok=True)
    current_file().write_text(what + "\n")
    run = [sys.executable, str(root / "run.py"), "--track", args.track, "--description", what, *args.run_args]
    say(f"trial: {what}")
    done = subprocess.run(run, cwd=root, capture_output=True, text=True)
    (root / "run.log").write_text(done.stdout + done.stderr)
    say(decide(ledger, parse_summary(done.stdout), what))
    current_file().unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
