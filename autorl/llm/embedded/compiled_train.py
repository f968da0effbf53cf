"""The training step's decoder compiled with ``torch.compile`` (``compile_train``, issue 50; by default on
beside a compiled sampler on a CPU: ``hf-static-process``, the 2-core default, and ``hf-static``, one core's;
on a CPU machine the warm starter compiles it once for every seed, prewarm.py).

The trainer's log-probs run the decoder once over ``logprobs.packed_layout``'s lines, then the chunked head
(``logprobs.completion_logprobs``). On one CPU core that forward and its backward took 0.80x and 0.69x the CPU
time compiled (dynamic shapes: one compile serves every batch) in studies/fast-2026-11-29/compile-train.log.
The compile is start-up: ``warm`` runs a forward and a backward of a made-up batch before the training
clock, then clears the gradients it left, so no weight moves and no random number is drawn: the run is the
eager run's up to float rounding (tests/test_embedded_trainer.py). It applies where the trainer packs its
rows through a plain head (``logprobs.packs``, ``logprobs.plain_head``); elsewhere, or when the compile fails
(one warning line), the decoder runs eagerly.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import torch

from autorl.llm.embedded import grpo
from autorl.llm.embedded.batches import Sample
from autorl.llm.embedded.compiling import compile_step
from autorl.llm.embedded.logprobs import completion_logprobs, packs, plain_head
from autorl.llm.schema import DefaultLoss, IPOLoss

# The made-up batch `warm` compiles with: prompts of these lengths, each with rows whose completions run
# through these lengths (every size above 1, so that no dimension is specialised to 0 or 1). Then its first
# prompt's rows alone: a batch of one group packs into one line, a size of 1 that dynamic shapes compile
# apart (unwarmed, a 180 s trial's one-group step compiled for 45.6 s on the training clock:
# studies/fast-2026-11-29/trial-2core-180.log).
WARM_PROMPTS = (5, 6, 7)
WARM_COMPLETIONS = (3, 5, 8)


def compiled_decoder(model: torch.nn.Module) -> Callable[..., Any] | None:
    """The model's decoder under torch.compile (dynamic shapes, compiling.py), or None where the trainer
    would not run it on its own (no packing or no plain head: the whole model runs, eagerly)."""
    if not packs(model) or plain_head(model) is None:
        return None
    return compile_step(model.get_decoder(), dynamic=True)  # type: ignore[operator]


def warm_batch(vocab_size: int) -> list[tuple[Sample, int]]:
    """A made-up batch of rows (token ids counted, not drawn) in the shape of a GRPO batch."""
    rows = []
    for p, prompt_len in enumerate(WARM_PROMPTS):
        prompt = [2 + (p + i) % (vocab_size - 2) for i in range(prompt_len)]
        for r, n in enumerate(WARM_COMPLETIONS):
            completion = [2 + (3 * p + r + i) % (vocab_size - 2) for i in range(n)]
            sample = Sample(prompt, completion, [-1.0] * n, 1.0, 0.5 - r / 4, 1.0, 0, "warm", False)
            rows.append((sample, n))
    return rows


def warm(
    model: torch.nn.Module,
    decoder: Callable[..., Any],
    pad_id: int,
    loss_config: DefaultLoss | IPOLoss,
    autocast: contextlib.AbstractContextManager | None = None,
) -> float:
    """Compile `decoder`'s forward and backward now: a forward and backward of `warm_batch`, then of its first
    prompt's rows alone (one line), then the gradients cleared (the optimizer has not seen them). The seconds
    it took."""
    device = next(model.parameters()).device
    t0 = time.perf_counter()
    config: Any = model.config
    rows = warm_batch(int(config.vocab_size))
    for batch in (rows, rows[: len(WARM_COMPLETIONS)]):
        logpi, logmu, adv, mask = completion_logprobs(model, batch, pad_id, device, autocast, decoder=decoder)
        loss, _ = grpo.token_loss(logpi, logmu, adv, mask, loss_config)
        loss.backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - t0
