"""The trainer's steps compiled once, in the warm starter, before it forks a seed (issue 50).

On a CPU a seed compiles its sampler's decode step (hf-static, hf-static-process) and its training step's
decoder (compile_train) at start-up: on the 2-core VM 5-7 s each with inductor's disk cache warm
(studies/fast-2026-11-29/compile-floats.log), 61-70 s a seed in a fresh clone (trial-2core-auto.log), most
of the warm seconds dynamo tracing transformers' Python, which no disk cache keeps (warm-profile.log). What
dynamo compiled lives in the process's memory, and a forked child finds it. The warm starter
(autorl/engine/warm_starter.py) forks every seed and eval of a trial, and of the trials after it while it
waits (AUTORL_WARM_KEEP); it calls `run` after its imports. With the launch's Prewarm in its environment
(backend.PREWARM_ENV, set by EmbeddedBackend on a CPU machine for a model that trains on one thread), `run`
loads the model as a seed does and compiles both steps, before the starter serves anyone. A seed forked from
it finds each step compiled (its header says `compiled in 0.0 s` and where), and so does the sampling
process of hf-static-process, forked from its seed.

What keeps the fork safe:
- autograd: the training step's compile traces its backward under fake tensors. Autograd's engine, started
  there first, starts a thread per fake device and marks every later fork unsafe: a forked child's first
  backward raises "Unable to handle autograd's threading in combination with fork-based multiprocessing".
  Started first by a plain CPU backward it starts none, and forks stay safe; `run` does that first
  (studies/fast-2026-12-01/fork-autograd.log).
- threads: none may run when the starter forks (it refuses to serve otherwise): no progress bar starts tqdm's
  monitor thread meanwhile, and inductor compiles in this process (`compile_threads = 1`); both restored
  afterwards, so that a seed's own compiles use its pool as before.
- CUDA: untouched (the model on the CPU; no Prewarm is planned on a machine with a GPU, or none prepared:
  with a GPU there, autograd's engine would start a thread for it at that first backward).
- the thread count: inductor bakes the number of threads into its CPU kernels; a seed that compiles runs
  one thread (policy.cpu_threads for a model under SMALL_MODEL_PARAMS), and so does `run`.
A prewarm that fails leaves the seeds to compile on their own, as before; one that left a thread behind
(Python's or a native one) makes the starter refuse to serve: its launches start cold
(autorl/engine/warm_starter.py).
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

from autorl.llm.embedded.backend import PREWARM_ENV, Prewarm

WARM_ROWS, WARM_TOKENS = 8, 4  # the sampler's warm call: any shape does (dynamic shapes), above 1 row
COMPILED = False  # True in the starter once `run` compiled, and in every process forked from it since


def run() -> None:
    """The warm starter's prewarm: the steps of the launch's Prewarm compiled here, or nothing (no Prewarm in
    the environment). What it raises the starter drops (warm_starter._preload: its children then compile on
    their own); COMPILED is set only once both compiles are done."""
    global COMPILED
    text = os.environ.get(PREWARM_ENV)
    if not text:
        return
    try:
        compile_steps(Prewarm.model_validate_json(text))
        COMPILED = True
    finally:
        gc.collect()  # the model is gone; what dynamo compiled stays


def compile_steps(prewarm: Prewarm) -> None:
    """Load the model as a CPU seed does and compile the steps `prewarm` names."""
    import torch

    from autorl.llm.embedded import compiled_train
    from autorl.llm.embedded.policy import load_policy
    from autorl.llm.embedded.static_sampler import StaticSampler
    from autorl.llm.schema import DefaultLoss

    torch.set_num_threads(1)
    one = torch.ones(1, requires_grad=True)
    one.sum().backward()  # autograd's engine started outside fake tensors: no thread (the docstring)
    with _quiet_and_in_process():
        _, model, _ = load_policy(
            prewarm.model_path, torch.device("cpu"), 1, prewarm.activation_checkpointing
        )
        if prewarm.sampler:
            sampler = StaticSampler(model, 0, [], compiled=True)
            if sampler.warm(WARM_ROWS, WARM_TOKENS) is None:
                raise RuntimeError("the sampler's step did not compile")
        decoder = compiled_train.compiled_decoder(model) if prewarm.train else None
        if decoder is not None:
            compiled_train.warm(model, decoder, 0, DefaultLoss())


@contextlib.contextmanager
def _quiet_and_in_process() -> Iterator[None]:
    """No tqdm monitor thread (a progress bar starts one, even a disabled bar: the model's loading bar,
    torch.fx's interpreter in a compile) and inductor's compiles in this process (no pool of workers), both as
    they were afterwards."""
    import torch._inductor.config as inductor
    from tqdm import std

    threads, interval = inductor.compile_threads, std.tqdm.monitor_interval
    inductor.compile_threads, std.tqdm.monitor_interval = 1, 0
    try:
        yield
    finally:
        inductor.compile_threads, std.tqdm.monitor_interval = threads, interval
