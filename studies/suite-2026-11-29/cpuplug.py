"""A pytest plugin: each test's wall time and the whole machine's CPU time (all processes, from /proc/stat)
spent while it ran, with kdamond's share (the kernel's DAMON monitor; its pid found by name), one JSON line
per test. Run the suite serially (-n 0) on an otherwise idle machine, so that a test's CPU is its own:

    PYTHONPATH=studies/suite-2026-11-29 CPUPLUG_OUT=tests.jsonl \\
        .venv/bin/python -m pytest -q -p no:cacheprovider -n 0 -p cpuplug
"""

from __future__ import annotations

import json
import os
import time

import pytest

TICK = os.sysconf("SC_CLK_TCK")
OUT = open(os.environ.get("CPUPLUG_OUT", "cpu-by-test.jsonl"), "a")  # noqa: SIM115 (open for the session)


def machine_busy() -> float:
    """CPU seconds of every process since boot: /proc/stat's first line less idle and iowait."""
    with open("/proc/stat") as f:
        ticks = list(map(int, f.readline().split()[1:]))
    return (sum(ticks) - ticks[3] - ticks[4]) / TICK


def _kdamond_pid() -> str | None:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().startswith("kdamond"):
                    return pid
        except OSError:
            continue
    return None


KDAMOND = _kdamond_pid()


def kdamond() -> float:
    if KDAMOND is None:
        return 0.0
    with open(f"/proc/{KDAMOND}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # set-up, call and tear-down
    busy, kd, t0 = machine_busy(), kdamond(), time.monotonic()
    yield
    row = {
        "id": item.nodeid,
        "wall": round(time.monotonic() - t0, 2),
        "cpu": round(machine_busy() - busy, 2),
        "kd": round(kdamond() - kd, 2),
    }
    OUT.write(json.dumps(row) + "\n")
    OUT.flush()
