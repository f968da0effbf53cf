"""How many embedded seeds fit side by side on a machine, and each one's share of it (``Slot``).

CPU. A model under ``SMALL_MODEL_PARAMS`` trains on one torch thread, and its sampling runs in a second
process on one more core (the ``hf-process`` sampler, sampler_process.py): a seed needs 2 cores, so a
machine of n cores has n // 2 slots (at least one), each pinned to its own 2 cores. A bigger model's trainer
uses every core (train.cpu_threads): one slot, the whole machine.

GPU. k seeds share a GPU when k of them fit in its memory: each needs its fp32 weights, gradients and the
two AdamW states (16 bytes per parameter) plus ``GPU_SEED_OVERHEAD_GB`` (CUDA context, the logits of a
micro-batch, sampling), and gives ``VLLM_GPU_FRACTION`` of its share to a vLLM sampler. Each slot gets its
GPU id, ``gpu_share = 1 / k`` (the trainer caps its memory at that fraction) and its own cores (a GPU seed
still needs a core for its Python process, so the cores cap the count too). Cheap to import: no torch.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from autorl.engine.backend import WHOLE_MACHINE, Slot
from autorl.io.machine import cpu_ids

if TYPE_CHECKING:
    from autorl.io.machine import Machine

SMALL_MODEL_PARAMS = 20_000_000  # below this the trainer runs one torch thread (train.cpu_threads)
SAMPLER_CORES = 1  # the hf-process sampler's core next to a one-thread trainer
VLLM_GPU_FRACTION = 0.3  # of a seed's GPU memory, for the vLLM sampler (RunSpec.vllm_gpu_memory_utilization)
TRAINING_BYTES_PER_PARAM = 16  # fp32 weights + gradients + AdamW exp_avg + exp_avg_sq
GPU_SEED_OVERHEAD_GB = 4.0  # CUDA context, one micro-batch's logits (4096 tokens x 150k vocab, fp32), slack
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


def seed_gpu_memory_gb(n_params: int) -> float:
    """GPU memory one seed of a model with n_params parameters needs (trainer plus its vLLM fraction)."""
    trainer_gb = n_params * TRAINING_BYTES_PER_PARAM / 2**30 + GPU_SEED_OVERHEAD_GB
    return trainer_gb / (1 - VLLM_GPU_FRACTION)


def plan_slots(n_params: int | None, machine: Machine) -> list[Slot]:
    """The slots of ``machine`` for seeds of a model with ``n_params`` parameters (None = unknown: one seed
    at a time on the whole machine)."""
    if n_params is None:
        return [WHOLE_MACHINE]
    cores = cpu_ids(machine)
    if machine.gpus:
        return _gpu_slots(n_params, machine, cores)
    if n_params >= SMALL_MODEL_PARAMS:
        return [WHOLE_MACHINE]
    per_seed = 1 + SAMPLER_CORES
    if len(cores) < per_seed:
        return [Slot(index=0, cpus=tuple(cores), threads=1)]
    return [
        Slot(index=i, cpus=tuple(cores[i * per_seed : (i + 1) * per_seed]), threads=1)
        for i in range(len(cores) // per_seed)
    ]


def _gpu_slots(n_params: int, machine: Machine, cores: list[int]) -> list[Slot]:
    need_gb = seed_gpu_memory_gb(n_params)
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
