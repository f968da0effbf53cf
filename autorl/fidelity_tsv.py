"""fidelity.tsv, next to results.tsv: one row per config an `autorl fidelity` run re-trained, appended.

`autorl fidelity` writes it (autorl/fidelity.py); `autorl status` and `autorl report` read it (whether the
context's keeps hold at a longer budget).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from autorl import inputs
from autorl.ledger import Ledger, LedgerError
from autorl.row import clean, format_cell

COLUMNS = [
    "timestamp",
    "fidelity_id",  # runs/<fidelity_id>/
    "run_id",  # the trial whose config was re-trained
    "role",  # baseline | kept | discarded
    "track",
    "eval_hash",
    "harness_hash",
    "short_budget",  # the context's budget (the trial's)
    "long_budget",
    "short_score",  # the trial's eval_score
    "long_score",  # its config's eval_score at long_budget, pooled over the seeds
    "long_ci_low",  # 95% bootstrap interval of long_score
    "long_ci_high",
    "seeds",  # the fresh seeds (the same for every config)
    "delta",  # kept configs: long_score - the baseline's, on the examples both scored
    "delta_ci_low",  # its 90% interval (the one the one-sided test matches)
    "delta_ci_high",
    "p_value",
    "holds",  # kept configs: holds (improved) | does not hold (worse) | inconclusive
]


def fidelity_file(ledger: Ledger) -> Path:
    return ledger.path.with_name("fidelity.tsv")


def read_fidelity(path: Path) -> list[dict[str, str]]:
    """fidelity.tsv's rows ([] before the first fidelity run)."""
    try:
        lines = inputs.read_text(path, inputs.MAX_LEDGER_BYTES).splitlines()
    except FileNotFoundError:
        return []
    if not lines or lines[0].split("\t") != COLUMNS:
        raise LedgerError(f"{path}:1: not the autorl fidelity.tsv header; move the file aside")  # exit 2
    return [dict(zip(COLUMNS, line.split("\t"), strict=False)) for line in lines[1:] if line.strip()]


def append_fidelity(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append the rows (one write on an O_APPEND descriptor, the header first on a new file)."""
    read_fidelity(path)  # never append to a file we cannot read back
    text = "".join("\t".join(clean(format_cell(c, r.get(c))) for c in COLUMNS) + "\n" for r in rows)
    new = not path.exists() or path.stat().st_size == 0
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, ((("\t".join(COLUMNS) + "\n") if new else "") + text).encode("utf-8"))
    finally:
        os.close(fd)
