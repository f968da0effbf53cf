"""The trainer's steps compiled once in the warm starter (autorl/llm/embedded/prewarm.py): which launches ask
for it, and a real seed forked from a starter that compiled them, training on what it finds."""

from __future__ import annotations

import json

import pytest
from test_embedded_trainer import CHILD_TOML, _cfg

from autorl.engine import warm
from autorl.engine.backend import Launch, Slot
from autorl.engine.process import BudgetSpec, run_budgeted
from autorl.io.machine import Gpu, Machine, save_machine
from autorl.llm.config import load_train_config
from autorl.llm.embedded import backend as embedded_backend
from autorl.llm.embedded.backend import (
    PREWARM_ENTRY,
    PREWARM_ENV,
    WARM,
    EmbeddedBackend,
    EmbeddedChildArgs,
    Prewarm,
    build_spec,
    planned_prewarm,
)

# Imported by the test's warm starter before the prewarm runs: every torch.compile then goes to AOTAutograd
# with eager kernels (aot_eager). Its trace of the training step's backward under fake tensors is what left
# forks unsafe for autograd; inductor's C++ compiles are left out, for time. Each graph it is handed prints a
# line, which in the starter goes nowhere and in a seed goes to its log.
COUNTING = """
import torch

real_compile = torch.compile


def patch():
    aot_eager = torch._dynamo.lookup_backend("aot_eager")

    def counting(gm, example_inputs):
        print("a graph compiled here", flush=True)
        return aot_eager(gm, example_inputs)

    def compile(fn, **options):
        options.pop("mode", None)
        return real_compile(fn, backend=counting, **options)

    torch.compile = compile
"""


def test_a_seed_forked_from_the_starter_finds_both_steps_compiled_and_trains(tiny_model, tmp_path):
    """A starter with the prewarm entry compiles the sampler's decode step and the training step's decoder
    once, before it serves; the real trainer, forked from it, compiles no graph of its own, says no
    `compiling`, and its header says where the steps were compiled; its backward works (before the plain
    CPU backward that prewarm.py runs first, a forked seed's first backward raised autograd's fork error)."""
    (tmp_path / "aot_counting.py").write_text(COUNTING)
    (tmp_path / "train.toml").write_text(CHILD_TOML.format(model=tiny_model))
    cfg = load_train_config(tmp_path / "train.toml", backend="embedded")
    compiled = {"sampler": "hf-static", "compile_train": True, "max_steps": 3}
    spec = build_spec(cfg.model).model_copy(update=compiled)
    run_dir = tmp_path / "seed-0"
    run_dir.mkdir()
    (run_dir / "resolved.json").write_text(spec.model_dump_json())
    prewarm = Prewarm(model_path=spec.model_path, activation_checkpointing=None, sampler=True, train=True)
    launch = Launch(
        argv=EmbeddedChildArgs(run_dir / "resolved.json", run_dir, 0).argv("autorl.llm.embedded.train"),
        cwd=tmp_path,  # where the starter finds aot_counting
        env={PREWARM_ENV: prewarm.model_dump_json()},
        warm=("aot_counting:patch", *WARM, PREWARM_ENTRY),
    )
    with warm.starters(private=True) as pool:
        result = run_budgeted(launch, tmp_path / "run.log", BudgetSpec(60, 300, 120, 5))
        assert pool is not None and pool.forked == 1
    log = (tmp_path / "run.log").read_text()
    assert (result.status, result.stop_reason) == ("ok", "exited"), log
    assert "found compiled in its warm starter" in log and "its training step compiled in" in log
    assert "a graph compiled here" not in log and '"compiling"' not in log
    assert "warning" not in log and "Traceback" not in log
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]  # each ran its backward (the fork error: a crash)


@pytest.fixture
def cpu_machine(tmp_path, monkeypatch):
    """A prepared machine file without a GPU, in a root of the test's own."""
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    save_machine(Machine(python="3", platform="test", torch=None, cpus=2, ram_gb=1.0))


def test_every_launch_of_a_cpu_trial_asks_one_starter_for_the_compiles(tiny_model, tmp_path, cpu_machine):
    """The shipped kind of seed (a model under SMALL_MODEL_PARAMS, on a CPU machine): its training launch and
    its evals carry the same Prewarm and warm entries, so that one starter compiles once for all of them; a
    GPU slot carries none."""
    backend = EmbeddedBackend()
    cfg = _cfg(tmp_path, **{"model.name": str(tiny_model)})
    launch = backend.launch(cfg, tmp_path / "seed-0", 0, Slot(cpus=(0, 1), threads=1))
    evals = [
        backend.eval_command(cfg, None, tmp_path / "base.jsonl"),
        backend.eval_command(cfg, tmp_path / "w", tmp_path / "e.jsonl", Slot(cpus=(0, 1), threads=1), "test"),
    ]
    for other in evals:
        assert (other.env, other.warm) == (launch.env, launch.warm)
    assert launch.warm == (*WARM, PREWARM_ENTRY)
    assert Prewarm.model_validate_json(launch.env[PREWARM_ENV]) == Prewarm(
        model_path=str(tiny_model), activation_checkpointing=None, sampler=True, train=True
    )
    gpu = backend.launch(cfg, tmp_path / "seed-1", 1, Slot(cpus=(2,), threads=1, gpus=(0,)))
    assert PREWARM_ENV not in gpu.env and gpu.warm == WARM


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, (True, True)),
        ({"sampler": "hf-process"}, (False, True)),
        ({"compile_train": False}, (True, False)),
        ({"sampler": "hf", "compile_train": False}, None),  # nothing compiles
        ({"num_threads": 2}, None),  # inductor's kernels are compiled for one thread
        ({"device": "cuda"}, None),
    ],
)
def test_the_prewarm_names_what_a_cpu_seed_would_compile(tiny_model, tmp_path, cpu_machine, change, expected):
    cfg = _cfg(tmp_path, **{"model.name": str(tiny_model), "trainer.model": {"ac": {"freq": 2}}})
    prewarm = planned_prewarm(build_spec(cfg.model).model_copy(update=change))
    if expected is None:
        assert prewarm is None
    else:
        assert prewarm is not None and (prewarm.sampler, prewarm.train) == expected
        assert prewarm.activation_checkpointing == 2  # the layers checkpointed shape the training graph


def test_no_prewarm_on_a_gpu_machine_or_for_a_model_that_trains_on_every_core(
    tiny_model, tmp_path, cpu_machine, monkeypatch
):
    spec = build_spec(_cfg(tmp_path, **{"model.name": str(tiny_model)}).model)
    assert planned_prewarm(spec) is not None
    gpus = [Gpu(0, "a GPU", 80.0)]
    save_machine(Machine(python="3", platform="test", torch=None, cpus=2, ram_gb=1.0, gpus=gpus))
    assert planned_prewarm(spec) is None  # (the base eval's launch has no GPU slot there)
    save_machine(Machine(python="3", platform="test", torch=None, cpus=2, ram_gb=1.0))
    monkeypatch.setattr(
        embedded_backend, "read_param_count", lambda path: embedded_backend.SMALL_MODEL_PARAMS
    )
    assert planned_prewarm(spec) is None  # it trains on every core: nothing compiles
