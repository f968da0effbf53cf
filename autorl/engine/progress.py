"""The line protocol between a training child and the trial runner.

A child prints one marker line per event on stdout; the runner reads them to start the budget clock,
show progress, detect hangs and count steps. Everything else the child prints goes to run.log untouched.

Events: ``compiling`` (start-up: the child compiles its steps before ``ready``; no clock runs yet), ``ready``
(model loaded, training starts: the budget clock starts here), ``step`` (one finished
optimizer step: step, reward, loss, lr, seconds, samples_per_s, ...), ``pause``/``resume`` (time spent
between them, e.g. in-training evaluation, is not charged to the budget), ``saved`` (weights written:
step, path), ``snapshot`` (a copy of the weights kept along the run for `autorl fidelity`: step, at_s,
path), ``rung`` (the run reached one of its rungs, autorl/record/rungs.py: rung, fraction, at_s, step,
and either ``rows`` (a JSONL of score rows the child wrote) or ``weights`` (weights for the runner to
evaluate), and ``go``: the file the runner creates when the child may go on; the child waits paused
between ``pause`` and ``resume`` meanwhile, and a runner that stops it sends SIGTERM instead), ``done``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MARKER = "@@autorl "


def emit(event: str, **fields: Any) -> None:
    sys.stdout.write(MARKER + json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def parse(line: str) -> dict[str, Any] | None:
    """The event of a marker line, or None for any other line (or a garbled marker)."""
    if not line.startswith(MARKER):
        return None
    try:
        event = json.loads(line[len(MARKER) :])
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) and "event" in event else None


def wait_for_go(go: Path, stopping: Callable[[], bool], poll_s: float = 0.02) -> bool:
    """In the child, after a ``rung`` event: wait until the runner creates `go` (True: train on) or a stop
    request arrives (False: the runner aborted it, or the trial is stopping)."""
    while not go.exists():
        if stopping():
            return False
        time.sleep(poll_s)
    return True
