"""The tiny base model: builds without a hub, saves in HF format, reloads offline, generates; idempotent;
the warm-start stops at the probe's competence target and never trains on a probe problem."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from pathlib import Path

import pytest
import torch
from autorl_arithmetic import core as arithmetic
from autorl_reverse import core as reverse
from transformers import AutoModelForCausalLM, AutoTokenizer

from autorl.llm import envs
from autorl.llm import model_builder as mb

TINY = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2
)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("models") / "tiny"
    return mb.build_base_model(out, steps=20, batch_size=16, progress=False, target=None, **TINY)


def test_tokenizer_round_trips_characters() -> None:
    tok = mb.build_tokenizer()
    text = "What is 347 + 586?\n#### 933"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)  # one token per character
    assert tok.decode(ids) == text
    assert tok.pad_token_id != tok.eos_token_id
    assert tok.decode([tok.eos_token_id, *ids[:4]], skip_special_tokens=True) == "What"
    assert tok.decode(tok("naïve €5\t", add_special_tokens=False)["input_ids"]) == "naïve €5\t"  # any text


def test_build_saves_and_reloads_offline(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert mb.is_complete(tiny_model)
    info = json.loads((tiny_model / mb.MARKER).read_text())
    assert info["steps"] == 20
    tok = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    assert model.config.model_type == "qwen2" and model.config.hidden_size == 32
    assert tok.eos_token == mb.EOS_TOKEN and tok.pad_token == mb.PAD_TOKEN and tok.padding_side == "left"
    # AutoTokenizer must rebuild exactly the tokenizer the warm-start used (one token per character)
    text = "What is 3 - 7 + 9?\n#### 5"
    assert tok(text)["input_ids"] == mb.build_tokenizer()(text)["input_ids"]
    assert tok.decode(tok(text)["input_ids"]) == text and len(tok(text)["input_ids"]) == len(text)
    assert tok.chat_template == mb.CHAT_TEMPLATE  # saved with the tokenizer, so every loader finds it
    assert "chat_template" in json.loads((tiny_model / "tokenizer_config.json").read_text())
    batch = tok(["What is 1 + 2?\n", "What is 10 - 3?\n"], return_tensors="pt", padding=True)
    out = model.generate(**batch, max_new_tokens=5, do_sample=False)
    assert out.shape[0] == 2 and out.shape[1] <= batch["input_ids"].shape[1] + 5
    # the warm-start moved the weights away from the random init: the loss on the format went down
    fresh = AutoModelForCausalLM.from_config(mb.build_config(tok, **TINY))
    ids = tok("What is 1 + 2?\n#### 3", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert model(ids, labels=ids).loss < fresh(ids, labels=ids).loss


def test_build_is_deterministic_and_idempotent(tiny_model: Path, tmp_path: Path) -> None:
    again = mb.build_base_model(
        tmp_path / "again", steps=20, batch_size=16, progress=False, target=None, **TINY
    )
    a = AutoModelForCausalLM.from_pretrained(tiny_model).state_dict()
    b = AutoModelForCausalLM.from_pretrained(again).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    stamp = (again / "model.safetensors").stat().st_mtime_ns
    mb.build_base_model(again, steps=20, batch_size=16, progress=False, target=None, **TINY)  # complete: skip
    assert (again / "model.safetensors").stat().st_mtime_ns == stamp
    (again / mb.MARKER).unlink()  # an interrupted build (no marker) is redone
    mb.build_base_model(again, steps=20, batch_size=16, progress=False, target=None, **TINY)
    assert mb.is_complete(again)


def test_a_model_built_from_another_recipe_is_rebuilt(tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "m"
    mb.build_base_model(out, steps=5, batch_size=4, progress=False, target=None, **TINY)
    assert mb.is_complete(out, mb.build_recipe(5, mb.SFT_SEED, 4, None, **TINY))
    assert not mb.is_complete(out, mb.build_recipe(6, mb.SFT_SEED, 4, None, **TINY))
    assert not mb.is_complete(out, mb.build_recipe(5, mb.SFT_SEED, 4, 0.4, **TINY))  # with a probe
    mb.build_base_model(out, steps=6, batch_size=4, progress=False, target=None, **TINY)  # a code update
    assert json.loads((out / mb.MARKER).read_text())["steps"] == 6


def test_a_change_of_the_task_defaults_changes_the_recipe(monkeypatch) -> None:
    # The warm-start data follows the tasksets' defaults: when they change, the model must be rebuilt.
    shipped = mb.build_recipe()
    assert shipped["tasks"]["autorl-arithmetic"]["ops"] == arithmetic.Settings().ops
    assert shipped["tasks"]["autorl-reverse"]["alphabet"] == reverse.Settings().alphabet

    @dataclasses.dataclass(frozen=True)
    class WithSubtraction(arithmetic.Settings):
        ops: str = "+-"

    monkeypatch.setattr(arithmetic, "Settings", WithSubtraction)
    assert mb.build_recipe()["tasks"]["autorl-arithmetic"]["ops"] == "+-"
    assert mb.build_recipe() != shipped


def test_a_change_of_a_reward_changes_the_recipe(monkeypatch) -> None:
    # The probe scores with each task's reward: a new reward would stop the warm-start elsewhere.
    shipped = mb.build_recipe()

    def exact_only(completion: str, answer: str) -> float:
        return float(completion.strip() == reverse.format_answer(answer))

    monkeypatch.setattr(reverse, "score", exact_only)
    changed = mb.build_recipe()
    assert changed["rewards"]["autorl-reverse"] != shipped["rewards"]["autorl-reverse"]
    assert changed["rewards"]["autorl-arithmetic"] == shipped["rewards"]["autorl-arithmetic"]


def test_the_probe_is_drawn_like_the_eval_and_held_out_from_the_warm_start_and_the_eval() -> None:
    probe = mb.probe_sets()
    assert [env.name for env, _ in probe] == list(mb.TASKS)  # every warm-start task, as eval.toml
    trained = list(itertools.islice(mb.warm_start_pairs(mb.SFT_SEED), 4000))
    for env, problems in probe:
        assert len(problems) == mb.PROBE_SIZE and all(mb.is_probe_problem(env, p) for p in problems)
        assert all(p.id.startswith("train-") for p in problems)  # train split: never an eval problem
        evals = envs.load_env(env.name, {"split": "eval"}).eval_examples(mb.PROBE_SIZE)
        assert not {p.prompt for p in evals} & {p.prompt for p in problems}
        # the eval's mix of problem sizes, example by example: digits and letters per position
        size = lambda prompt: re.sub("[a-z]", "a", re.sub("[0-9]", "0", prompt))  # noqa: E731
        assert [size(p.prompt) for p in problems] == [size(e.prompt) for e in evals]
        assert not {p.prompt for p in problems} & {prompt for prompt, _ in trained}
    # the warm-start alternates the tasks and trains on the reference completion
    assert all(re.fullmatch(r"[0-9+]+=", p) for p, _ in trained[0::2])
    assert all(re.fullmatch(r"rev [a-z]+=", p) for p, _ in trained[1::2])
    assert all(c == f"#### {eval(p[:-1])}" for p, c in trained[0:200:2])
    assert all(c == f"#### {p[4:-1][::-1]}" for p, c in trained[1:200:2])
    # one side for a problem and its reordering
    env = envs.load_env("autorl-arithmetic")
    swapped = [
        dataclasses.replace(p, prompt="+".join(p.prompt[:-1].split("+")[::-1]) + "=") for p in probe[0][1]
    ]
    assert all(mb.is_probe_problem(env, p) for p in swapped)
    # about 1 train problem in PROBE_BUCKETS is probe-only
    stream = list(itertools.islice(env.train_examples(1), 5000))
    share = sum(mb.is_probe_problem(env, p) for p in stream) / len(stream)
    assert 0.5 / mb.PROBE_BUCKETS < share < 1.5 / mb.PROBE_BUCKETS


def test_greedy_accuracy_scores_the_generated_answers() -> None:
    tok = mb.build_tokenizer()
    env, problems = mb.probe_sets()[0]
    problems = problems[:10]

    class Answers(torch.nn.Module):
        """Stands in for the model: "#### <answer>" for the first 7 problems, a wrong number for the rest."""

        def generate(self, input_ids, attention_mask, generation_config):
            assert not self.training and not generation_config.do_sample  # greedy, in eval mode
            rows = []
            for i, p in enumerate(problems):
                answer = p.answer if i < 7 else str(int(p.answer) + 1)
                rows.append(input_ids[i].tolist() + tok(f"#### {answer}")["input_ids"] + [tok.eos_token_id])
            width = max(map(len, rows))
            return torch.tensor([r + [tok.pad_token_id] * (width - len(r)) for r in rows])

    model = Answers().train()
    assert mb.greedy_accuracy(model, tok, env, problems) == 0.7
    assert model.training  # left as it was


def test_the_warm_start_stops_when_the_probe_reaches_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probes: list[int] = []
    accuracies = iter([0.1, 0.3, 0.5, 0.9])

    def fake_accuracy(model, tokenizer, probe) -> float:
        assert [len(problems) for _, problems in probe] == [mb.PROBE_SIZE] * len(mb.TASKS)
        probes.append(1)
        return next(accuracies)

    monkeypatch.setattr(mb, "probe_accuracy_of", fake_accuracy)
    monkeypatch.setattr(mb, "PROBE_EVERY", 2)
    out = mb.build_base_model(tmp_path / "m", steps=50, batch_size=4, progress=False, target=0.45, **TINY)
    info = json.loads((out / mb.MARKER).read_text())
    assert len(probes) == 3 and info["steps"] == 6 and info["probe_accuracy"] == 0.5
    assert info["recipe"]["probe"]["target"] == 0.45 and info["recipe"]["sft"]["max_steps"] == 50


def test_a_target_never_reached_trains_every_step_and_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(mb, "PROBE_EVERY", 4)
    monkeypatch.setattr(mb, "PROBE_SIZE", 16)
    out = mb.build_base_model(tmp_path / "m", steps=8, batch_size=4, progress=True, target=1.01, **TINY)
    info = json.loads((out / mb.MARKER).read_text())
    assert info["steps"] == 8 and 0.0 <= info["probe_accuracy"] <= 1.0  # the real probe ran, twice
    assert "the probe never reached 1.01 in 8 steps" in capsys.readouterr().err


def test_renderers_renders_a_prompt_as_our_trainer_and_eval_encode_it(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prime-rl renders every prompt with the `renderers` package (renderer "default" for a local model:
    the tokenizer's chat template); the embedded trainer and the eval must feed the model the same ids."""
    import renderers
    from renderers.base import load_tokenizer
    from renderers.configs import config_from_name

    from autorl.llm.eval import encode_prompt, format_prompt

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tok = AutoTokenizer.from_pretrained(tiny_model)
    renderer = renderers.create_renderer(load_tokenizer(str(tiny_model)), config_from_name("default"))
    for prompt in ["47+38=", "3+4+5=", "What is 1 + 2?"]:
        user = [{"role": "user", "content": prompt}]
        ids = renderer.render_ids(user, add_generation_prompt=True)
        assert ids == encode_prompt(tok, prompt) == tok(format_prompt(tok, prompt))["input_ids"]
        assert len(ids) == len(prompt)  # the template adds no character to a prompt
        # a finished turn is prompt + completion + EOS: what the warm-start and GRPO train on
        turn = renderer.render_ids([*user, {"role": "assistant", "content": "#### 85"}])
        assert turn == ids + tok("#### 85")["input_ids"] + [tok.eos_token_id]
    assert renderer.get_stop_token_ids() == [tok.eos_token_id]
