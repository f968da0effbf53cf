"""Slot planning: how many seeds run side by side on a described machine, and each one's share of it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from transformers import Qwen2ForCausalLM

from autorl.classic.backend import ClassicBackend
from autorl.classic.config import ClassicConfig
from autorl.engine.backend import WHOLE_MACHINE
from autorl.io.machine import Gpu, Machine, cpu_ids
from autorl.llm.embedded.backend import EmbeddedBackend
from autorl.llm.embedded.slots import (
    GPU_MEMORY_USABLE,
    SMALL_MODEL_PARAMS,
    TRAINING_BYTES_PER_PARAM,
    VLLM_GPU_FRACTION,
    plan_slots,
    read_param_count,
    read_vocab_size,
    seed_gpu_memory_gb,
)
from autorl.llm.schema import TrainConfig

TINY = 200_000  # parameters: a model the trainer runs on one thread
QWEN3_0_6B = 600_000_000
QWEN3_VOCAB = 151_936


def machine(cpus: int, gpus: list[Gpu] | None = None) -> Machine:
    return Machine(python="3.12", platform="Linux x86_64", torch="2", cpus=cpus, ram_gb=64, gpus=gpus or [])


def assert_disjoint_cores(slots) -> None:
    cores = [c for s in slots for c in s.cpus]
    assert len(cores) == len(set(cores))


@pytest.mark.parametrize("cores", [2, 3, 16])
def test_cpu_small_model_gets_two_cores_per_seed(cores):
    """A one-thread trainer plus its sampling process: n cores fit n // 2 seeds, each on its own 2 cores."""
    m = machine(cores)
    slots = plan_slots(TINY, m)
    assert len(slots) == cores // 2
    assert [s.index for s in slots] == list(range(len(slots)))
    assert all(len(s.cpus) == 2 and s.threads == 1 and not s.gpus for s in slots)
    assert set(slots[0].cpus) <= set(cpu_ids(m))
    assert_disjoint_cores(slots)


def test_cpu_single_core_and_big_model():
    assert [(s.cpus, s.threads) for s in plan_slots(TINY, machine(1))] == [(tuple(cpu_ids(machine(1))), 1)]
    # A big model's trainer uses every core: one seed at a time.
    assert plan_slots(SMALL_MODEL_PARAMS, machine(16)) == [WHOLE_MACHINE]
    assert plan_slots(None, machine(16)) == [WHOLE_MACHINE]  # unknown size


@pytest.mark.parametrize(("ac_freq", "every"), [(None, 1), (0, 0)])
def test_gpu_seeds_share_a_gpu_by_memory(ac_freq, every):
    """The 0.6B shape checkpoints every layer unless train.toml turns [trainer.model.ac] off (ac_freq 0)."""
    gpus = [Gpu(0, "H200", 140.0), Gpu(1, "H200", 140.0)]
    slots = plan_slots(QWEN3_0_6B, machine(16, gpus), QWEN3_VOCAB, ac_freq)
    per_gpu = int(140.0 * GPU_MEMORY_USABLE // seed_gpu_memory_gb(QWEN3_0_6B, QWEN3_VOCAB, every))
    assert 1 < per_gpu < 8  # the estimate of a 0.6B model: several, not many, per 140 GB
    assert [s.gpus for s in slots] == [(0,)] * per_gpu + [(1,)] * per_gpu
    assert all(s.gpu_share == pytest.approx(1 / per_gpu) for s in slots)
    assert per_gpu * seed_gpu_memory_gb(QWEN3_0_6B, QWEN3_VOCAB, every) <= 140.0
    assert_disjoint_cores(slots)
    assert all(s.cpus and s.threads == len(s.cpus) for s in slots)


def test_gpu_seed_count_is_capped_by_cores_and_a_big_model_gets_the_whole_gpu():
    slots = plan_slots(TINY, machine(4, [Gpu(0, "H100", 80.0)]))
    assert len(slots) == 4 and all(s.gpus == (0,) and s.gpu_share == 0.25 for s in slots)
    assert_disjoint_cores(slots)
    slots = plan_slots(QWEN3_0_6B, machine(16, [Gpu(0, "L4", 24.0)]))
    assert len(slots) == 1 and slots[0].gpus == (0,) and slots[0].gpu_share is None


def test_a_seed_s_share_holds_the_measured_peak_of_a_big_vocabulary():
    """The kit's part 2 (H200, 2026-11-26): the Qwen3-0.6B shape's trainer peaked at 28.18 GiB with every
    activation kept and the full logits. The earlier rule (one copy of the logits) planned 3 seeds on an 80 GB
    GPU, each capped at 26.7 GB, under that peak. Part 6 (H200, 2026-11-28): with every layer checkpointed
    and the chunked head, the trainer's default for that shape, 13.80 GiB with the hf-graphs sampler."""
    for ac_freq, measured_peak_gb in ((0, 28.18), (None, 13.80), (1, 13.80)):
        for memory_gb in (80.0, 140.0):
            slots = plan_slots(QWEN3_0_6B, machine(16, [Gpu(0, "H", memory_gb)]), QWEN3_VOCAB, ac_freq)
            cap_gb = memory_gb * (slots[0].gpu_share or 1.0)  # the trainer's set_per_process_memory_fraction
            assert cap_gb >= measured_peak_gb, (ac_freq, memory_gb, len(slots))
    h100 = machine(16, [Gpu(0, "H100", 80.0)])
    assert len(plan_slots(QWEN3_0_6B, h100, QWEN3_VOCAB, 0)) == 1
    assert len(plan_slots(QWEN3_0_6B, h100, QWEN3_VOCAB, 2)) == 1  # every second layer: not measured, as none
    assert len(plan_slots(QWEN3_0_6B, h100, QWEN3_VOCAB)) == 2  # checkpointed: the default
    # The vocabulary is what grew: the same parameters with a small one fit several seeds.
    assert len(plan_slots(QWEN3_0_6B, h100, 512, 0)) > 1
    weights_gb = QWEN3_0_6B * TRAINING_BYTES_PER_PARAM / 2**30
    assert seed_gpu_memory_gb(QWEN3_0_6B, QWEN3_VOCAB) * (1 - VLLM_GPU_FRACTION) > weights_gb + 15
    assert seed_gpu_memory_gb(QWEN3_0_6B, QWEN3_VOCAB, 1) * (1 - VLLM_GPU_FRACTION) > 13.80 + 2


def test_embedded_backend_plans_from_the_model_on_disk(tiny_model, tmp_path):
    model = Qwen2ForCausalLM.from_pretrained(tiny_model)
    assert read_param_count(str(tiny_model)) == sum(p.numel() for p in model.parameters())
    assert read_param_count(str(tmp_path / "missing")) is None
    assert read_vocab_size(str(tiny_model)) == model.config.vocab_size > 0
    assert read_vocab_size(str(tmp_path / "missing")) == 0
    train = TrainConfig.model_validate(
        {
            "model": {"name": str(tiny_model)},
            "orchestrator": {"train": {"source": [{"env": {"taskset": {"id": "autorl-arithmetic"}}}]}},
        }
    )
    slots = EmbeddedBackend().plan_slots(SimpleNamespace(model=train), machine(8))
    assert len(slots) == 4 and all(s.threads == 1 for s in slots)


def test_embedded_backend_plans_a_gpu_by_train_toml_s_checkpointing(tiny_model, monkeypatch):
    """[trainer.model.ac] reaches the GPU plan: unset, the 0.6B shape is checkpointed (2 seeds on an 80 GB
    GPU); ac = "None" keeps every activation (1 seed)."""
    import autorl.llm.embedded.backend as backend_module

    monkeypatch.setattr(backend_module, "read_param_count", lambda model: QWEN3_0_6B)
    monkeypatch.setattr(backend_module, "read_vocab_size", lambda model: QWEN3_VOCAB)
    h100 = machine(16, [Gpu(0, "H100", 80.0)])
    counts = []
    for trainer in ({}, {"model": {"ac": "None"}}):
        train = TrainConfig.model_validate(
            {
                "model": {"name": str(tiny_model)},
                "trainer": trainer,
                "orchestrator": {"train": {"source": [{"env": {"taskset": {"id": "autorl-arithmetic"}}}]}},
            }
        )
        counts.append(len(EmbeddedBackend().plan_slots(SimpleNamespace(model=train), h100)))
    assert counts == [2, 1]


@pytest.mark.parametrize(("torch_threads", "expected"), [(1, 6), (2, 3), (4, 1), (8, 1)])
def test_classic_one_seed_per_torch_threads_cores(torch_threads, expected):
    cfg = SimpleNamespace(model=ClassicConfig(torch_threads=torch_threads))
    slots = ClassicBackend().plan_slots(cfg, machine(6))
    assert len(slots) == expected
    assert all(s.threads == torch_threads for s in slots)
    assert all(len(s.cpus) == min(torch_threads, 6) for s in slots)
    assert_disjoint_cores(slots)
