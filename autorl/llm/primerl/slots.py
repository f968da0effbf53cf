"""How many prime-rl seeds run side by side on a machine: GPU pairs, seeds per pair, ports.

A seed needs a GPU pair (vLLM on the first GPU, the trainer on the second) and its own ports. An 8-GPU node
has 4 pairs: (0,1), (2,3), (4,5), (6,7). A small model lets k seeds share a pair: k vLLM engines on the
inference GPU, each with 1/k of prime-rl's default memory utilization (`inference.vllm.gpu_memory_utilization`
0.9 -> 0.9/k), and k trainers side by side on the trainer GPU. k comes from what one seed needs:

    trainer GPU:   TRAINER_BYTES_PER_PARAM * P + TRAINER_MARGIN_GB     (per trainer)
    inference GPU: INFERENCE_BYTES_PER_PARAM * P + INFERENCE_MARGIN_GB (per vLLM engine)
    k = max(1, min(floor(USABLE * trainer GPU GB / trainer need),
                   floor(USABLE * inference GPU GB / vLLM need)))

with P the model's parameter count (exact from its safetensors headers, else from config.json), then capped
so that every seed has CPUS_PER_SEED cores. k = 1 when P is unknown. $AUTORL_PRIMERL_SEEDS_PER_PAIR sets k
outright. Estimates only: not verified on GPUs.
"""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import Any

from autorl.engine.backend import Slot
from autorl.io.machine import Machine
from autorl.llm.primerl.render import PORT_STRIDE, VLLM_MEMORY_UTILIZATION, inference_port
from autorl.llm.primerl.weights import base_model_dir

SEEDS_PER_PAIR_ENV = "AUTORL_PRIMERL_SEEDS_PER_PAIR"
# AdamW with prime-rl's default optimization_dtype float32: fp32 master weights (4) + fp32 gradients (4) +
# two fp32 moments (8) + the bf16 compute copy (2).
TRAINER_BYTES_PER_PARAM = 18
TRAINER_MARGIN_GB = 8.0  # activations of a micro-batch at seq_len, CUDA context, allocator slack
INFERENCE_BYTES_PER_PARAM = 2  # bf16 weights
INFERENCE_MARGIN_GB = 6.0  # CUDA context, CUDA graphs, a KV cache worth having
USABLE = VLLM_MEMORY_UTILIZATION  # the share of a GPU the seeds on it may fill together
CPUS_PER_SEED = 4  # vLLM's engine, the orchestrator, its env server and the trainer each keep a core busy
GiB = 2**30


def safetensors_parameters(model_dir: Path) -> int | None:
    """Parameters in a model directory's *.safetensors files, from their headers (no tensor is read)."""
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for path in files:
        with open(path, "rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        total += sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
    return total


def config_parameters(config: dict[str, Any]) -> int | None:
    """A decoder-only transformer's parameters from its HF config.json (Llama/Qwen layout: attention with
    grouped KV heads, a gated MLP of 3 matrices, embeddings counted twice unless tied; norms left out)."""
    try:
        h, layers = int(config["hidden_size"]), int(config["num_hidden_layers"])
        inner, vocab = int(config["intermediate_size"]), int(config["vocab_size"])
        heads = int(config["num_attention_heads"])
    except (KeyError, TypeError, ValueError):
        return None
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or h // heads)
    attention = 2 * h * heads * head_dim + 2 * h * kv_heads * head_dim  # q, o + k, v
    embeddings = vocab * h * (1 if config.get("tie_word_embeddings", False) else 2)
    return layers * (attention + 3 * h * inner) + embeddings


def model_parameters(model_name: str | None) -> int | None:
    """The base model's parameter count, or None when its files are not on this machine."""
    model_dir = base_model_dir(model_name)
    if model_dir is None or not model_dir.is_dir():
        return None
    counted = safetensors_parameters(model_dir)
    if counted is not None:
        return counted
    config = model_dir / "config.json"
    return config_parameters(json.loads(config.read_text())) if config.is_file() else None


def seeds_per_pair(parameters: int | None, inference_gb: float, trainer_gb: float) -> int:
    """k: how many seeds of a model with this many parameters fit on one GPU pair (module docstring)."""
    if parameters is None:
        return 1
    trainer_need = TRAINER_BYTES_PER_PARAM * parameters / GiB + TRAINER_MARGIN_GB
    inference_need = INFERENCE_BYTES_PER_PARAM * parameters / GiB + INFERENCE_MARGIN_GB
    fit = min(USABLE * trainer_gb // trainer_need, USABLE * inference_gb // inference_need)
    return max(1, int(fit))


def plan_slots(model_name: str | None, machine: Machine) -> list[Slot]:
    """The machine's slots for one seed of this model: k per GPU pair, ordered across pairs first (slot 0
    on pair 0, slot 1 on pair 1, ...) so that fewer seeds than slots spread over the pairs. Slot i's base
    port is $AUTORL_PRIMERL_PORT (8000) + PORT_STRIDE * i. Fewer than 2 GPUs: the whole machine."""
    gpus = sorted(machine.gpus, key=lambda g: g.index)
    pairs = [(gpus[i], gpus[i + 1]) for i in range(0, len(gpus) - 1, 2)]
    if not pairs:
        return [Slot()]
    override = os.environ.get(SEEDS_PER_PAIR_ENV)
    if override:
        k = int(override)
        if k < 1:
            raise ValueError(f"{SEEDS_PER_PAIR_ENV} must be a positive integer, got {override!r}")
    else:
        parameters = model_parameters(model_name)
        k = min(seeds_per_pair(parameters, infer.memory_gb, train.memory_gb) for infer, train in pairs)
        k = max(1, min(k, machine.cpus // (CPUS_PER_SEED * len(pairs))))
    base = inference_port()
    slots: list[Slot] = []
    for _ in range(k):
        for infer, train in pairs:
            index = len(slots)
            slots.append(
                Slot(
                    index=index,
                    gpus=(infer.index, train.index),
                    gpu_share=1 / k if k > 1 else None,
                    port=base + PORT_STRIDE * index,
                )
            )
    return slots
