"""The line protocol between a training child and the trial runner.

A child prints one marker line per event on stdout; the runner reads them to start the budget clock,
show progress, detect hangs and count steps. Everything else the child prints goes to run.log untouched.

Events: ``ready`` (model loaded, training starts: the budget clock starts here), ``step`` (one finished
optimizer step: step, reward, loss, lr, seconds, samples_per_s, ...), ``pause``/``resume`` (time spent
between them, e.g. in-training evaluation, is not charged to the budget), ``saved`` (weights written:
step, path), ``snapshot`` (a copy of the weights kept along the run for `autorl fidelity`: step, at_s,
path), ``done``.
"""

from __future__ import annotations

import json
import sys
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
