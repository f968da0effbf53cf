"""Claims: which trials are training right now, on this ledger, and what they try.

In a swarm (AUTORL_AGENT set) a trial of a config the context already ran is refused too, unless it says it
re-runs that trial (run.py --rerun RUN_ID: program.md's labelled re-run, a contended trial; an interrupted
one was never measured and runs again without it).

Before its seeds start, a trial claims its exact config in its research context: a file in
`.autorl/claims/` next to the ledger's runs, named by the context and the config's hash, holding the run
id, who runs it (`AUTORL_AGENT`, the process id and the host), when it started, its description and its diff
against the baseline. A second trial of the same config in the same context while the first runs (another
agent had the same idea) is refused with the run id that has it; `autorl status` lists the claims, so every
agent sees what the others are trying. The claim goes when its trial ends (its row is then in the ledger);
a claim whose process is gone (a trial killed hard) is stale: read as absent and replaced by the next claim.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import psutil

from autorl.io import atomic, paths
from autorl.record.context import ResearchContext
from autorl.record.row import AGENT_VAR, LedgerRow


class ClaimError(Exception):
    """The config is already training in this context: the message names the trial that has it."""


@dataclass(frozen=True)
class Claim:
    """A trial training now: one file in claims_dir()."""

    run_id: str
    config_hash: str
    track: str
    budget: float | None
    agent: str
    pid: int
    host: str
    started: str  # ISO time
    description: str
    diff: str  # the config against the context's baseline (config.diff)

    @property
    def who(self) -> str:
        return (
            (f"{self.agent}, " if self.agent else "")
            + f"pid {self.pid}"
            + (f" on {self.host}" if self.host != socket.gethostname() else "")
        )

    def alive(self) -> bool:
        """Whether the process that claimed it still runs (on another host: assumed so)."""
        if self.host != socket.gethostname():
            return True
        try:
            return psutil.Process(self.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def claims_dir() -> Path:
    return paths.state_dir() / "claims"


def claim_path(context: ResearchContext, config_hash: str) -> Path:
    key = f"{context.track}|{context.eval_hash}|{context.harness_hash}|{context.budget}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return claims_dir() / f"{context.track}-{digest}-{config_hash[:16]}.json"


def read_claim(path: Path) -> Claim | None:
    try:
        return Claim(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None  # gone meanwhile, or half-written by a process killed mid-write: not a claim


def claim(context: ResearchContext, run_id: str, config_hash: str, description: str, diff: str) -> Claim:
    """Claim the config for `run_id`; ClaimError when a live trial of this context already has it."""
    path = claim_path(context, config_hash)
    path.parent.mkdir(parents=True, exist_ok=True)
    mine = Claim(
        run_id=run_id,
        config_hash=config_hash,
        track=context.track,
        budget=context.budget,
        agent=os.environ.get(AGENT_VAR, ""),
        pid=os.getpid(),
        host=socket.gethostname(),
        started=datetime.now().isoformat(timespec="seconds"),
        description=description,
        diff=diff,
    )
    with open(path.parent / ".lock", "a") as lock:  # one claimer at a time: a stale claim is taken once
        fcntl.flock(lock, fcntl.LOCK_EX)
        held = read_claim(path)
        if held is not None and held.alive():
            raise ClaimError(
                f"this exact config is already training in {held.run_id} ({held.who}, since "
                f"{held.started}: {held.description!r}); wait for its row in results.tsv "
                "(`uv run autorl status`), or try another idea"
            )
        atomic.write_text(path, json.dumps(asdict(mine), indent=1) + "\n")
    return mine


def already_ran(
    rows: Sequence[LedgerRow], context: ResearchContext, config_hash: str, rerun: str | None
) -> str | None:
    """In a swarm (AUTORL_AGENT set): why a trial of `config_hash` is refused when a trial of the context
    already ran it (its row is the outcome; an interrupted one was never measured), unless it says it re-runs
    that trial (`rerun`: its run id or a prefix). None: it may run. One agent alone follows program.md's
    re-run rules instead; a `rerun` that names no trial of this config in the context is refused anywhere
    (the flag says what the trial is: it must be so)."""
    same = [r for r in context.rows(rows) if r.config_hash == config_hash and r.status != "interrupted"]
    if rerun is not None:
        if rerun and any(r.run_id.startswith(rerun) for r in same):
            return None
        where = (
            f"it ran in {same[-1].run_id}: say --rerun {same[-1].run_id}"
            if same
            else "it has not run in this context: its first trial needs no --rerun"
        )
        return f"--rerun {rerun!r} names no trial of this context that ran this exact config ({where})"
    if not os.environ.get(AGENT_VAR) or not same:
        return None
    last = same[-1]
    outcome = f"{last.verdict or last.status}, {last.decision}"
    return (
        f"this exact config already ran in {last.run_id} ({last.agent or 'no agent'}: {outcome}): "
        f"its row is the outcome; a planned re-run of it says --rerun {last.run_id}"
    )


@contextmanager
def held(
    context: ResearchContext, run_id: str, config_hash: str, description: str, diff: str
) -> Iterator[Claim]:
    """The config claimed for the block (raises ClaimError when another trial has it), released at its end
    however it ends: the trial's row is in the ledger by then, or it recorded none."""
    mine = claim(context, run_id, config_hash, description, diff)
    try:
        yield mine
    finally:
        release(mine, context)


def release(mine: Claim, context: ResearchContext) -> None:
    """Remove the claim when it is still this trial's (a stale one taken over is another's now)."""
    path = claim_path(context, mine.config_hash)
    held = read_claim(path)
    if held is not None and held.run_id == mine.run_id and held.pid == mine.pid:
        path.unlink(missing_ok=True)


def in_flight() -> list[Claim]:
    """The live claims, oldest first."""
    if not claims_dir().is_dir():
        return []
    found = [c for p in claims_dir().glob("*.json") if (c := read_claim(p)) is not None and c.alive()]
    return sorted(found, key=lambda c: (c.started, c.run_id))
