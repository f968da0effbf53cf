"""What dynamo's guards cost a compiled decode step by the model's depth (issue 50, for the GPU's `graphs`
sampler, which runs them at every step): StaticSampler compiled (dynamic shapes, one CPU thread) on a model
of Qwen3-0.6B's structure (scripts/gpu_proof.py's QWEN3_QUICK widths: hidden 64, vocabulary 512) with LAYERS
decoder layers, whole sampling calls of 8 rows x 16 new tokens, its guards at a call's first step only (the
CPU's way) and at every step (a measurement only), alternated in blocks. The guards check tensors and
modules, not their sizes, so tiny widths isolate them.

    .venv/bin/python studies/fast-2026-12-01/guard_layers.py LAYERS [BLOCKS]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import gpu_proof  # noqa: E402

from autorl.llm.embedded.static_sampler import StaticSampler  # noqa: E402

ROWS, NEW_TOKENS, CALLS = 8, 16, 5


def main() -> None:
    layers = int(sys.argv[1])
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    torch.set_num_threads(1)
    torch.manual_seed(0)
    shape = dict(gpu_proof.QWEN3_QUICK, num_hidden_layers=layers)
    model = Qwen3ForCausalLM(Qwen3Config(**shape, pad_token_id=0, eos_token_id=1)).eval()
    sampler = StaticSampler(model, 0, [], compiled=True)
    t0 = time.perf_counter()
    sampler.warm(ROWS, 4)
    print(f"{layers} layers: the step compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    prompts = [[5, 6, 7, 8, 9]] * ROWS
    generator = torch.Generator().manual_seed(0)
    once = sampler._unguarded

    def call_ms() -> float:
        t0 = time.perf_counter()
        sampler.sample(prompts, 1.0, NEW_TOKENS, generator)
        return (time.perf_counter() - t0) * 1e3

    for _ in range(3):
        call_ms()
    medians: dict[str, list[float]] = {"once": [], "every": []}
    for block in range(blocks):
        for way in ("once", "every") if block % 2 == 0 else ("every", "once"):
            sampler._unguarded = once if way == "once" else (lambda step, args: step(*args))
            medians[way].append(statistics.median(call_ms() for _ in range(CALLS)))
    a, b = statistics.median(medians["once"]), statistics.median(medians["every"])
    print(
        f"{ROWS} rows x {NEW_TOKENS} new tokens, {blocks} blocks: guards once a call {a:.1f} ms a call, "
        f"at every step {b:.1f} ms: {(b - a) / (NEW_TOKENS - 1):.2f} ms a guarded step more"
    )


if __name__ == "__main__":
    main()
