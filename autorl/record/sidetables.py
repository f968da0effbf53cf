"""The append-only tables next to results.tsv: confirmed.tsv (`autorl confirm`, one row per confirmation)
and fidelity.tsv (`autorl fidelity`, one row per re-trained config). Each has a fixed header; a row is
appended in one write on an O_APPEND descriptor and never rewritten; a file whose header is not its own is
refused (exit 2: move it aside). `autorl status` and `autorl report` read both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.io import inputs
from autorl.record.ledger import Ledger, LedgerError
from autorl.record.row import clean, format_cell


@dataclass(frozen=True)
class SideTable:
    """One append-only TSV beside results.tsv: its file name and its columns."""

    name: str
    columns: list[str]

    def beside(self, ledger: Ledger) -> Path:
        """The table's file next to the ledger's."""
        return ledger.path.with_name(self.name)

    def read(self, path: Path) -> list[dict[str, str]]:
        """The rows ([] when there is no file yet)."""
        try:
            lines = inputs.read_text(path, inputs.MAX_LEDGER_BYTES).splitlines()
        except FileNotFoundError:
            return []
        except inputs.InputError as e:
            raise LedgerError(f"{e}; move the file aside") from None
        if not lines or lines[0].split("\t") != self.columns:
            raise LedgerError(f"{path}:1: not the autorl {self.name} header; move the file aside")
        return [dict(zip(self.columns, line.split("\t"), strict=False)) for line in lines[1:] if line.strip()]

    def append(self, path: Path, rows: list[dict[str, Any]]) -> None:
        """Append the rows in one write (the header first on a new file); never to a file it cannot read."""
        self.read(path)
        text = "".join("\t".join(clean(format_cell(c, r.get(c))) for c in self.columns) + "\n" for r in rows)
        new = not path.exists() or path.stat().st_size == 0
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, ((("\t".join(self.columns) + "\n") if new else "") + text).encode("utf-8"))
        finally:
            os.close(fd)


CONFIRMED_COLUMNS = [
    "timestamp",
    "confirm_id",  # runs/<confirm_id>/{candidate,baseline}/seed-<k>/
    "run_id",  # the kept trial confirmed
    "baseline_run",
    "track",
    "budget",  # training seconds per seed: the trial's, or longer (confirm --factor, --budget)
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

FIDELITY_COLUMNS = [
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

CONFIRMED = SideTable("confirmed.tsv", CONFIRMED_COLUMNS)
FIDELITY = SideTable("fidelity.tsv", FIDELITY_COLUMNS)
