"""What running the compiled decode step's guards once a call (StaticSampler, since 8d224ad) saves against
running them at every step: whole sampling calls of the trainer's batch shape (8 prompts x 8 completions of
the default config, 12 new tokens) on the shipped tiny model, one thread, the two ways alternated in blocks
in one process. "every step" is the shipped sampler with its stance change made a no-op (a measurement only).

    .venv/bin/python studies/fast-2026-11-29/guard_once.py [BLOCKS]
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time

import torch
from decode_rows import PROMPT, compiled_sampler

from autorl.llm.embedded.static_sampler import StaticSampler

ROWS, NEW_TOKENS, CALLS = 64, 12, 5


def call_ms(sampler: StaticSampler, generator: torch.Generator) -> float:
    """The median milliseconds of CALLS sampling calls."""
    times = []
    for _ in range(CALLS):
        t0 = time.perf_counter()
        assert sampler.sample([PROMPT] * ROWS, 1.0, NEW_TOKENS, generator) is not None
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    shipped = torch.compiler.set_stance
    ms: dict[str, list[float]] = {"once a call": [], "every step": []}
    with compiled_sampler() as sampler:
        sampler.eos_ids = torch.tensor([], dtype=torch.long)  # no row ends early: every call runs 12 steps
        generator = torch.Generator().manual_seed(0)
        call_ms(sampler, generator)  # any compile of the batch's shape, before the clock
        for b in range(blocks):
            for way in ("once a call", "every step") if b % 2 else ("every step", "once a call"):
                patched = (lambda *a, **k: contextlib.nullcontext()) if way == "every step" else shipped
                torch.compiler.set_stance = patched  # type: ignore[assignment]
                ms[way].append(call_ms(sampler, generator))
                torch.compiler.set_stance = shipped
        assert sampler.static  # no fallback to HFSampler happened
    once, every = statistics.median(ms["once a call"]), statistics.median(ms["every step"])
    ratios = [e / o for e, o in zip(ms["every step"], ms["once a call"], strict=True)]
    print(f"{ROWS} rows x {NEW_TOKENS} tokens, {blocks} blocks of {CALLS} calls, one thread")
    print(f"guards every step: {every:.1f} ms a call; once a call: {once:.1f} ms")
    ratio = statistics.median(ratios)
    print(f"saved {every - once:.1f} ms a call; every/once paired by block: median {ratio:.3f}", end=" ")
    print(f"(range {min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
