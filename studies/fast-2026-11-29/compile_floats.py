"""Start-up compiles with the model's floats symbolic (`before`: dynamo's default under dynamic shapes) and as
constants (`after`: autorl/llm/embedded/compiling.py), on the shipped train.toml's tiny model, one torch
thread: the compiled sampler's warm-up, then compile_train's, in one process, as Trainer._start runs them.
One line: the seconds of each and how many times dynamo restarted its analysis.

    .venv/bin/python studies/fast-2026-11-29/compile_floats.py before|after

compile-floats.log alternates the two ways (the first call of each way fills inductor's cache):
    for i in 1 2 3 4; do for w in before after; do
      .venv/bin/python studies/fast-2026-11-29/compile_floats.py $w; done; done
"""

from __future__ import annotations

import functools
import sys
import tempfile

import torch
from torch._dynamo.utils import compilation_time_metrics

from autorl.llm.config import load_train_config
from autorl.llm.embedded import compiled_train, static_sampler
from autorl.llm.embedded.backend import build_spec
from autorl.llm.embedded.train import Trainer


def main() -> None:
    way = sys.argv[1]
    if way == "before":  # torch.compile as such (a partial: logprobs tells a decoder from None by truth)
        plain = lambda fn, **kw: functools.partial(torch.compile(fn, **kw))  # noqa: E731
        compiled_train.compile_step = static_sampler.compile_step = plain
    torch.set_num_threads(1)
    update = {"compile_train": True, "sampler": "hf-static", "num_threads": 1}
    spec = build_spec(load_train_config("train.toml").model).model_copy(update=update)
    with tempfile.TemporaryDirectory() as d:
        trainer = Trainer(spec, d, 0)
        sampler = trainer.sampler
        assert isinstance(sampler, static_sampler.StaticSampler)
        sampled = sampler.warm(*trainer._warm_shape())
        trained = trainer._warm_train()
    restarts = len(compilation_time_metrics.get("compile_attempt_1", []))
    print(f"{way}: sampler step {sampled:.1f} s, training step {trained:.1f} s, {restarts} restarts")


if __name__ == "__main__":
    main()
