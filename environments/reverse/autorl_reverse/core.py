"""Procedural string reversal: examples and the reward. Pure Python, no verifiers.

Both backends and the fixed eval import this module in-process; the verifiers Taskset (taskset.py) wraps it
for prime-rl. Nothing is downloaded or shipped: every word is drawn from a seeded generator.

A problem is a random word over ``alphabet`` (length uniform in ``[min_len, max_len]``); the answer is the
word reversed. Prompt ``rev abcd=``, reference completion ``#### dcba``: the GSM8K-style ``#### `` line of
autorl-arithmetic with letters instead of a number. The reward is the share of letters in their place
(partial credit: 1.0 only for the exact word), so that a group of sampled replies differs in reward even
when none is exact: with an exact-match reward the tiny model's sampled replies scored 0.00-0.08 and nearly
every GRPO group had zero advantage. Terse, because the
default model is character-level and pays for every character; ``instruction=True`` asks a question with the
format instruction (for chat models).

Splits never overlap: each word is hashed (sha256) into one of ``HASH_BUCKETS`` buckets; bucket 0 is the eval
split, bucket 1 the test split, the others train. The eval and test sets are fixed sequences drawn from
``EVAL_SEED`` / ``TEST_SEED`` with the training distribution, restricted to their bucket (not deduplicated,
like autorl-arithmetic's).
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Literal

SPLITS = ("train", "eval", "test")
EVAL_SEED = 1234  # the fixed eval stream; changing it changes the eval set (and eval_spec_hash)
TEST_SEED = 4321  # the fixed test stream
HASH_BUCKETS = 10
SPLIT_BUCKET = {"eval": 0, "test": 1}  # every other bucket is train
INSTRUCTION = "Give the reversed word on the last line after '#### '."

Split = Literal["train", "eval", "test"]


@dataclass(frozen=True)
class Settings:
    """The taskset fields (the verifiers TasksetConfig declares the same ones, same defaults)."""

    split: Split = "train"
    # The defaults are the default task, calibrated with the tiny base model: words of 3-6 letters a-z (~320M
    # words; a tenth held out for the eval). With 2-5 letters a-j the warm-start learned reversal long before
    # addition (eval 0.84 reverse, 0.11 arithmetic at its stop); with 3-6 letters a-z the shipped model
    # scores 0.555 on reverse (partial credit) and 0.274 on arithmetic, and RL improves both.
    min_len: int = 3  # letters per word, drawn uniformly in [min_len, max_len]
    max_len: int = 6
    alphabet: str = string.ascii_lowercase  # the letters words are drawn from (lowercase ASCII)
    instruction: bool = False  # ask "Reverse the word abcd. <INSTRUCTION>" instead of "rev abcd="
    num_examples: int = 10_000  # tasks the verifiers Taskset yields (the embedded train stream is endless)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if not 1 <= self.min_len <= self.max_len <= 32:
            raise ValueError(f"need 1 <= min_len <= max_len <= 32, got {self.min_len}, {self.max_len}")
        if len(set(self.alphabet)) < 2 or set(self.alphabet) - set(string.ascii_lowercase):
            raise ValueError(f"alphabet must hold 2 or more lowercase ASCII letters, got {self.alphabet!r}")
        if self.num_examples < 1:
            raise ValueError(f"num_examples must be >= 1, got {self.num_examples}")


def settings_from_fields(values: dict) -> Settings:
    """Settings from taskset fields (as written in a TOML table); unknown names are an error."""
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown autorl-reverse field(s) {unknown}; valid fields: {sorted(known)}")
    return Settings(**values)


@dataclass(frozen=True)
class Problem:
    id: str
    prompt: str
    answer: str  # the reversed word


def bucket(word: str) -> int:
    return int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big") % HASH_BUCKETS


def split_of(word: str) -> Split:
    b = bucket(word)
    return "eval" if b == SPLIT_BUCKET["eval"] else "test" if b == SPLIT_BUCKET["test"] else "train"


def make_prompt(word: str, instruction: bool = False) -> str:
    return f"Reverse the word {word}. {INSTRUCTION}" if instruction else f"rev {word}="


def canonical_key(prompt: str) -> str:
    """The word a prompt asks to reverse (one problem, one key)."""
    found = re.search(r"rev ([a-z]+)=|Reverse the word ([a-z]+)\.", prompt)
    if found is None:
        raise ValueError(f"not an autorl-reverse prompt: {prompt!r}")
    return found.group(1) or found.group(2)


def format_answer(answer: str) -> str:
    """The reference completion: what a correct, well-formatted reply looks like."""
    return f"#### {answer}"


def _draw(rng: random.Random, s: Settings) -> str:
    return "".join(rng.choice(s.alphabet) for _ in range(rng.randint(s.min_len, s.max_len)))


def _problems(s: Settings, rng: random.Random, split: Split, prefix: str) -> Iterator[Problem]:
    """An endless stream of the split's words drawn from ``rng`` (repeats allowed)."""
    for i in itertools.count():
        word = _draw(rng, s)
        while split_of(word) != split:
            word = _draw(rng, s)
        yield Problem(id=f"{prefix}-{i}", prompt=make_prompt(word, s.instruction), answer=word[::-1])


def _fixed(s: Settings) -> Iterator[Problem]:
    seed = EVAL_SEED if s.split == "eval" else TEST_SEED
    return _problems(s, random.Random(seed), s.split, s.split)


# The interface every environment core offers to autorl.llm.envs: settings_from_fields, stream, first, score.


def stream(s: Settings, seed: int) -> Iterator[Problem]:
    """Training: an endless random stream of the split's problems for one seed."""
    if s.split != "train":  # the fixed eval/test set, cycled in a seeded order
        pool = first(s, s.num_examples)
        rng = random.Random(f"autorl-reverse-{s.split}-order-{seed}")
        return (pool[rng.randrange(len(pool))] for _ in itertools.count())
    return _problems(s, random.Random(f"autorl-reverse-train-{seed}"), "train", f"train-{seed}")


def first(s: Settings, n: int) -> list[Problem]:
    """The first ``n`` problems of the split in its fixed order (evaluation)."""
    return list(itertools.islice(_fixed(s) if s.split != "train" else stream(s, 0), n))


_ANSWER = re.compile(r"####[ \t]*([^\n]*)")


def score(completion: str, answer: str) -> float:
    """The share of letters in their place: of the text after the last '####' (stripped), the positions that
    hold the reversed word's letter, over the longer of the two lengths. 1.0 only for exactly the reversed
    word; 0.0 without a '####' line."""
    matches = _ANSWER.findall(completion)
    if not matches:
        return 0.0
    given = matches[-1].strip()
    hits = sum(a == b for a, b in zip(given, answer, strict=False))
    return hits / max(len(given), len(answer))
