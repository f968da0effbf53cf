"""Every concrete command the README, program.md and docs/ show is accepted by its parser, and is run.

A command is a line (in a code block or inline code) that starts with `uv run run.py`, `uv run autorl`,
`uv run prepare.py` or `uv run python scripts/X.py`; usage synopses (`[--flag]`, `A|B`, `...`, `<x>`,
upper-case placeholders such as KEY or CMD) are not commands. Each is parsed by the real parser (run.py's,
autorl's, prepare.py's; a script's flags must be in its own `--help`): a flag renamed or removed in the code,
or a value out of its range, fails here.

Then the commands run (test_every_shown_command_runs), page after page, each page in its order, in one
scratch root prepared by the real `prepare.py`; a command shown on several pages runs once. run.py, autorl
and prepare.py run through their real entry points. What a test machine cannot give them is replaced, and
only that: an LLM trial trains with the test-double backend (tests/fakes/fake_backend.py) instead of the
tiny model, every trial's budget is cut to 0.3 s (classic trials are real, PPO on CartPole), and
`claude` is a stand-in that ends the loop. A command that needs what this machine lacks (a prime-rl
checkout) must be refused the way docs/ say. Not run: the recorded sessions' pages (the record of a run: an
hour, 30 trials), the BipedalWalker trial (PARSED_ONLY says why) and the scripts, measurements of minutes
whose flags are checked against their --help.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.fake_backend import FakeBackend

from autorl.commands import cli, trial
from autorl.engine import warm
from autorl.llm import prepare
from autorl.llm.track import LLMTrack
from autorl.record.ledger import Ledger

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "program.md", *sorted((ROOT / "docs").glob("*.md"))]
# The recorded sessions' pages: their commands are parsed, not run.
SESSIONS = sorted((ROOT / "studies" / "sessions").glob("*/README.md"))
UV_FLAGS = r"(?:--no-sync |--extra \w+ )*"  # uv run's own flags before the command
START = re.compile(rf"uv run {UV_FLAGS}(?:run\.py|autorl|prepare\.py|python scripts/\w+\.py)\b")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_:]*$")


def commands() -> list[tuple[str, str]]:
    found = set()
    for page in PAGES + SESSIONS:
        found |= {(page.relative_to(ROOT).as_posix(), line) for line in page_commands(page)}
    return sorted(found)


def page_commands(page: Path) -> list[str]:
    """The page's commands in the order it shows them (each once)."""
    found: list[str] = []
    text = page.read_text()
    # inline code and code blocks' lines, in the page's order
    for block, inline in re.findall(r"```[^\n]*\n(.*?)```|`([^`\n]+)`", text, flags=re.S):
        for line in block.splitlines() if block else [inline]:
            line = line.split(" #")[0].strip().removeprefix("$ ")
            m = START.search(line)
            if m is None or m.start() != 0:
                continue
            line = re.split(r"\s+(?:>|2>|\|)", line)[0]  # redirections and pipes are the shell's
            if any(c in line for c in "[]|<>…") or "..." in line:
                continue
            try:
                words = shlex.split(line)
            except ValueError:
                continue
            if any(PLACEHOLDER.match(w) for w in words) or line in found:
                continue
            found.append(line)
    return found


def parse(line: str) -> None:
    words = shlex.split(re.sub(rf"^uv run {UV_FLAGS}", "uv run ", line))
    target, args = words[2], words[3:]
    if target == "run.py":
        trial.parse_options(args)
    elif target == "autorl":
        cli.build_parser().parse_args(args)
    elif target == "prepare.py":
        prepare.build_parser().parse_args(args)
    else:  # python scripts/X.py ARGS: every flag is one the script's --help lists (nothing is run)
        usage = script_help(words[3])
        for flag in (w.split("=")[0] for w in words[4:] if w.startswith("--")):
            assert re.search(rf"{re.escape(flag)}\b", usage), f"{words[3]} has no {flag}"


@functools.cache
def script_help(script: str) -> str:
    assert (ROOT / script).exists(), script
    done = subprocess.run([sys.executable, str(ROOT / script), "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_pages_show_commands():
    assert len(commands()) >= 20  # the extraction itself works (a regex that matched nothing would pass)


def cases() -> list:
    """commands(), each script's on one pytest-xdist worker: its --help (script_help) runs once a session, not
    once on each worker (bench_classic.py's imports torch: ~5 s)."""
    script = pytest.mark.xdist_group("docs-scripts")
    return [
        pytest.param(page, line, marks=script) if "scripts/" in line else (page, line)
        for page, line in commands()
    ]


@pytest.mark.parametrize(("page", "line"), cases())
def test_a_shown_command_is_accepted(page, line):
    try:
        parse(line)
    except SystemExit as exc:
        pytest.fail(f"{page}: `{line}` is refused by its parser (exit {exc.code})")


# ---------------------------------------------------------------------------------------------- run

TINY_BUDGET = {"llm": "0.3", "classic": "0.3"}  # seconds of training per seed in a run command's trial
# What a command does on a machine without prime-rl: refused, exit 2, with the message prepare gives.
REFUSED = {
    "uv run prepare.py --prime-rl /path/to/prime-rl": "--prime-rl /path/to/prime-rl: not a usable prime-rl",
    "uv run run.py --backend prime-rl": "prime-rl not found",
}
# Refused where it is shown, for a reason the page gives: program.md confirms "after every 3 keeps"; its
# latest trials, on the classic track, kept none.
REFUSED_IN_ORDER = {
    ("program.md", "uv run autorl confirm"): "nothing kept yet under the latest trial's",
    # program.md checks fidelity "after every few keeps": the walk's latest context has one config
    ("program.md", "uv run autorl fidelity"): "the context has one config: ranking needs at least two",
    ("program.md", "uv run autorl confirm --factor 4"): "nothing kept yet under the latest trial's",
}
# Not run, for the reason given (each is parsed above like every command).
BIPEDAL = "uv run run.py --track classic --config docs/classic-bipedalwalker.toml --budget 600 --seeds 1"
PARSED_ONLY = {
    "uv run autorl fidelity --track classic --factor 4 --seeds 3 --configs 8 --png fidelity.png": "re-trains "
    "8 configs x 3 seeds at 4x the budget; tests/test_fidelity.py runs the command end to end",
    'uv run autorl swarm --agents 2 --agent "claude -p" --hours 8': "a swarm needs a git checkout (the "
    "walk's root is none) and runs its agents in worktrees; tests/test_swarm.py runs one end to end",
    BIPEDAL: "the base policy's evaluation alone is a minute of Box2D (100 episodes of a random walker); "
    "tests/test_classic.py::test_continuous_policy_runs_on_bipedalwalker trains and evaluates on it",
}
# A stand-in for the agent CLI the README's loop names: it ends the loop (what the loop does with a real
# agent is tests/test_protocol.py's).
FAKE_AGENT = "#!/bin/sh\ntouch STOP\n"


@contextlib.contextmanager
def at(site: Path, scratch: Path) -> Iterator[None]:
    """Commands run in `site` as a user's would (AUTORL_ROOT and the working directory there), with the
    agent CLI the stand-in and LLM trials on the test-double backend."""
    with pytest.MonkeyPatch.context() as mp:
        (scratch / "bin").mkdir(exist_ok=True)
        (scratch / "bin" / "claude").write_text(FAKE_AGENT)
        (scratch / "bin" / "claude").chmod(0o755)
        mp.setenv("PATH", f"{scratch / 'bin'}{os.pathsep}{os.environ['PATH']}")
        mp.setenv("AUTORL_ROOT", str(site))
        mp.delenv("PRIME_RL_DIR", raising=False)
        mp.chdir(site)
        backend, real = FakeBackend(scripts_dir=scratch), LLMTrack.make_backend
        mp.setattr(
            LLMTrack, "make_backend", lambda self, name: backend if name == "embedded" else real(self, name)
        )
        yield


@pytest.fixture
def prepared(tmp_path: Path) -> Path:
    """A root with the shipped configs (and the docs' ones, and my.toml: docs/classic.md's copy of
    classic.toml), prepared by the real `prepare.py` (machine file, the tiny model)."""
    site = tmp_path / "site"
    site.mkdir()
    for name in ("train.toml", "classic.toml", "eval.toml"):
        shutil.copyfile(ROOT / name, site / name)
    shutil.copyfile(ROOT / "classic.toml", site / "my.toml")
    (site / "docs").mkdir()
    for config in (ROOT / "docs").glob("*.toml"):
        shutil.copyfile(config, site / "docs" / config.name)
    with at(site, tmp_path):
        assert prepare.main([]) == 0
    return site


def run_command(line: str) -> tuple[int, bool]:
    """Run one shown command through its real entry point, in the current root: (its exit code, whether it
    was a trial)."""
    words = shlex.split(re.sub(rf"^uv run {UV_FLAGS}", "uv run ", line))
    target, args = words[2], words[3:]
    if target == "run.py":
        opts = trial.parse_options(args)
        if opts.dry_run or opts.explain:
            return trial.main(args), False
        return trial.main([*_without_budget(args), "--budget", TINY_BUDGET[opts.track]]), True
    if target == "autorl":
        return cli.main(args), False
    if target == "prepare.py":
        return prepare.main(args), False
    # A script: a measurement of minutes, not run; test_a_shown_command_is_accepted checks its flags
    return 0, False


def _without_budget(args: list[str]) -> list[str]:
    cut = [i for i, a in enumerate(args) if a == "--budget"]
    return [a for i, a in enumerate(args) if not any(i in (k, k + 1) for k in cut)]


# Its classic trials load both cores for a minute or two: not beside the Ray tests' 10 s signal bounds.
@pytest.mark.xdist_group("ray")
def test_every_shown_command_runs(prepared, tmp_path, capsys):
    """The pages' commands, page after page and each page in its order, in one root: `prepared`, then what the
    commands before did to it (the README's first trials are what docs/agent.md's `autorl show` shows). A
    command runs once (shown again on a later page, it is not run again; `uv run --no-sync run.py` is `uv run
    run.py`); each exits 0, or is refused as REFUSED says; every trial records its row."""
    site = prepared
    ran: set[tuple[str, ...]] = set()
    rows = 0
    # One warm starter for the walk's classic trials (each trial's own context joins it): torch and gymnasium
    # imported once, not once per trial (autorl/engine/warm.py).
    with at(site, tmp_path), warm.starters():
        for page in PAGES:
            name = page.relative_to(ROOT).as_posix()
            for line in page_commands(page):
                command = tuple(shlex.split(re.sub(rf"^uv run {UV_FLAGS}", "uv run ", line)))
                if command in ran or line in PARSED_ONLY:
                    continue
                ran.add(command)
                code, a_trial = run_command(line)
                out, err = capsys.readouterr()
                printed = out + err
                why = f"{name}: `{line}` exit {code}:\n{printed[-2000:]}"
                if refusal := REFUSED.get(line) or REFUSED_IN_ORDER.get((name, line)):
                    assert code == 2 and refusal in printed, why
                    continue
                assert code == 0, why
                if a_trial:  # its row is in the ledger
                    rows += 1
                    assert len(Ledger(site / "results.tsv").rows()) == rows, f"{name}: `{line}`"
    tracks = {r.track for r in Ledger(site / "results.tsv").rows()}
    assert rows >= 10 and tracks == {"llm", "classic"}  # the walk reached the trials of both tracks
