"""How many embedded seeds fit side by side on a machine, and each one's share of it (``Slot``).

CPU. A model under ``SMALL_MODEL_PARAMS`` trains on one torch thread, and its sampling runs in a second
process on one more core (sampler_process.py): a seed needs 2 cores, so a
machine of n cores has n // 2 slots (at least one), each pinned to its own 2 cores. A bigger model's trainer
uses every core (policy.cpu_threads): one slot, the whole machine.

GPU. k seeds share a GPU when k of them fit in its memory: each needs its fp32 weights, gradients and the
two AdamW states (16 bytes per parameter), ``GPU_SEED_OVERHEAD_GB`` (CUDA context, sampling, slack) and
``GPU_LOGIT_COPIES`` fp32 copies of one micro-batch's logits (the activations of a forward/backward, which
the vocabulary dominates; ``GPU_LOGIT_COPIES_CHECKPOINTED`` with every layer checkpointed), and gives
``VLLM_GPU_FRACTION`` of its share to a vLLM sampler. Each slot gets its GPU id, ``gpu_share = 1 / k`` (the
trainer caps its memory at that fraction) and its own cores (a GPU seed still needs a core for its Python
process, so the cores cap the count too). Cheap to import: no torch.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from autorl.engine.backend import WHOLE_MACHINE, Slot
from autorl.io.machine import cpu_ids

if TYPE_CHECKING:
    from autorl.io.machine import Machine

SMALL_MODEL_PARAMS = 20_000_000  # below this the trainer runs one torch thread (policy.cpu_threads)
SAMPLER_CORES = 1  # the sampling process's core next to a one-thread trainer
VLLM_GPU_FRACTION = 0.3  # of a seed's GPU memory, for the vLLM sampler (RunSpec.vllm_gpu_memory_utilization)
TRAINING_BYTES_PER_PARAM = 16  # fp32 weights + gradients + AdamW exp_avg + exp_avg_sq
GPU_SEED_OVERHEAD_GB = 4.0  # CUDA context, sampling, slack
# A seed's forward/backward over one micro-batch, in fp32 copies of its logits (tokens x vocab x 4 B).
# Measured once (scripts/gpu_proof.py part 2, H200, 2026-11-26): the Qwen3-0.6B shape (596M parameters, vocab
# 151,936, 4096-token micro-batches) peaked at 28.18 GiB = 8.88 (16 B/parameter) + 19.3; 19.3 - 4.0 is 6.6
# copies of its 2.32 GiB of logits. With one copy (the earlier rule) an 80 GB GPU was planned 3 seeds capped
# at 26.7 GB each, under that peak.
GPU_LOGIT_COPIES = 7
# With every decoder layer's activations checkpointed (the trainer's default for a model of
# SMALL_MODEL_PARAMS or more) and the chunked LM head: the kit's part 6 (H200, 2026-11-28) measured the same
# shape's trainer at a peak of 13.80 GiB with the hf-graphs sampler (its static KV cache and graph pool
# included; 11.17 GiB with HFSampler) = 8.88 + 4.92, 2.1 copies of its logits: counted as 2, on top of the
# GPU_SEED_OVERHEAD_GB. Partial checkpointing (ac.freq > 1) was not measured: it is counted as none.
GPU_LOGIT_COPIES_CHECKPOINTED = 2
GPU_MICRO_BATCH_TOKENS = 4096  # the trainer's micro-batch on a GPU (train.py): big vocabularies, big logits
CPU_MICRO_BATCH_TOKENS = 16384  # and on the CPU
GPU_MEMORY_USABLE = 0.9  # of a GPU's memory: the rest stays free for the allocator's fragmentation


def read_param_count(model_path: str) -> int | None:
    """Parameters of a local HF model, from its safetensors headers (no weights read); None when the model
    is not a local directory with safetensors files."""
    files = sorted(Path(model_path).glob("*.safetensors")) if Path(model_path).is_dir() else []
    if not files:
        return None
    from safetensors import safe_open

    total = 0
    for file in files:
        with safe_open(str(file), framework="numpy") as weights:
            total += sum(math.prod(weights.get_slice(name).get_shape()) for name in weights.keys())
    return total


def read_vocab_size(model_path: str) -> int:
    """The vocabulary of a local HF model from its config.json (a multimodal config's text_config too); 0
    when unknown."""
    file = Path(model_path) / "config.json"
    try:
        config = json.loads(file.read_text())
    except (OSError, ValueError):
        return 0
    size = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
    return size if isinstance(size, int) else 0


def checkpoint_every(freq: int | None, n_params: int) -> int:
    """Every how many decoder layers one has its activations checkpointed (0: none): train.toml's
    `trainer.model.ac.freq` where it sets [trainer.model.ac] (0 for ac = "None"), else every layer for a
    model of SMALL_MODEL_PARAMS or more (prime-rl's default, TRL's too) and none for a smaller one."""
    if freq is not None:
        return freq
    return 1 if n_params >= SMALL_MODEL_PARAMS else 0


def seed_gpu_memory_gb(n_params: int, vocab_size: int = 0, every: int = 0) -> float:
    """GPU memory (GiB) one seed of a model with n_params parameters and a vocabulary of vocab_size needs
    (trainer plus its vLLM fraction), with every `every`-th layer's activations checkpointed (0: none)."""
    logits_gb = GPU_MICRO_BATCH_TOKENS * vocab_size * 4 / 2**30
    copies = GPU_LOGIT_COPIES_CHECKPOINTED if every == 1 else GPU_LOGIT_COPIES
    trainer_gb = n_params * TRAINING_BYTES_PER_PARAM / 2**30 + GPU_SEED_OVERHEAD_GB + copies * logits_gb
    return trainer_gb / (1 - VLLM_GPU_FRACTION)


def plan_slots(
    n_params: int | None, machine: Machine, vocab_size: int = 0, ac_freq: int | None = None
) -> list[Slot]:
    """The slots of ``machine`` for seeds of a model with ``n_params`` parameters and a vocabulary of
    ``vocab_size`` (n_params None = unknown: one seed at a time on the whole machine); ``ac_freq`` is
    train.toml's activation checkpointing (RunSpec.activation_checkpointing: None unset)."""
    if n_params is None:
        return [WHOLE_MACHINE]
    cores = cpu_ids(machine)
    if machine.gpus:
        every = checkpoint_every(ac_freq, n_params)
        return _gpu_slots(seed_gpu_memory_gb(n_params, vocab_size, every), machine, cores)
    if n_params >= SMALL_MODEL_PARAMS:
        return [WHOLE_MACHINE]
    per_seed = 1 + SAMPLER_CORES
    if len(cores) < per_seed:
        return [Slot(index=0, cpus=tuple(cores), threads=1)]
    return [
        Slot(index=i, cpus=tuple(cores[i * per_seed : (i + 1) * per_seed]), threads=1)
        for i in range(len(cores) // per_seed)
    ]


def _gpu_slots(need_gb: float, machine: Machine, cores: list[int]) -> list[Slot]:
    fits = [max(1, int(gpu.memory_gb * GPU_MEMORY_USABLE // need_gb)) for gpu in machine.gpus]
    per_gpu_cores = max(1, len(cores) // len(machine.gpus))
    counts = [min(k, per_gpu_cores) for k in fits]
    cores_each = max(1, len(cores) // sum(counts))
    slots: list[Slot] = []
    for gpu, k in zip(machine.gpus, counts, strict=True):
        for _ in range(k):
            i = len(slots)
            own = tuple(cores[i * cores_each : (i + 1) * cores_each])
            slots.append(
                Slot(
                    index=i,
                    cpus=own,
                    threads=len(own) or None,
                    gpus=(gpu.index,),
                    gpu_share=None if k == 1 else 1 / k,
                )
            )
    return slots
