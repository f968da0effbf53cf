"""Every process's CPU time (user + system, from /proc/PID/stat) sampled twice a second until a stop file
appears; then one JSON line per process: pid, command line, PYTEST_CURRENT_TEST from its environment at
start (where it had one), CPU seconds at its last sample. A process that lived under 0.5 s may be missed.
A process already running at the first sample (a kernel thread, a daemon) counts only what it used after it:
the first version wrote its CPU time since it started, and read the kernel's kdamond at 283 s, nearly all of
it from before the suite (studies/suite-2026-11-29/README.md).

    python3 procsample.py OUT.jsonl STOPFILE &   # then run the suite, then: touch STOPFILE
"""

from __future__ import annotations

import json
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def first_look(pid: str, cpu: float) -> dict:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        cmd = ""
    test = ""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(b"PYTEST_CURRENT_TEST="):
                    test = entry[len(b"PYTEST_CURRENT_TEST=") :].decode(errors="replace")
    except OSError:
        pass
    return {"pid": pid, "cmd": cmd, "test": test, "cpu": cpu}


def sample(seen: dict[tuple[str, str], dict], me: int, first_sweep: bool = False) -> None:
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK  # utime + stime
        key = (pid, fields[19])  # pid and start time: a reused pid is another process
        if key in seen:
            seen[key]["cpu"] = cpu - seen[key]["before"]
        else:
            before = cpu if first_sweep else 0.0
            seen[key] = first_look(pid, cpu - before) | {"before": before}


def main() -> None:
    out, stop = sys.argv[1], sys.argv[2]
    seen: dict[tuple[str, str], dict] = {}
    sample(seen, os.getpid(), first_sweep=True)
    while not os.path.exists(stop):
        sample(seen, os.getpid())
        time.sleep(0.5)
    sample(seen, os.getpid())
    with open(out, "w") as f:
        for record in seen.values():
            f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
