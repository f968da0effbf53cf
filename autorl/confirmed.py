"""confirmed.tsv, next to results.tsv: one row per `autorl confirm`, appended, never rewritten.

`autorl confirm` writes it; `autorl status` and `autorl report` read it (which keeps held on the test split).
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
    "confirm_id",  # runs/<confirm_id>/{candidate,baseline}/seed-<k>/
    "run_id",  # the kept trial confirmed
    "baseline_run",
    "track",
    "budget",
    "seeds",  # the fresh training seeds (the same for both sides)
    "test_score",  # the candidate's config on the test split, pooled over the seeds
    "baseline_test_score",
    "delta",  # test_score - baseline_test_score
    "ci_low",  # 90% interval of the delta (its low end: the one-sided 95% lower bound the verdict tests)
    "ci_high",
    "p_value",  # one-sided, candidate better than the baseline
    "verdict",  # improved (confirmed) | inconclusive | worse | n/a (a side failed)
    "eval_delta",  # the same two trials' eval_score difference in results.tsv: what the agent saw
    "status",  # ok | crash | timeout | interrupted: the worst seed's
]


def confirmed_file(ledger: Ledger) -> Path:
    return ledger.path.with_name("confirmed.tsv")


def read_confirmed(path: Path) -> list[dict[str, str]]:
    """The rows of confirmed.tsv ([] when there is none yet)."""
    try:
        lines = inputs.read_text(path, inputs.MAX_LEDGER_BYTES).splitlines()
    except FileNotFoundError:
        return []
    except inputs.InputError as e:
        raise LedgerError(f"{e}; move the file aside") from None
    if not lines or lines[0].split("\t") != COLUMNS:
        raise LedgerError(f"{path}:1: not the autorl confirmed.tsv header; move the file aside")
    return [dict(zip(COLUMNS, line.split("\t"), strict=False)) for line in lines[1:] if line.strip()]


def append_confirmed(path: Path, row: dict[str, Any]) -> None:
    """Append one row (one write on an O_APPEND descriptor, the header first on a new file)."""
    read_confirmed(path)  # never append to a file we cannot read back
    line = "\t".join(clean(format_cell(c, row.get(c))) for c in COLUMNS) + "\n"
    new = not path.exists() or path.stat().st_size == 0
    data = (("\t".join(COLUMNS) + "\n") if new else "") + line
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data.encode("utf-8"))
    finally:
        os.close(fd)
