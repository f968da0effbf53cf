"""Environments: rewards on known answers, split determinism and disjointness, loading through verifiers."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from autorl_arithmetic import core as arith
from autorl_gsm8k import core as gsm
from autorl_reverse import core as rev

from autorl.llm import envs

# ---------------------------------------------------------------- arithmetic reward


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("#### 933", 1.0),
        ("#### 933\n", 1.0),
        ("347+586=933\n#### 933", 1.0),
        ("####933", 1.0),
        ("#### 933.", 1.0),
        ("#### 9,33", 1.0),  # separators are tolerated (only the digits count)
        ("#### 932", 0.0),  # wrong
        ("933", 0.0),  # '####' missing
        ("", 0.0),
        ("#### ", 0.0),  # malformed: nothing after the marker
        ("#### 93 3", 0.0),  # malformed: two numbers
        ("#### nine hundred", 0.0),
        ("#### 933 apples", 0.0),
        ("#### 933\n#### 934", 0.0),  # the last '####' counts
        ("#### 934\n#### 933", 1.0),
    ],
)
def test_arithmetic_score(completion: str, expected: float) -> None:
    assert arith.score(completion, "933") == expected


def expression(prompt: str) -> str:
    """The arithmetic in a prompt, with single spaces around operators: "3+4=" -> "3 + 4"."""
    if prompt.startswith("What is "):
        return prompt.removeprefix("What is ").split("?")[0]
    return re.sub(r"([+-])", r" \1 ", prompt.removesuffix("="))


def test_arithmetic_answers_are_correct() -> None:
    for settings in (arith.Settings(split="eval"), arith.Settings(min_terms=2, max_terms=5, max_digits=2)):
        for p in arith.first(settings, 200):
            assert int(p.answer) == eval(expression(p.prompt)) >= 0  # Python evaluates the same text
            assert arith.score(arith.format_answer(p.answer), p.answer) == 1.0


def canonical(prompt: str) -> tuple:
    """Reorderings of one problem (3 + 5 - 2 and 5 - 2 + 3) map to the same key."""
    tokens = ["+", *expression(prompt).split(" ")]
    return (
        tuple(sorted(int(n) for op, n in zip(tokens[::2], tokens[1::2], strict=True) if op == "+")),
        tuple(sorted(int(n) for op, n in zip(tokens[::2], tokens[1::2], strict=True) if op == "-")),
    )


@pytest.mark.parametrize(("fields", "n"), [({"max_digits": 2}, 300), ({"max_digits": 1, "max_terms": 3}, 50)])
def test_arithmetic_splits_are_deterministic_and_disjoint(fields: dict, n: int) -> None:
    # small problem spaces make collisions likely if the splits leaked
    s = arith.Settings(**fields)
    eval_s = dataclasses.replace(s, split="eval")
    eval_set = arith.first(eval_s, n)
    assert eval_set == arith.first(eval_s, n)
    assert arith.first(eval_s, 50) == eval_set[:50]  # prefixes agree
    assert len({p.id for p in eval_set}) == len(eval_set)
    eval_keys = {canonical(p.prompt) for p in eval_set}
    test_keys = {canonical(p.prompt) for p in arith.first(dataclasses.replace(s, split="test"), n)}
    assert test_keys and not test_keys & eval_keys
    for seed in (0, 1, 2):
        train = list(itertools.islice(arith.stream(s, seed), 5000))
        assert not {canonical(p.prompt) for p in train} & (eval_keys | test_keys)
    a = list(itertools.islice(arith.stream(s, 7), 100))
    assert a == list(itertools.islice(arith.stream(s, 7), 100))
    assert a != list(itertools.islice(arith.stream(s, 8), 100))


def test_eval_set_has_the_training_distribution() -> None:
    """Eval problems are drawn like training ones (term counts uniform), only from the held-out bucket: not a
    deduplicated set, which for the default task would be ~80% four-term problems."""
    s = arith.Settings(min_terms=2, max_terms=4, max_digits=1)
    terms = lambda problems: Counter(len(expression(p.prompt).split(" ")) // 2 + 1 for p in problems)  # noqa: E731
    eval_counts = terms(arith.first(dataclasses.replace(s, split="eval"), 1500))
    train_counts = terms(itertools.islice(arith.stream(s, 0), 1500))
    for k in (2, 3, 4):
        assert abs(eval_counts[k] - 500) < 80 and abs(train_counts[k] - 500) < 80, (eval_counts, train_counts)


def test_settings_without_eval_problems_are_an_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arith, "MAX_EVAL_MISSES", 2_000)  # keeps the test fast; same logic
    monkeypatch.setattr(arith, "split_of", lambda terms: "train")  # as in a tiny problem space
    with pytest.raises(ValueError, match="leave no eval problem"):
        arith.first(arith.Settings(split="eval"), 10)


def test_arithmetic_settings_validation() -> None:
    with pytest.raises(ValueError, match="valid fields"):
        arith.settings_from_fields({"splt": "eval"})
    with pytest.raises(ValueError, match="split"):
        arith.settings_from_fields({"split": "dev"})
    with pytest.raises(ValueError, match="digits"):
        arith.settings_from_fields({"min_digits": 3, "max_digits": 2})
    with pytest.raises(ValueError, match="ops"):
        arith.settings_from_fields({"ops": "*"})
    with pytest.raises(ValueError, match="terms"):
        arith.settings_from_fields({"max_terms": 1})
    p = arith.first(arith.settings_from_fields({"split": "eval", "min_digits": 4, "max_digits": 4}), 5)
    assert all(len(x) == 4 for q in p for x in expression(q.prompt).split(" ")[::2])
    p = arith.first(arith.settings_from_fields({"min_terms": 3, "max_terms": 3, "ops": "+"}), 5)
    assert all(expression(q.prompt).count("+") == 2 for q in p)
    chat = arith.first(arith.Settings(instruction=True), 3)
    assert all(p.prompt.startswith("What is ") and arith.INSTRUCTION in p.prompt for p in chat)
    assert [eval(expression(p.prompt)) for p in chat] == [int(p.answer) for p in chat]
    assert arith.first(arith.Settings(), 1)[0].prompt.endswith("=")


# ---------------------------------------------------------------- gsm8k


def write_gsm8k(path: Path) -> Path:
    rows = [
        {"question": "Tom has 3 apples and buys 4. How many?", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"},
        {"question": "A bag costs $1000. Two bags?", "answer": "2 * 1000 = 2000\n#### 2000"},
        {"question": "Half of 5?", "answer": "5 / 2 = 2.5\n#### 2.5"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("completion", "answer", "expected"),
    [
        ("3 + 4 = 7\n#### 7", "7", 1.0),
        ("#### 8", "7", 0.0),
        ("The answer is 7", "7", 0.0),  # '####' missing
        ("#### seven", "7", 0.0),
        ("#### 2,000", "2000", 1.0),  # math-verify: numeric equivalence
        ("#### 2000.0", "2000", 1.0),
        ("#### $2000", "2000", 1.0),
        ("#### 5/2", "2.5", 1.0),
        ("#### 2.5\n#### 3", "2.5", 0.0),  # the last '####' counts
    ],
)
def test_gsm8k_score(completion: str, answer: str, expected: float) -> None:
    assert gsm.score(completion, answer) == expected


def test_gsm8k_local_file(tmp_path: Path) -> None:
    path = write_gsm8k(tmp_path / "train.jsonl")
    env = envs.load_env("autorl-gsm8k", {"split": "train", "data_path": str(path)})
    examples = env.eval_examples(3)
    assert [e.answer for e in examples] == ["7", "2000", "2.5"]
    assert examples[0].prompt.startswith(gsm.SYSTEM) and examples[0].prompt.endswith("How many?")
    assert env.score("#### 7", examples[0]) == 1.0
    # a directory with <split>.jsonl works too; the stream visits every row each epoch, seeded
    env_dir = envs.load_env("autorl-gsm8k", {"split": "train", "data_path": str(tmp_path)})
    epoch = list(itertools.islice(env_dir.train_examples(seed=3), 3))
    assert sorted(e.id for e in epoch) == ["train-0", "train-1", "train-2"]
    assert epoch == list(itertools.islice(env_dir.train_examples(seed=3), 3))
    with pytest.raises(ValueError, match="has 3"):
        env.eval_examples(4)


def test_gsm8k_missing_data_names_data_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(gsm.GSM8KDataError, match="data_path"):
        envs.load_env("autorl-gsm8k", {"split": "test", "data_path": str(tmp_path / "nope")}).eval_examples(1)
    # no path and an unreachable hub: the error says which field to set
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    gsm.load_rows.cache_clear()
    with pytest.raises(gsm.GSM8KDataError, match="data_path"):
        envs.load_env("autorl-gsm8k", {"split": "test"}).eval_examples(1)


# ---------------------------------------------------------------- autorl.llm.envs


def test_load_env_errors_and_ids() -> None:
    with pytest.raises(ValueError, match="autorl-arithmetic, autorl-gsm8k"):
        envs.load_env("gsm8k", {})
    with pytest.raises(ValueError, match="valid fields"):
        envs.load_env("autorl-arithmetic", {"max_digit": 2})
    env = envs.load_env("owner/autorl_arithmetic@0.1.0", {"id": "ignored", "split": "eval"})
    assert env.name == "autorl-arithmetic" and env.split == "eval"
    assert env.eval_examples(5) == env.eval_examples(5)
    ex = env.eval_examples(1)[0]
    assert env.score(f"#### {ex.answer}", ex) == 1.0 and env.score("#### -1", ex) == 0.0


# ---------------------------------------------------------------- reverse


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("#### dcba", 1.0),
        ("####dcba\n", 1.0),
        ("abcd\n#### dcba", 1.0),
        ("#### abcd", 0.0),  # not reversed: no letter in its place
        ("#### dcbx", 0.75),  # partial credit: letters in their place / the longer length
        ("#### xcba", 0.75),
        ("#### dcb", 0.75),  # too short
        ("#### dcbaa", 0.8),  # too long
        ("#### ", 0.0),
        ("dcba", 0.0),  # '####' missing
        ("#### d c b a", 1 / 7),  # only the first letter is in its place, 7 characters
        ("#### DCBA", 0.0),
        ("#### dcba\n#### abcd", 0.0),  # the last '####' counts
    ],
)
def test_reverse_score(completion: str, expected: float) -> None:
    assert rev.score(completion, "dcba") == expected


def test_reverse_problems_and_splits() -> None:
    s = rev.Settings(min_len=1, max_len=3, alphabet="abc")  # 39 words: leaks would show
    held_out = {}
    for split in ("eval", "test"):
        problems = rev.first(dataclasses.replace(s, split=split), 200)
        assert problems == rev.first(dataclasses.replace(s, split=split), 200)  # fixed
        assert problems[:50] == rev.first(dataclasses.replace(s, split=split), 50)  # prefixes agree
        held_out[split] = {p.answer[::-1] for p in problems}
    assert held_out["eval"] and held_out["test"] and not held_out["eval"] & held_out["test"]
    for seed in (0, 1):
        train = list(itertools.islice(rev.stream(s, seed), 2000))
        assert not {p.answer[::-1] for p in train} & (held_out["eval"] | held_out["test"])
        for p in train[:100]:
            word = re.fullmatch(r"rev ([abc]{1,3})=", p.prompt).group(1)
            assert p.answer == word[::-1] and rev.score(rev.format_answer(p.answer), p.answer) == 1.0
    assert len({len(p.answer) for p in train}) == 3  # lengths drawn in [min_len, max_len]
    with pytest.raises(ValueError, match="valid fields"):
        rev.settings_from_fields({"lenght": 3})
    with pytest.raises(ValueError, match="alphabet"):
        rev.settings_from_fields({"alphabet": "aB"})


# ---------------------------------------------------------------- verifiers


def _trace(task, reply: str):
    """A minimal finished single-turn trace whose last assistant message is ``reply``."""
    import verifiers.v1 as vf
    from verifiers.v1.types import AssistantMessage

    trace = vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
    )
    trace.nodes.append(vf.MessageNode(message=AssistantMessage(content=reply), sampled=True))
    return trace


@pytest.mark.parametrize(
    ("taskset_id", "fields"),
    [
        ("autorl-arithmetic", {"split": "eval", "num_examples": 20}),
        ("autorl-arithmetic", {"split": "test", "num_examples": 20}),
        ("autorl-reverse", {"split": "eval", "num_examples": 20}),
        ("autorl-reverse", {"split": "test", "num_examples": 20}),
    ],
)
def test_taskset_loads_through_verifiers_and_scores_like_core(taskset_id: str, fields: dict) -> None:
    import verifiers.v1 as vf

    config = vf.taskset_config_type(taskset_id)(id=taskset_id, **fields)
    tasks = list(vf.load_taskset(config))
    env = envs.load_env(taskset_id, fields)
    expected = env.eval_examples(20)
    assert [(t.data.prompt, t.data.answer) for t in tasks] == [(e.prompt, e.answer) for e in expected]
    for task, reply in [
        (tasks[0], f"#### {tasks[0].data.answer}"),
        (tasks[1], "#### 123456"),
        (tasks[2], "x"),
    ]:
        trace = _trace(task, reply)
        assert trace.last_reply == reply
        asyncio.run(task.score(trace))  # no runtime: the reward is trace-only, so it still runs
        assert trace.rewards["correct"].score == env.score(reply, expected[tasks.index(task)])
    assert asyncio.run(tasks[0].validate(None)) is True


def test_gsm8k_taskset_through_verifiers(tmp_path: Path) -> None:
    import verifiers.v1 as vf

    path = write_gsm8k(tmp_path / "test.jsonl")
    config = vf.taskset_config_type("autorl-gsm8k")(id="autorl-gsm8k", split="test", data_path=str(path))
    tasks = list(vf.load_taskset(config))
    assert [t.data.answer for t in tasks] == ["7", "2000", "2.5"]
    trace = _trace(tasks[1], "Two bags.\n#### 2,000")
    asyncio.run(tasks[1].score(trace))
    assert trace.rewards["correct"].score == 1.0


@pytest.mark.parametrize(
    ("module", "cls"), [(arith, "ArithmeticConfig"), (rev, "ReverseConfig"), (gsm, "GSM8KConfig")]
)
def test_taskset_config_matches_core_settings(module, cls: str) -> None:
    import importlib

    taskset = importlib.import_module(module.__name__.replace(".core", ".taskset"))
    config = getattr(taskset, cls)()
    defaults = {f.name: f.default for f in dataclasses.fields(module.Settings)}
    assert {k: getattr(config, k) for k in defaults} == defaults
    own = set(type(config).model_fields) - {"id", "task", "system_prompt"}
    assert own == set(defaults)
