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
    COMPILED_SAMPLERS,
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
        env={PREWARM_ENV: prewarm.model_dump_json(), "CUDA_VISIBLE_DEVICES": ""},  # a CPU machine's
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


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize(
    ("sampler", "compile_train", "lag"),
    [
        ("auto", "auto", 1),  # the shipped config
        ("auto", "auto", 0),  # strictly on-policy: on 2 cores HFSampler, nothing compiles
        ("hf-process", "auto", 1),
        ("hf-static", "auto", 0),
        ("auto", False, 1),
        ("hf", True, 1),
        ("hf", "auto", 1),
    ],
)
def test_the_prewarm_names_what_the_seed_itself_compiles(
    tiny_model, tmp_path, cpu_machine, monkeypatch, cores, sampler, compile_train, lag
):
    """planned_prewarm, on the runner's side, against the real Trainer of the same spec on a machine of that
    many cores: the starter compiles the sampler's step where the seed's sampler compiles one and the
    training step where the seed compiles it, and nothing where the seed compiles nothing."""
    import torch
    from test_embedded_trainer import make_trainer

    import autorl.llm.embedded.train as train_module

    save_machine(Machine(python="3", platform="test", torch=None, cpus=cores, ram_gb=1.0))
    monkeypatch.setattr(train_module, "own_cpu_ids", lambda: list(range(cores)))
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)  # what would compile runs eagerly here
    overrides = {"sampler": sampler, "compile_train": compile_train, "max_off_policy_steps": lag}
    trainer = make_trainer(tiny_model, tmp_path / "run", **overrides)
    try:
        seed_compiles = (trainer.sampler_name in COMPILED_SAMPLERS, trainer.train_decoder is not None)
    finally:
        if trainer.process_sampler is not None:
            trainer.process_sampler.close()
    prewarm = planned_prewarm(trainer.spec)
    if seed_compiles == (False, False):
        assert prewarm is None
    else:
        assert prewarm is not None and (prewarm.sampler, prewarm.train) == seed_compiles


def test_the_prewarm_keeps_the_checkpointed_layers_and_refuses_what_no_seed_would_run(
    tiny_model, tmp_path, cpu_machine
):
    cfg = _cfg(tmp_path, **{"model.name": str(tiny_model), "trainer.model": {"ac": {"freq": 2}}})
    spec = build_spec(cfg.model)
    prewarm = planned_prewarm(spec)
    assert prewarm is not None and prewarm.activation_checkpointing == 2  # they shape the training graph
    assert planned_prewarm(spec.model_copy(update={"num_threads": 2})) is None  # kernels built for 1 thread
    assert planned_prewarm(spec.model_copy(update={"device": "cuda"})) is None


def test_no_prewarm_on_a_gpu_machine_or_an_unprepared_one_or_for_a_model_that_trains_on_every_core(
    tiny_model, tmp_path, cpu_machine, monkeypatch
):
    """Where a GPU may be there (the machine file says so, or there is none yet) the starter never runs the
    prewarm: its first backward would start autograd's thread for the GPU and leave forks unsafe."""
    spec = build_spec(_cfg(tmp_path, **{"model.name": str(tiny_model)}).model)
    assert planned_prewarm(spec) is not None
    (tmp_path / ".autorl" / "machine.json").unlink()
    assert planned_prewarm(spec) is None
    gpus = [Gpu(0, "a GPU", 80.0)]
    save_machine(Machine(python="3", platform="test", torch=None, cpus=2, ram_gb=1.0, gpus=gpus))
    assert planned_prewarm(spec) is None  # (the base eval's launch has no GPU slot there)
    save_machine(Machine(python="3", platform="test", torch=None, cpus=2, ram_gb=1.0))
    monkeypatch.setattr(
        embedded_backend, "read_param_count", lambda path: embedded_backend.SMALL_MODEL_PARAMS
    )
    assert planned_prewarm(spec) is None  # it trains on every core: nothing compiles
