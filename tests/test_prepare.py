"""prepare.py end to end in a temporary project root: machine file, the builtin model built on first use,
a local model path, and the message for a hub model that cannot be fetched offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autorl.io import paths
from autorl.io.machine import load_machine
from autorl.llm import model_builder
from autorl.llm import prepare as prep

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    monkeypatch.delenv("PRIME_RL_DIR", raising=False)
    shutil.copy(REPO / "eval.toml", tmp_path / "eval.toml")
    shutil.copy(REPO / "train.toml", tmp_path / "train.toml")
    # A few-step build of a very small model: the real recipe's code path, in about a second.
    small = [("SFT_MAX_STEPS", 3), ("HIDDEN_SIZE", 16), ("INTERMEDIATE_SIZE", 32), ("NUM_LAYERS", 1)]
    for name, value in small:
        monkeypatch.setattr(model_builder, name, value)
    return tmp_path


def set_model_name(root: Path, name: str) -> Path:
    path = root / "train.toml"
    text = path.read_text().replace('name = ".autorl/models/tiny-arith"', f'name = "{name}"')
    path.write_text(text)
    return path


def test_first_prepare_builds_the_builtin_model_and_writes_the_machine_file(root: Path, capsys) -> None:
    machine = prep.prepare(root / "train.toml")
    built = root / prep.BUILTIN_MODEL
    assert model_builder.is_complete(built)
    assert json.loads((built / model_builder.MARKER).read_text())["steps"] == 3
    saved = load_machine()
    assert saved is not None and saved.backend == "embedded" == machine.backend
    assert Path(saved.model_path) == built and saved.model_name == prep.BUILTIN_MODEL
    assert saved.cpus >= 1 and saved.prime_rl is None
    out = capsys.readouterr().out
    assert "environment autorl-arithmetic (training): data ready" in out and "backend: embedded" in out
    assert (
        "environment autorl-arithmetic (eval): data ready" in out
    )  # as each reads it: two lines, told apart
    prep.prepare(root / "train.toml")  # a second prepare reuses the built model
    assert "already built" in capsys.readouterr().err


def test_a_local_model_directory_is_used_as_is(root: Path) -> None:
    local = model_builder.build_base_model(root / "my-model", steps=1, batch_size=2, progress=False)
    machine = prep.prepare(set_model_name(root, str(local)))
    assert Path(machine.model_path) == local
    assert not (root / prep.BUILTIN_MODEL).exists()


def test_a_path_without_a_model_is_refused(root: Path) -> None:
    (root / "empty").mkdir()
    with pytest.raises(prep.PrepareError, match="holds no Hugging Face model"):
        prep.prepare(set_model_name(root, str(root / "empty")))
    assert not paths.machine_file().exists()


def test_an_unreachable_hub_model_says_how_to_provide_a_local_path(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(root / "hf"))  # an empty cache
    with pytest.raises(prep.PrepareError) as err:
        prep.prepare(set_model_name(root, "no-such-org/no-such-model"))
    assert "huggingface-cli download no-such-org/no-such-model" in str(err.value)
    assert "set model.name in train.toml" in str(err.value)


def test_main_exits_1_with_the_message(root: Path, capsys) -> None:
    (root / "empty").mkdir()
    assert prep.main(["--config", str(set_model_name(root, str(root / "empty")))]) == 1
    assert "prepare failed" in capsys.readouterr().err


def test_a_prime_rl_path_that_is_no_checkout_is_refused_before_anything(root: Path, capsys) -> None:
    """docs/prime-rl.md's `prepare.py --prime-rl /path/to/prime-rl` with a path that holds no prime-rl: exit 2
    and why, no machine file (it used to warn, then prepare the embedded backend and exit 0)."""
    assert prep.main(["--prime-rl", str(root / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert f"--prime-rl {root / 'nowhere'}: not a usable prime-rl checkout" in err
    assert not (root / ".autorl" / "machine.json").exists()


def test_prepare_installs_the_shipped_model_without_a_warm_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    monkeypatch.delenv("PRIME_RL_DIR", raising=False)
    for name in ("eval.toml", "train.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    # the shipped model is the one the code pins, built from the code's recipe
    assert model_builder.model_sha256(model_builder.SHIPPED_DIR) == model_builder.SHIPPED_SHA256
    assert model_builder.is_complete(model_builder.SHIPPED_DIR, model_builder.build_recipe())

    def no_warm_start(*args, **kwargs):
        raise AssertionError("prepare ran the warm-start although a model is shipped")

    monkeypatch.setattr(model_builder, "build_base_model", no_warm_start)
    machine = prep.prepare(tmp_path / "train.toml")
    installed = tmp_path / prep.BUILTIN_MODEL
    assert Path(machine.model_path) == installed
    assert model_builder.model_sha256(installed) == model_builder.SHIPPED_SHA256
    assert not prep.builtin_model_outdated(machine)
    prep.prepare(tmp_path / "train.toml")
    assert "already installed" in capsys.readouterr().err
    # a modified shipped file is refused, naming the fix
    tampered = tmp_path / "tampered"
    shutil.copytree(model_builder.SHIPPED_DIR, tampered)
    (tampered / "config.json").write_text((tampered / "config.json").read_text() + " ")
    monkeypatch.setattr(model_builder, "SHIPPED_DIR", tampered)
    shutil.rmtree(installed)
    with pytest.raises(prep.PrepareError, match="git checkout models/"):
        prep.prepare(tmp_path / "train.toml")


def test_the_bytecode_is_written_once_where_python_writes_none(tmp_path: Path, monkeypatch) -> None:
    """Where PYTHONDONTWRITEBYTECODE is set and torch has no bytecode, prepare's first step compiles the
    environment's packages (here a stand-in site-packages holding a `torch` package); then it is a no-op."""
    import importlib.util
    import sys
    import sysconfig
    from types import SimpleNamespace

    from autorl.io import bytecode

    site = tmp_path / "site-packages"
    (site / "torch").mkdir(parents=True)
    init = site / "torch" / "__init__.py"
    init.write_text("X = 1\n")
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"purelib": str(site)})
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: SimpleNamespace(origin=str(init)))
    said: list[str] = []
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    bytecode.compile_once(said.append)  # Python writes its own bytecode: nothing to do
    assert said == [] and not Path(importlib.util.cache_from_source(str(init))).exists()

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert bytecode.missing()
    bytecode.compile_once(said.append)
    assert len(said) == 1 and "PYTHONDONTWRITEBYTECODE" in said[0]
    assert Path(importlib.util.cache_from_source(str(init))).exists()
    assert not bytecode.missing()
    bytecode.compile_once(said.append)
    assert len(said) == 1
