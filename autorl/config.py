"""train.toml: the subset of prime-rl's `rl` config (pinned schema, prime-rl 559b447) that autorl accepts.

Two parts:
- a generic TOML loader (`load_toml`) that refuses harness-owned keys, validates with pydantic
  (`extra="forbid"` everywhere) and turns every problem into a `file:line: key: message` line, with the
  nearest valid key for typos. The classic track uses it with its own model.
- `TrainConfig`: the pydantic tree whose field names are exactly prime-rl's keys, with prime-rl's defaults,
  plus the refusal list (`REFUSED`) and the keys only the prime-rl backend runs (`EMBEDDED_UNSUPPORTED`).

This module must stay cheap to import (no torch, no transformers): a bad config is rejected in well under
a second, before anything heavy starts.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError


class ConfigError(Exception):
    """A config the harness will not run. str() is the full user-facing message (one problem a line)."""


# ----------------------------------------------------------------------------------------------------
# Generic loader
# ----------------------------------------------------------------------------------------------------

Path_ = tuple[str, ...]  # a dotted key as segments; list items are their index as a string ("0")


class FieldProblem(ValueError):
    """Raised by model validators to blame a specific field (relative to the model being validated)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = tuple(field.split("."))
        self.message = message


def dotted(path: Path_) -> str:
    return ".".join(path)


_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED_KEY = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER_RE = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED_KEY})\s*\]\]?\s*(?:#.*)?$")
_ASSIGN_RE = re.compile(rf"^\s*({_DOTTED_KEY})\s*=")
_SEGMENT_RE = re.compile(_KEY)


def _split_key(text: str) -> list[str]:
    out = []
    for m in _SEGMENT_RE.finditer(text):
        seg = m.group(0)
        out.append(seg[1:-1] if seg[0] in "\"'" else seg)
    return out


def key_lines(text: str) -> dict[Path_, int]:
    """Map every key and table the TOML text defines to its 1-based line.

    Handles `[a.b]`, `[[a.b]]` (items get their index: a.b.0, a.b.1, ...), sub-tables of the last array item
    (`[a.b.c]` after `[[a.b]]` is a.b.<last>.c) and dotted keys inside a table (`optim.lr = ...`). Keys inside
    inline tables and multi-line values are not indexed; callers fall back to the enclosing key's line.
    """
    lines: dict[Path_, int] = {}
    arrays: dict[Path_, int] = {}  # array-of-tables path -> index of its last item
    table: Path_ = ()
    in_multiline: str | None = None

    def resolve(segments: list[str]) -> Path_:
        path: Path_ = ()
        for seg in segments:
            path = (*path, seg)
            if path in arrays:
                path = (*path, str(arrays[path]))
        return path

    for lineno, line in enumerate(text.splitlines(), start=1):
        if in_multiline is not None:  # skip the body of a multi-line string
            if line.count(in_multiline) % 2 == 1:
                in_multiline = None
            continue
        if m := _HEADER_RE.match(line):
            segments = _split_key(m.group(2))
            if m.group(1) == "[[":
                base = resolve(segments[:-1]) + (segments[-1],)
                arrays[base] = arrays.get(base, -1) + 1
                table = (*base, str(arrays[base]))
            else:
                table = resolve(segments)
            lines.setdefault(table, lineno)
            continue
        if m := _ASSIGN_RE.match(line):
            segments = _split_key(m.group(1))
            for i in range(1, len(segments) + 1):
                lines.setdefault(table + tuple(segments[:i]), lineno)
            rest = line[m.end() :]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_multiline = quote
    return lines


def line_of(path: Path_, lines: dict[Path_, int]) -> int | None:
    """The line of `path`, else of its nearest enclosing key or table that is written in the file."""
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


def _match(pattern: list[str], path: Path_) -> bool:
    """`*` matches one segment, `**` any number (zero included); other segments match exactly."""
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    return (head == "*" or head == path[0]) and _match(rest, path[1:])


def _walk(data: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) in the raw TOML data, parents before children."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*path, str(key)), value
            yield from _walk(value, (*path, str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if isinstance(value, dict):
                yield (*path, str(i)), value
                yield from _walk(value, (*path, str(i)))


def find_refused(data: dict, refused: dict[str, str]) -> list[tuple[Path_, str]]:
    """The keys set in `data` that match a refusal pattern, outermost only, with the reason.

    A pattern is a dotted key (`*` = one segment, `**` = any depth) optionally followed by `=value`, which
    refuses the key only when it is set to that value (e.g. `trainer.loss.type=custom`).
    """
    parsed = []
    for pattern, reason in refused.items():
        key, _, value = pattern.partition("=")
        parsed.append((key.split("."), value if "=" in pattern else None, reason))
    found: list[tuple[Path_, str]] = []
    for path, value in _walk(data):
        if any(path[: len(p)] == p for p, _ in found):
            continue  # an enclosing key is already refused
        for segments, wanted, reason in parsed:
            if _match(segments, path) and (wanted is None or str(value) == wanted):
                found.append((path, reason))
                break
    return found


def model_keys(model_cls: type[BaseModel]) -> set[str]:
    """Every dotted key the model accepts; `*` stands for list indices and free-form (extra) tables."""
    return {dotted(p) for p in _model_paths(model_cls, ())}


def _model_paths(model_cls: type[BaseModel], prefix: Path_) -> Iterator[Path_]:
    if model_cls.model_config.get("extra") == "allow":
        yield (*prefix, "*")
    for name, field in model_cls.model_fields.items():
        path = (*prefix, name)
        yield path
        yield from _annotation_paths(field.annotation, path)


def _annotation_paths(annotation: Any, path: Path_) -> Iterator[Path_]:
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from _model_paths(annotation, path)
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple):
        for arg in args:
            for sub in _annotation_paths(arg, (*path, "*")):
                yield sub
        return
    if origin is dict and len(args) == 2:
        yield from _annotation_paths(args[1], (*path, "*"))
        return
    for arg in args:  # Union / Optional / Annotated / Literal: look into each member
        yield from _annotation_paths(arg, path)


def _generic(path: Path_) -> Path_:
    return tuple("*" if seg.isdigit() else seg for seg in path)


def nearest_key(path: Path_, known: set[str]) -> str | None:
    """The valid key closest to a misspelt one: first among its siblings, then anywhere."""
    generic = _generic(path)
    parent = dotted(generic[:-1])
    siblings = [k.rsplit(".", 1)[-1] for k in known if k.rsplit(".", 1)[0] == parent and "." in k]
    if not generic[:-1]:
        siblings = [k for k in known if "." not in k]
    hit = difflib.get_close_matches(generic[-1], siblings, n=1, cutoff=0.6)
    if hit:
        return dotted((*path[:-1], hit[0]))
    hit = difflib.get_close_matches(dotted(generic), sorted(known), n=1, cutoff=0.75)
    if hit:  # put the real list indices back
        segs = hit[0].split(".")
        return dotted(tuple(path[i] if s == "*" and i < len(path) else s for i, s in enumerate(segs)))
    return None


def _error_path(loc: tuple, data: Any) -> Path_:
    """Turn a pydantic error location into the dotted key of the TOML data.

    pydantic inserts the tag of a discriminated union (`cosine`) and validator names into `loc`; those are
    not keys of the data, so walk the data and keep only segments that exist (plus a final missing key).
    """
    path: list[str] = []
    node = data
    for i, seg in enumerate(loc):
        if isinstance(node, dict) and seg in node:
            node = node[seg]
            path.append(str(seg))
        elif isinstance(node, list) and isinstance(seg, int) and seg < len(node):
            node = node[seg]
            path.append(str(seg))
        elif i == len(loc) - 1 and isinstance(seg, str) and not seg.startswith(("function-", "tagged-union")):
            path.append(seg)  # a missing key
            node = None
        # else: a union tag or validator name -> skip
    return tuple(path)


def _fmt_value(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return repr(value)


def _messages(
    err: ValidationError,
    data: dict,
    known: set[str],
    where: Callable[[Path_], str],
    hint: Callable[[str], str | None] | None,
) -> list[str]:
    out = []
    for e in err.errors():
        path = _error_path(tuple(e["loc"]), data)
        problem = (e.get("ctx") or {}).get("error")
        if isinstance(problem, FieldProblem):
            path = (*path, *problem.field)
            out.append(f"{where(path)}`{dotted(path)}` {problem.message}")
            continue
        key = dotted(path) if path else "(top level)"
        kind = e["type"]
        if kind == "extra_forbidden":
            msg = f"{where(path)}unknown key `{key}`"
            extra = hint(key) if hint else None
            if extra:
                msg += f": {extra}"
            else:
                near = nearest_key(path, known)
                msg += f"; did you mean `{near}`?" if near else ""
            out.append(msg)
        elif kind == "missing":
            out.append(f"{where(path)}missing required key `{key}`")
        else:
            text = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
            got = f" (got {_fmt_value(e['input'])})" if kind != "value_error" or "input" in e else ""
            out.append(f"{where(path)}`{key}`: {text}{got}")
    return out


def load_toml(
    path: Path,
    model_cls: type[BaseModel],
    refused: dict[str, str],
    hint: Callable[[str], str | None] | None = None,
) -> tuple[str, dict, BaseModel]:
    """Read a TOML file, refuse harness-owned keys, validate with `model_cls`.

    Returns (text, raw data, validated model). Raises ConfigError listing every problem, one a line, each
    as `file:line: ...`. `hint(dotted_key)` may explain an unknown key better than a spelling suggestion.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config: {e.strerror or e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+)", str(e))
        loc = f"{path.name}:{m.group(1)}" if m else path.name
        raise ConfigError(f"{loc}: invalid TOML: {e}") from None
    lines = key_lines(text)

    def where(p: Path_) -> str:
        n = line_of(p, lines)
        return f"{path.name}:{n}: " if n else f"{path.name}: "

    problems = [f"{where(p)}`{dotted(p)}` {reason}" for p, reason in find_refused(data, refused)]
    if problems:  # validating refused keys would only add noise (they are unknown to the model too)
        raise ConfigError("\n".join(problems))
    try:
        model = model_cls.model_validate(data)
    except ValidationError as e:
        raise ConfigError("\n".join(_messages(e, data, model_keys(model_cls), where, hint))) from None
    return text, data, model


def config_hash(data: dict) -> str:
    """sha256 of the canonical JSON of the parsed TOML: formatting, order and comments do not change it."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


