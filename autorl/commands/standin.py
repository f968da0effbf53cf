"""A scripted stand-in agent: one trial per invocation, from a list of changes (for tests and demos).

    python -m autorl.commands.standin --changes changes.toml [--track classic] [--prompt P] [-- RUN.PY FLAGS]

(as an agent command: `autorl swarm --agent "python -m autorl.commands.standin --changes F --prompt {prompt}
-- --budget 2"`: the loop puts its prompt where `{prompt}` is.)

`changes.toml` holds `[[change]]` tables: `key` (a dotted key of the track's config file) and `value` (an
A/A swarm's: a key with no effect on the run, e.g. on CartPole `clip_obs` while `norm_obs` is off; a comment
is no change: the config's hash ignores it). Each invocation does what
program.md's loop does, as `autorl loop` or `autorl swarm` re-invokes an agent: it brings its config onto
the context's best kept config when that is not its own (another agent's keep), takes the first change
that no trial on the ledger has tried or is training (the trials' and the claims' descriptions are its
memory), edits the file,
commits, runs the trial (`run.py --description "<change>"`), and decides: `improved` keeps the commit and
marks it keep; anything else resets it and marks discard (crash: crash). A trial refused because the same
config is training elsewhere (another agent's claim) is reset and skipped. With no change left it exits at
once without a trial (the loop then stops re-invoking it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import tomlkit

from autorl.commands.tune import parse_summary
from autorl.engine.track import get_track
from autorl.io import paths
from autorl.record import claims
from autorl.record.context import ResearchContext, best_kept
from autorl.record.ledger import Ledger
from autorl.record.row import AGENT_VAR


def say(msg: str) -> None:
    print(f"[standin] {msg}", flush=True)


IDENTITY = ["-c", "user.name=autorl stand-in", "-c", "user.email=standin@autorl.invalid"]


def git(*args: str) -> str:
    root = paths.repo_root()
    argv = ["git", *IDENTITY, *args]
    return subprocess.run(argv, cwd=root, capture_output=True, text=True, check=True).stdout


def skipped_file() -> Path:
    """The changes this agent's trials were refused for (not to be tried again by it)."""
    return paths.state_dir() / "standin" / f"{os.environ.get(AGENT_VAR) or 'standin'}.skipped"


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
    rows = [r for r in ledger.rows() if r["track"] == track]
    if not rows:
        return
    best = best_kept(rows, ResearchContext.of(rows[-1]))
    if best is None or best["decision"] != "keep":
        return
    kept = paths.runs_dir() / best["run_id"] / "config.toml"
    if kept.exists() and kept.read_text() != config.read_text():
        config.write_text(kept.read_text())
        git("commit", "-qam", f"onto the best kept config, {best['run_id']}")
        say(f"brought {config.name} onto the best kept config ({best['run_id']}, {best.get('agent') or '-'})")


def decide(ledger: Ledger, summary: dict[str, str], what: str) -> str:
    """program.md's decision on the trial's summary; the action taken, in words."""
    run_id = summary.get("run_dir", "").rsplit("/", 1)[-1]
    if summary.get("status") == "invalid" or not run_id:
        git("reset", "-q", "--hard", "HEAD~1")
        skipped_file().parent.mkdir(parents=True, exist_ok=True)
        with open(skipped_file(), "a") as f:
            f.write(what + "\n")
        return "refused (nothing recorded): reset, skipped from now on"
    if summary.get("verdict") in ("improved", "baseline"):
        ledger.mark("keep", run_id=run_id, lesson=f"{what}: improved {summary.get('delta', '')}")
        return f"{run_id} kept"
    git("reset", "-q", "--hard", "HEAD~1")
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
    tried = {r["description"] for r in ledger.rows()} | {c.description for c in claims.in_flight()}
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
    run = [sys.executable, str(root / "run.py"), "--track", args.track, "--description", what, *args.run_args]
    say(f"trial: {what}")
    done = subprocess.run(run, cwd=root, capture_output=True, text=True)
    (root / "run.log").write_text(done.stdout + done.stderr)
    say(decide(ledger, parse_summary(done.stdout), what))
    return 0


if __name__ == "__main__":
    sys.exit(main())
