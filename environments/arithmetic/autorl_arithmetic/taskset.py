"""The verifiers v1 Taskset for autorl-arithmetic, as prime-rl loads it (`env.taskset.id`).

A thin wrapper over ``core``: the problems and the reward are the ones the embedded backend and the fixed
eval use. The reward is a pure function of the trace (no runtime), so traces can be re-scored offline.
Only API shared by verifiers 0.4.0 and prime-rl's pinned verifiers is used (no ``TaskData.id``).
"""

from __future__ import annotations

from typing import Literal

import verifiers.v1 as vf

from autorl_arithmetic import core

_DEFAULTS = core.Settings()


class ArithmeticData(vf.TaskData):
    answer: str
    """The exact result, e.g. ``"933"``."""


class ArithmeticTask(vf.Task[ArithmeticData]):
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


class ArithmeticConfig(vf.TasksetConfig):
    # The same fields and defaults as core.Settings (a test checks they agree).
    split: Literal["train", "eval", "test"] = _DEFAULTS.split
    min_terms: int = _DEFAULTS.min_terms
    max_terms: int = _DEFAULTS.max_terms
    min_digits: int = _DEFAULTS.min_digits
    max_digits: int = _DEFAULTS.max_digits
    ops: str = _DEFAULTS.ops
    instruction: bool = _DEFAULTS.instruction
    num_examples: int = _DEFAULTS.num_examples


class ArithmeticTaskset(vf.Taskset[ArithmeticTask, ArithmeticConfig]):
    def load(self) -> list[ArithmeticTask]:
        c = self.config
        settings = core.Settings(
            split=c.split,
            min_terms=c.min_terms,
            max_terms=c.max_terms,
            min_digits=c.min_digits,
            max_digits=c.max_digits,
            ops=c.ops,
            instruction=c.instruction,
            num_examples=c.num_examples,
        )
        # Finite (num_examples tasks), so prime-rl and vf-eval may shuffle it.
        return [
            ArithmeticTask(ArithmeticData(prompt=p.prompt, answer=p.answer, name=p.id), self.config.task)
            for p in core.first(settings, settings.num_examples)
        ]
