"""The base of every train.toml table (prime-rl's conventions: strict types, "None" is None, a union table
without `type` takes its default's) and the bounds of its numbers."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator


class Strict(BaseModel):
    """Base of every table: unknown keys are errors; TOML types are exact (strict: `"64"` is not an
    integer, `true` is not 1; an integer is still a valid float); the string "None" means None (prime-rl's
    TOML null). Every number is finite (TOML's inf and nan are refused) and bounded: see MAX_STEPS etc."""

    model_config = ConfigDict(
        extra="forbid",
        validate_default=True,
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,  # the docstring under a field is its description (docs/config.md)
    )

    @model_validator(mode="before")
    @classmethod
    def _prime_rl_conventions(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = {k: (None if v == "None" else v) for k, v in data.items()}
        # Like prime-rl: a union table without `type` takes the type of the field's default.
        for name, field in cls.model_fields.items():
            value, default = data.get(name), field.default
            if isinstance(value, dict) and "type" not in value and isinstance(default, BaseModel):
                if isinstance(kind := getattr(default, "type", None), str):
                    data[name] = {**value, "type": kind}
        return data


# Upper bounds a user could defend: far beyond any sensible run, low enough that a typo (an extra digit run,
# 1e300) is refused with its key before anything runs instead of crashing a trial or overflowing later.
MAX_STEPS = 10_000_000  # optimizer steps (max_steps, warm-up, decay)
MAX_SEQ_LEN = 1_048_576  # tokens in one sample
MAX_BATCH = 1_048_576  # rollouts (or tokens / 64) in one step
MAX_GROUP = 4096  # completions per prompt
MAX_COEF = 1e4  # loss scales, penalty weights, gradient-norm caps
