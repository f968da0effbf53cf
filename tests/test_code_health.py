"""Readable code: no function of the project above McCabe complexity 12 (ruff's C90 rule, configured in
pyproject.toml, run here so CI enforces it), and no function of run.py -> trial -> seed -> process ->
pool/ray_pool -> result -> ledger longer than a reader can hold at once (issue 29)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRIAL_PATH = [
    "run.py",
    "autorl/trial.py",
    "autorl/seed.py",
    "autorl/process.py",
    "autorl/pool.py",
    "autorl/ray_pool.py",
    "autorl/result.py",
    "autorl/ledger.py",
]
MAX_LINES = 80


def function_lengths(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every function and method in the file, nested ones included; a
    function's lines run from its `def` to its last line (decorators not counted)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node.name, node.lineno, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None
    ]


def test_function_lengths_are_measured_from_def_to_last_line(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    x = 1\n\n    return x\n\n\nclass C:\n    def g(self):\n        pass\n")
    assert sorted(function_lengths(source)) == [("f", 1, 4), ("g", 8, 2)]


def test_no_function_on_the_trial_path_is_over_80_lines():
    too_long = [
        f"{name} ({rel}:{line}): {length} lines"
        for rel in TRIAL_PATH
        for name, line, length in function_lengths(REPO / rel)
        if length > MAX_LINES
    ]
    assert too_long == [], f"split by responsibility (at most {MAX_LINES} lines each): {too_long}"


def test_no_function_is_above_complexity_12():
    """The lint rule of pyproject.toml ([tool.ruff.lint] C90, mccabe max-complexity 12), run by CI."""
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff), "check", "--select", "C90", "--output-format", "concise", "--no-cache", "."]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, f"split these by responsibility:\n{run.stdout}{run.stderr}"


def test_the_complexity_rule_finds_a_complex_function(tmp_path):
    """The check above can fail: ruff with the project's settings flags a function of complexity 13."""
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(13))
    (tmp_path / "m.py").write_text(f"def f(x):\n{branches}    return -1\n")
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff), "check", "--config", str(REPO / "pyproject.toml"), "--select", "C90", "--no-cache"]
    run = subprocess.run([*cmd, str(tmp_path / "m.py")], capture_output=True, text=True)
    assert run.returncode == 1 and "C901 `f` is too complex (14 > 12)" in run.stdout
