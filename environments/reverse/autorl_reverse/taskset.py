"""The verifiers v1 Taskset for autorl-reverse, as prime-rl loads it (`env.taskset.id`).

A thin wrapper over ``core``: the problems and the reward are the ones the embedded backend and the fixed
eval use. The reward is a pure function of the trace (no runtime), so traces can be re-scored offline.
Only API shared by verifiers 0.4.0 and prime-rl's pinned verifiers is used (no ``TaskData.id``).
"""

from __future__ import annotations

from typing import Literal

import verifiers.v1 as vf

from autorl_reverse import core

_DEFAULTS = core.Settings()


class ReverseData(vf.TaskData):
    answer: str
    """The reversed word, e.g. ``"dcba"``."""


class ReverseTask(vf.Task[ReverseData]):
    @vf.stop
    async def single_turn(self, trace: vf.Trace) -> bool:
        # One question, one answer: never start a second turn.
        return trace.num_turns >= 1

    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return core.score(trace.last_reply or "", self.data.answer)

    async def validate(self, runtime: vf.Runtime | None = None) -> bool:
        # The gold answer, written in the expected format, must score 1.0.
        return core.score(core.format_answer(self.data.answer), self.data.answer) == 1.0


class ReverseConfig(vf.TasksetConfig):
    # The same fields and defaults as core.Settings (a test checks they agree).
    split: Literal["train", "eval", "test"] = _DEFAULTS.split
    min_len: int = _DEFAULTS.min_len
    max_len: int = _DEFAULTS.max_len
    alphabet: str = _DEFAULTS.alphabet
    instruction: bool = _DEFAULTS.instruction
    num_examples: int = _DEFAULTS.num_examples


class ReverseTaskset(vf.Taskset[ReverseTask, ReverseConfig]):
    def load(self) -> list[ReverseTask]:
        c = self.config
        settings = core.Settings(
            split=c.split,
            min_len=c.min_len,
            max_len=c.max_len,
            alphabet=c.alphabet,
            instruction=c.instruction,
            num_examples=c.num_examples,
        )
        # Finite (num_examples tasks), so prime-rl and vf-eval may shuffle it.
        return [
            ReverseTask(ReverseData(prompt=p.prompt, answer=p.answer, name=p.id), self.config.task)
            for p in core.first(settings, settings.num_examples)
        ]
