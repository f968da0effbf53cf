"""Live training progress, one line per running seed: rich on a terminal, else throttled plain lines
(agents grep logs)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

PLAIN_EVERY_S = 15.0  # a plain progress line per seed at most this often when stdout is not a terminal


@dataclass
class SeedLine:
    label: str
    step: int | None = None
    reward: float | None = None
    elapsed: float = 0.0
    last_plain: float = 0.0
    compiling: bool = False  # the child compiles its steps (start-up, before `ready`)


class LiveView:
    """The running seeds of a trial. `callback(index, label)` gives a seed's progress-event handler;
    `finish(index)` drops its line. Thread-safe: seeds report from the threads that run them."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.tty = sys.stdout.isatty()
        self.lines: dict[int, SeedLine] = {}
        self.lock = threading.Lock()
        self.live: Live | None = None

    def __enter__(self) -> LiveView:
        if self.tty:
            self.live = Live(self._render(), console=Console(), refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)
            self.live = None

    def _line(self, s: SeedLine) -> str:
        if s.compiling:
            return f"{s.label} | compiling its steps (start-up, before the training clock)"
        step = "-" if s.step is None else str(s.step)
        reward = "-" if s.reward is None else f"{s.reward:.3f}"
        return f"{s.label} | train {s.elapsed:5.0f}/{self.budget_s:g} s | step {step} | reward {reward}"

    def _render(self) -> Group:
        return Group(*(Text(self._line(s)) for _, s in sorted(self.lines.items())))

    def callback(self, index: int, label: str) -> Callable[[dict[str, Any], float], None]:
        with self.lock:
            self.lines[index] = SeedLine(label)

        def on_event(event: dict[str, Any], training_seconds: float) -> None:
            self.update(index, event, training_seconds)

        return on_event

    def finish(self, index: int) -> None:
        with self.lock:
            self.lines.pop(index, None)
            if self.live is not None:
                self.live.update(self._render())

    def update(self, index: int, event: dict[str, Any], training_seconds: float) -> None:
        with self.lock:
            s = self.lines.get(index)
            if s is None:
                return
            s.elapsed = training_seconds
            kind = event.get("event")
            s.compiling = kind == "compiling"
            if kind == "step":
                s.step = event.get("step", s.step)
                reward = event.get("reward", event.get("reward_mean"))
                s.reward = float(reward) if isinstance(reward, int | float) else s.reward
            if self.live is not None:
                self.live.update(self._render())
                return
            now = time.monotonic()
            if kind == "compiling":
                print(f"[train] {self._line(s)}", flush=True)
            elif kind == "ready":
                print(f"[train] {s.label} | model loaded, training clock started", flush=True)
            elif kind == "step" and now - s.last_plain >= PLAIN_EVERY_S:
                s.last_plain = now
                print(f"[train] {self._line(s)}", flush=True)
