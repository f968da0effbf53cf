"""Where a warm start-up compile goes (inductor's disk cache already filled): the compiled sampler's warm-up,
then compile_train's, as Trainer._start runs them, on the shipped train.toml's tiny model, one torch thread,
under cProfile. Prints each warm-up's seconds, dynamo's own compile times, and the profile's largest
cumulative entries.

    .venv/bin/python studies/fast-2026-11-29/warm_profile.py [TOP]
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import tempfile
import time

import torch
from torch._dynamo.utils import compile_times

from autorl.llm.config import load_train_config
from autorl.llm.embedded import static_sampler
from autorl.llm.embedded.backend import build_spec
from autorl.llm.embedded.train import Trainer


def main() -> None:
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    torch.set_num_threads(1)
    update = {"compile_train": True, "sampler": "hf-static", "num_threads": 1}
    spec = build_spec(load_train_config("train.toml").model).model_copy(update=update)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        trainer = Trainer(spec, d, 0)
        built = time.perf_counter() - t0
        sampler = trainer.sampler
        assert isinstance(sampler, static_sampler.StaticSampler)
        prof = cProfile.Profile()
        prof.enable()
        sampled = sampler.warm(*trainer._warm_shape())
        trained = trainer._warm_train()
        prof.disable()
    print(
        f"trainer built {built:.1f} s; sampler warm {sampled:.1f} s; training warm {trained:.1f} s (profiled)"
    )
    print(compile_times(repr="str", aggregate=True))
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


if __name__ == "__main__":
    main()
