"""results.tsv: one row per trial, appended atomically under a lock, never rewritten behind the user's back.

Writers (run.py, `autorl mark`, several trials on one machine) take an exclusive `fcntl.flock` on a
sidecar file `results.tsv.lock`. An append is one `os.write` of the whole line on an `O_APPEND`
descriptor, so even a reader that ignores the lock never sees half a row. `mark` rewrites the file
under the same lock through a temporary file and `os.replace`, so a crash mid-mark leaves the old file.

A malformed file (not UTF-8 text, wrong header, ragged row, missing final newline) raises `LedgerError`
naming the file, the line, the problem and how to repair it; `Ledger.check()` runs that check alone (before a
trial trains). The ledger never truncates or "repairs" it; the caller saves its row in runs/<id>/result.json,
and `append_saved` (`autorl ledger append runs/<id>/result.json`) appends that row once the file is fixed.

Every `mark` is also appended to `results-marks.jsonl` (never rewritten): changing a decision that is not
`pending` needs a reason, and the history says when the reference changed. Trials are comparable only under
the same track, eval set, harness and budget (autorl.record.context); a reference's eval.jsonl is checked
against the hash its row recorded before it is compared with (`reference_rows`). The row itself, its columns
and its cells: autorl/record/row.py.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autorl.io import atomic, inputs, paths
from autorl.io.jsonl import eval_rows_problem, read_jsonl
from autorl.record.context import ResearchContext, best_kept, same_config
from autorl.record.row import (
    AGENT_VAR,
    COLUMNS,
    LEGACY_COLUMNS,
    MARKABLE,
    LedgerRow,
    clean,
    format_cell,
    format_pairs,
    row_problem,
)


class LedgerError(Exception):
    """results.tsv is malformed or a lookup/mark request cannot be satisfied."""


REPAIR = (
    "fix that line by hand, move the file aside (`mv results.tsv results.tsv.bad`), or run "
    "`uv run autorl ledger repair` (keeps a backup; moves the rows it cannot use to results-rejected.tsv)"
)


class Ledger:
    """results.tsv at `path` (default: the repo's results.tsv)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else paths.results_file()
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.history_path = self.path.with_name(self.path.stem + "-marks.jsonl")  # every mark, append-only

    # -- locking -------------------------------------------------------------------------------------
    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive lock shared by every writer (a sidecar file, so os.replace never swaps the lock)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise LedgerError(
                f"{self.lock_path}: cannot open the lock file: {e.strerror or e} (it must be a plain file; "
                "remove it if nothing is writing results.tsv)"
            ) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise LedgerError(
                    f"{self.lock_path}: the lock file is not a regular file; remove it (`rm "
                    f"{self.lock_path}`) if nothing is writing results.tsv"
                )
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- reading -------------------------------------------------------------------------------------
    def _read(self) -> list[dict[str, str]]:
        """The whole file's cells by column, checked; raise LedgerError on anything malformed."""
        return self._parse()[1]

    def _raw(self) -> bytes:
        """The file's bytes (b"" when missing), read by the one safe reader."""
        try:
            return inputs.read_bytes(self.path, inputs.MAX_LEDGER_BYTES)
        except FileNotFoundError:
            return b""
        except OSError as e:
            raise LedgerError(f"{self.path}: cannot read: {e.strerror or e}") from None
        except inputs.InputError as e:
            raise LedgerError(f"{e}; move it aside") from None

    def _parse(self) -> tuple[list[str] | None, list[dict[str, str]]]:
        """(header as found, rows); (None, []) for a missing or empty file."""
        raw = self._raw()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            n = raw[: e.start].count(b"\n") + 1
            raise LedgerError(
                f"{self.path}:{n}: not UTF-8 text (a binary or corrupted file); {REPAIR}"
            ) from None
        if not text:
            return None, []
        if not text.endswith("\n"):
            n = text.count("\n") + 1
            raise LedgerError(f"{self.path}:{n}: last line has no newline (a truncated row?); {REPAIR}")
        lines = text.split("\n")[:-1]
        self._check_characters(lines)
        header = lines[0].split("\t")
        if header in LEGACY_COLUMNS:
            return header, self._rows(lines, header)
        if header != COLUMNS:
            missing = [c for c in COLUMNS if c not in header]
            extra = [c for c in header if c not in COLUMNS]
            detail = []
            if missing:
                detail.append(f"missing columns {missing}")
            if extra:
                detail.append(f"unknown columns {extra}")
            if not detail:
                detail.append("columns in the wrong order")
            raise LedgerError(
                f"{self.path}:1: header is not the autorl results.tsv header ({'; '.join(detail)}); "
                "move the file aside (the ledger never rewrites it)"
            )
        return header, self._rows(lines, header)

    def _rows(self, lines: list[str], header: list[str]) -> list[dict[str, str]]:
        rows: list[dict[str, str]] = []
        seen: set[str] = set()
        for lineno, line in enumerate(lines[1:], start=2):
            if not line.strip():
                raise LedgerError(f"{self.path}:{lineno}: empty line; {REPAIR}")
            cells = line.split("\t")
            if len(cells) != len(header):
                raise LedgerError(
                    f"{self.path}:{lineno}: row has {len(cells)} fields, the header has {len(header)}; "
                    f"{REPAIR}"
                )
            row = dict.fromkeys(COLUMNS, "")
            row.update(zip(header, cells, strict=True))
            if problem := row_problem(row, seen):
                raise LedgerError(f"{self.path}:{lineno}: {problem}; {REPAIR}")
            seen.add(row["run_id"])
            rows.append(row)
        return rows

    def _check_characters(self, lines: list[str]) -> None:
        """No line may hold a NUL byte or a carriage return (CRLF line ends): naming line and column."""
        for lineno, line in enumerate(lines, start=1):
            for char, what in (("\0", "a NUL byte"), ("\r", "a carriage return (CRLF line ends?)")):
                if (col := line.find(char)) >= 0:
                    raise LedgerError(f"{self.path}:{lineno}:{col + 1}: {what}; {REPAIR}")

    def _rows_to_append_to(self) -> list[dict[str, str]]:
        """Under the lock, before an append: the rows (never append to a file we cannot parse), with an
        earlier version's header upgraded first, every row kept (also a file holding only that header)."""
        header, rows = self._parse()
        if header is not None and header != COLUMNS:
            self._replace(rows)
        return rows

    def rows(self) -> list[LedgerRow]:
        """All rows in file order."""
        return [LedgerRow.read(cells) for cells in self._read()]

    def check(self) -> None:
        """Raise LedgerError (file:line, the problem, how to repair) if results.tsv cannot be appended to:
        malformed, its lock unusable, or the file or its directory not writable (checked before a trial
        trains, so a trial that trained can record its row)."""
        with self.locked():
            self._read()
        target = self.path if self.path.exists() else self.path.parent
        if not os.access(target, os.W_OK):
            raise LedgerError(f"{target}: not writable: a trial could not record its row")

    # -- writing -------------------------------------------------------------------------------------
    def format_row(self, row: Mapping[str, Any]) -> str:
        """The TSV line for `row`. Unknown keys are added to `extras` as key=value, nothing is dropped."""
        values: dict[str, Any] = {c: row.get(c) for c in COLUMNS}
        extras = format_cell("extras", row.get("extras"))
        unknown = {k: v for k, v in row.items() if k not in COLUMNS}
        if unknown:
            extras = " ".join(x for x in (extras, format_pairs(unknown)) if x)
        values["extras"] = extras
        if values["timestamp"] is None:
            values["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        if values["decision"] is None:
            values["decision"] = "pending"
        return "\t".join(format_cell(c, values[c]) for c in COLUMNS) + "\n"

    def append(self, row: Mapping[str, Any]) -> None:
        """Append one row (creating the file with its header). Raises LedgerError if the file is malformed."""
        with self.locked():
            self._append_row(row)

    def _append_row(self, row: Mapping[str, Any]) -> None:
        """Under the lock: check the file and the row's values (`row_problem`), then append it."""
        rows = self._rows_to_append_to()
        line = self.format_row(row)
        cells = dict(zip(COLUMNS, line.rstrip("\n").split("\t"), strict=True))
        if problem := row_problem(cells, {r["run_id"] for r in rows}):
            raise LedgerError(f"{self.path}: the row of run {cells['run_id']} was not appended: {problem}")
        self._append(line)

    def _append(self, line: str) -> None:
        """Write one line (the header first on a new file); the caller holds the lock, the file is checked.

        A write that fails part way (disk full) is cut back to the file's previous size: no half row."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise LedgerError(f"{self.path}: cannot write: {e.strerror or e}") from None
        try:
            size = os.fstat(fd).st_size
            data = (line if size else "\t".join(COLUMNS) + "\n" + line).encode("utf-8")
            written = 0
            while written < len(data):  # regular files write everything in one call; be safe anyway
                written += os.write(fd, data[written:])
            os.fsync(fd)
        except OSError as e:
            with suppress(OSError):
                os.ftruncate(fd, size)
            raise LedgerError(f"{self.path}: cannot write: {e.strerror or e}") from None
        finally:
            os.close(fd)

    def append_saved(self, result_json: Path) -> LedgerRow:
        """Append the row a trial saved in runs/<id>/result.json (when writing results.tsv failed).

        Refuses a row whose keys are not this ledger's columns and a run id already recorded.
        """
        try:
            row = inputs.read_json(Path(result_json))
        except OSError as e:
            raise LedgerError(f"{result_json}: cannot read: {e.strerror or e}") from None
        except inputs.InputError as e:
            raise LedgerError(f"{e} (not a readable result.json)") from None
        if not isinstance(row, dict) or set(row) != set(COLUMNS):
            keys = set(row) if isinstance(row, dict) else set()
            raise LedgerError(
                f"{result_json}: not a row of this results.tsv header "
                f"(missing {sorted(set(COLUMNS) - keys)}, unknown {sorted(keys - set(COLUMNS))})"
            )
        with self.locked():
            if any(r["run_id"] == row["run_id"] for r in self._read()):
                raise LedgerError(f"{self.path}: run {row['run_id']} is already recorded; nothing appended")
            self._append_row(row)
        return LedgerRow.from_json(row)

    def _replace(self, rows: list[dict[str, str]]) -> None:
        text = "\t".join(COLUMNS) + "\n" + "".join("\t".join(r[c] for c in COLUMNS) + "\n" for r in rows)
        try:
            atomic.write_text(self.path, text)
        except OSError as e:
            raise LedgerError(f"{self.path}: cannot write: {e.strerror or e}") from None

    def repair(self) -> list[str]:
        """`autorl ledger repair`: make a malformed results.tsv usable again, explicitly, losing nothing.

        CRLF line ends become LF and empty lines are dropped; every row that cannot be used (not UTF-8, a
        NUL byte or stray carriage return, the wrong number of fields, a value `row_problem` refuses, a
        second row of one run id) is moved to `results-rejected.tsv` as it was written. The original is kept
        as `results.tsv.bak-<time>`. Returns one line per change ([] when the file needed none); refuses a
        file whose header is not a results.tsv header (that is not a ledger to repair). No file, or an empty
        one, needs nothing (the first trial writes the header).
        """
        with self.locked():
            raw = self._raw()
            if not raw:
                return []
            lines = raw.split(b"\n")
            if lines and not lines[-1]:
                lines.pop()
            header = lines[0].rstrip(b"\r").decode("utf-8", "replace").split("\t") if lines else []
            if header != COLUMNS and header not in LEGACY_COLUMNS:
                raise LedgerError(
                    f"{self.path}:1: not a results.tsv header: nothing to repair; move it aside"
                )
            rows: list[dict[str, str]] = []
            rejected: list[bytes] = []
            done = ["line 1: CRLF line end made LF"] if lines[0].endswith(b"\r") else []
            for lineno, line in enumerate(lines[1:], start=2):
                row, why = self._repair_line(line, header, {r["run_id"] for r in rows})
                if row is not None:
                    rows.append(row)
                elif line.strip():
                    rejected.append(line)
                if why:
                    done.append(f"line {lineno}: {why}")
            if done:
                self._save_repair(raw, rows, rejected)
            return done

    @staticmethod
    def _repair_line(
        line: bytes, header: list[str], seen: AbstractSet[str]
    ) -> tuple[dict[str, str] | None, str]:
        """(the row, what was changed) or (None, why it is moved to results-rejected.tsv)."""
        if not line.strip():
            return None, "empty line dropped"
        fixed = line[:-1] if line.endswith(b"\r") else line
        note = "CRLF line end made LF" if fixed is not line else ""
        try:
            text = fixed.decode("utf-8")
        except UnicodeDecodeError:
            return None, "not UTF-8: moved to results-rejected.tsv"
        if "\0" in text or "\r" in text:
            return None, "a NUL byte or carriage return inside the row: moved to results-rejected.tsv"
        cells = text.split("\t")
        if len(cells) != len(header):
            return None, f"{len(cells)} fields, the header has {len(header)}: moved to results-rejected.tsv"
        row = dict.fromkeys(COLUMNS, "")
        row.update(zip(header, cells, strict=True))
        if problem := row_problem(row, seen):
            return None, f"{problem}: moved to results-rejected.tsv"
        return row, note

    def _save_repair(self, original: bytes, rows: list[dict[str, str]], rejected: list[bytes]) -> None:
        """Under the lock: the backup first, then the rejected rows, then the repaired file."""
        backup = self.path.with_name(f"{self.path.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}")
        rejected_path = self.path.with_name(self.path.stem + "-rejected.tsv")
        try:
            atomic.write_bytes(backup, original)
            if rejected:
                old = (
                    inputs.read_bytes(rejected_path, inputs.MAX_LEDGER_BYTES)
                    if rejected_path.exists()
                    else b""
                )
                atomic.write_bytes(rejected_path, old + b"".join(r + b"\n" for r in rejected))
        except (OSError, inputs.InputError) as e:
            raise LedgerError(f"cannot repair {self.path}: {e}; nothing changed") from None
        self._replace(rows)

    def find(self, run_id: str | None = None) -> LedgerRow:
        """The row of `run_id` (exact, or a unique prefix); the latest row when run_id is None."""
        rows = self.rows()
        return rows[self._find(rows, run_id)]

    def _find(self, rows: list[LedgerRow], run_id: str | None) -> int:
        """The index of the row `find` means."""
        if not rows:
            raise LedgerError(f"{self.path}: no trials recorded yet")
        if run_id is None:  # the latest trial; in a swarm (AUTORL_AGENT set), this agent's latest
            me = os.environ.get(AGENT_VAR, "")
            mine = [i for i, r in enumerate(rows) if not me or r.agent == me]
            if not mine:
                raise LedgerError(f"{self.path}: no trial of {AGENT_VAR}={me} recorded yet")
            return mine[-1]
        exact = [i for i, r in enumerate(rows) if r.run_id == run_id]
        matches = exact or [i for i, r in enumerate(rows) if r.run_id.startswith(run_id)]
        if not matches:
            raise LedgerError(f"{self.path}: no trial with run id {run_id!r}")
        if len({rows[i].run_id for i in matches}) > 1:
            raise LedgerError(f"{self.path}: run id {run_id!r} is ambiguous ({len(matches)} trials match)")
        return matches[-1]

    def mark(
        self, decision: str, run_id: str | None = None, lesson: str | None = None, reason: str | None = None
    ) -> LedgerRow:
        """Set the decision (keep | discard | crash) and maybe the lesson of one trial (latest by default).

        A crashed or timed-out trial cannot be kept: there is no score to keep. The decision of a trial
        already decided (not `pending`) changes only with a `reason`: a re-mark can lower the reference, so it
        is never silent. Every mark is appended to the history file (`history_path`, see `history()`), which
        `autorl status` shows.
        """
        if decision not in MARKABLE:
            raise LedgerError(f"decision must be one of {', '.join(MARKABLE)}, not {decision!r}")
        reason = clean(reason) if reason is not None else ""
        with self.locked():
            cells = self._read()
            rows = [LedgerRow.read(c) for c in cells]
            index = self._find(rows, run_id)
            row = rows[index]
            if decision == "keep" and not row.scored:
                raise LedgerError(
                    f"trial {row.run_id} has status {row.status or '?'} and no score: mark it crash "
                    "or discard, not keep"
                )
            old = row.decision or "pending"
            if old != "pending" and decision != old and not reason:
                raise LedgerError(
                    f"trial {row.run_id} is already marked {old}: changing it to {decision} can change "
                    "the reference, so it needs --reason TEXT (recorded in "
                    f"{self.history_path.name}, shown by `autorl status`); nothing changed"
                )
            context = ResearchContext.of(row)
            before = best_kept(rows, context)
            new_lesson = clean(lesson) if lesson is not None else row.lesson
            rows[index] = dataclasses.replace(row, decision=decision, lesson=new_lesson)
            # the other cells are rewritten as they were read
            cells[index] = {**cells[index], "decision": decision, "lesson": new_lesson}
            after = best_kept(rows, context)
            self._replace(cells)
            mark = Mark(
                timestamp=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                run_id=row.run_id,
                old=old,
                new=decision,
                reason=reason,
                reference_before=before.run_id if before else "",
                reference_after=after.run_id if after else "",
            )
            self._append_history(mark)
        return rows[index]

    def _append_history(self, mark: Mark) -> None:
        line = (json.dumps(dataclasses.asdict(mark)) + "\n").encode("utf-8")
        try:
            fd = os.open(self.history_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            raise LedgerError(f"{self.history_path}: cannot write: {e.strerror or e}") from None

    def history(self) -> list[Mark]:
        """Every mark ever made, oldest first (the append-only history file)."""
        fields = {f.name for f in dataclasses.fields(Mark)}
        return [
            Mark(**{k: str(v) for k, v in entry.items() if k in fields})
            for entry in read_jsonl(self.history_path)
            if fields <= set(entry)
        ]

    # -- lookups -------------------------------------------------------------------------------------
    def best_kept(self, context: ResearchContext) -> LedgerRow | None:
        return best_kept(self.rows(), context)


@dataclass(frozen=True)
class Mark:
    """One `autorl mark`, as the history file keeps it."""

    timestamp: str
    run_id: str
    old: str  # the decision before (pending for a first mark)
    new: str
    reason: str  # required when `old` is not pending
    reference_before: str  # the reference of the trial's context before and after the mark
    reference_after: str

    @property
    def is_remark(self) -> bool:
        """A decided trial given another decision (a first mark or a lesson update is not one)."""
        return self.old != "pending" and self.old != self.new


def eval_rows_hash(text: str) -> str:
    """The `eval_rows_hash` of a runs/<id>/eval.jsonl text: sha256, first 16 hex digits."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def reference_rows(reference: LedgerRow, runs_dir: Path) -> list[dict[str, Any]]:
    """The eval rows of `reference`, once its eval.jsonl is checked against the hash its ledger row recorded.

    Raises LedgerError (with the reason) when the file is missing, changed since the trial wrote it, or the
    row recorded no hash: a comparison against rows that are not the reference's own would be meaningless.
    """
    run_id = reference.run_id
    path = runs_dir / run_id / "eval.jsonl"
    recorded = reference.eval_rows_hash
    why = f"the reference {run_id} cannot be used"
    recover = (
        f"\n  to recover: restore {path} from a backup of runs/ (trials compare against its rows), or take "
        f"the trial out of the comparison with\n    uv run autorl mark discard --run {run_id} --reason "
        f'"eval.jsonl lost"\n  then the next trial is compared with the next best kept trial of this context '
        "(with none left, it starts a new baseline: re-run the baseline config, as program.md says)"
    )
    if not recorded:
        raise LedgerError(
            f"{why}: its results.tsv row records no eval_rows_hash to check {path} against{recover}"
        )
    try:
        text = inputs.read_text(path, inputs.MAX_JSONL_BYTES)
    except FileNotFoundError:
        raise LedgerError(f"{why}: {path} is missing{recover}") from None
    except (OSError, inputs.InputError) as e:
        raise LedgerError(f"{why}: {path} is unreadable ({e}){recover}") from None
    if (actual := eval_rows_hash(text)) != recorded:
        raise LedgerError(
            f"{why}: {path} has changed since the trial wrote it (sha256 {actual}, results.tsv records "
            f"{recorded}){recover}"
        )
    rows = read_jsonl(path)
    if problem := eval_rows_problem(rows):
        raise LedgerError(f"{why}: {path}: {problem}{recover}")
    return rows


@dataclass(frozen=True)
class ReferenceEvidence:
    """The eval rows a candidate is compared with: the reference trial's and those of its config's other
    trials in the context (`same_config`), each seed's rows under a seed number no other trial's uses."""

    rows: list[dict[str, Any]]
    runs: tuple[str, ...]  # the reference first, then its config's other trials that were read
    seeds: int
    unread: tuple[str, ...] = ()  # same-config trials left out, each with why (their eval.jsonl's fault)

    def describe(self) -> str:
        """The summary's `reference_seeds` line."""
        text = f"{self.seeds} ({' + '.join(self.runs)})"
        return text + "".join(f"; left out {u}" for u in self.unread)


def reference_evidence(
    reference: LedgerRow, rows: list[LedgerRow], context: ResearchContext, runs_dir: Path
) -> ReferenceEvidence:
    """The reference's eval rows pooled with those of the other trials of its config in `context`. The
    reference's own must be readable (LedgerError as `reference_rows`); another trial's that cannot be read
    is left out and said."""
    pooled = reference_rows(reference, runs_dir)
    used = {r.get("seed", 0) for r in pooled}
    read, unread = [reference.run_id], []
    for other in same_config(rows, context, reference):
        try:
            more = reference_rows(other, runs_dir)
        except LedgerError as exc:
            unread.append(f"{other.run_id} ({str(exc).splitlines()[0]})")
            continue
        relabel = {}
        for seed in dict.fromkeys(r.get("seed", 0) for r in more):
            relabel[seed] = seed if seed not in used else max(used) + 1
            used.add(relabel[seed])
        pooled += [{**r, "seed": relabel[r.get("seed", 0)]} for r in more]
        read.append(other.run_id)
    return ReferenceEvidence(pooled, tuple(read), len(used), tuple(unread))
