"""GSM8K: loading the problems and the reward. Pure Python (datasets, math-verify), no verifiers.

Data: ``openai/gsm8k`` (config ``main``) through ``datasets.load_dataset`` when the hub is reachable, or a
local file / directory given as ``data_path`` (JSONL, JSON or parquet rows with ``question`` and ``answer``,
the hub's own layout). The gold answer is the text after ``####`` in the dataset's answer.

Reward: the text after the last ``####`` of the completion and the gold answer are each wrapped in
``\\boxed{}`` and compared with math-verify (so ``1,000`` equals ``1000`` and ``72.0`` equals ``72``),
the check upstream verifiers' gsm8k runs in a uv script, here in-process.

Splits: ``train`` and ``eval`` divide the dataset's train split by a hash of each question (bucket 0 of
``HASH_BUCKETS`` is the fixed held-out ``eval`` slice, ~10%, the rest is ``train``); ``test`` is the
dataset's test split, the sealed test set that only ``autorl confirm`` scores.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

HUB_DATASET = ("openai/gsm8k", "main")
SPLITS = ("train", "eval", "test")
HASH_BUCKETS = 10  # bucket 0 of the dataset's train questions is the held-out eval slice
SYSTEM = (
    "Solve the grade-school math problem. Reason step by step, then give the final "
    "answer as a single number on the last line, prefixed with '#### ' (e.g. '#### 42')."
)

Split = Literal["train", "eval", "test"]


class GSM8KDataError(RuntimeError):
    """The data could not be loaded (no hub, bad data_path)."""


class SettingsError(ValueError):
    """A taskset field with a bad value or name; ``field`` names it (autorl's config check shows its line)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Settings:
    """The taskset fields (the verifiers TasksetConfig declares the same ones, same defaults)."""

    split: Split = "train"
    # Local data instead of the hub: a .jsonl/.json/.parquet file with question/answer rows, or a directory
    # holding `<split>.jsonl`, `<split>.parquet` or the hub layout `main/<split>-*.parquet`.
    data_path: str | None = None
    num_examples: int = -1  # tasks the verifiers Taskset yields (-1: the whole split)

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise SettingsError("split", f"must be one of {SPLITS}, got {self.split!r}")
        if self.data_path is not None and (not isinstance(self.data_path, str) or not self.data_path):
            raise SettingsError("data_path", f"must be a non-empty path string, got {self.data_path!r}")
        n = self.num_examples
        if not isinstance(n, int) or isinstance(n, bool) or not (n == -1 or n >= 1):
            raise SettingsError("num_examples", f"must be -1 (the whole split) or a count >= 1, got {n!r}")


def settings_from_fields(values: dict) -> Settings:
    """Settings from taskset fields (as written in a TOML table); unknown names are an error."""
    known = {f.name for f in fields(Settings)}
    for name in sorted(set(values) - known):
        raise SettingsError(name, f"unknown autorl-gsm8k field; valid fields: {sorted(known)}")
    return Settings(**values)


@dataclass(frozen=True)
class Problem:
    id: str
    prompt: str
    answer: str


def gold_answer(solution: str) -> str:
    """The final answer of a GSM8K solution: the text after its ``####``."""
    return solution.split("####")[-1].strip()


def make_prompt(question: str) -> str:
    return f"{SYSTEM}\n\n{question}"


def _read_file(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    text = path.read_text()
    if path.suffix == ".json" and text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _local_files(root: Path, split: str) -> list[Path]:
    if root.is_file():
        return [root]
    candidates = [root / f"{split}.jsonl", root / f"{split}.json", root / f"{split}.parquet"]
    found = [p for p in candidates if p.is_file()]
    return (
        found[:1] or sorted(root.glob(f"{split}-*.parquet")) or sorted(root.glob(f"main/{split}-*.parquet"))
    )


@functools.lru_cache(maxsize=8)
def load_rows(split: str, data_path: str | None = None) -> tuple[tuple[str, str], ...]:
    """(question, solution) rows of one split, from ``data_path`` or else the hub. Cached per process."""
    if data_path is not None:
        root = Path(data_path).expanduser()
        files = _local_files(root, split) if root.exists() else []
        if not files:
            raise GSM8KDataError(
                f"autorl-gsm8k: data_path {str(root)!r} has no {split} data (expected a .jsonl/.json/.parquet"
                f" file, or a directory with {split}.jsonl, {split}.parquet or main/{split}-*.parquet)"
            )
        raw = [row for f in files for row in _read_file(f)]
    else:
        try:
            from datasets import load_dataset

            raw = list(load_dataset(*HUB_DATASET, split=split))
        except Exception as e:  # no network, no cache, hub error: all mean "give me a local path"
            raise GSM8KDataError(
                f"autorl-gsm8k: could not load {HUB_DATASET[0]} ({HUB_DATASET[1]}, split {split}) from the "
                f"Hugging Face hub ({type(e).__name__}: {e}). Set the taskset field `data_path` to a local "
                f"JSONL/parquet file or directory with `question` and `answer` fields."
            ) from e
    try:
        rows = tuple((str(r["question"]), str(r["answer"])) for r in raw)
    except KeyError as e:
        raise GSM8KDataError(
            f"autorl-gsm8k: every row needs `question` and `answer` fields; missing {e}"
        ) from e
    if not rows:
        raise GSM8KDataError(f"autorl-gsm8k: no rows for split {split} ({data_path or HUB_DATASET[0]})")
    return rows


# How to get the data onto an offline machine: run this where the hub is reachable, copy data/gsm8k over, and
# set the taskset field data_path = "data/gsm8k" (docs/environments.md).
FETCH_COMMAND = (
    "uv run python -c \"from datasets import load_dataset as l; [l('openai/gsm8k','main',split=s)"
    ".to_json(f'data/gsm8k/{s}.jsonl') for s in ('train','test')]\""
)
HUB_PROBE_SECONDS = 3.0


def _hub_cached() -> bool:
    """Whether the datasets or hub cache already holds openai/gsm8k (so no network is needed)."""
    home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")).expanduser()
    datasets_cache = Path(os.environ.get("HF_DATASETS_CACHE", home / "datasets")).expanduser()
    hub_cache = Path(os.environ.get("HF_HUB_CACHE", home / "hub")).expanduser()
    return any(datasets_cache.glob("openai___gsm8k*")) or (hub_cache / "datasets--openai--gsm8k").is_dir()


def _hub_reachable() -> bool:
    """A quick look (HUB_PROBE_SECONDS) whether the hub answers at all; the offline switches mean no."""
    if any(
        os.environ.get(v, "").lower() in ("1", "true", "yes")
        for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    ):
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=HUB_PROBE_SECONDS).close()
        return True
    except OSError:
        return False


def data_problem(s: Settings) -> str | None:
    """Why the split's data cannot be read on this machine now (None: it can). Cheap: checked before training,
    so that a run never trains and then fails on missing data."""
    source = "test" if s.split == "test" else "train"
    if s.data_path is not None:
        root = Path(s.data_path).expanduser()
        if root.exists() and _local_files(root, source):
            return None
        return (
            f"data_path {str(root)!r} has no {source} data (a .jsonl/.json/.parquet file, or a directory "
            f"with {source}.jsonl, {source}.parquet or main/{source}-*.parquet); fetch it where the hub is "
            f"reachable with: {FETCH_COMMAND}"
        )
    if _hub_cached() or _hub_reachable():
        return None
    return (
        f"no data_path, and {HUB_DATASET[0]} is neither in the local Hugging Face cache nor reachable "
        f"(offline); fetch it where the hub is reachable with: {FETCH_COMMAND} , copy data/gsm8k here "
        'and set data_path = "data/gsm8k" in the taskset table'
    )


def split_of(question: str) -> Split:
    """Where a question of the dataset's train split belongs: the held-out ``eval`` slice or ``train``."""
    digest = hashlib.sha256(f"gsm8k-eval|{question}".encode()).digest()
    return "eval" if int.from_bytes(digest[:8], "big") % HASH_BUCKETS == 0 else "train"


def dataset(s: Settings) -> list[Problem]:
    """The split's problems in file order; ids are ``<split>-<row index in the dataset's file>``."""
    source = "test" if s.split == "test" else "train"
    return [
        Problem(id=f"{s.split}-{i}", prompt=make_prompt(q), answer=gold_answer(a))
        for i, (q, a) in enumerate(load_rows(source, s.data_path))
        if source == "test" or split_of(q) == s.split
    ]


# The interface every environment core offers to autorl.llm.envs: settings_from_fields, stream, first, score.


def stream(s: Settings, seed: int) -> Iterator[Problem]:
    """Training: endless epochs over the split, each in a fresh seeded order."""
    order = dataset(s)
    rng = random.Random(f"autorl-gsm8k-train-{seed}")
    while True:
        rng.shuffle(order)
        yield from order


def first(s: Settings, n: int) -> list[Problem]:
    """The first ``n`` problems of the split in file order (evaluation)."""
    problems = dataset(s)
    if n > len(problems):
        raise ValueError(f"autorl-gsm8k: asked for {n} examples, split {s.split} has {len(problems)}")
    return problems[:n]


_ANSWER = re.compile(r"####\s*(.+)")


def extract_answer(completion: str) -> str | None:
    matches = _ANSWER.findall(completion)
    return matches[-1].strip() if matches else None


def score(completion: str, answer: str) -> float:
    """1.0 when the text after the last '####' is mathematically equal to the answer (math-verify)."""
    from math_verify import parse, verify

    found = extract_answer(completion)
    if found is None:
        return 0.0
    gold = parse(f"\\boxed{{{answer}}}")
    pred = parse(f"\\boxed{{{found}}}")
    return float(bool(gold) and bool(pred) and verify(gold, pred))
