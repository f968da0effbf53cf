"""The one reader of the files the harness is given: configs, the ledger, result.json, machine.json, JSONL.

`read_bytes(path, limit)` opens without waiting (O_NONBLOCK: a named pipe does not block the open), refuses
anything that is not a regular file (a directory, a pipe, `/dev/zero`) and a file larger than `limit`, and
reads at most `limit` bytes (a file growing while read cannot exhaust memory). `check_depth(text)` refuses
TOML or JSON nested deeper than `MAX_DEPTH` before a recursive parser sees it (thousands of nested inline
tables or arrays would raise RecursionError). Every refusal is an `InputError` with one line naming the
file; callers turn it into their own error (ConfigError, LedgerError: exit 2).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tomllib
from pathlib import Path

KIB, MIB = 1024, 1024 * 1024
MAX_CONFIG_BYTES = 1 * MIB  # train.toml, classic.toml, eval.toml, space.toml: a real one is a few KiB
MAX_JSON_BYTES = 16 * MIB  # result.json, machine.json, resolved.json, a launch file
MAX_LEDGER_BYTES = 256 * MIB  # results.tsv: ~1 KiB a row, a quarter of a million trials
MAX_JSONL_BYTES = 2048 * MIB  # eval.jsonl (completions of every seed), metrics.jsonl
MAX_DEPTH = 64  # nesting of tables/arrays/objects: train.toml needs about 6


class InputError(Exception):
    """A file the harness reads is not something it can read safely (one line, naming the file)."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size(n: int) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n / KIB:.0f} KiB" if n >= KIB else f"{n} bytes"


def read_bytes(path: Path, limit: int) -> bytes:
    """The content of the regular file `path` (at most `limit` bytes, else InputError).

    A missing or unreadable file raises the OSError (callers word it: "not found", "cannot read").
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise InputError(f"{path}: {_size(st.st_size)} is larger than the {_size(limit)} allowed")
        chunks, total = [], 0
        while chunk := os.read(fd, min(MIB, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise InputError(f"{path}: grew past the {_size(limit)} allowed while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def is_regular(path: Path) -> bool:
    """An existing regular file (following links), without opening it: a pipe or device is not one."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


# Strings and comments (their brackets do not nest) or a bracket. TOML's and JSON's strings both fit.
_TOKENS = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]')


def nesting_depth(text: str) -> int:
    """The deepest nesting of [ ] and { } outside strings and comments (TOML or JSON)."""
    depth = deepest = 0
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth = max(depth - 1, 0)
    return deepest


def check_depth(path: Path | str, text: str, limit: int = MAX_DEPTH) -> None:
    """InputError if `text` nests tables/arrays/objects deeper than `limit`."""
    if (depth := nesting_depth(text)) > limit:
        raise InputError(f"{path}: nested {depth} levels deep; at most {limit} are allowed")


def read_text(path: Path, limit: int) -> str:
    """`read_bytes` decoded as UTF-8; InputError naming the line of the first byte that is not."""
    raw = read_bytes(path, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(f"{path}:{line}: not UTF-8 text") from None


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> object:
    """A JSON file read with `read_text` and `check_depth`; InputError when it is not JSON."""
    text = read_text(path, limit)
    check_depth(path, text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON ({e})") from None


def read_json_object(path: Path) -> dict:
    """A JSON object autorl wrote (a seed's outcome.json, a run's result.json), read as `read_json` reads;
    {} when it is missing, unreadable, not JSON or not an object (what a crash may leave)."""
    try:
        data = read_json(path)
    except (OSError, InputError):
        return {}
    return data if isinstance(data, dict) else {}


def read_toml(path: Path, limit: int = MAX_CONFIG_BYTES) -> dict:
    """A TOML file read with `read_text` and `check_depth`; InputError when it is not TOML."""
    text = read_text(path, limit)
    check_depth(path, text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: invalid TOML ({e})") from None
