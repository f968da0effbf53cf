"""Following a prime-rl run: console step lines, prime-rl's metrics.jsonl, and which component died.

While it runs, `PrimeRLFollower` (the Launch's parse_line) turns the orchestrator's console lines
(`Step N | 1.2s | Reward 0.41 | ...`) into progress step events; the first one starts the budget clock (the
orchestrator prints it when it hands batch 1 to the trainer: training has begun). It also follows prime-rl's
metrics.jsonl and copies per-step figures into our run directory's metrics.jsonl. After the run,
`attribute_crash` names the component that died (inference | orchestrator | trainer) with its log tail.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOG_TAIL_LINES = 30
COMPONENTS = ("inference", "orchestrator", "trainer")

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# `HH:MM:SS SUCCESS Step 3 |    1.2s | Reward 0.4102 | Trainable ...` (loguru; colours stripped first).
_STEP_RE = re.compile(
    r"^(?:\[[^\]]*\]:?\s*)?(?:\d{2}:\d{2}:\d{2}\s+)?(?:[A-Z]+\s+)?Step (\d+) \|\s*([^|]*?)\s*\|"
    r"\s*Reward ([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"
)
_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


def parse_duration(text: str) -> float | None:
    """prime-rl's format_time: `850ms`, `1.2s`, `2m 5s`, `1h 3m`, `1d 2h` -> seconds."""
    parts = _DURATION_RE.findall(text)
    if not parts:
        return None
    return sum(float(n) * _DURATION_UNITS[unit] for n, unit in parts)


@dataclass
class StepLine:
    step: int
    reward: float
    seconds: float | None


def parse_step_line(line: str) -> StepLine | None:
    """The orchestrator's per-step line (console or orchestrator.log), or None for any other line.

    `Evaluated <env> (Step N) | ...` lines, the trainer's `Step N | ... | Loss ...` lines and JSON log
    records without a step message are not step lines.
    """
    text = strip_ansi(line).strip()
    if text.startswith("{"):  # log.json_logging = true: one JSON record a line
        try:
            text = str(json.loads(text).get("message", ""))
        except (json.JSONDecodeError, AttributeError):
            return None
    m = _STEP_RE.match(text)
    if m is None:
        return None
    return StepLine(int(m.group(1)), float(m.group(3)), parse_duration(m.group(2)))


def merge_metrics(rows: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """prime-rl's metrics.jsonl rows merged by step (the trainer and the orchestrator each log several rows
    per step). Both log `time/step`: the trainer's (its row also has `time/forward_backward`) is kept as
    `trainer/time/step`, the orchestrator's as `orchestrator/time/step`."""
    merged: dict[int, dict[str, Any]] = {}
    for row in rows:
        step = row.get("step")
        if not isinstance(step, int | float) or isinstance(step, bool):
            continue
        into = merged.setdefault(int(step), {})
        trainer_time_row = "time/forward_backward" in row
        for key, value in row.items():
            if key == "step":
                continue
            if key == "time/step":
                key = "trainer/time/step" if trainer_time_row else "orchestrator/time/step"
            into[key] = value
    return merged


def reward_mean(metrics: dict[str, Any]) -> float | None:
    """Mean reward of the trained-on rollouts: `train/agg/effective/<agent>/reward/mean`, over agents."""
    return agent_mean(metrics, "reward")


def agent_mean(metrics: dict[str, Any], name: str) -> float | None:
    """`train/agg/<subset>/<agent>/<name>/mean` averaged over agents, the trained-on (`effective`) subset
    first, else `all` (the reward, the share of truncated completions `is_truncated`)."""
    for subset in ("effective", "all"):
        pattern = re.compile(rf"^train/agg/{subset}/[^/]+/{name}/mean$")
        values = [v for k, v in metrics.items() if pattern.match(k) and isinstance(v, int | float)]
        if values:
            return sum(values) / len(values)
    return None


def our_row(step: int, metrics: dict[str, Any]) -> dict[str, Any]:
    """One merged step in the shape the embedded backend writes (its key names, where prime-rl logs the same
    quantity). `seconds` is the trainer's step time (waiting for the batch included: the pipeline's cycle)."""
    seconds = metrics.get("trainer/time/step", metrics.get("orchestrator/time/step"))
    rollouts = metrics.get("progress/rollouts")
    reward = reward_mean(metrics)
    return {
        "step": step,
        "reward_mean": reward,
        "reward": reward,
        "loss": metrics.get("loss/mean"),
        "lr": metrics.get("optim/lr"),
        "seconds": seconds,
        "samples_per_s": rollouts / seconds if isinstance(rollouts, int | float) and seconds else None,
        "grad_norm": metrics.get("optim/grad_norm"),
        "mismatch_kl": metrics.get("mismatch_kl/all/mean"),
        "entropy": metrics.get("entropy/all/mean"),
        "truncated_frac": agent_mean(metrics, "is_truncated"),
        "peak_memory_gb": metrics.get("perf/peak_memory"),
    }


def trainer_steps(merged: dict[int, dict[str, Any]]) -> int:
    """Completed trainer steps: the highest step with a trainer loss row."""
    return max((step for step, m in merged.items() if "loss/mean" in m), default=0)


class PrimeRLFollower:
    """The Launch's parse_line: a console line of `rl` -> a progress event (or None).

    Each call also reads what prime-rl appended to its metrics.jsonl since the last call, and appends every
    step that now has both its trainer and its orchestrator figures to our metrics.jsonl. A `step` event
    carries `step` = trainer steps completed so far (what the summary counts), plus the batch's reward.
    """

    def __init__(self, primerl_run_dir: Path, out_metrics: Path) -> None:
        self.source = Path(primerl_run_dir) / "metrics.jsonl"
        self.out = Path(out_metrics)
        self.offset = 0
        self.partial = ""
        self.rows: list[dict[str, Any]] = []
        self.written: set[int] = set()
        self.reported = 0  # trainer steps already reported; nothing is reported before step 1

    def poll(self) -> dict[int, dict[str, Any]]:
        try:
            with open(self.source, encoding="utf-8", errors="replace") as f:
                f.seek(self.offset)
                chunk = f.read()
                self.offset = f.tell()
        except OSError:
            chunk = ""
        text = self.partial + chunk
        lines = text.split("\n")
        self.partial = lines.pop()  # an incomplete last line waits for the next call
        for line in lines:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                self.rows.append(row)
        merged = merge_metrics(self.rows)
        complete = sorted(s for s, m in merged.items() if "loss/mean" in m and reward_mean(m) is not None)
        new = [s for s in complete if s not in self.written]
        if new:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            with open(self.out, "a", encoding="utf-8") as f:
                for step in new:
                    f.write(json.dumps(our_row(step, merged[step])) + "\n")
                    self.written.add(step)
        return merged

    def __call__(self, line: str) -> dict[str, Any] | None:
        merged = self.poll()
        done = trainer_steps(merged)
        parsed = parse_step_line(line)
        if parsed is None and done <= self.reported:
            return None
        event: dict[str, Any] = {"event": "step", "step": done}
        if done in merged:
            event.update(
                {k: v for k, v in our_row(done, merged[done]).items() if v is not None and k != "step"}
            )
        if parsed is not None:
            event.update({"batch": parsed.step, "reward": parsed.reward})
            if parsed.seconds is not None:
                event["batch_seconds"] = parsed.seconds
        self.reported = done
        return event


_FAILED_RE = re.compile(r"Error: (.+?) failed with exit code (-?\d+)")


def _failed_log(logs: Path, name: str) -> tuple[str, Path]:
    """The component a launcher error line names, and its log. `Trainer` -> trainer.log; an environment
    server (`Train env server gsm8k`) serves the orchestrator: envs/train/gsm8k.log."""
    lowered = name.lower()
    if m := re.fullmatch(r"(train|eval) env server (.+)", lowered):
        return "orchestrator", logs / "envs" / m.group(1) / f"{name.split(' ', 3)[-1]}.log"
    for component in COMPONENTS:
        if lowered.startswith(component):
            return component, logs / f"{component}.log"
    return lowered, logs / f"{lowered}.log"


def tail(path: Path, n: int = LOG_TAIL_LINES) -> list[str]:
    if not path.is_file():
        return []
    lines = strip_ansi(path.read_text(errors="replace")).splitlines()
    return [line.rstrip() for line in lines[-n:]]


def attribute_crash(prime_dir: Path, console_log: Path | None) -> tuple[str, list[str]] | None:
    """Which component died, with the tail of its log; None when nothing failed on its own.

    First evidence: the launcher's `Error: <Component> failed with exit code N` console line, before any
    `Received SIGTERM` (after our stop, components exiting are not crashes). Else, unless we stopped the
    run: the component logs under logs/latest/ with a traceback, the earliest written first (a component
    that dies takes the others down after it).
    """
    logs = prime_dir / "logs" / "latest"
    console = (
        strip_ansi(console_log.read_text(errors="replace")) if console_log and console_log.is_file() else ""
    )
    before_stop, stopped, _ = console.partition("Received SIGTERM")
    for m in _FAILED_RE.finditer(before_stop):
        if int(m.group(2)) < 0:  # a negative code is a signal: someone else stopped it
            continue
        component, log = _failed_log(logs, m.group(1))
        return component, tail(log)
    if stopped:
        return None
    candidates = []
    for component in COMPONENTS:
        log = logs / f"{component}.log"
        if log.is_file() and "Traceback (most recent call last)" in log.read_text(errors="replace"):
            candidates.append((log.stat().st_mtime, component))
    if not candidates:
        return None
    component = min(candidates)[1]
    return component, tail(logs / f"{component}.log")
