"""The pinned prime-rl `rl` schema as a key list (prime-rl 559b447: primerl_keys.txt, next to this file).

`is_primerl_key` answers whether a dotted key exists there: train.toml's keys that autorl does not model are
checked against it, and so is every key the prime-rl backend renders. Cheap to import (no torch).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from autorl.io.tomlcheck import _match, dotted, generic_key

PRIMERL_KEYS_FILE = Path(__file__).with_name("primerl_keys.txt")


@cache
def primerl_schema_keys() -> frozenset[str]:
    """Every dotted key of prime-rl's `rl` schema at the pinned commit (`*` = list index or free-form)."""
    keys = set()
    for line in PRIMERL_KEYS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(line)
    return frozenset(keys)


@cache
def _wildcard_keys() -> tuple[tuple[tuple[str, ...], bool], ...]:
    """(pattern, open) for keys with `*`. An open pattern is a free-form table (a `*` key that nothing
    extends, like `inference.vllm.*`): anything below it is a key too."""
    keys = primerl_schema_keys()
    extended = {k.rsplit(".", 1)[0] for k in keys if "." in k}  # keys that have a key below them
    return tuple((tuple(k.split(".")), k.endswith(".*") and k not in extended) for k in keys if "*" in k)


def is_primerl_key(key: str) -> bool:
    """Is `key` (dotted, list items as indices: `orchestrator.train.source.0.name`) in the pinned schema?

    A key under a free-form table (`inference.vllm.<any vLLM arg>`, `env.taskset.<taskset field>`) counts.
    """
    path = tuple(key.split("."))
    if dotted(path) in primerl_schema_keys() or dotted(generic_key(path)) in primerl_schema_keys():
        return True
    for pattern, is_open in _wildcard_keys():
        n = len(pattern)
        if is_open and len(path) >= n and _match(list(pattern), path[:n]):
            return True
        if _match(list(pattern), path):
            return True
    return False
