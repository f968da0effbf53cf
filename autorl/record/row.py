"""results.tsv's row: its columns and their types, the headers of earlier versions, how a cell is written
and read back, and the one check of a row's values.

`LedgerRow` is the row model: a trial builds one (autorl.engine.result), the ledger writes it and reads it
back into the same model (`LedgerRow.read`: numbers as numbers, pairs as dicts); the column list, which
columns hold numbers and the earlier headers all come from its fields. `as_float` reads a number from a cell
of the side tables (confirmed.tsv, fidelity.tsv), which keep their cells as strings.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

STATUSES = ("ok", "crash", "timeout", "interrupted")
DECISIONS = ("pending", "keep", "discard", "crash")
MARKABLE = ("keep", "discard", "crash")
HEADER_VERSION = 5  # the header written now; rows of versions 1 to 4 are read as they are
AGENT_VAR = "AUTORL_AGENT"  # who runs the trials of this process (`autorl swarm` names each agent): `agent`


def _since(version: int, default: Any = None, **kw: Any) -> Any:
    """A column added in header version `version` (files written before it lack it)."""
    return field(default=default, metadata={"since": version}, **kw)


@dataclass
class LedgerRow:
    """One trial, as results.tsv records it: `status` is how the run ended (written by run.py), `decision`
    the agent's call (written `pending`, set by `autorl mark`). Columns in file order."""

    timestamp: str | None = None  # ISO 8601, local time with offset (None: the time of the append)
    run_id: str = ""  # runs/<run_id>/
    commit: str = ""  # short git commit of the trial's config
    track: str = ""  # llm | classic
    backend: str = ""  # embedded | prime-rl | classic
    eval_score: float | None = None  # mean over eval envs of the per-env mean score (pooled over seeds)
    eval_ci_low: float | None = None  # 95% bootstrap CI of eval_score
    eval_ci_high: float | None = None
    base_score: float | None = None  # the untrained model on the same eval
    env_scores: Mapping[str, float] | None = None  # env=score pairs, space separated
    delta: float | None = None  # eval_score - reference eval_score, on the common eval examples
    p_value: float | None = None  # one-sided p for "candidate better than reference"
    verdict: str = ""  # improved | worse | inconclusive | baseline (no reference yet) | n/a (no score)
    reference_run: str = ""  # run_id of the trial compared against
    # who ran it: AUTORL_AGENT (`autorl swarm` names each agent; autorl/record/claims.py); empty: not said
    agent: str = _since(4, "")
    training_seconds: float | None = None
    startup_seconds: float | None = None
    eval_seconds: float | None = None
    # the trial's wall time in the runner: base eval, seeds, their evals, statistics
    total_seconds: float | None = _since(3)
    peak_memory_gb: float | None = None
    steps: int | None = None
    seeds: str = ""  # training seeds, comma separated (harness-chosen)
    seed_scores: Mapping[Any, float] | None = None  # seed=eval_score pairs (one per training seed)
    budget: float | None = _since(2)  # training seconds per seed; trials compare only under one budget
    seeds_planned: int | None = _since(2)  # --seeds (the early stop may have run fewer)
    parallel: int | None = _since(2)  # seeds that ran at once
    stopped_early: str = _since(2, "")  # why the trial stopped adding seeds (empty: it ran them all)
    # the summary's health flags, their names space separated (autorl.record.runview.health_flags); empty:
    # none raised, or a row written before 2026-12-02
    health: str = _since(5, "")
    status: str = ""  # ok | crash | timeout | interrupted
    decision: str | None = "pending"  # pending | keep | discard | crash
    config_hash: str = ""
    harness_hash: str = ""
    eval_hash: str = ""
    # sha256 of runs/<run_id>/eval.jsonl as written: a reference is checked against it
    eval_rows_hash: str = _since(2, "")
    description: str = ""
    lesson: str = ""
    extras: Mapping[str, Any] | None = None  # key=value pairs: everything else (e.g. solved_seeds=5/5)

    def as_dict(self) -> dict[str, Any]:
        """The row by column (values as typed; `Ledger.append` writes them, result.json keeps them)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def read(cls, cells: Mapping[str, str]) -> LedgerRow:
        """The row of results.tsv's cells (checked by `row_problem`): an empty cell, or `nan`, is None; pairs
        are dicts (numbers for env_scores and seed_scores, text for extras); a legacy empty decision is
        `pending`."""
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            cell = cells.get(f.name, "")
            kind = str(f.type)
            if kind == "float | None":
                values[f.name] = _number(cell)
            elif kind == "int | None":
                values[f.name] = None if (n := _number(cell)) is None else int(n)
            elif f.name == "extras":
                values[f.name] = parse_text_pairs(cell)
            elif kind.startswith("Mapping"):
                values[f.name] = parse_pairs(cell)
            else:
                values[f.name] = cell
        values["decision"] = values["decision"] or "pending"
        return cls(**values)

    @classmethod
    def from_json(cls, saved: Mapping[str, Any]) -> LedgerRow:
        """The row a trial saved in runs/<id>/result.json (`as_dict`), read as `read` reads results.tsv's:
        its cells, as the ledger would write them."""
        line = {f.name: format_cell(f.name, saved.get(f.name)) for f in dataclasses.fields(cls)}
        return cls.read(line)

    @property
    def seed_list(self) -> list[str]:
        """The training seeds, as recorded."""
        return [s.strip() for s in self.seeds.split(",") if s.strip()]

    def per_seed_scores(self) -> list[float]:
        """Per-training-seed eval_scores; a one-seed row without seed_scores gives [eval_score]."""
        if self.seed_scores:
            return list(self.seed_scores.values())
        if self.eval_score is not None and len(self.seed_list) <= 1:
            return [self.eval_score]
        return []

    @property
    def scored(self) -> bool:
        """An ok trial with an eval_score: one that can be compared, kept or plotted."""
        return self.status == "ok" and self.eval_score is not None

    @property
    def contended(self) -> bool:
        """Other work shared the machine's CPUs while its seeds trained (the `contended` health flag): at a
        wall-clock budget they trained less than a quiet machine gives, so its score and verdict may be the
        machine's. program.md: not measured (discard it and run the same commit again)."""
        return "contended" in self.health.split()

    @property
    def void(self) -> bool:
        """A trial that measured nothing (program.md: run the same commit again): interrupted, or
        contended. No idea is decided by it, and no reference or noise floor takes its seeds."""
        return self.status == "interrupted" or self.contended

    @property
    def measured(self) -> bool:
        """A trial that measured its config: scored, and not void."""
        return self.scored and not self.void


def _header(version: int) -> list[str]:
    return [f.name for f in dataclasses.fields(LedgerRow) if f.metadata.get("since", 1) <= version]


COLUMNS: list[str] = _header(HEADER_VERSION)
# Headers of earlier versions: read as they are (new columns empty); the next write upgrades the file.
LEGACY_COLUMNS: list[list[str]] = [_header(v) for v in range(1, HEADER_VERSION)]
# Columns holding one number (or nothing; `nan` for no score): the float and int fields.
NUMERIC: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(LedgerRow) if str(f.type) in ("float | None", "int | None")
)


def clean(text: str) -> str:
    """One TSV cell: no tabs or line breaks (descriptions and lessons are free text)."""
    return " ".join(str(text).replace("\t", " ").splitlines()).strip()


def format_number(v: float) -> str:
    if math.isnan(v):
        return "nan"
    return f"{v:.6g}"


def format_pairs(pairs: Mapping[Any, Any]) -> str:
    """{"arithmetic": 0.61, "gsm8k": 0.12} -> "arithmetic=0.61 gsm8k=0.12" (numbers), or k=v text pairs."""
    return " ".join(f"{clean(str(k)).replace(' ', '_')}={_pair_value(v)}" for k, v in pairs.items())


def _pair_value(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return format_number(v)
    return clean(str(v)).replace(" ", "_")


def parse_text_pairs(cell: str) -> dict[str, str]:
    """A k=v pairs cell as text (as `format_pairs` writes it: separated by spaces)."""
    return {k: v for k, sep, v in (part.partition("=") for part in cell.split()) if sep and k}


def parse_pairs(cell: str) -> dict[str, float]:
    """Numbers of a k=v pairs cell (separated by spaces or commas); entries without a number are skipped."""
    out: dict[str, float] = {}
    for part in cell.replace(",", " ").split():
        key, sep, value = part.partition("=")
        if sep and key.strip() and value.strip():
            try:
                out[key.strip()] = float(value)
            except ValueError:
                continue
    return out


def counted(n: int, noun: str) -> str:
    """`1 trial`, `2 trials`: a count with its noun (a plural in -s)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def format_cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Mapping):
        return format_pairs(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ",".join(clean(format_cell(column, v)) for v in value)
    return clean(value)


def _number(cell: str) -> float | None:
    """A numeric cell as float; None when empty, `nan` or not a number."""
    try:
        v = float(cell or "nan")
    except ValueError:
        return None
    return None if math.isnan(v) else v


def as_float(row: Mapping[str, str], column: str) -> float | None:
    """A numeric cell of a side table's row (confirmed.tsv, fidelity.tsv) as float; None when empty or not a
    number."""
    return _number(row.get(column, ""))


def _number_problem(value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        return f"{value[:40]!r} is not a number"
    return f"{value!r} is not finite" if math.isinf(number) else None


def row_problem(row: Mapping[str, str], seen: AbstractSet[str] = frozenset()) -> str | None:
    """What is wrong with the values of one row, as `column <name>: <problem>` (None: nothing).

    The one check of a row's values, for every row read and every row appended: a run id that is empty or
    already in `seen`, a numeric column that is not a number (empty and `nan` are allowed: no score), a
    status or decision that is not one of the known words.
    """
    run_id = row.get("run_id", "")
    if not run_id.strip():
        return "column run_id: empty"
    if run_id in seen:
        return f"column run_id: {run_id} is recorded twice (a duplicate row)"
    for column in NUMERIC:
        if (value := row.get(column, "")) and (problem := _number_problem(value)):
            return f"column {column}: {problem}"
    for column, allowed in (("status", STATUSES), ("decision", ("", *DECISIONS))):
        if (value := row.get(column, "")) not in allowed:
            words = ", ".join(a for a in allowed if a)
            return f"column {column}: {value[:40]!r} is not one of {words}"
    return None
