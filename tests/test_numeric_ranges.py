"""Every number a user can write is finite and bounded, checked before anything runs (issue 25).

The schemas are walked field by field, so a numeric field added later without an upper bound fails here;
the extremes that used to pass (lr = 1e300, weight_decay = 1e308, --budget 1e-300, TOML's inf and nan) are
refused end to end by run.py with exit 2, the key named, nothing recorded.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path

import annotated_types
import pytest
from pydantic import BaseModel, ValidationError

from autorl.classic.config import ClassicConfig
from autorl.commands import trial
from autorl.llm.eval import EnvSpec
from autorl.llm.schema import TrainConfig

REPO = Path(__file__).resolve().parent.parent
TRAIN = (REPO / "train.toml").read_text()
CLASSIC = (REPO / "classic.toml").read_text()


def _models(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models inside an annotation (unions, Annotated, lists, dicts)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def _is_number(annotation: object) -> bool:
    if annotation in (int, float):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_number(a) for a in typing.get_args(annotation))
    return False


def numeric_fields(model: type[BaseModel], prefix: str = "", seen: set | None = None) -> list[tuple]:
    """(dotted name, FieldInfo) of every int/float field reachable from `model`."""
    seen = set() if seen is None else seen
    if model in seen:
        return []
    seen.add(model)
    out = []
    for name, field in model.model_fields.items():
        if _is_number(field.annotation):
            out.append((f"{prefix}{name}", field))
        for sub in _models(field.annotation):
            out += numeric_fields(sub, f"{prefix}{name}.", seen)
    return out


@pytest.mark.parametrize("model", [TrainConfig, ClassicConfig, EnvSpec])
def test_every_numeric_field_has_an_upper_bound_and_refuses_inf_and_nan(model):
    fields = numeric_fields(model)
    assert len(fields) >= 6
    if model is TrainConfig:  # the walk reaches the nested tables
        assert {"trainer.optim.lr", "orchestrator.train.source.ratio", "trainer.model.lora.rank"} <= {
            name for name, _ in fields
        }
    unbounded = [
        name
        for name, field in fields
        if not any(isinstance(m, annotated_types.Le | annotated_types.Lt) for m in field.metadata)
    ]
    assert unbounded == [], f"numeric fields without an upper bound: {unbounded}"
    assert model.model_config.get("allow_inf_nan") is False


def _set(text: str, key: str, value: str) -> str:
    lines = [f"{key} = {value}" if line.split("=")[0].strip() == key else line for line in text.splitlines()]
    assert lines != text.splitlines(), f"{key} is not in the shipped config"
    return "\n".join(lines) + "\n"


def refused_by_run_py(root: Path, track: str, text: str, capsys) -> str:
    path = root / ("classic.toml" if track == "classic" else "train.toml")
    path.write_text(text)
    assert trial.main(["--track", track, "--config", str(path), "--dry-run"]) == 2
    assert not (root / "results.tsv").exists() and not (root / "runs").exists()
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("track", "key", "value", "named"),
    [
        ("llm", "lr", "1e300", "trainer.optim.lr"),
        ("llm", "weight_decay", "1e308", "trainer.optim.weight_decay"),
        ("llm", "lr", "nan", "trainer.optim.lr"),
        ("llm", "temperature", "inf", "orchestrator.train.sampling.temperature"),
        ("llm", "batch_size", "9223372036854775807", "orchestrator.batch_size"),
        ("llm", "seq_len", "1000000000", "seq_len"),
        ("classic", "max_grad_norm", "inf", "max_grad_norm"),
        ("classic", "clip_obs", "1e300", "clip_obs"),
        ("classic", "learning_rate", "-nan", "learning_rate"),
    ],
)
def test_extreme_numbers_are_refused_before_anything_runs(
    tmp_path, monkeypatch, capsys, track, key, value, named
):
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    err = refused_by_run_py(tmp_path, track, _set(TRAIN if track == "llm" else CLASSIC, key, value), capsys)
    assert f"`{named}`" in err, err


def test_the_shipped_configs_sit_inside_the_ranges():
    import tomllib

    TrainConfig.model_validate(tomllib.loads(TRAIN))
    ClassicConfig.model_validate(tomllib.loads(CLASSIC))
    for env in tomllib.loads((REPO / "eval.toml").read_text())["env"]:
        EnvSpec.model_validate(env)


def test_eval_spec_refuses_extremes():
    env = {"taskset": {"id": "autorl-arithmetic"}, "num_examples": 10, "max_tokens": 16}
    EnvSpec.model_validate(env)
    for key, value in (("temperature", float("inf")), ("max_tokens", 10**12), ("seed", -1)):
        with pytest.raises(ValidationError, match=key):
            EnvSpec.model_validate({**env, key: value})


@pytest.mark.parametrize("budget", ["1e-300", "0.01", "0", "1e9", "nan"])
def test_a_budget_outside_its_range_is_refused_by_the_parser(tmp_path, monkeypatch, capsys, budget):
    monkeypatch.setenv("AUTORL_ROOT", str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        trial.main(["--budget", budget, "--dry-run"])
    assert exc.value.code == 2
    assert "argument --budget: must be a finite number in [0.1, 604800]" in capsys.readouterr().err
    assert not (tmp_path / "results.tsv").exists() and not (tmp_path / "runs").exists()
