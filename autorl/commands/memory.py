"""The memory of what was tried (`autorl status`'s `tried` block): every key a trial changed against its
reference, with the value tried and the outcome, read from the two trials' run directories."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from autorl.engine.cost import aborted
from autorl.engine.track import Track
from autorl.io import inputs, paths
from autorl.io.tomlcheck import ConfigError, flatten
from autorl.record.context import ResearchContext, best_kept, is_quick
from autorl.record.row import LedgerRow

MAX_TRIED_KEYS = 8  # the memory of what was tried: the keys changed most recently...
MAX_TRIED_VALUES = 4  # ...each with its latest values tried
FAILED = ("crash", "timeout")  # ended so: `tried` lists it against the reference it would have had


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A trial's config (runs/<run_id>/config.toml) as dotted keys: as written, and as this commit's schema
    reads it (Track.config_keys: defaults and inherited values filled in, sources by name; None where the
    schema refuses the file)."""

    written: dict[str, Any]
    ran: dict[str, Any] | None

    @classmethod
    def read(cls, run_id: str, track: Track[Any] | None) -> RunConfig | None:
        """None when the file is gone or unreadable."""
        return cls.of(paths.run_config_file(run_id), track)

    @classmethod
    def of(cls, path: Path, track: Track[Any] | None) -> RunConfig | None:
        """The config file at `path`; None when it is gone or unreadable."""
        try:
            written = flatten(inputs.read_toml(path))
        except (OSError, inputs.InputError):
            return None
        try:
            ran = track.config_keys(path) if track is not None else None
        except ConfigError:  # the schema refuses it now: compared as written
            ran = None
        return cls(written, ran)


def differences(
    mine: RunConfig, theirs: RunConfig, track: Track[Any] | None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Both configs as the schema reads them where it reads both (an inherited value is the value it
    inherited, not None), else both as written, and the keys whose values differ, sorted; a key that only
    followed the key it inherits from (a source's temperature after the orchestrator's) is left out."""
    now, then = (
        (mine.ran, theirs.ran)
        if mine.ran is not None and theirs.ran is not None
        else (mine.written, theirs.written)
    )

    def followed(key: str) -> bool:
        parent = track.inherited_from(key) if track is not None else None
        return parent is not None and now.get(key) == now.get(parent) and then.get(key) == then.get(parent)

    keys = sorted(set(now) | set(then))
    return now, then, [k for k in keys if now.get(k) != then.get(k) and not followed(k)]


def tried(rows: Sequence[LedgerRow], track: Track[Any] | None = None) -> list[dict[str, Any]]:
    """The memory of what was tried: every key a trial changed against its reference (both configs from the
    run directories, as `track` ran them), with the value tried, the outcome and the other keys the trial
    changed with it (`with`: a combination's outcome is not the key's alone), the most recently changed keys
    first. A crash or timeout counts against the reference it would have been compared with (the best kept
    before it); a void trial (interrupted, contended: it measured nothing) is left out."""
    by_key: dict[str, list[dict[str, Any]]] = {}
    last_seen: dict[str, int] = {}
    configs: dict[str, RunConfig | None] = {}

    def config(run_id: str) -> RunConfig | None:
        """Each run's config read once (a reference serves many trials)."""
        if run_id not in configs:
            configs[run_id] = RunConfig.read(run_id, track)
        return configs[run_id]

    for i, r in enumerate(rows):
        ref = r.reference_run or would_have_compared(rows[:i], r)
        if not ref or r.void:
            continue
        mine_file, theirs_file = config(r.run_id), config(ref)
        if mine_file is None or theirs_file is None:
            continue
        mine, theirs, changed = differences(mine_file, theirs_file, track)
        for key in changed:
            last_seen[key] = i
            by_key.setdefault(key, []).append(
                {
                    "run_id": r.run_id,
                    "from": theirs.get(key),
                    "value": mine.get(key),
                    # the early abort: at a rung; a trial that failed: how
                    "verdict": "aborted" if aborted(r) else r.status if r.status in FAILED else r.verdict,
                    "delta": r.delta,
                    "decision": r.decision,
                    "with": [k for k in changed if k != key],
                }
            )
    return [{"key": k, "tries": by_key[k]} for k in sorted(by_key, key=last_seen.__getitem__, reverse=True)]


def would_have_compared(before: Sequence[LedgerRow], row: LedgerRow) -> str:
    """The reference a crash or timeout (no comparison, no reference_run) would have been compared with:
    the best kept trial of its context among the rows before it ("" for other rows, or none)."""
    if row.status not in FAILED or is_quick(row):
        return ""
    best = best_kept(before, ResearchContext.of(row))
    return best.run_id if best is not None else ""


def with_text(keys: Sequence[str]) -> str:
    """The other keys a try changed, short (`trainer.optim.lr` -> `lr`; two named, then how many more)."""
    if not keys:
        return ""
    named = ", ".join(k.rsplit(".", 1)[-1] for k in keys[:2])
    return f" (with {named}" + (f" +{len(keys) - 2} more" if len(keys) > 2 else "") + ")"


def _shown(value: Any) -> Any:
    """A tried list's value as `autorl report` writes it: `-` where the config does not set the key."""
    return "-" if value is None else value


def tried_lines(tried: Sequence[Mapping[str, Any]]) -> list[str]:
    """The memory of what was tried, bounded: MAX_TRIED_KEYS keys, each with its latest values."""
    if not tried:
        return []
    out = [
        "tried (key: reference's -> tried value (-: not set): verdict, decision; the latest changed key "
        "first, its values oldest first; never retry a discarded value alone; `with k`: changed together "
        "with k)"
    ]
    for t in tried[:MAX_TRIED_KEYS]:
        tries = [  # each try from its own reference's value: after a keep of the key, that is the kept value
            f"{_shown(x['from'])} -> {_shown(x['value'])}: {x['verdict'] or '-'}"
            + (f" {x['delta']:+.4f}" if x["delta"] is not None else "")
            + f", {x['decision']}"
            + with_text(x.get("with") or [])
            for x in t["tries"][-MAX_TRIED_VALUES:]
        ]
        out.append(f"  {t['key']}: " + "; ".join(tries))
    if len(tried) > MAX_TRIED_KEYS:
        out.append(f"  ... {len(tried) - MAX_TRIED_KEYS} more keys (autorl status --json)")
    return out
