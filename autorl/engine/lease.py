"""Slot leases: a seed holds the CPUs and the GPU share of its slot while it runs, machine-wide.

A trial plans its slots for the whole machine (autorl/engine/slots.py). Two trials at once on one machine
(several agents on one ledger, or a second `run.py` started by mistake) would each plan the same cores and
run their seeds on top of each other: both slower, both at a wall-clock budget, so both scored low for the
machine's sake. A lease prevents that: before a seed starts, it takes a lock on each CPU its slot is pinned
to and on its share of each of its GPUs (`GPU_UNITS` per GPU: a seed with `gpu_share` s takes s x
GPU_UNITS of them, all of them without a share); a seed whose CPUs or GPU share another seed holds waits
until they are free, and says how long. An unpinned slot (a plan oversubscribed on purpose with
`--parallel`, a platform without CPU affinity) claims no CPU.

The locks are `flock`s on files in `.autorl/locks/` (each holder writes its pid and seed directory into the
file it holds, so a waiting seed can say who it waits for): the kernel releases them when the holder ends,
however it ends, so a killed trial never leaves a slot taken. A seed takes all its locks or none (it
releases what it got and tries again), so two seeds never hold each other's half and wait forever.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from autorl.engine.backend import Slot
from autorl.io import paths

GPU_UNITS = 20  # a GPU's memory in leases of 5%: k seeds sharing a GPU take GPU_UNITS // k each
POLL_S = 0.5  # how often a waiting seed tries again


def lock_dir() -> Path:
    return paths.state_dir() / "locks"


def wanted(slot: Slot) -> list[tuple[list[str], int]]:
    """What `slot` must hold: groups of lock names, and how many of each group (every CPU lock, then for each
    GPU the share's count of its unit locks)."""
    groups = [([f"cpu-{c}"], 1) for c in sorted(slot.cpus)]
    units = GPU_UNITS if slot.gpu_share is None else max(1, int(slot.gpu_share * GPU_UNITS + 1e-9))
    for g in sorted(slot.gpus):
        groups.append(([f"gpu-{g}-{u:02d}" for u in range(GPU_UNITS)], min(units, GPU_UNITS)))
    return groups


def _take(name: str, who: str) -> IO[str] | None:
    """The lock `name`, held (its file names `who`), or None when another holds it."""
    f = open(lock_dir() / f"{name}.lock", "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    f.seek(0)
    f.truncate()
    f.write(who + "\n")
    f.flush()
    return f


def holder(name: str) -> str:
    """Who holds the lock `name`, as its holder wrote it ("" when unknown)."""
    try:
        return (lock_dir() / f"{name}.lock").read_text().strip()
    except OSError:
        return ""


def _try_all(groups: list[tuple[list[str], int]], who: str) -> tuple[list[IO[str]], str]:
    """Every lock of `groups` ([] when one group could not be filled: what was taken is released) and,
    when not, the name of a lock it waits for."""
    held: list[IO[str]] = []
    for names, count in groups:
        got = 0
        for name in names:
            if (f := _take(name, who)) is not None:
                held.append(f)
                got += 1
                if got == count:
                    break
        if got < count:
            for f in held:
                f.close()  # closing the file releases its flock
            return [], names[0]
    return held, ""


@contextmanager
def hold(slot: Slot, seed_dir: Path, stop: object = None) -> Iterator[tuple[float, str] | None]:
    """Hold `slot`'s CPUs and GPU share for the with-block; yields (seconds waited, who it waited for: ""
    when it did not), or None when `stop` (a truthy autorl.engine.process.Stop) came while it waited."""
    lock_dir().mkdir(parents=True, exist_ok=True)
    who = f"pid {os.getpid()} {seed_dir}"
    groups = wanted(slot)
    start = time.monotonic()
    waited_for = ""
    while True:
        held, blocked = _try_all(groups, who)
        if held or not groups:
            break
        waited_for = waited_for or holder(blocked) or blocked
        if stop:
            yield None
            return
        time.sleep(POLL_S)
    try:
        yield time.monotonic() - start, waited_for
    finally:
        for f in held:
            f.close()
