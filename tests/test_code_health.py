"""Readable code on the trial path: no function of run.py -> trial -> seed -> process -> pool/ray_pool ->
result -> ledger is longer than a reader can hold at once (issue 29)."""

from __future__ import annotations

import ast
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
