"""A pytest plugin: each test's xdist worker, start and end (seconds since the epoch), one JSON line per test,
to see how the two workers share the suite and which one finishes last:

    PYTHONPATH=studies/suite-2026-11-29 TIMELINE_OUT=timeline.jsonl \\
        .venv/bin/python -m pytest -q -p no:cacheprovider -p timeline
"""

from __future__ import annotations

import json
import os
import time

import pytest

OUT = os.environ.get("TIMELINE_OUT", "timeline.jsonl")
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    yield
    with open(OUT, "a") as f:  # each worker appends whole lines
        f.write(json.dumps({"id": item.nodeid, "worker": WORKER, "start": start, "end": time.time()}) + "\n")
