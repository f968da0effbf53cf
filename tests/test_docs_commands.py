"""Every concrete command the README, program.md and docs/ show is accepted by its parser, and is run.

A command is a line (in a code block or inline code) that starts with `uv run run.py`, `uv run autorl`,
`uv run prepare.py` or `uv run python scripts/X.py`; usage synopses (`[--flag]`, `A|B`, `...`, `<x>`,
upper-case placeholders such as KEY or CMD) are not commands. Each is parsed by the real parser (run.py's,
autorl's, prepare.py's; a script's flags must be in its own `--help`): a flag renamed or removed in the code,
or a value out of its range, fails here.

Then each page's commands run, in the page's order (the recorded sessions' pages excepted: they are the
record of a run), in a scratch root prepared by the real `prepare.py` (test_a_page_runs): run.py, autorl and
prepare.py through their real entry points. What a test machine cannot give them is replaced, and only
that: an LLM trial trains with the test-double backend (tests/fakes/fake_backend.py) instead of the tiny
model, every trial's budget is cut to a second or less (classic trials are real, PPO on CartPole), and
`claude` is a stand-in that ends the loop. A command that needs what this machine lacks (a prime-rl
checkout) must be refused the way docs/ say. The scripts are measurements of minutes: their flags are
checked against their --help, not run.
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

from autorl import cli, prepare, trial
from autorl.ledger import Ledger
from autorl.llm.track import LLMTrack

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "program.md", *sorted((ROOT / "docs").glob("*.md"))]
# The recorded sessions' pages: their commands are parsed; running them is the session (an hour, 30 trials).
SESSIONS = sorted((ROOT / "docs" / "sessions").glob("*/README.md"))
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


@pytest.mark.parametrize(("page", "line"), commands())
def test_a_shown_command_is_accepted(page, line):
    try:
        parse(line)
    except SystemExit as exc:
        pytest.fail(f"{page}: `{line}` is refused by its parser (exit {exc.code})")


# ---------------------------------------------------------------------------------------------- run

TINY_BUDGET = {"llm": "0.3", "classic": "1"}  # seconds of training per seed in a run command's trial
# What a command does on a machine without prime-rl: refused, exit 2, with the message prepare gives.
REFUSED = {
    "uv run prepare.py --prime-rl /path/to/prime-rl": "--prime-rl /path/to/prime-rl: not a usable prime-rl",
    "uv run run.py --backend prime-rl": "prime-rl not found",
}
# Refused in the page's order for a reason the page gives: program.md confirms "after every 3 keeps"; the
# commands it shows keep none on the classic track, which its latest trials ran on.
REFUSED_IN_ORDER = {("program.md", "uv run autorl confirm"): "nothing kept yet under the latest trial's"}
# A stand-in for the agent CLI the README's loop names: it ends the loop (what the loop does with a real
# agent is tests/test_loop.py's).
FAKE_AGENT = "#!/bin/sh\ntouch STOP\n"


# Pages that show commands on a research session under way (nothing to show before a trial): they start from
# a root where program.md's LLM baseline ran and was kept.
IN_PROGRESS = {"docs/agent.md", "docs/faults.md"}


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


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with the shipped configs (and the docs' ones, and my.toml: docs/classic.md's copy of
    classic.toml), prepared by the real `prepare.py` (machine file, the tiny model)."""
    site = tmp_path_factory.mktemp("prepared")
    for name in ("train.toml", "classic.toml", "eval.toml"):
        shutil.copyfile(ROOT / name, site / name)
    shutil.copyfile(ROOT / "classic.toml", site / "my.toml")
    (site / "docs").mkdir()
    for config in (ROOT / "docs").glob("*.toml"):
        shutil.copyfile(config, site / "docs" / config.name)
    with at(site, tmp_path_factory.mktemp("scratch")):
        assert prepare.main([]) == 0
    return site


@pytest.fixture(scope="module")
def in_progress(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`prepared`, then program.md's LLM baseline (test-double backend), kept."""
    site = tmp_path_factory.mktemp("in-progress") / "site"
    shutil.copytree(prepared, site)
    with at(site, tmp_path_factory.mktemp("scratch")):
        assert trial.main(["--description", "baseline", "--budget", TINY_BUDGET["llm"]]) == 0
        assert cli.main(["mark", "keep", "--lesson", "baseline"]) == 0
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
    parse(line)  # a script: a measurement of minutes, its flags checked against its --help
    return 0, False


def _without_budget(args: list[str]) -> list[str]:
    cut = [i for i, a in enumerate(args) if a == "--budget"]
    return [a for i, a in enumerate(args) if not any(i in (k, k + 1) for k in cut)]


@pytest.mark.parametrize("page", [p for p in PAGES if page_commands(p)], ids=lambda p: p.name)
def test_a_page_runs(page, request, tmp_path, capsys):
    """The page's commands, in its order, in a fresh copy of the prepared root: each exits 0, or is refused
    as REFUSED says; every trial records its row."""
    name = page.relative_to(ROOT).as_posix()
    site = tmp_path / "site"
    shutil.copytree(request.getfixturevalue("in_progress" if name in IN_PROGRESS else "prepared"), site)
    rows = len(Ledger(site / "results.tsv").rows()) if (site / "results.tsv").exists() else 0
    with at(site, tmp_path):
        for line in page_commands(page):
            code, a_trial = run_command(line)
            out, err = capsys.readouterr()
            printed = out + err
            refusal = REFUSED.get(line) or REFUSED_IN_ORDER.get((name, line))
            if refusal:
                assert code == 2 and refusal in printed, f"`{line}` exit {code}:\n{printed[-2000:]}"
                continue
            assert code == 0, f"`{line}` exit {code}:\n{printed[-2000:]}"
            if a_trial:  # its row is in the ledger
                rows += 1
                assert len(Ledger(site / "results.tsv").rows()) == rows, line
