"""Procedural multi-digit addition (and subtraction): examples and the reward. Pure Python, no verifiers.

Both backends and the fixed eval import this module in-process; the verifiers Taskset (taskset.py) wraps it
for prime-rl. Nothing is downloaded or shipped: every problem comes from a seeded generator.

Splits never overlap: each problem ``a op b`` is hashed (sha256) into one of ``HASH_BUCKETS`` buckets;
bucket 0 belongs to the eval split only, bucket 1 to the test split only, the others to train. So whatever
seed the train stream uses, it can never produce an eval or test problem. The eval set is a fixed sequence
drawn from ``EVAL_SEED`` (the test set from ``TEST_SEED``) with the *same*
distribution as training (term counts uniform, then digits, then operators), restricted to bucket 0. It is not
deduplicated on purpose: with e.g. 2-4 one-digit terms there are only ~15 distinct two-term eval problems, so
a deduplicated eval would be almost all four-term problems, a harder task than the one trained on.
eval_score estimates the accuracy on the task's distribution.

Format (shared with GSM8K): the answer is the number after ``#### `` on the last line of the completion.
The default prompt is terse (``347+586=``) because the default model is a character-level model whose cost
grows with every character; ``instruction=True`` asks a question with the format instruction, for chat models
(``What is 347 + 586? Give the final answer ...``).
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Literal

SPLITS = ("train", "eval", "test")
# Settings whose eval bucket is empty (a handful of possible problems) give up after this many draws.
MAX_EVAL_MISSES = 100_000
EVAL_SEED = 1234  # the fixed eval stream; changing it changes the eval set (and eval_spec_hash)
TEST_SEED = 4321  # the fixed test stream
HASH_BUCKETS = 10  # 1 bucket of 10 (10% of all problems) is reserved for the eval split, 1 for the test split
SPLIT_BUCKET = {"eval": 0, "test": 1}  # every other bucket is train
INSTRUCTION = "Give the final answer as a number on the last line after '#### '."

Split = Literal["train", "eval", "test"]


@dataclass(frozen=True)
class Settings:
    """The taskset fields (the verifiers TasksetConfig declares the same ones, same defaults)."""

    split: Split = "train"
    # The defaults are the default task, calibrated with the tiny base model: a sum of two numbers of 1-2
    # digits (~5k distinct problems, ~500 of them held out for the eval). Subtraction (ops "+-") is
    # available but not the default: in 10-minute CPU trials on "+-" the tiny model did not get better at
    # two-digit subtractions (each kind 0.05-0.36 correct before, 0.08-0.22 after) while its additions did.
    min_terms: int = 2  # numbers per problem, drawn uniformly in [min_terms, max_terms]
    max_terms: int = 2
    min_digits: int = 1  # digits of each number, drawn uniformly in [min_digits, max_digits]
    max_digits: int = 2
    ops: str = "+"  # operators to draw from; problems with a negative result are redrawn
    instruction: bool = False  # ask "What is 3 + 4? <INSTRUCTION>" (for chat models) instead of "3+4="
    num_examples: int = 10_000  # tasks the verifiers Taskset yields (the embedded train stream is endless)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        if not 2 <= self.min_terms <= self.max_terms <= 10:
            raise ValueError(
                f"need 2 <= min_terms <= max_terms <= 10, got {self.min_terms}, {self.max_terms}"
            )
        if not 1 <= self.min_digits <= self.max_digits <= 18:
            raise ValueError(
                f"need 1 <= min_digits <= max_digits <= 18, got {self.min_digits}, {self.max_digits}"
            )
        if not self.ops or set(self.ops) - {"+", "-"}:
            raise ValueError(f"ops must be a non-empty combination of '+' and '-', got {self.ops!r}")
        if self.num_examples < 1:
            raise ValueError(f"num_examples must be >= 1, got {self.num_examples}")


def settings_from_fields(values: dict) -> Settings:
    """Settings from taskset fields (as written in a TOML table); unknown names are an error."""
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown autorl-arithmetic field(s) {unknown}; valid fields: {sorted(known)}")
    return Settings(**values)


@dataclass(frozen=True)
class Problem:
    id: str
    prompt: str
    answer: str  # the exact integer, as a string without separators


# A problem is its numbers and the operators between them: 347 + 586 - 12 is ((347, 586, 12), ("+", "-")).
Terms = tuple[tuple[int, ...], tuple[str, ...]]


def problem_key(terms: Terms) -> str:
    """Reorderings are one problem (3 + 5 and 5 + 3): added and subtracted numbers, each sorted."""
    numbers, ops = terms
    added = sorted([numbers[0]] + [n for n, op in zip(numbers[1:], ops, strict=True) if op == "+"])
    subtracted = sorted(n for n, op in zip(numbers[1:], ops, strict=True) if op == "-")
    return "+".join(map(str, added)) + "|" + "-".join(map(str, subtracted))


def split_of(terms: Terms) -> Split:
    digest = hashlib.sha256(problem_key(terms).encode()).digest()
    b = int.from_bytes(digest[:8], "big") % HASH_BUCKETS
    return "eval" if b == SPLIT_BUCKET["eval"] else "test" if b == SPLIT_BUCKET["test"] else "train"


def canonical_key(prompt: str) -> str:
    """The problem a terse prompt asks (``problem_key``): ``3+5=`` and ``5+3=`` give one key."""
    tokens = re.findall(r"\d+|[+-]", prompt)
    return problem_key((tuple(int(t) for t in tokens[0::2]), tuple(tokens[1::2])))


def value(terms: Terms) -> int:
    numbers, ops = terms
    total = numbers[0]
    for n, op in zip(numbers[1:], ops, strict=True):
        total = total + n if op == "+" else total - n
    return total


def make_prompt(terms: Terms, instruction: bool = False) -> str:
    numbers, ops = terms
    if instruction:  # a question with the format instruction, for chat models
        expr = str(numbers[0]) + "".join(f" {op} {n}" for n, op in zip(numbers[1:], ops, strict=True))
        return f"What is {expr}? {INSTRUCTION}"
    # Terse by default: every character costs the character-level default model compute.
    return str(numbers[0]) + "".join(f"{op}{n}" for n, op in zip(numbers[1:], ops, strict=True)) + "="


def format_answer(answer: str) -> str:
    """The reference completion: what a correct, well-formatted reply looks like."""
    return f"#### {answer}"


def _draw(rng: random.Random, s: Settings) -> Terms:
    def number() -> int:
        digits = rng.randint(s.min_digits, s.max_digits)
        low = 0 if digits == 1 else 10 ** (digits - 1)
        return rng.randint(low, 10**digits - 1)

    while True:
        count = rng.randint(s.min_terms, s.max_terms)
        terms = (tuple(number() for _ in range(count)), tuple(rng.choice(s.ops) for _ in range(count - 1)))
        if value(terms) >= 0:  # answers are never negative
            return terms


def _problem(pid: str, terms: Terms, s: Settings) -> Problem:
    return Problem(id=pid, prompt=make_prompt(terms, s.instruction), answer=str(value(terms)))


def held_out_problems(s: Settings) -> Iterator[Problem]:
    """The fixed, endless sequence of the eval (or test) split: its bucket's draws from EVAL_SEED (TEST_SEED);
    any prefix is the same."""
    rng = random.Random(EVAL_SEED if s.split == "eval" else TEST_SEED)
    i = misses = 0
    while True:
        terms = _draw(rng, s)
        if split_of(terms) != s.split:
            misses += 1
            if misses >= MAX_EVAL_MISSES and i == 0:
                raise ValueError(f"autorl-arithmetic: these settings leave no {s.split} problem: {s}")
            continue
        yield _problem(f"{s.split}-{i}", terms, s)
        i += 1


def train_problems(s: Settings, seed: int) -> Iterator[Problem]:
    """An endless stream of train-bucket problems (sampled with replacement) for one seed."""
    rng = random.Random(f"autorl-arithmetic-train-{seed}")
    i = 0
    while True:
        terms = _draw(rng, s)
        if split_of(terms) != "train":
            continue
        yield _problem(f"train-{seed}-{i}", terms, s)
        i += 1


# The interface every environment core offers to autorl.llm.envs: settings_from_fields, stream, first, score.


def stream(s: Settings, seed: int) -> Iterator[Problem]:
    """Training: an endless random stream of the split's problems for one seed."""
    if s.split != "train":  # the fixed eval/test set, cycled in a seeded order
        pool = first(s, s.num_examples)
        rng = random.Random(f"autorl-arithmetic-{s.split}-order-{seed}")
        return (pool[rng.randrange(len(pool))] for _ in itertools.count())
    return train_problems(s, seed)


def first(s: Settings, n: int) -> list[Problem]:
    """The first ``n`` problems of the split in its fixed order (evaluation)."""
    source = held_out_problems(s) if s.split != "train" else train_problems(s, 0)
    return list(itertools.islice(source, n))


# The answer is whatever follows the last '####' on its line; thousands separators and a final period
# are tolerated, anything else (words, a second number, nothing) is wrong.
_ANSWER = re.compile(r"####[ \t]*([^\n]*)")
_INTEGER = re.compile(r"[+-]?\d+")


def extract_answer(completion: str) -> str | None:
    matches = _ANSWER.findall(completion)
    if not matches:
        return None
    text = matches[-1].strip().replace(",", "").removesuffix(".").strip()
    return text if _INTEGER.fullmatch(text) else None


def score(completion: str, answer: str) -> float:
    """1.0 when the number after the last '####' equals the answer, else 0.0."""
    found = extract_answer(completion)
    return float(found is not None and int(found) == int(answer))
