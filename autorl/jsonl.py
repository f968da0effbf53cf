"""One reader for the JSON-lines files of a run (eval rows, metrics, prime-rl's logs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, in order; [] when the file is missing.

    Blank lines and lines that are not a JSON object are skipped: the last line of a file whose writer was
    killed mid-write is cut short, and everything before it is still good.
    """
    path = Path(path)
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows
