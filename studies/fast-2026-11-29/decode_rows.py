"""What a compiled decode step of the shipped tiny model costs by the number of rows it decodes, one thread:
does dropping the rows that already ended (a quarter of a default batch's decode rows, docs/verified.md's
one-core step) pay? One line per row count: the median microseconds of a decode step, and per row.

    .venv/bin/python studies/fast-2026-11-29/decode_rows.py [REPEATS] [skip-guards]

`skip-guards` times the steps under torch.compiler.set_stance(skip_guard_eval_unsafe=True) (dynamo then runs
none of the step's guards: what they cost; unsafe for the product as such, a measurement only).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator

import torch

from autorl.llm.config import load_train_config
from autorl.llm.embedded.backend import build_spec
from autorl.llm.embedded.static_sampler import StaticSampler
from autorl.llm.embedded.train import Trainer

ROWS = (64, 48, 32, 16, 8)
NEW_TOKENS = 12  # train.toml's max_completion_tokens
PROMPT = [5, 6, 7, 8, 9, 10, 11]  # 7 tokens: the default batch's mean prompt


@torch.no_grad()
def step_us(sampler: StaticSampler, rows: int, repeats: int) -> float:
    """The median time of one decode step (all NEW_TOKENS steps of a call, `repeats` calls)."""
    times = []
    for _ in range(repeats):
        _, decode, _ = sampler.start([PROMPT] * rows, NEW_TOKENS, torch.device("cpu"))
        tok = torch.full((rows, 1), 5, dtype=torch.long)
        for t in range(NEW_TOKENS):
            t0 = time.perf_counter()
            decode(tok, t)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


@contextlib.contextmanager
def compiled_sampler() -> Iterator[StaticSampler]:
    """The trainer's compiled sampler on the shipped train.toml, one thread, its step warmed as the trainer
    warms it, the model in eval mode (decode_profile.py uses it too)."""
    torch.set_num_threads(1)
    spec = build_spec(load_train_config("train.toml").model).model_copy(update={"sampler": "hf-static"})
    with tempfile.TemporaryDirectory() as d:
        trainer = Trainer(spec, d, 0)
        sampler = trainer.sampler
        assert isinstance(sampler, StaticSampler) and sampler.compiled
        trainer.model.eval()
        sampler.warm(*trainer._warm_shape())
        yield sampler


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with compiled_sampler() as sampler:
        for rows in ROWS:  # each once first: a row count of its own may compile a new specialization
            step_us(sampler, rows, 1)
        skip = "skip-guards" in sys.argv[2:]
        with torch.compiler.set_stance("default", skip_guard_eval_unsafe=skip):
            for rows in ROWS:
                us = step_us(sampler, rows, repeats)
                label = " (guards skipped)" if skip else ""
                print(f"rows {rows}: decode step {us:.0f} us, {us / rows:.1f} us a row{label}", flush=True)


if __name__ == "__main__":
    main()
