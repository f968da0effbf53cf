"""Where a compiled decode step's fixed cost goes: torch.profiler over the shipped tiny model's compiled step
(hf-static, one thread, inductor's cache warm), ROWS rows of a 7-token prompt, 5 calls of 12 steps each.
Prints the profiler's table by self CPU time.

    .venv/bin/python studies/fast-2026-11-29/decode_profile.py [ROWS]
"""

from __future__ import annotations

import sys
import tempfile

import torch
from torch.profiler import ProfilerActivity, profile

from autorl.llm.config import load_train_config
from autorl.llm.embedded.backend import build_spec
from autorl.llm.embedded.static_sampler import StaticSampler
from autorl.llm.embedded.train import Trainer

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from decode_rows import step_us  # noqa: E402


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    torch.set_num_threads(1)
    spec = build_spec(load_train_config("train.toml").model).model_copy(update={"sampler": "hf-static"})
    with tempfile.TemporaryDirectory() as d:
        trainer = Trainer(spec, d, 0)
        sampler = trainer.sampler
        assert isinstance(sampler, StaticSampler) and sampler.compiled
        trainer.model.eval()
        sampler.warm(*trainer._warm_shape())
        step_us(sampler, rows, 2)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step_us(sampler, rows, 5)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=16))


if __name__ == "__main__":
    main()
