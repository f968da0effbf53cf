"""The verifiers v1 Taskset for autorl-gsm8k, as prime-rl loads it (``env.taskset.id = "autorl-gsm8k"``).

Unlike upstream verifiers' ``gsm8k`` (whose reward runs math-verify in a uv script inside the runtime),
the reward here is a pure function of the trace computed in-process by ``core.score``: no runtime, no uv,
no network at scoring time, and traces can be re-scored offline. Only API shared by verifiers 0.4.0 and
prime-rl's pinned verifiers is used (no ``TaskData.id``).
"""

from __future__ import annotations

from typing import Literal

import verifiers.v1 as vf

from autorl_gsm8k import core

_DEFAULTS = core.Settings()


class GSM8KData(vf.TaskData):
    answer: str
    """The gold final answer (the text after GSM8K's ``####``)."""


class GSM8KTask(vf.Task[GSM8KData]):
    @vf.stop
    async def single_turn(self, trace: vf.Trace) -> bool:
        # One question, one answer: never start a second turn.
        return trace.num_turns >= 1

    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return core.score(trace.last_reply or "", self.data.answer)

    async def validate(self, runtime: vf.Runtime | None = None) -> bool:
        # The gold answer, written in the expected format, must score 1.0.
        return core.score(f"#### {self.data.answer}", self.data.answer) == 1.0


class GSM8KConfig(vf.TasksetConfig):
    # The same fields and defaults as core.Settings (a test checks they agree).
    split: Literal["train", "eval", "test"] = _DEFAULTS.split
    data_path: str | None = _DEFAULTS.data_path
    num_examples: int = _DEFAULTS.num_examples


class GSM8KTaskset(vf.Taskset[GSM8KTask, GSM8KConfig]):
    def load(self) -> list[GSM8KTask]:
        c = self.config
        settings = core.Settings(split=c.split, data_path=c.data_path, num_examples=c.num_examples)
        problems = core.dataset(settings)
        if settings.num_examples >= 0:
            problems = problems[: settings.num_examples]
        return [
            GSM8KTask(GSM8KData(prompt=p.prompt, answer=p.answer, name=p.id), self.config.task)
            for p in problems
        ]
