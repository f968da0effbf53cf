"""The policy the embedded trainer trains: its device, its model and tokenizer, its CPU threads and which of
its decoder layers keep their activations (activation checkpointing, prime-rl's ``trainer.model.ac``).

Activation checkpointing: a checkpointed decoder layer keeps only its input for the backward pass and runs
its forward again there, so a micro-batch's activations shrink from every layer's intermediates to one
hidden state per layer plus one layer's intermediates, for about a third more compute in the backward.
prime-rl checkpoints every layer by default (``[trainer.model.ac]``, ``freq = 1``). Here ``RunSpec.
activation_checkpointing`` is ``freq`` where train.toml sets ``[trainer.model.ac]`` (0 where it sets
``ac = "None"``); where it does not, every layer for a model of SMALL_MODEL_PARAMS or more (the 0.6B shape's
decoder activations are most of a step's memory: docs/verified.md) and none for the tiny default model
(its activations are small and the recompute would only cost time). transformers' own checkpointing
(``gradient_checkpointing_enable``, non-reentrant) does the work; only the layers' choice is here.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import torch

from autorl.io.machine import own_cpu_ids
from autorl.llm.embedded.backend import RunSpec
from autorl.llm.embedded.slots import SMALL_MODEL_PARAMS, checkpoint_every
from autorl.llm.tokenizer import load_tokenizer


def cpu_threads(requested: int, n_params: int) -> int:
    """torch threads: as requested, else 1 for a model under SMALL_MODEL_PARAMS (its ops are too small to
    split: the default tiny model trains faster on one thread, and a busy neighbour core no longer stalls
    it), else every core this process may use."""
    if requested:
        return requested
    return 1 if n_params < SMALL_MODEL_PARAMS else len(own_cpu_ids())


def attention_implementation(device: torch.device) -> str:
    """flash_attention_2 on a GPU when the `flash-attn` extra is installed, else PyTorch's sdpa."""
    if device.type == "cuda" and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def device_of(spec: RunSpec) -> tuple[torch.device, torch.dtype | None]:
    """(the device, the autocast dtype): on a GPU float32 master weights with bf16 compute, capped at the
    seed's share of the GPU's memory (k seeds share it); on a CPU plain float32."""
    if spec.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(spec.device)
    if device.type == "cuda" and spec.gpu_share < 1.0:
        torch.cuda.set_per_process_memory_fraction(spec.gpu_share, device.index)  # None = current
    return device, torch.bfloat16 if device.type == "cuda" else None


def checkpoint_layers(model: torch.nn.Module, every: int) -> int:
    """Checkpoint decoder layers 0, every, 2 * every, ... of `model` (a transformers model), none for 0;
    the number of layers checkpointed."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    if every <= 0:
        return 0
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})  # type: ignore[operator]
    if hasattr(model, "disable_input_require_grads"):  # a hook for frozen embeddings (PEFT): these train
        model.disable_input_require_grads()  # type: ignore[operator]  # it would run in a compiled step
    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    for i, layer in enumerate(layers):
        layer.gradient_checkpointing = i % every == 0
    return sum(layer.gradient_checkpointing for layer in layers)


def load_policy(
    model_path: str, device: torch.device, num_threads: int = 0, activation_checkpointing: int | None = None
) -> tuple[Any, torch.nn.Module, int]:
    """(the tokenizer, the model in training mode on `device`, its checkpointed layers), with the torch
    threads its size wants (`num_threads`: RunSpec's, 0 = cpu_threads' choice) and RunSpec's
    `activation_checkpointing` (None = checkpoint_every's default)."""
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(model_path)
    model = AutoModelForCausalLM.from_pretrained(
        model_path, dtype=torch.float32, attn_implementation=attention_implementation(device)
    ).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    torch.set_num_threads(cpu_threads(num_threads, n_params))
    model.train()
    model.config.use_cache = False  # training forwards never need the KV cache
    every = checkpoint_every(activation_checkpointing, n_params)
    return tokenizer, model, checkpoint_layers(model, every)


def eos_ids(tokenizer: Any, model: torch.nn.Module) -> list[int]:
    """Every token id that ends a completion: the tokenizer's and the model's generation config's."""
    eos: set[int] = set()
    for candidate in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(candidate, int):
            eos.add(candidate)
        elif isinstance(candidate, (list, tuple)):
            eos.update(int(c) for c in candidate)
    return sorted(eos)
