"""Inductor's C++ wrapper for the compiled decode step: the shipped sampler's step (inductor's Python wrapper
calls its kernels: 0.62-0.85 ms of a step's own CPU, decode-profile.log) against the same step compiled with
``cpp_wrapper`` (the calls made from C++), whole sampling calls of the trainer's shape (guard_once.py's),
alternated in blocks in one process, one thread; and what each compile took (inductor's cache as it is).

    .venv/bin/python studies/fast-2026-11-29/cpp_wrapper.py [BLOCKS]
"""

from __future__ import annotations

import statistics
import sys

import torch
from decode_rows import compiled_sampler
from guard_once import NEW_TOKENS, ROWS, call_ms

from autorl.llm.embedded.compiling import compile_step
from autorl.llm.embedded.static_sampler import StaticSampler


def main() -> None:
    blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    with compiled_sampler() as shipped:
        cpp = StaticSampler(shipped.model, shipped.pad_id, [], compiled=True)
        # its own code object: the shipped step's compiled entry would otherwise serve it
        cpp._step = compile_step(lambda *a: cpp._forward(*a), dynamic=True, options={"cpp_wrapper": True})
        print(f"cpp_wrapper: its step compiled in {cpp.warm(ROWS, NEW_TOKENS):.1f} s", flush=True)
        ms: dict[str, list[float]] = {"python wrapper": [], "cpp_wrapper": []}
        samplers = {"python wrapper": shipped, "cpp_wrapper": cpp}
        for sampler in samplers.values():  # no row ends early: every call runs NEW_TOKENS steps
            sampler.eos_ids = torch.tensor([], dtype=torch.long)
        generator = torch.Generator().manual_seed(0)
        for sampler in samplers.values():
            call_ms(sampler, generator)
        for b in range(blocks):
            for way in list(samplers) if b % 2 else list(samplers)[::-1]:
                ms[way].append(call_ms(samplers[way], generator))
        assert shipped.static and cpp.static  # neither fell back to HFSampler
    ratios = [p / c for p, c in zip(ms["python wrapper"], ms["cpp_wrapper"], strict=True)]
    print(f"{ROWS} rows x {NEW_TOKENS} tokens, {blocks} blocks, one thread")
    print(f"python wrapper {statistics.median(ms['python wrapper']):.1f} ms a call", end="; ")
    print(f"cpp_wrapper {statistics.median(ms['cpp_wrapper']):.1f} ms")
    print(f"python/cpp paired by block: median {statistics.median(ratios):.3f}", end=" ")
    print(f"(range {min(ratios):.3f}-{max(ratios):.3f})")


if __name__ == "__main__":
    main()
