"""TensorBoard event files for every seed of a run, written after it from the files every backend already
leaves: metrics.jsonl (one row per optimizer step), the seed's eval.jsonl and rungs.jsonl. The training loop
pays nothing, and a seed that ran on Ray has the same files here once its trial ends.

`runs/<run>/tb/<seed>_<description>/` holds one seed's events, so `tensorboard --logdir runs` lists each seed
as `<run>/tb/seed-0_<description>` and overlays any trials. Two tag families carry each metric: `step/<key>`
against the optimizer step and `time/<key>` against the training clock in milliseconds (a wall-clock budget
is read in seconds; TensorBoard's steps are integers). The final eval score is `eval/score` (with
`eval/<env>` per environment) at the seed's last step and training time, a rung's score `rung/score` where it
was taken. A curve longer than MAX_POINTS is thinned evenly (its last point kept), so a file stays small:
about 46 bytes a point, MAX_POINTS x metrics x 2 families at most (an LLM seed: about 1.2 MB).
"""

from __future__ import annotations

import contextlib
import math
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from autorl.io.jsonl import eval_rows_problem, read_jsonl
from autorl.record import rungs, stats

TB_DIR = "tb"  # under a run directory
MAX_POINTS = 500  # per tag: an LLM seed's 26 metrics x 2 families come to about 1.2 MB
NAME_CHARS = 40  # of the description in a seed's event directory name


def write_quietly(run_dir: Path, description: str, say: Callable[[str], None]) -> None:
    """`write_run` for a run that just ended: a tracker that fails (the package missing, a full disk) costs a
    warning line, never the run's row or its exit."""
    try:
        write_run(run_dir, description)
    except Exception as exc:  # noqa: BLE001 (whatever the writer raises, the run is recorded already)
        say(f"warning: TensorBoard events not written ({type(exc).__name__}: {exc})".splitlines()[0])


def write_run(run_dir: Path, description: str = "") -> list[Path]:
    """The event directories of every seed under `run_dir` (a trial's seed-<k>, a confirm's or a fidelity
    run's <side>/seed-<k>), written anew; [] when no seed left metrics."""
    out = run_dir / TB_DIR
    shutil.rmtree(out, ignore_errors=True)
    written = []
    for seed_dir in sorted(run_dir.rglob("seed-*")):
        if not seed_dir.is_dir() or TB_DIR in seed_dir.relative_to(run_dir).parts:
            continue
        name = "-".join(seed_dir.relative_to(run_dir).parts) + _suffix(description)
        if write_seed(seed_dir, out / name):
            written.append(out / name)
    return written


def write_seed(seed_dir: Path, out: Path) -> bool:
    """One seed's events into `out` (False: the seed left no metrics)."""
    rows = [r for r in read_jsonl(seed_dir / "metrics.jsonl") if isinstance(r.get("step"), int | float)]
    if not rows:
        return False
    last_step, last_ms = int(rows[-1]["step"]), _ms(rows[-1])
    with event_file(out) as add:
        for row in thinned(rows, MAX_POINTS):
            for key, value in _numbers(row, _clock_key(row)):
                add(f"step/{key}", value, int(row["step"]))
                add(f"time/{key}", value, _ms(row))
        for tag, value in final_scores(seed_dir).items():
            add(f"step/{tag}", value, last_step)
            add(f"time/{tag}", value, last_ms)
        for rung in rungs.read(seed_dir):
            if rung.eval_score is not None:
                add("step/rung/score", rung.eval_score, rung.step)
                add("time/rung/score", rung.eval_score, int(round(rung.at_s * 1000)))
    return True


@contextlib.contextmanager
def event_file(out: Path) -> Iterator[Callable[[str, float, int], None]]:
    """`add(tag, value, step)`: a scalar into a new event file in `out`, written as it comes. tensorboardX's
    record writer without SummaryWriter's queue and thread, which sent each scalar through a multiprocessing
    queue: an LLM seed's 10.7k scalars took 1.2 s there, 0.18 s here (2-core VM, 2026-12-04), paid by every
    trial before its summary prints."""
    writer_class, event, summary = tensorboardx()
    out.mkdir(parents=True, exist_ok=True)
    writer = writer_class(str(out / "events"), "")

    def add(tag: str, value: float, step: int) -> None:
        scalar = summary(value=[summary.Value(tag=tag, simple_value=value)])
        writer.write_event(event(wall_time=time.time(), step=step, summary=scalar))

    try:
        yield add
    finally:
        writer.close()  # flushes


def tensorboardx() -> tuple[Any, Any, Any]:
    """tensorboardX's EventsWriter and its Event and Summary protos, imported without torch where torch is not
    loaded yet. tensorboardX imports torch when it can, only to accept tensors as values; these are floats,
    and torch's import is a trial's slowest line after its seeds (3.2 of tensorboardX's 3.4 s on a 2-core VM,
    2026-11-28), paid before the summary prints and again on the way out of a trial stopped by a signal."""
    blocked = "torch" not in sys.modules and "tensorboardX" not in sys.modules
    if blocked:
        sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError meanwhile
    try:
        from tensorboardX import event_file_writer
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary
    finally:
        if blocked:
            del sys.modules["torch"]
    return event_file_writer.EventsWriter, Event, Summary


def final_scores(seed_dir: Path) -> dict[str, float]:
    """`eval/score` and `eval/<env>` of the seed's final eval ({} when it has none)."""
    rows = read_jsonl(seed_dir / "eval.jsonl")
    if not rows or eval_rows_problem(rows):
        return {}
    return {"eval/score": stats.eval_score(rows)} | {
        f"eval/{env}": score for env, score in stats.env_scores(rows).items()
    }


def thinned(rows: list[dict[str, Any]], most: int) -> list[dict[str, Any]]:
    """At most `most` rows, evenly spaced, the first and the last kept."""
    if len(rows) <= most:
        return rows
    picks = sorted({round(i * (len(rows) - 1) / (most - 1)) for i in range(most)})
    return [rows[i] for i in picks]


def _numbers(row: Mapping[str, Any], clock: str) -> Iterator[tuple[str, float]]:
    """The row's metrics: its numbers but the axes (the step and the training clock)."""
    for key, value in row.items():
        if key not in ("step", clock) and isinstance(value, int | float) and not isinstance(value, bool):
            if math.isfinite(value):
                yield key, float(value)


def _clock_key(row: Mapping[str, Any]) -> str:
    """Which key holds the training clock: `elapsed_s` (llm, whose `seconds` is the step's own time), else
    `seconds` (classic)."""
    return "elapsed_s" if "elapsed_s" in row else "seconds"


def _ms(row: Mapping[str, Any]) -> int:
    """The row's training time in milliseconds."""
    seconds = row.get(_clock_key(row), 0.0)
    return int(round(float(seconds) * 1000)) if isinstance(seconds, int | float) else 0


def _suffix(description: str) -> str:
    """`_` and the description as a directory name allows (letters, digits, `-._=`), cut to NAME_CHARS."""
    text = re.sub(r"[^A-Za-z0-9._=-]+", "_", description.strip()).strip("_")[:NAME_CHARS]
    return f"_{text}" if text else ""
