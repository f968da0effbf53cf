"""What a trial says: its log lines, the summary block after `---`, a refusal, and its exit codes."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any

from autorl.engine import warm
from autorl.engine.process import Stop
from autorl.engine.seed import SeedResult
from autorl.io import atomic

EXIT_OK, EXIT_CRASH, EXIT_INVALID = 0, 1, 2
EXIT_SIGNAL = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + the signal, as a shell reports it


def say(msg: str) -> None:
    print(f"[trial] {msg}", flush=True)


def print_summary(lines: dict[str, str], run_dir: Path | None) -> None:
    block = "---\n" + "".join(f"{k}: {v}\n" for k, v in lines.items())
    sys.stdout.write(block)
    sys.stdout.flush()
    if run_dir is not None:
        try:
            atomic.write_text(run_dir / "summary.txt", block)
        except OSError as e:
            say(f"summary.txt not saved: {e.strerror or e} (the summary above is complete)")


def invalid(message: str) -> int:
    """A refusal: `status: invalid`, always exit 2, nothing run, nothing recorded."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    print_summary({"status": "invalid"}, None)
    return EXIT_INVALID


def report_seed(result: SeedResult) -> None:
    """A finished seed's lines, printed as it finishes."""
    for line in result.log:
        say(line)
    if result.error:
        print(result.error, flush=True)


class Signals:
    """SIGINT/SIGTERM during a trial: the first stops it gracefully, a second kills every child at once. On
    the way out of a stopped run, the warm starters its seeds left kept for the next run end too, whenever
    the signal came (warm.end_kept: one that came after the seeds finished found them kept already)."""

    def __init__(self, stop: Stop) -> None:
        self.stop = stop
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> Signals:
        if threading.current_thread() is threading.main_thread():
            for sig in EXIT_SIGNAL:
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: object) -> None:
        if not self.stop.request(signum):
            return
        name = signal.Signals(signum).name
        if not self.stop.hard.is_set():
            print(
                f"\n[trial] {name}: stopping (running seeds save their weights; no new seed or eval "
                "starts). Send it again to kill everything now.",
                file=sys.stderr,
                flush=True,
            )
        else:
            print(f"\n[trial] {name} again: killing every process of the trial", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self.stop:
            warm.end_kept()
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
