"""One reader for the JSON-lines files of a run (eval rows, metrics, prime-rl's logs)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from autorl.io import inputs


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, in order; [] when the file is missing.

    Blank lines and lines that are not a JSON object are skipped: the last line of a file whose writer was
    killed mid-write is cut short, and everything before it is still good. A file that is not a regular file
    (a pipe, a device) counts as missing; one over `inputs.MAX_JSONL_BYTES` raises `inputs.InputError`.
    """
    path = Path(path)
    if not inputs.is_regular(path):
        return []
    rows = []
    text = inputs.read_bytes(path, inputs.MAX_JSONL_BYTES).decode("utf-8", errors="replace")
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):  # cut short, or nested beyond reason
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def eval_rows_problem(rows: list[dict[str, Any]]) -> str | None:
    """What is wrong with eval rows (`env`, `example_id`, a finite number `score`), naming the first bad
    row; None when every row is usable. Checked wherever eval rows are read: an eval's output, the
    base-eval cache, a reference's eval.jsonl."""
    for n, row in enumerate(rows, start=1):
        score = row.get("score")
        if "env" not in row or "example_id" not in row:
            return f"eval row {n} has no env or example_id"
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            return f"eval row {n}: score {score!r} is not a finite number"
    return None
