"""The append-only tables next to results.tsv: confirmed.tsv (`autorl confirm`, one row per confirmation)
and fidelity.tsv (`autorl fidelity`, one row per re-trained config). Each has a fixed header; rows are
appended in one write on an O_APPEND descriptor, under the ledger's lock, and never rewritten, except once:
a file with an earlier version's header is read as it is (its missing cells empty) and upgraded to the
current header, every row kept, by the next append (one atomic replace). A file whose header is neither is
refused (exit 2: move it aside). `autorl status` and `autorl report` read both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.io import atomic, inputs
from autorl.record.ledger import Ledger, LedgerError
from autorl.record.row import clean, format_cell


@dataclass(frozen=True)
class SideTable:
    """One append-only TSV beside results.tsv: its file name and its columns."""

    name: str
    columns: list[str]
    earlier: tuple[list[str], ...] = ()  # the headers of earlier versions: read, upgraded on the next append

    def beside(self, ledger: Ledger) -> Path:
        """The table's file next to the ledger's."""
        return ledger.path.with_name(self.name)

    def read(self, path: Path) -> list[dict[str, str]]:
        """The rows, each with every current column ([] when there is no file yet)."""
        return self._parse(path)[1]

    def _parse(self, path: Path) -> tuple[list[str] | None, list[dict[str, str]]]:
        """(the header as found, None for no file or an empty one; the rows)."""
        try:
            lines = inputs.read_text(path, inputs.MAX_LEDGER_BYTES).splitlines()
        except FileNotFoundError:
            return None, []
        except inputs.InputError as e:
            raise LedgerError(f"{e}; move the file aside") from None
        if not lines:
            return None, []
        header = lines[0].split("\t")
        if header != self.columns and header not in self.earlier:
            raise LedgerError(f"{path}:1: not the autorl {self.name} header; move the file aside")
        blank = dict.fromkeys(self.columns, "")
        return header, [
            blank | dict(zip(header, line.split("\t"), strict=False)) for line in lines[1:] if line.strip()
        ]

    def _lines(self, rows: list[dict[str, Any]]) -> str:
        return "".join("\t".join(clean(format_cell(c, r.get(c))) for c in self.columns) + "\n" for r in rows)

    def append(self, ledger: Ledger, rows: list[dict[str, Any]]) -> None:
        """Append the rows beside `ledger` in one write (the header first on a new file), under its lock;
        never to a file it cannot read; a file of an earlier version is upgraded first."""
        path = self.beside(ledger)
        with ledger.locked():
            header, old = self._parse(path)
            head = "\t".join(self.columns) + "\n"
            if header is not None and header != self.columns:
                atomic.write_text(path, head + self._lines(old))
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, ((head if header is None else "") + self._lines(rows)).encode("utf-8"))
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
    "status",  # ok | crash | timeout | interrupted | contended: the worst seed's (contended: a side trained
    # beside other work; never a confirmation)
    "power",  # of `seeds` a side for the low end of the eval delta's 90% interval (what it was sized for)
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

CONFIRMED = SideTable("confirmed.tsv", CONFIRMED_COLUMNS, earlier=(CONFIRMED_COLUMNS[:-1],))  # before power
FIDELITY = SideTable("fidelity.tsv", FIDELITY_COLUMNS)


def seeds_a_side(confirm: Mapping[str, str]) -> int:
    """A confirmed.tsv row's fresh seeds a side (both sides train the same ones)."""
    return len([s for s in confirm["seeds"].split(",") if s.strip()])


def strongest(confirms: list[dict[str, str]]) -> dict[str, str]:
    """Of confirmed.tsv's rows of one keep, the one with the most seeds a side (the power they buy), the
    latest of equals: a smaller confirm run after it repeats its test with less, and never replaces it."""
    return max(enumerate(confirms), key=lambda ic: (seeds_a_side(ic[1]), ic[0]))[1]
