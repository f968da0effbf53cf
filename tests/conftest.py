"""Shared fixtures: a repo root for trials run with a test-double backend (tests/fakes/)."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.fake_backend import TRAIN_TOML

from autorl.engine import process
from autorl.engine.seed import write_resolved as write_resolved_json
from autorl.io.machine import Machine, save_machine

REPO = Path(__file__).resolve().parent.parent

# A warm starter ends with its trial here (tests/test_warm.py tests the ones kept between trials): every
# test's environment differs, so none would be reused, and hundreds would wait idle with torch imported.
os.environ["AUTORL_WARM_KEEP"] = "0"
# No runner reads CPU pressure, here or in the children and Ray workers a test starts (they inherit this), so
# no seed is `contended` whatever else runs: the suite's own workers keep the CPUs 17-73% busy
# (docs/agentview.md), and a flag they raised would move the reference pools, the noise floor, status's
# counts, a confirm's status, the kept seeds of a stopped trial and a stand-in's decisions (CI saw both).
# A test of the flag asks for `cpu_pressure` or writes the seeds' shares.
os.environ[process.PRESSURE_VAR] = ""


def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker starts with SIGINT ignored (execnet), and the children a test starts inherit
    that: give it back a terminal's disposition, so Ctrl-C tests see what a user's run.py sees."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def make_root(path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """AUTORL_ROOT in `path` with train.toml, the repo's eval.toml and a prepared (fake) machine file."""
    monkeypatch.setenv("AUTORL_ROOT", str(path))
    (path / "train.toml").write_text(TRAIN_TOML)
    shutil.copyfile(REPO / "eval.toml", path / "eval.toml")
    machine = Machine(
        python="3", platform="test", torch=None, cpus=2, ram_gb=1.0, model_name="tiny-test-model"
    )
    save_machine(machine)
    return path


def float_scalars(example_inputs: list) -> list:
    """The inputs of a torch.compile'd graph (what a backend is given) that are a float: a Python or symbolic
    float, or a 0-d floating tensor (a float dynamo made an input). The embedded trainer's compiles have
    none (autorl/llm/embedded/compiling.py)."""
    import torch

    def scalar(x: object) -> bool:
        return isinstance(x, float | torch.SymFloat) or (
            isinstance(x, torch.Tensor) and x.dim() == 0 and x.is_floating_point()
        )

    return [x for x in example_inputs if scalar(x)]


@pytest.fixture
def cpu_pressure(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's real CPU pressure (/proc/pressure/cpu), for a test of the `contended` flag."""
    monkeypatch.delenv(process.PRESSURE_VAR)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """make_root in the test's temp dir."""
    return make_root(tmp_path, monkeypatch)


@pytest.fixture
def one_starter() -> Iterator[None]:
    """The test's in-process trials fork their children from one warm starter, as an agent's trials in one
    directory do (AUTORL_WARM_KEEP is 0 here): torch imported once a test, not once a trial."""
    from autorl.engine import warm

    with warm.starters():
        yield


@pytest.fixture
def write_resolved():
    """What the runner does before `backend.launch`: autorl.engine.seed.write_resolved (its only writer)."""
    return write_resolved_json


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random Qwen2 (~50k params) with the project's char tokenizer, saved in HF format."""
    import torch
    from transformers import Qwen2ForCausalLM

    from autorl.llm.model_builder import build_config, build_tokenizer

    out = tmp_path_factory.mktemp("tiny-model")
    tok = build_tokenizer()
    cfg = build_config(
        tok,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out
