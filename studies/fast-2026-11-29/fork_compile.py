"""Does a compile survive a fork? The trainer's compiled steps (the hf-static sampler's decode step, and
compile_train's decoder) compiled in a parent process; then a forked child builds a new Trainer (its own
model, loaded again) and warms both: the seconds each took in each process. The warm starter
(autorl/engine/warm_starter.py) forks every seed from one process: could compiling there, once, take the
compiles out of every seed's start-up? `sampler`: the parent compiles the sampler's step only; `both`: the
training step too (its warm-up runs a backward). One thread; run it pinned to one core:

    taskset -c 0 .venv/bin/python studies/fast-2026-11-29/fork_compile.py sampler|both
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading

import torch

from autorl.llm.config import load_train_config
from autorl.llm.embedded.backend import build_spec
from autorl.llm.embedded.train import Trainer


def warm(who: str, train: bool) -> None:
    """A Trainer of the shipped train.toml with both steps compiled; its sampler's step warmed as the
    trainer warms it, and with `train` its training step (a warning line if that compile fails)."""
    spec = build_spec(load_train_config("train.toml").model)
    spec = spec.model_copy(update={"sampler": "hf-static", "compile_train": True})
    with tempfile.TemporaryDirectory() as d:
        trainer = Trainer(spec, d, 0)
        seconds = trainer.sampler.warm(*trainer._warm_shape())  # type: ignore[attr-defined]
        print(f"{who}: the sampler's step compiled in {seconds:.2f} s", flush=True)
        if train:
            trained = trainer._warm_train()
            print(f"{who}: the training step " + (f"compiled in {trained:.2f} s" if trained else "eager"))


def main() -> None:
    torch.set_num_threads(1)
    warm("parent", train=sys.argv[1:] == ["both"])
    print(f"parent after its compiles: {threading.active_count()} Python threads", flush=True)
    pid = os.fork()
    if pid == 0:
        warm("forked child, a new model", train=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print(f"the child ended with status {status}")


if __name__ == "__main__":
    main()
