"""A generic TOML config checker: refuses owned keys, validates with pydantic, reports `file:line` errors.

`load_toml(path, model_cls, refused, hint, checks)` reads a TOML file, refuses keys matching the `refused`
patterns, validates the rest with a pydantic model (`extra="forbid"` everywhere) and turns every problem into
one `file:line: key: message` line, with the nearest valid key for typos. Both tracks use it: the LLM track
with prime-rl's schema (autorl.llm.config), the classic track with its PPO settings (autorl.classic.config).

Cheap to import (no torch, no transformers): a bad config is rejected in well under a second.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
import tomllib
import typing
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from autorl.io import inputs

# A field's json_schema_extra key naming the key whose value it takes when the file leaves it unset (an
# llm source's sampling and group_size: the orchestrator's); the key reference's default column says so.
INHERITS = "inherits"


class ConfigError(Exception):
    """A config the harness will not run. str() is the full user-facing message (one problem a line)."""


# ====================================================================================================
# Generic loader
# ====================================================================================================

KeyPath = tuple[str, ...]  # a dotted key as segments; list items are their index as a string ("0")
Check = Callable[[dict], list[tuple[KeyPath, str]]]  # extra checks on the raw data: (key, message) pairs


class FieldProblem(ValueError):
    """Raised by model validators to blame specific fields (dotted, relative to the model validated).

    `FieldProblem("batch_size", "must be ...")` blames one field; `FieldProblem(("a", "msg"), ("b", "msg"))`
    several at once, so cross-field checks report every problem instead of the first.
    """

    def __init__(self, *args: str | tuple[str, str]):
        if args and isinstance(args[0], str):  # (field, message)
            pairs = [(args[0], str(args[1]))]
        else:  # several (field, message) pairs
            pairs = [p for p in args if isinstance(p, tuple)]
        super().__init__("; ".join(f"{field}: {msg}" for field, msg in pairs))
        self.problems = [(tuple(field.split(".")) if field else (), msg) for field, msg in pairs]
        self.field, self.message = self.problems[0]


def flatten(data: Any, prefix: str = "", named: bool = False) -> dict[str, Any]:
    """A parsed TOML config as dotted keys (array-of-tables entries numbered: `a.0.b`; `named`: by their
    `name` where every entry has a distinct one, `a.reverse.b`)."""
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}{k}.", named))
    elif isinstance(data, list) and data and all(isinstance(v, dict) for v in data):
        names = [v.get("name") for v in data]
        by_name = named and all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names)
        for key, v in zip(names if by_name else range(len(data)), data, strict=True):
            out.update(flatten(v, f"{prefix}{key}.", named))
    else:
        out[prefix[:-1]] = data
    return out


def dotted(path: Iterable[str]) -> str:
    return ".".join(path)


_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED_KEY = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER_RE = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED_KEY})\s*\]\]?\s*(?:#.*)?$")
_ASSIGN_RE = re.compile(rf"^\s*({_DOTTED_KEY})\s*=")
_SEGMENT_RE = re.compile(_KEY)


def _split_key(text: str) -> list[str]:
    segments = []
    for m in _SEGMENT_RE.finditer(text):
        seg = m.group(0)
        segments.append(seg[1:-1] if seg[0] in "\"'" else seg)
    return segments


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map every key and table the TOML text writes to its 1-based line.

    Handles `[a.b]`, `[[a.b]]` (items get their index: a.b.0, a.b.1, ...), sub-tables of the last array item
    (`[a.b.c]` after `[[a.b]]` is a.b.<last>.c) and dotted keys inside a table (`optim.lr = ...`). Keys inside
    inline tables and multi-line values are not indexed; `line_of` falls back to the enclosing key's line.
    """
    index = _KeyIndex()
    for lineno, line in enumerate(text.splitlines(), start=1):
        index.read(line, lineno)
    return index.lines


class _KeyIndex:
    """`key_lines`'s reader: the keys seen so far and where the next key goes, fed one line at a time."""

    def __init__(self) -> None:
        self.lines: dict[KeyPath, int] = {}
        self.arrays: dict[KeyPath, int] = {}  # array-of-tables path -> index of its last item
        self.table: KeyPath = ()  # the table the next `key = value` is in
        self.in_multiline: str | None = None  # the quote of the multi-line string a line is inside

    def read(self, line: str, lineno: int) -> None:
        if self.in_multiline is not None:  # inside a multi-line string: nothing here is a key
            if line.count(self.in_multiline) % 2 == 1:
                self.in_multiline = None
        elif m := _HEADER_RE.match(line):
            self.header(_split_key(m.group(2)), m.group(1) == "[[", lineno)
        elif m := _ASSIGN_RE.match(line):
            self.assignment(_split_key(m.group(1)), lineno)
            rest = line[m.end() :]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    self.in_multiline = quote

    def header(self, segments: list[str], array_item: bool, lineno: int) -> None:
        """`[a.b]` or `[[a.b]]` (a new item of the array a.b)."""
        if array_item:
            base = (*self.resolve(segments[:-1]), segments[-1])
            self.arrays[base] = self.arrays.get(base, -1) + 1
            self.table = (*base, str(self.arrays[base]))
            self.lines.setdefault(base, lineno)
        else:
            self.table = self.resolve(segments)
        for n in range(1, len(self.table) + 1):  # `[a.b.c]` also writes a.b and a (if not written before)
            self.lines.setdefault(self.table[:n], lineno)

    def assignment(self, segments: list[str], lineno: int) -> None:
        """`a.b = ...` in the current table: writes a and a.b."""
        for i in range(1, len(segments) + 1):
            self.lines.setdefault(self.table + tuple(segments[:i]), lineno)

    def resolve(self, segments: list[str]) -> KeyPath:
        """A table path with the index of the last item after each array of tables it passes through."""
        path: KeyPath = ()
        for seg in segments:
            path = (*path, seg)
            if path in self.arrays:
                path = (*path, str(self.arrays[path]))
        return path


def line_of(path: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    """The line of `path`, else of the nearest enclosing key or table written in the file."""
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


def match_key(pattern: str | list[str], path: Iterable[str]) -> bool:
    """Does a dotted key match a pattern? `*` matches one segment, `**` any number (zero included)."""
    segments = pattern.split(".") if isinstance(pattern, str) else pattern
    return _match(segments, tuple(path))


def _match(pattern: list[str], path: KeyPath) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    return (head == "*" or head == path[0]) and _match(rest, path[1:])


def _walk(data: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """Every (key, value) in the raw TOML data, parents before children; list items are keys too."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*path, str(key)), value
            yield from _walk(value, (*path, str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if isinstance(value, dict):
                yield (*path, str(i)), value
                yield from _walk(value, (*path, str(i)))


def find_refused(data: dict, refused: dict[str, str]) -> list[tuple[KeyPath, str, bool]]:
    """The keys set in `data` that match a refusal pattern (outermost only): (key, reason, by_value).

    A pattern is a dotted key (`*` = one segment, `**` = any depth), optionally followed by `=value`, which
    refuses the key only when it is set to that value (`trainer.loss.type=custom`). The first matching
    pattern wins.
    """
    parsed = []
    for pattern, reason in refused.items():
        key, eq, value = pattern.partition("=")
        parsed.append((key.split("."), value if eq else None, reason))
    found: list[tuple[KeyPath, str, bool]] = []
    for path, value in _walk(data):
        if any(path[: len(p)] == p for p, _, _ in found):
            continue  # an enclosing key is already refused
        for segments, wanted, reason in parsed:
            if _match(segments, path) and (wanted is None or (isinstance(value, str) and value == wanted)):
                found.append((path, reason, wanted is not None))
                break
    return found


def _without(data: dict, paths: list[KeyPath]) -> dict:
    """A copy of data with the given keys removed (so the rest can still be validated)."""
    data = copy.deepcopy(data)
    for path in sorted(paths, key=len, reverse=True):
        node: Any = data
        for seg in path[:-1]:
            node = node[int(seg)] if isinstance(node, list) else node.get(seg, {})
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return data


@cache
def model_keys(model_cls: type[BaseModel]) -> frozenset[str]:
    """Every dotted key the model accepts; `*` stands for list indices and free-form (extra) tables."""
    return frozenset(dotted(p) for p in _model_paths(model_cls, (), 0))


def _model_paths(model_cls: type[BaseModel], prefix: KeyPath, depth: int) -> Iterator[KeyPath]:
    if depth > 20:
        return
    if model_cls.model_config.get("extra") == "allow":
        yield (*prefix, "*")
    for name, field in model_cls.model_fields.items():
        path = (*prefix, name)
        yield path
        yield from _annotation_paths(field.annotation, path, depth + 1)


def _annotation_paths(annotation: Any, path: KeyPath, depth: int) -> Iterator[KeyPath]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from _model_paths(annotation, path, depth)
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (list, tuple):
        for arg in args:
            yield from _annotation_paths(arg, (*path, "*"), depth)
    elif origin is dict and len(args) == 2:
        yield (*path, "*")
        yield from _annotation_paths(args[1], (*path, "*"), depth)
    else:  # Union / Optional / Annotated: look into each member
        for arg in args:
            yield from _annotation_paths(arg, path, depth)


def generic_key(path: Iterable[str]) -> KeyPath:
    """List indices replaced by `*`: orchestrator.train.source.0.name -> orchestrator.train.source.*.name."""
    return tuple("*" if seg.isdigit() else seg for seg in path)


# Names other RL libraries use for a key, so `learning_rate` suggests `lr` (spelling alone would not).
SYNONYMS = {
    "learning_rate": "lr",
    "max_grad_norm": "max_norm",
    "grad_clip": "max_norm",
    "clip_grad_norm": "max_norm",
    "beta1": "betas1",
    "beta2": "betas2",
    "num_generations": "group_size",
    "rollouts_per_example": "group_size",
    "max_new_tokens": "max_completion_tokens",
    "max_tokens": "max_completion_tokens",
    "warmup": "warmup_steps",
    "steps": "max_steps",
    "kl_coef": "kl_tau",
    "beta": "kl_tau",
    "model_name": "name",
}


def nearest_key(path: KeyPath, known: Iterable[str], is_table: bool = False) -> str | None:
    """The valid key closest to a misspelt one, of the same kind (a table for a table, else a value key).

    First a synonym or a close spelling among its siblings, then the same name elsewhere in the schema
    (`orchestrator.train.temperature` -> `orchestrator.train.sampling.temperature`; one whose tail is the
    whole path given first), then a close dotted key.
    """
    known = set(known)
    tables = {k.rsplit(".", n)[0] for k in known for n in range(1, k.count(".") + 1)}  # every proper prefix
    same_kind = sorted(k for k in known if not k.endswith("*") and (k in tables) == is_table)
    generic = generic_key(path)
    parent = dotted(generic[:-1])
    siblings = [
        k.rsplit(".", 1)[-1] for k in same_kind if (k.rsplit(".", 1)[0] if "." in k else "") == parent
    ]
    if SYNONYMS.get(generic[-1]) in siblings:
        return dotted((*path[:-1], SYNONYMS[generic[-1]]))
    hit = difflib.get_close_matches(generic[-1], siblings, n=1, cutoff=0.6)
    if hit:
        return dotted((*path[:-1], hit[0]))
    same_name = [k for k in same_kind if k.rsplit(".", 1)[-1] == generic[-1]]
    # a key whose tail is the whole path given first (`scheduler.type` -> `trainer.scheduler.type`)
    same_name.sort(key=lambda k: not k.endswith("." + dotted(generic)))
    hit = same_name[:1] or difflib.get_close_matches(dotted(generic), same_kind, n=1, cutoff=0.8)
    if hit:  # put the real list indices back
        segs = hit[0].split(".")
        return dotted(path[i] if s == "*" and i < len(path) else s for i, s in enumerate(segs))
    return None


def _error_path(loc: tuple, data: Any) -> KeyPath:
    """The dotted key of the TOML data that a pydantic error location points at.

    pydantic puts the tag of a discriminated union (`cosine`) and validator names into `loc`; those are not
    keys of the data, so walk the data and keep only segments that exist there (plus a final missing key).
    """
    path: list[str] = []
    node = data
    for i, seg in enumerate(loc):
        if isinstance(node, dict) and seg in node:
            node = node[seg]
            path.append(str(seg))
        elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
            node = node[seg]
            path.append(str(seg))
        elif i == len(loc) - 1 and isinstance(seg, str) and not seg.startswith(("function-", "tagged-")):
            path.append(seg)  # a key that is missing in the data
            node = None
        # else: a union tag or a validator name: not a key
    return tuple(path)


def visible(text: str) -> str:
    """`text` with every character that does not show on a terminal (a zero-width space, a control
    character, a non-breaking space) written as its escape, `\\u200b`: a message must show what is wrong."""
    return "".join(ch if ch == " " or ch.isprintable() else f"\\u{ord(ch):04x}" for ch in text)


def invisible_note(text: str) -> str:
    """'' or the names of the invisible characters in `text`, for the end of a message."""
    names = sorted({f"U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}" for ch in text if visible(ch) != ch})
    return f" (it contains {', '.join(names)})" if names else ""


def short(text: str, limit: int = 80) -> str:
    """Text echoed back in a message, invisible characters escaped, cut to `limit` characters (a
    100k-character key stays readable)."""
    text = visible(text)
    return text if len(text) <= limit else f"{text[: limit - 20]}...({len(text)} characters)"


def _fmt_value(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if value is None:
        return '"None"'
    if isinstance(value, bool):
        return "true" if value else "false"  # TOML spelling
    return short(json.dumps(value)) if isinstance(value, str) else short(repr(value))


def toml_type(value: Any) -> str:
    """What a TOML value is, in words."""
    for kind, name in ((bool, "a boolean"), (int, "an integer"), (float, "a float"), (str, "a string")):
        if isinstance(value, kind):
            return name
    return "a table" if isinstance(value, dict) else "an array" if isinstance(value, list) else "a date/time"


# pydantic's type errors (strict mode: TOML types are exact, so `seq_len = true` is not an integer).
_TYPE_ERRORS = ("int_type", "float_type", "bool_type", "string_type")
INT64 = (-(2**63), 2**63 - 1)  # TOML integers are 64-bit; Python's tomllib reads any size


def _huge_ints(data: Any, path: KeyPath = ()) -> Iterator[KeyPath]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _huge_ints(value, (*path, str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _huge_ints(value, (*path, str(i)))
    elif isinstance(data, int) and not isinstance(data, bool) and not INT64[0] <= data <= INT64[1]:
        yield path


def _validation_problems(
    err: ValidationError, data: dict, known: Iterable[str], hint: Callable[[str], str | None] | None
) -> list[tuple[KeyPath, str]]:
    problems: list[tuple[KeyPath, str]] = []
    for e in err.errors():
        path = _error_path(tuple(e["loc"]), data)
        cause = (e.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            for field, msg in cause.problems:
                problems.append(((*path, *field), f"`{dotted((*path, *field))}` {msg}"))
            continue
        key = short(dotted(path)) if path else "(top level)"
        kind = e["type"]
        if kind == "extra_forbidden":
            msg = f"unknown key `{key}`{invisible_note(dotted(path))}"
            explained = hint(dotted(path)) if hint else None
            near = None if explained else nearest_key(path, known, isinstance(e.get("input"), dict))
            if explained:
                msg += f": {explained}"
            elif near:
                msg += f"; did you mean `{short(near)}`?"
            else:
                msg += " (no accepted key has this name)"
            problems.append((path, msg))
        elif kind == "missing":
            problems.append((path, f"missing required key `{key}`"))
        elif kind == "union_tag_invalid":
            tags = (e.get("ctx") or {}).get("expected_tags", "")
            got = (e.get("ctx") or {}).get("tag", "")
            problems.append(
                ((*path, "type"), f"`{dotted((*path, 'type'))}` must be one of {tags} (got '{got}')")
            )
        else:
            text = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
            if kind in _TYPE_ERRORS:  # strict mode: say what was written instead
                text += f", not {toml_type(e.get('input'))}"
            if kind == "list_type" and isinstance(e.get("input"), dict):
                text += f"; write each item as a [[{key}]] table"
            problems.append((path, f"`{key}`: {text} (got {_fmt_value(e.get('input'))})"))
    return problems


def load_toml(
    path: Path,
    model_cls: type[BaseModel],
    refused: dict[str, str],
    hint: Callable[[str], str | None] | None = None,
    checks: Iterable[Check] = (),
) -> tuple[str, dict, BaseModel]:
    """Read a TOML file, refuse keys matching `refused` (pattern -> reason), validate with `model_cls`.

    Returns (text, raw data exactly as written, validated model). Raises ConfigError listing every problem,
    one a line, each `file:line: ...`, ordered by line. `hint(dotted_key)` may explain an unknown key better
    than a spelling suggestion; `checks` are extra checks on the raw data (they run even when validation
    fails).
    """
    path = Path(path)
    try:
        raw = inputs.read_bytes(path, inputs.MAX_CONFIG_BYTES)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config: {e.strerror or e}") from None
    except inputs.InputError as e:
        raise ConfigError(str(e)) from None
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte-order mark is harmless: dropped
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(
            f"{path.name}:{line}: not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start}); "
            "a TOML file must be UTF-8"
        ) from None
    try:
        inputs.check_depth(path.name, text)
        data = tomllib.loads(text)
    except inputs.InputError as e:
        raise ConfigError(str(e)) from None
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+)", str(e))
        number = int(m.group(1)) if m else None
        raise ConfigError(
            f"{path.name}:{number or '?'}: invalid TOML: {e}{_line_shown(text, number)}"
        ) from None
    if not data:
        raise ConfigError(
            f"{path.name}: has no keys (the file is empty or holds only comments); restore it with "
            f"`git checkout -- {path.name}`"
        )
    lines = key_lines(text)

    problems: list[tuple[KeyPath, str]] = []
    drop: list[KeyPath] = []
    for key in _huge_ints(data):
        problems.append((key, f"`{short(dotted(key))}`: integer out of range (TOML integers are 64-bit)"))
        drop.append(key)
    for key, reason, by_value in find_refused(data, refused):
        name = short(dotted(key))
        shown = f"`{name} = {_fmt_value(_get(data, key))}`" if by_value else f"`{name}`"
        problems.append((key, f"{shown} {reason}"))
        drop.append(key[:-1] if by_value else key)  # a refused value takes its whole table out
    for check in checks:
        problems += check(data)
    model = None
    try:  # validate the rest too, so one run reports every problem
        model = model_cls.model_validate(_without(data, drop) if drop else copy.deepcopy(data))
    except ValidationError as e:
        problems += _validation_problems(e, data, model_keys(model_cls), hint)
    if problems or model is None:
        numbered = [(line_of(k, lines) or 0, i, msg) for i, (k, msg) in enumerate(problems)]
        numbered.sort()
        raise ConfigError(
            "\n".join(f"{path.name}:{n}: {msg}" if n else f"{path.name}: {msg}" for n, _, msg in numbered)
        )
    return text, data, model


def _line_shown(text: str, number: int | None) -> str:
    """The offending line, when it holds characters that don't show (so the message says what is wrong)."""
    all_lines = text.splitlines()
    if not number or number > len(all_lines) or visible(all_lines[number - 1]) == all_lines[number - 1]:
        return ""
    line = all_lines[number - 1]
    return f"\n  line {number} reads `{short(line)}`{invisible_note(line)}"


def _get(data: Any, path: KeyPath) -> Any:
    for seg in path:
        data = data[int(seg)] if isinstance(data, list) else data[seg]
    return data


def config_hash(data: dict) -> str:
    """sha256 of the canonical JSON of the parsed TOML: formatting, key order and comments don't change it."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
