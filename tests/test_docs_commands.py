"""Every concrete command the README, program.md and docs/ show is accepted by the parser it runs through.

A command is a line (in a code block or inline code) that starts with `uv run run.py`, `uv run autorl`,
`uv run prepare.py` or `uv run python scripts/X.py`; usage synopses (`[--flag]`, `A|B`, `...`, `<x>`,
upper-case placeholders such as KEY or CMD) are not commands. Each is parsed by the real parser (run.py's,
autorl's, prepare.py's; a script's flags must be in its own `--help`): a flag renamed or removed in the
code, or a value out of its range, fails here.
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from autorl import cli, prepare, trial

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "program.md", *sorted((ROOT / "docs").glob("*.md"))]
UV_FLAGS = r"(?:--no-sync |--extra \w+ )*"  # uv run's own flags before the command
START = re.compile(rf"uv run {UV_FLAGS}(?:run\.py|autorl|prepare\.py|python scripts/\w+\.py)\b")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_:]*$")


def commands() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text()
        candidates = re.findall(r"`([^`\n]+)`", text)  # inline code
        for block in re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S):  # code blocks, line by line
            candidates += block.splitlines()
        for line in candidates:
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
            if any(PLACEHOLDER.match(w) for w in words):
                continue
            found.append((page.relative_to(ROOT).as_posix(), line))
    return sorted(set(found))


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
