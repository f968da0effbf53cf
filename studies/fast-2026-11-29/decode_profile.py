"""Where a compiled decode step's fixed cost goes: torch.profiler over the shipped tiny model's compiled step
(hf-static, one thread, inductor's cache warm), ROWS rows of a 7-token prompt, 5 calls of 12 steps each.
Prints the profiler's table by self CPU time.

    .venv/bin/python studies/fast-2026-11-29/decode_profile.py [ROWS]
"""

from __future__ import annotations

import sys

from decode_rows import compiled_sampler, step_us  # this script's directory is on sys.path
from torch.profiler import ProfilerActivity, profile


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    with compiled_sampler() as sampler:
        step_us(sampler, rows, 2)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step_us(sampler, rows, 5)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=16))


if __name__ == "__main__":
    main()
