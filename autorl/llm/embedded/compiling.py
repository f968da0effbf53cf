"""``torch.compile`` as the embedded trainer uses it: the sampler's decode step (static_sampler.py) and the
training step's decoder (compiled_train.py).

The one thing done here beyond ``torch.compile``: a compile (and any later recompile) treats Python floats
as constants (dynamo's ``specialize_float``). With dynamic shapes dynamo otherwise makes every float it
reads symbolic, a transformers model's module attributes among them (each norm's epsilon, attention's
scaling and dropout, the embedding's ``norm_type``), then finds that ``F.embedding`` needs its ``norm_type``
as a Python float and restarts the whole analysis, which traces and differentiates the model twice. On the
2-core VM (the tiny model, one thread, inductor's cache warm) the sampler's step then compiled in 10.9-11.9 s
and the training step's decoder in 14.6-17.0 s; with the floats as constants, in 5.2-6.6 s and 5.7-6.1 s
(studies/fast-2026-11-29/compile-floats.log). These floats never change within a run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def compile_step(fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    """`fn` under ``torch.compile(fn, **options)``, its floats compiled in as constants (see above)."""
    step = torch.compile(fn, **options)

    def run(*args: Any, **kwargs: Any) -> Any:
        with torch._dynamo.config.patch(specialize_float=True):
            return step(*args, **kwargs)

    return run
