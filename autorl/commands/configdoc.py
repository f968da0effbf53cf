"""The config key reference, generated from the schemas' field docstrings (one home for each key's meaning).

Every field of train.toml's (autorl.llm.schema), classic.toml's (autorl.classic.config) and eval.toml's
(autorl.llm.evalspec) schemas carries a docstring (pydantic's `use_attribute_docstrings`); its type, default
and range come from the field itself. This module walks the models (nested tables, unions selected by `type`,
lists and named tables of tables) into `KeyDoc` rows and renders them:

    uv run python -m autorl.commands.configdoc            # the reference, as markdown, on stdout
    uv run python -m autorl.commands.configdoc --write    # refresh it in docs/config.md (between the markers)
    uv run python -m autorl.commands.configdoc --check    # exit 1 when docs/config.md is stale

`uv run run.py --explain KEY` prints one key (`explain`). Cheap to import: no torch.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from autorl.engine.track import ConfigFile, get_track, track_names
from autorl.io.tomlcheck import INHERITS, dotted, flatten, key_lines, match_key, nearest_key

REPO = Path(__file__).resolve().parents[2]
DOC_PAGE = REPO / "docs" / "config.md"
WRITE_COMMAND = "uv run python -m autorl.commands.configdoc --write"
BEGIN = f"<!-- BEGIN GENERATED key reference: edit the schemas' docstrings, then run `{WRITE_COMMAND}` -->"
END = "<!-- END GENERATED key reference -->"


@dataclass(frozen=True)
class KeyDoc:
    """One key of a config file, as documented by its schema."""

    key: str  # dotted; `*` = any list index or table name
    type: str
    default: str
    range: str
    meaning: str
    variant: str = ""  # the union member (`linear`) the key belongs to; "" when it is not inside a union
    union: str = ""  # the dotted key of that union's table (`trainer.scheduler`)
    # LLM track: `both`, `prime-rl` (the embedded backend refuses it by name), `both ("v": prime-rl)`
    backends: str = ""
    inherits: str = ""  # the key whose value it takes where the file leaves it unset (a source's sampling)

    @property
    def default_text(self) -> str:
        """The default as the reference writes it: a TOML value in backticks, a word, or the key inherited."""
        if self.inherits:
            return f"as `{self.inherits}`"
        return self.default if self.default in _PROSE_DEFAULTS else f"`{self.default}`"


@dataclass(frozen=True)
class Schema:
    """A config file of a track (autorl.engine.track.ConfigFile: its name, model, refusals) documented."""

    of: ConfigFile

    @property
    def file(self) -> str:
        return self.of.file

    @property
    def model(self) -> type[BaseModel]:
        return self.of.model

    @property
    def refused(self) -> Mapping[str, str]:
        return self.of.refused

    def docs(self) -> list[KeyDoc]:
        rows = list(_model_docs(self.model, (), "", "", self.of.none))
        if not self.of.only_backend:
            return rows
        return [replace(row, backends=self.backends(row)) for row in rows]

    def backends(self, row: KeyDoc) -> str:
        """`only_backend` for a key only it takes (the track's ConfigFile.only_keys), `both` with the value
        only it takes for a key refused at one value (`trainer.model.ac.mode=selective`), else `both`."""
        for pattern in self.of.only_keys:
            key, _, value = pattern.partition("=")
            if value:
                if row.union == key.rsplit(".", 1)[0] and row.variant == value:
                    return self.of.only_backend
                if row.key == key and not row.variant:
                    return f'both ("{value}": {self.of.only_backend})'
            elif row.key == key or row.key.startswith(key + "."):
                return self.of.only_backend
        return "both"


def schemas(track: str | None = None) -> list[Schema]:
    """The schemas of a track's files (each track declares them: Track.config_files), or every track's."""
    names = [track] if track else track_names()
    return [Schema(f) for name in names for f in get_track(name).config_files()]


# ---- walking the models ------------------------------------------------------------------------------------


def _model_docs(
    model: type[BaseModel], prefix: tuple[str, ...], variant: str, union: str, none: str, inherits: str = ""
) -> Iterator[KeyDoc]:
    """The rows of `model`'s keys under `prefix`; `inherits`: the table whose values its unset keys take."""
    if model.model_config.get("extra") == "allow":
        meaning = " ".join((model.__doc__ or "").split())
        yield KeyDoc(dotted((*prefix, "*")), "any", "", "", meaning, variant, union)
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        annotation, optional = _strip_none(field.annotation)
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        source = str(extra.get(INHERITS, "")) or (dotted((inherits, name)) if inherits else "")
        yield KeyDoc(
            key=dotted(path),
            type=_type_name(annotation) + (f" or {none}" if optional else ""),
            default=_default(field, none),
            range=_range(field),
            meaning=" ".join((field.description or "").split()),
            variant=variant,
            union=union,
            inherits=source,
        )
        if _is_model(annotation):  # a table: its unset keys take the inherited table's (where it has one)
            yield from _model_docs(annotation, path, variant, union, none, source)
        else:
            yield from _below(annotation, path, variant, union, none)


def _below(annotation: Any, path: tuple[str, ...], variant: str, union: str, none: str) -> Iterator[KeyDoc]:
    """The keys inside a table-valued field: a union of tables, or a list / named tables of them."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and all(_is_model(a) for a in args):
        for member in args:
            tag = member.model_fields["type"].default
            yield from _model_docs(member, path, tag, dotted(path), none)
    elif origin is list and _is_model(args[0]):
        yield from _model_docs(args[0], (*path, "*"), variant, union, none)
    elif origin is dict and _is_model(args[1]):
        yield from _model_docs(args[1], (*path, "*"), variant, union, none)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _strip_none(annotation: Any) -> tuple[Any, bool]:
    """(the annotation without None, whether None was allowed)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) < len(typing.get_args(annotation)):
            return (args[0] if len(args) == 1 else typing.Union[tuple(args)]), True  # noqa: UP007
    return annotation, False


def _type_name(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return " | ".join(json.dumps(a) for a in args)
    if _is_model(annotation):
        return "table"
    if origin in (typing.Union, types.UnionType):
        return "table (by `type`)"
    if origin is list:
        return f"list of {_type_name(args[0])}s"
    if origin is dict:
        return "table" if args[1] is Any else f"named {_type_name(args[1])}s"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: FieldInfo, none: str) -> str:
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return _model_default(value, none)
    return _toml(value, none)


def _model_default(value: BaseModel, none: str) -> str:
    """A table's default: its `type`, plus what differs from the table's own defaults (listed below it)."""
    try:
        plain = type(value)().model_dump()
    except ValueError:  # the table has required keys: all of it differs
        plain = {}
    changed = {k: v for k, v in value.model_dump().items() if k != "type" and plain.get(k, ...) != v}
    parts = [f"type = {json.dumps(value.model_dump()['type'])}"] if "type" in type(value).model_fields else []
    parts += [f"{k} = {_toml(v, none)}" for k, v in changed.items()]
    return "{" + ", ".join(parts) + "}" if parts else "the defaults below"


def _toml(value: Any, none: str) -> str:
    """A value as TOML writes it (None as the file's convention)."""
    if value is None:
        return none
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return _num(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, BaseModel):
        return _toml(value.model_dump(), none)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v, none) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v, none)}" for k, v in value.items() if v is not None) + "}"
    return str(value)


def _num(value: Any) -> str:
    """A bound, compactly: 1e-06, 0.5, 1, 10000, 1_048_576."""
    if isinstance(value, float) and not value.is_integer():
        return repr(value)
    return f"{int(value):_}" if abs(value) >= 100_000 else str(int(value))


def _range(field: FieldInfo) -> str:
    """The bounds of the field's own constraints: `[0, 1)`, `>= 1`, `non-empty`; "" when unconstrained."""
    low = high = ""
    extra = []
    for m in field.metadata:
        if isinstance(m, annotated_types.Ge):
            low = f"[{_num(m.ge)}"
        elif isinstance(m, annotated_types.Gt):
            low = f"({_num(m.gt)}"
        elif isinstance(m, annotated_types.Le):
            high = f"{_num(m.le)}]"
        elif isinstance(m, annotated_types.Lt):
            high = f"{_num(m.lt)})"
        elif isinstance(m, annotated_types.MinLen):
            extra.append("non-empty" if m.min_length == 1 else f"at least {m.min_length} items")
    if low and high:
        extra.insert(0, f"{low}, {high}")
    elif low:
        extra.insert(0, (">= " if low[0] == "[" else "> ") + low[1:])
    elif high:
        extra.insert(0, ("<= " if high[-1] == "]" else "< ") + high[:-1])
    return ", ".join(extra)


# ---- the markdown reference --------------------------------------------------------------------------------


def _section(key: str) -> str:
    segments = key.split(".")
    return dotted(segments[:2]) if len(segments) > 2 else ""


_PROSE_DEFAULTS = ("", "required", "the defaults below")  # defaults that are words, not TOML values


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _key_cell(row: KeyDoc) -> str:
    return f"`{row.key}`" + (f" (type = `{row.variant}`)" if row.variant else "")


def shipped(file: str, none: str) -> dict[str, str]:
    """The values the repository's own `file` (train.toml, classic.toml, eval.toml) sets, by dotted key, as
    TOML writes them: what a key is before the agent edits it (deleting its line gives the default)."""
    import tomllib

    path = REPO / file
    data = tomllib.loads(path.read_text()) if path.is_file() else {}
    return {k: _toml(v, none) for k, v in flatten(data).items()}


def render_schema(schema: Schema) -> str:
    """One schema's reference: a table per table of the file (the top level, then `[a.b]`, ...)."""
    rows = schema.docs()
    ships = shipped(schema.file, schema.of.none)
    columns = ["key", "type", "default", "shipped", "range", "meaning"] + (
        ["backends"] if schema.of.only_backend else []
    )
    out = [f"### `{schema.file}`", ""]
    sections: dict[str, list[KeyDoc]] = {}
    for row in rows:
        sections.setdefault(_section(row.key), []).append(row)
    for section, section_rows in sections.items():
        out += [f"#### `[{section}]`" if section else "#### Top level", ""]
        out += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for row in section_rows:
            cells = [
                _key_cell(row),
                row.type,
                row.default_text,
                f"`{ships[row.key]}`" if row.key in ships else "",
                row.range,
                row.meaning,
            ]
            cells += [row.backends] if schema.of.only_backend else []
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        out.append("")
    return "\n".join(out)


def render() -> str:
    """The whole generated reference (what sits between the markers in docs/config.md)."""
    intro = (
        "Generated from the schemas' field docstrings (autorl/llm/schema/, autorl/classic/config.py, "
        "autorl/llm/evalspec.py): `*` = any list index or table name; `(type = x)` = the key exists when its "
        "table's `type` is x; default = what a missing key takes; shipped = what the repository's own file "
        "sets (deleting a line turns the shipped value into the default); range = the field's own bounds "
        "(checks between fields are in the meaning). "
        "One key: `uv run run.py --explain KEY` (`--track classic` for classic.toml)."
    )
    return "\n".join([intro, "", *(render_schema(s) for s in schemas())]).rstrip() + "\n"


def page_with_reference(page: str, reference: str) -> str:
    """docs/config.md with the text between the markers replaced by `reference`."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{DOC_PAGE} lacks the markers {BEGIN!r} ... {END!r}")
    return page[: start + len(BEGIN)] + "\n\n" + reference + "\n" + page[end:]


# ---- one key: run.py --explain -----------------------------------------------------------------------------


def _matches(row: KeyDoc, query: tuple[str, ...]) -> bool:
    """The query names the row's key: with `*`, with list indices (`source.0.name`), or without the indices
    (`source.name`); a free-form table's `*` stands for any one name."""
    key = row.key.split(".")
    inner_stars_dropped = [s for s in key[:-1] if s != "*"] + key[-1:]
    return match_key(key, query) or match_key(inner_stars_dropped, query)


def _elsewhere(query: tuple[str, ...], track: str) -> list[str]:
    """The other tracks' files that have the key (a replay of 2026-12-02 asked for clip_coef without
    --track classic), each with the flag that reaches it."""
    return [
        f"{s.file} (--track {name})"
        for name in track_names()
        if name != track
        for s in schemas(name)
        if any(_matches(row, query) for row in s.docs())
    ]


def explain(key: str, track: str, root: Path, config: Path | None = None) -> int:
    """Print what `key` means (type, default, range, backends, meaning, where the file sets it): exit 0; an
    unknown key: one line naming the nearest keys on stderr, exit 2."""
    query = tuple(key.strip().split("."))
    found = [(s, row) for s in schemas(track) for row in s.docs() if _matches(row, query)]
    named = [(s, row) for s, row in found if not row.key.endswith("*")]  # a named key beats a free-form table
    refusal = None if named else _refusal(query, track)
    if refusal:
        print(f"error: `{key}` {refusal}", file=sys.stderr)
        return 2
    found = named or found
    if not found:
        known = {row.key for s in schemas(track) for row in s.docs()}
        near = nearest_key(query, known) or nearest_key(query, known, is_table=True)
        hint = f"; did you mean `{near}`?" if near else " (docs/config.md lists every key)"
        if elsewhere := _elsewhere(query, track):
            hint = f"; it is a key of {', '.join(elsewhere)}"
        print(f"error: unknown {'/'.join(s.file for s in schemas(track))} key `{key}`{hint}", file=sys.stderr)
        return 2
    for schema, row in found:
        path = config if config is not None and schema.file != "eval.toml" else root / schema.file
        print("\n".join(_explain_lines(schema, row, path, query[-1])) + "\n")
    return 0


def _refusal(query: tuple[str, ...], track: str) -> str | None:
    """Why the loader refuses this key (harness-owned, runs code), if it does."""
    for schema in schemas(track):
        for pattern, why in (schema.refused or {}).items():
            key, _, value = pattern.partition("=")
            if match_key(key, query):
                return why + (f" (when set to {value!r})" if value else "")
    return None


def _explain_lines(schema: Schema, row: KeyDoc, path: Path, name: str) -> list[str]:
    lines = [
        f"{row.key}  ({schema.file}" + (f", when its table's type = {row.variant!r})" if row.variant else ")")
    ]
    lines += [
        f"  type:     {row.type}",
        f"  default:  {row.default_text.replace('`', '') if row.default else '-'}",
        f"  range:    {row.range or '-'}",
    ]
    if row.backends:
        lines.append(f"  backends: {row.backends}")
    lines.append(f"  meaning:  {row.meaning}")
    lines += _where_set(row, path, name)
    return lines


def _where_set(row: KeyDoc, path: Path, name: str) -> list[str]:
    """`file:line: text` for each place the file writes the key (`name` under a free-form table), or that it
    does not."""
    try:
        text = path.read_text()
    except OSError:
        return [f"  set in:   - ({path.name} not found)"]
    source = text.splitlines()
    pattern = row.key.split(".")
    if pattern[-1] == "*":
        pattern[-1] = name
    hits = sorted({n for p, n in key_lines(text).items() if match_key(pattern, p)})
    if not hits:
        return [f"  set in:   - (not in {path.name}: the default applies)"]
    return [f"  set in:   {path.name}:{n}: {source[n - 1].strip()}" for n in hits]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m autorl.commands.configdoc", description=__doc__.split("\n")[0]
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"refresh the reference in {DOC_PAGE.name}")
    mode.add_argument("--check", action="store_true", help=f"exit 1 when {DOC_PAGE.name} is stale")
    args = p.parse_args(argv)
    reference = render()
    if not (args.write or args.check):
        sys.stdout.write(reference)
        return 0
    page = DOC_PAGE.read_text()
    fresh = page_with_reference(page, reference)
    if args.check:
        if fresh != page:
            print(f"{DOC_PAGE} is stale: run `{WRITE_COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if fresh != page:
        DOC_PAGE.write_text(fresh)
    print(f"{DOC_PAGE}: key reference {'refreshed' if fresh != page else 'already fresh'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
