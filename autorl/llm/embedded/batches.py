"""Batch assembly of the embedded trainer: tasks in, scored rollouts with their GRPO advantages out.

``Batches.plan(version)`` draws the tasks of one batch and groups their rows into sampler calls;
``Batches.finish(plan, rollouts)`` scores the sampled completions and gives each group its advantages
(steps 1-3 of the module docstring of train.py). Sampling itself (in-process, in a second process, vLLM)
is the trainer's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from autorl.llm.embedded import grpo
from autorl.llm.embedded.backend import RunSpec, SourceSpec
from autorl.llm.embedded.generation import Rollouts
from autorl.llm.tokenizer import encode_prompt

PROMPT_CACHE_SIZE = 100_000  # token ids of this many distinct prompts are kept


@dataclass
class Sample:
    """One rollout as the trainer receives it (prime-rl's TrainingSample, single turn)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]  # sampling logprobs after temperature, one per completion token
    reward: float
    advantage: float
    temperature: float
    version: int  # optimizer steps applied to the policy that sampled it
    source: str
    truncated: bool  # hit the token limit before EOS


@dataclass
class Source:
    spec: SourceSpec
    env: Any
    examples: Iterator[Any]


@dataclass
class SamplerCall:
    """One sampler call: every row's prompt, the task each row belongs to, the sampling settings."""

    prompts: list[list[int]]
    owners: list[int]  # index into BatchPlan.tasks
    temperature: float
    limit: int  # max new tokens


@dataclass
class BatchPlan:
    """The tasks of one batch and its sampler calls, drawn before sampling."""

    tasks: list[tuple[Source, Any, list[int]]]
    calls: list[SamplerCall]
    version: int  # optimizer steps applied to the policy that samples it


def default_env_loader(taskset_id: str, fields: dict[str, Any]) -> Any:
    from autorl.llm.envs import load_env

    return load_env(taskset_id, fields)


class Batches:
    """The seeded task stream of every source, and how a batch of its tasks becomes training samples."""

    def __init__(
        self,
        spec: RunSpec,
        tokenizer: Any,
        eos_ids: list[int],
        seed: int,
        env_loader: Callable[[str, dict[str, Any]], Any] = default_env_loader,
    ) -> None:
        self.spec = spec
        self.tokenizer = tokenizer
        self.eos_ids = set(eos_ids)
        self.sources = []
        for i, src in enumerate(spec.sources):
            env = env_loader(src.taskset_id, dict(src.taskset_fields))
            # Distinct but seed-determined streams per source.
            self.sources.append(Source(src, env, iter(env.train_examples(seed * 1000 + i))))
        self.task_rng = random.Random(seed)
        self.prompt_cache: dict[str, list[int]] = {}

    def _prompt_ids(self, example: Any) -> list[int]:
        key = example.id if isinstance(getattr(example, "id", None), str) else None
        if key is not None and key in self.prompt_cache:
            return self.prompt_cache[key]
        ids = encode_prompt(self.tokenizer, example.prompt)
        if key is not None and len(self.prompt_cache) < PROMPT_CACHE_SIZE:
            self.prompt_cache[key] = ids
        return ids

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode([t for t in ids if t not in self.eos_ids], skip_special_tokens=True)

    def plan(self, version: int) -> BatchPlan:
        """Draw the tasks of one batch (``batch_size`` rollouts, whole groups) and its sampler calls: one per
        distinct (temperature, token limit); the usual single source makes one. A group's source is drawn
        with probability proportional to its ``ratio`` (prime-rl's train_source.py)."""
        spec = self.spec
        tasks: list[tuple[Source, Any, list[int]]] = []
        requested = 0
        weights = [s.spec.ratio for s in self.sources]
        while requested < spec.batch_size:
            src = self.task_rng.choices(self.sources, weights=weights, k=1)[0]
            example = next(src.examples)
            tasks.append((src, example, self._prompt_ids(example)))
            requested += src.spec.group_size

        buckets: dict[tuple[float, int | None], list[int]] = {}
        for i, (src, _, _) in enumerate(tasks):
            buckets.setdefault((src.spec.temperature, src.spec.max_completion_tokens), []).append(i)
        calls = []
        for (temperature, max_tokens), task_idx in buckets.items():
            prompts, owners = [], []
            for i in task_idx:
                src, _, ids = tasks[i]
                prompts += [ids] * src.spec.group_size
                owners += [i] * src.spec.group_size
            shortest = min(len(p) for p in prompts)
            limit = max_tokens if max_tokens is not None else max(1, spec.seq_len - shortest)
            calls.append(SamplerCall(prompts, owners, temperature, limit))
        return BatchPlan(tasks, calls, version=version)

    def finish(self, plan: BatchPlan, rollouts: list[Rollouts]) -> list[Sample]:
        """Score the rollouts of ``plan`` (one per sampler call) and give each group its advantages."""
        groups: list[list[Sample]] = [[] for _ in plan.tasks]
        for call, r in zip(plan.calls, rollouts, strict=True):
            self._collect(r, call, plan, groups)
        samples = [s for group in groups for s in group]
        adv = grpo.batch_advantages(
            torch.tensor([s.reward for s in samples]),
            torch.tensor([g for g, group in enumerate(groups) for _ in group]),
            torch.tensor([len(s.completion_ids) for s in samples]),
            torch.tensor([len(s.prompt_ids) for s in samples]),
            self.spec.length_penalty,
        )
        for s, a in zip(samples, adv.tolist(), strict=True):
            s.advantage = a
        return samples

    def _collect(
        self, rollouts: Rollouts, call: SamplerCall, plan: BatchPlan, groups: list[list[Sample]]
    ) -> None:
        comps = rollouts.completion_token_lists()
        lps = rollouts.logprobs.float().tolist()
        lens = [len(ids) for ids in comps]  # the rows' sampled tokens, counted once by the rollouts
        truncated = rollouts.truncated.tolist()
        for row, (task_i, prompt, ids) in enumerate(zip(call.owners, call.prompts, comps, strict=True)):
            src, example, _ = plan.tasks[task_i]
            reward = float(src.env.score(self._decode(ids), example))
            groups[task_i].append(
                Sample(
                    prompt_ids=prompt,
                    completion_ids=ids,
                    logprobs=lps[row][: lens[row]],
                    reward=reward,
                    advantage=0.0,
                    temperature=call.temperature,
                    version=plan.version,
                    source=src.spec.name,
                    truncated=bool(truncated[row]),
                )
            )
