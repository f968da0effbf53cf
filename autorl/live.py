"""Live training progress: a rich status line on a terminal, else throttled plain lines (agents grep logs)."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

PLAIN_EVERY_S = 15.0  # a plain progress line at most this often when stdout is not a terminal


class LiveView:
    def __init__(self, budget_s: float, label: str = "") -> None:
        self.budget_s = budget_s
        self.label = label
        self.tty = sys.stdout.isatty()
        self.step: int | None = None
        self.reward: float | None = None
        self.elapsed = 0.0
        self.last_plain = 0.0
        self.live: Live | None = None

    def __enter__(self) -> LiveView:
        if self.tty:
            self.live = Live(self._text(), console=Console(), refresh_per_second=4, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.update(self._text())
            self.live.__exit__(None, None, None)
            self.live = None

    def _line(self) -> str:
        step = "-" if self.step is None else str(self.step)
        reward = "-" if self.reward is None else f"{self.reward:.3f}"
        return f"{self.label} | train {self.elapsed:5.0f}/{self.budget_s:g} s | step {step} | reward {reward}"

    def _text(self) -> Text:
        return Text(self._line())

    def update(self, event: dict[str, Any], training_seconds: float) -> None:
        self.elapsed = training_seconds
        kind = event.get("event")
        if kind == "step":
            self.step = event.get("step", self.step)
            reward = event.get("reward", event.get("reward_mean"))
            self.reward = float(reward) if isinstance(reward, int | float) else self.reward
        if self.live is not None:
            self.live.update(self._text())
            return
        now = time.monotonic()
        if kind == "ready":
            print(f"[train] {self.label} | model loaded, training clock started", flush=True)
        elif kind == "step" and now - self.last_plain >= PLAIN_EVERY_S:
            self.last_plain = now
            print(f"[train] {self._line()}", flush=True)
