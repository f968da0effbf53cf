"""train.toml: the subset of prime-rl's `rl` config (pinned schema, prime-rl 559b447) that autorl accepts.

Two parts:
- a generic TOML loader (`load_toml`) that refuses harness-owned keys, validates with pydantic
  (`extra="forbid"` everywhere) and turns every problem into a `file:line: key: message` line, with the
  nearest valid key for typos. The classic track uses it with its own model.
- `TrainConfig`: the pydantic tree whose field names are exactly prime-rl's keys, with prime-rl's defaults,
  plus the refusal list (`REFUSED`) and the keys only the prime-rl backend runs (`EMBEDDED_UNSUPPORTED`).

This module must stay cheap to import (no torch, no transformers): a bad config is rejected in well under
a second, before anything heavy starts.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
import tomllib
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class ConfigError(Exception):
    """A config the harness will not run. str() is the full user-facing message (one problem a line)."""


# ====================================================================================================
# Generic loader
# ====================================================================================================

KeyPath = tuple[str, ...]  # a dotted key as segments; list items are their index as a string ("0")
Check = Callable[[dict], list[tuple[KeyPath, str]]]  # extra checks on the raw data: (key, message) pairs


class FieldProblem(ValueError):
    """Raised by model validators to blame specific fields (dotted, relative to the model validated).

    `FieldProblem("batch_size", "must be ...")` blames one field; `FieldProblem(("a", "msg"), ("b", "msg"))`
    several at once, so cross-field checks report every problem instead of the first.
    """

    def __init__(self, *args: str | tuple[str, str]):
        pairs = [args] if args and isinstance(args[0], str) else list(args)  # (field, message) or pairs
        super().__init__("; ".join(f"{field}: {msg}" for field, msg in pairs))
        self.problems = [(tuple(field.split(".")) if field else (), msg) for field, msg in pairs]
        self.field, self.message = self.problems[0]


def dotted(path: Iterable[str]) -> str:
    return ".".join(path)


_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED_KEY = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER_RE = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED_KEY})\s*\]\]?\s*(?:#.*)?$")
_ASSIGN_RE = re.compile(rf"^\s*({_DOTTED_KEY})\s*=")
_SEGMENT_RE = re.compile(_KEY)


def _split_key(text: str) -> list[str]:
    segments = []
    for m in _SEGMENT_RE.finditer(text):
        seg = m.group(0)
        segments.append(seg[1:-1] if seg[0] in "\"'" else seg)
    return segments


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map every key and table the TOML text writes to its 1-based line.

    Handles `[a.b]`, `[[a.b]]` (items get their index: a.b.0, a.b.1, ...), sub-tables of the last array item
    (`[a.b.c]` after `[[a.b]]` is a.b.<last>.c) and dotted keys inside a table (`optim.lr = ...`). Keys inside
    inline tables and multi-line values are not indexed; `line_of` falls back to the enclosing key's line.
    """
    lines: dict[KeyPath, int] = {}
    arrays: dict[KeyPath, int] = {}  # array-of-tables path -> index of its last item
    table: KeyPath = ()
    in_multiline: str | None = None

    def resolve(segments: list[str]) -> KeyPath:
        path: KeyPath = ()
        for seg in segments:
            path = (*path, seg)
            if path in arrays:
                path = (*path, str(arrays[path]))
        return path

    for lineno, line in enumerate(text.splitlines(), start=1):
        if in_multiline is not None:  # inside a multi-line string: nothing here is a key
            if line.count(in_multiline) % 2 == 1:
                in_multiline = None
            continue
        if m := _HEADER_RE.match(line):
            segments = _split_key(m.group(2))
            if m.group(1) == "[[":
                base = (*resolve(segments[:-1]), segments[-1])
                arrays[base] = arrays.get(base, -1) + 1
                table = (*base, str(arrays[base]))
                lines.setdefault(base, lineno)
            else:
                table = resolve(segments)
            for n in range(1, len(table) + 1):  # `[a.b.c]` also writes a.b and a (if not written before)
                lines.setdefault(table[:n], lineno)
            continue
        if m := _ASSIGN_RE.match(line):
            segments = _split_key(m.group(1))
            for i in range(1, len(segments) + 1):
                lines.setdefault(table + tuple(segments[:i]), lineno)
            rest = line[m.end() :]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_multiline = quote
    return lines


def line_of(path: KeyPath, lines: dict[KeyPath, int]) -> int | None:
    """The line of `path`, else of the nearest enclosing key or table written in the file."""
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


def match_key(pattern: str | list[str], path: Iterable[str]) -> bool:
    """Does a dotted key match a pattern? `*` matches one segment, `**` any number (zero included)."""
    segments = pattern.split(".") if isinstance(pattern, str) else pattern
    return _match(segments, tuple(path))


def _match(pattern: list[str], path: KeyPath) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    return (head == "*" or head == path[0]) and _match(rest, path[1:])


def _walk(data: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """Every (key, value) in the raw TOML data, parents before children; list items are keys too."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*path, str(key)), value
            yield from _walk(value, (*path, str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if isinstance(value, dict):
                yield (*path, str(i)), value
                yield from _walk(value, (*path, str(i)))


def find_refused(data: dict, refused: dict[str, str]) -> list[tuple[KeyPath, str, bool]]:
    """The keys set in `data` that match a refusal pattern (outermost only): (key, reason, by_value).

    A pattern is a dotted key (`*` = one segment, `**` = any depth), optionally followed by `=value`, which
    refuses the key only when it is set to that value (`trainer.loss.type=custom`). The first matching
    pattern wins.
    """
    parsed = []
    for pattern, reason in refused.items():
        key, eq, value = pattern.partition("=")
        parsed.append((key.split("."), value if eq else None, reason))
    found: list[tuple[KeyPath, str, bool]] = []
    for path, value in _walk(data):
        if any(path[: len(p)] == p for p, _, _ in found):
            continue  # an enclosing key is already refused
        for segments, wanted, reason in parsed:
            if _match(segments, path) and (wanted is None or (isinstance(value, str) and value == wanted)):
                found.append((path, reason, wanted is not None))
                break
    return found


def _without(data: dict, paths: list[KeyPath]) -> dict:
    """A copy of data with the given keys removed (so the rest can still be validated)."""
    data = copy.deepcopy(data)
    for path in sorted(paths, key=len, reverse=True):
        node: Any = data
        for seg in path[:-1]:
            node = node[int(seg)] if isinstance(node, list) else node.get(seg, {})
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return data


@cache
def model_keys(model_cls: type[BaseModel]) -> frozenset[str]:
    """Every dotted key the model accepts; `*` stands for list indices and free-form (extra) tables."""
    return frozenset(dotted(p) for p in _model_paths(model_cls, (), 0))


def _model_paths(model_cls: type[BaseModel], prefix: KeyPath, depth: int) -> Iterator[KeyPath]:
    if depth > 20:
        return
    if model_cls.model_config.get("extra") == "allow":
        yield (*prefix, "*")
    for name, field in model_cls.model_fields.items():
        path = (*prefix, name)
        yield path
        yield from _annotation_paths(field.annotation, path, depth + 1)


def _annotation_paths(annotation: Any, path: KeyPath, depth: int) -> Iterator[KeyPath]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from _model_paths(annotation, path, depth)
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (list, tuple):
        for arg in args:
            yield from _annotation_paths(arg, (*path, "*"), depth)
    elif origin is dict and len(args) == 2:
        yield (*path, "*")
        yield from _annotation_paths(args[1], (*path, "*"), depth)
    else:  # Union / Optional / Annotated: look into each member
        for arg in args:
            yield from _annotation_paths(arg, path, depth)


def generic_key(path: Iterable[str]) -> KeyPath:
    """List indices replaced by `*`: orchestrator.train.source.0.name -> orchestrator.train.source.*.name."""
    return tuple("*" if seg.isdigit() else seg for seg in path)


# Names other RL libraries use for a key, so `learning_rate` suggests `lr` (spelling alone would not).
SYNONYMS = {
    "learning_rate": "lr",
    "max_grad_norm": "max_norm",
    "grad_clip": "max_norm",
    "clip_grad_norm": "max_norm",
    "beta1": "betas1",
    "beta2": "betas2",
    "num_generations": "group_size",
    "rollouts_per_example": "group_size",
    "max_new_tokens": "max_completion_tokens",
    "max_tokens": "max_completion_tokens",
    "warmup": "warmup_steps",
    "steps": "max_steps",
    "kl_coef": "kl_tau",
    "beta": "kl_tau",
    "model_name": "name",
}


def nearest_key(path: KeyPath, known: Iterable[str]) -> str | None:
    """The valid key closest to a misspelt one: first among its siblings, then anywhere."""
    generic = generic_key(path)
    parent = dotted(generic[:-1])
    siblings = sorted(
        k.rsplit(".", 1)[-1] if "." in k else k
        for k in known
        if (k.rsplit(".", 1)[0] if "." in k else "") == parent and not k.endswith("*")
    )
    if SYNONYMS.get(generic[-1]) in siblings:
        return dotted((*path[:-1], SYNONYMS[generic[-1]]))
    hit = difflib.get_close_matches(generic[-1], siblings, n=1, cutoff=0.6)
    if hit:
        return dotted((*path[:-1], hit[0]))
    hit = difflib.get_close_matches(dotted(generic), sorted(known), n=1, cutoff=0.8)
    if hit:  # put the real list indices back
        segs = hit[0].split(".")
        return dotted(path[i] if s == "*" and i < len(path) else s for i, s in enumerate(segs))
    return None


def _error_path(loc: tuple, data: Any) -> KeyPath:
    """The dotted key of the TOML data that a pydantic error location points at.

    pydantic puts the tag of a discriminated union (`cosine`) and validator names into `loc`; those are not
    keys of the data, so walk the data and keep only segments that exist there (plus a final missing key).
    """
    path: list[str] = []
    node = data
    for i, seg in enumerate(loc):
        if isinstance(node, dict) and seg in node:
            node = node[seg]
            path.append(str(seg))
        elif isinstance(node, list) and isinstance(seg, int) and 0 <= seg < len(node):
            node = node[seg]
            path.append(str(seg))
        elif i == len(loc) - 1 and isinstance(seg, str) and not seg.startswith(("function-", "tagged-")):
            path.append(seg)  # a key that is missing in the data
            node = None
        # else: a union tag or a validator name: not a key
    return tuple(path)


def _fmt_value(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if value is None:
        return '"None"'
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _validation_problems(
    err: ValidationError, data: dict, known: Iterable[str], hint: Callable[[str], str | None] | None
) -> list[tuple[KeyPath, str]]:
    problems: list[tuple[KeyPath, str]] = []
    for e in err.errors():
        path = _error_path(tuple(e["loc"]), data)
        cause = (e.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            for field, msg in cause.problems:
                problems.append(((*path, *field), f"`{dotted((*path, *field))}` {msg}"))
            continue
        key = dotted(path) if path else "(top level)"
        kind = e["type"]
        if kind == "extra_forbidden":
            msg = f"unknown key `{key}`"
            explained = hint(key) if hint else None
            near = None if explained else nearest_key(path, known)
            if explained:
                msg += f": {explained}"
            elif near:
                msg += f"; did you mean `{near}`?"
            problems.append((path, msg))
        elif kind == "missing":
            problems.append((path, f"missing required key `{key}`"))
        elif kind == "union_tag_invalid":
            tags = (e.get("ctx") or {}).get("expected_tags", "")
            got = (e.get("ctx") or {}).get("tag", "")
            problems.append(
                ((*path, "type"), f"`{dotted((*path, 'type'))}` must be one of {tags} (got '{got}')")
            )
        else:
            text = e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
            if kind == "list_type" and isinstance(e.get("input"), dict):
                text += f"; write each item as a [[{key}]] table"
            problems.append((path, f"`{key}`: {text} (got {_fmt_value(e.get('input'))})"))
    return problems


def load_toml(
    path: Path,
    model_cls: type[BaseModel],
    refused: dict[str, str],
    hint: Callable[[str], str | None] | None = None,
    checks: Iterable[Check] = (),
) -> tuple[str, dict, BaseModel]:
    """Read a TOML file, refuse keys matching `refused` (pattern -> reason), validate with `model_cls`.

    Returns (text, raw data exactly as written, validated model). Raises ConfigError listing every problem,
    one a line, each `file:line: ...`, ordered by line. `hint(dotted_key)` may explain an unknown key better
    than a spelling suggestion; `checks` are extra checks on the raw data (they run even when validation
    fails).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read config: {e.strerror or e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+)", str(e))
        raise ConfigError(f"{path.name}:{m.group(1) if m else '?'}: invalid TOML: {e}") from None
    lines = key_lines(text)

    problems: list[tuple[KeyPath, str]] = []
    drop: list[KeyPath] = []
    for key, reason, by_value in find_refused(data, refused):
        shown = f"`{dotted(key)} = {_fmt_value(_get(data, key))}`" if by_value else f"`{dotted(key)}`"
        problems.append((key, f"{shown} {reason}"))
        drop.append(key[:-1] if by_value else key)  # a refused value takes its whole table out
    for check in checks:
        problems += check(data)
    model = None
    try:  # validate the rest too, so one run reports every problem
        model = model_cls.model_validate(_without(data, drop) if drop else copy.deepcopy(data))
    except ValidationError as e:
        problems += _validation_problems(e, data, model_keys(model_cls), hint)
    if problems or model is None:
        numbered = [(line_of(k, lines) or 0, i, msg) for i, (k, msg) in enumerate(problems)]
        numbered.sort()
        raise ConfigError(
            "\n".join(f"{path.name}:{n}: {msg}" if n else f"{path.name}: {msg}" for n, _, msg in numbered)
        )
    return text, data, model


def _get(data: Any, path: KeyPath) -> Any:
    for seg in path:
        data = data[int(seg)] if isinstance(data, list) else data[seg]
    return data


def config_hash(data: dict) -> str:
    """sha256 of the canonical JSON of the parsed TOML: formatting, key order and comments don't change it."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


# ====================================================================================================
# The pinned prime-rl schema (key list derived from prime-rl 559b447, see primerl_keys.txt)
# ====================================================================================================

PRIMERL_KEYS_FILE = Path(__file__).with_name("primerl_keys.txt")


@cache
def primerl_schema_keys() -> frozenset[str]:
    """Every dotted key of prime-rl's `rl` schema at the pinned commit (`*` = list index or free-form)."""
    keys = set()
    for line in PRIMERL_KEYS_FILE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keys.add(line)
    return frozenset(keys)


@cache
def _wildcard_keys() -> tuple[tuple[tuple[str, ...], bool], ...]:
    """(pattern, open) for keys with `*`. An open pattern is a free-form table (a `*` key that nothing
    extends, like `inference.vllm.*`): anything below it is a key too."""
    keys = primerl_schema_keys()
    extended = {k.rsplit(".", 1)[0] for k in keys if "." in k}  # keys that have a key below them
    return tuple((tuple(k.split(".")), k.endswith(".*") and k not in extended) for k in keys if "*" in k)


def is_primerl_key(key: str) -> bool:
    """Is `key` (dotted, list items as indices: `orchestrator.train.source.0.name`) in the pinned schema?

    A key under a free-form table (`inference.vllm.<any vLLM arg>`, `env.taskset.<taskset field>`) counts.
    """
    path = tuple(key.split("."))
    if dotted(path) in primerl_schema_keys() or dotted(generic_key(path)) in primerl_schema_keys():
        return True
    for pattern, is_open in _wildcard_keys():
        n = len(pattern)
        if is_open and len(path) >= n and _match(list(pattern), path[:n]):
            return True
        if _match(list(pattern), path):
            return True
    return False


# ====================================================================================================
# TrainConfig: the accepted subset, field names = prime-rl keys, defaults = prime-rl's defaults
# ====================================================================================================


class Strict(BaseModel):
    """Base of every table: unknown keys are errors; the string "None" means None (prime-rl's TOML null)."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

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
                if isinstance(getattr(default, "type", None), str):
                    data[name] = {**value, "type": default.type}
        return data


PositiveInt = Annotated[int, Field(ge=1)]


# ---- trainer -----------------------------------------------------------------------------------------


class OptimConfig(Strict):
    """[trainer.optim]: AdamW (prime-rl's default optimizer; the only one autorl accepts)."""

    type: Literal["adamw"] = "adamw"
    lr: float = Field(1e-6, gt=0, allow_inf_nan=False)
    weight_decay: float = Field(0.01, ge=0, allow_inf_nan=False)
    max_norm: float | None = Field(1.0, gt=0, allow_inf_nan=False)  # "None" disables gradient clipping
    betas1: float = Field(0.9, ge=0, lt=1)
    betas2: float = Field(0.999, ge=0, lt=1)


class ConstantScheduler(Strict):
    type: Literal["constant"] = "constant"


class LinearScheduler(Strict):
    type: Literal["linear"] = "linear"
    warmup_steps: int = Field(10, ge=0)
    decay_steps: int = Field(10, ge=0)  # linear decay to min_lr over the last decay_steps steps
    min_lr: float = Field(0.0, ge=0)


class CosineScheduler(Strict):
    type: Literal["cosine"] = "cosine"
    warmup_steps: int = Field(10, ge=0)
    min_lr: float = Field(0.0, ge=0)


SchedulerConfig = Annotated[
    ConstantScheduler | LinearScheduler | CosineScheduler, Field(discriminator="type")
]


class DefaultLoss(Strict):
    """prime-rl's default loss: sign-conditioned trust-region mask on probability gaps, squared-log KL."""

    type: Literal["default"] = "default"
    dppo_mask_low: float = Field(0.2, gt=0, le=1)
    dppo_mask_high: float = Field(0.2, gt=0, le=1)
    adv_tau: float = Field(1.0, gt=0, allow_inf_nan=False)
    kl_tau: float = Field(1e-3, ge=0, allow_inf_nan=False)


class IPOLoss(Strict):
    """Like `default`, but masks |δ| > ipo_threshold regardless of the advantage's sign."""

    type: Literal["ipo"] = "ipo"
    ipo_threshold: float = Field(0.1, gt=0, le=1)
    adv_tau: float = Field(1.0, gt=0, allow_inf_nan=False)
    kl_tau: float = Field(1e-3, ge=0, allow_inf_nan=False)


LossConfig = Annotated[DefaultLoss | IPOLoss, Field(discriminator="type")]


class CompileConfig(Strict):
    fullgraph: bool = False


class ActivationCheckpointConfig(Strict):
    mode: Literal["full", "selective"] = "full"
    freq: int = Field(1, ge=1)
    targets: list[str] = ["norm"]


class ActivationOffloadingConfig(Strict):
    pin_memory: bool = True
    max_inflight_activations: int = Field(5, ge=1)


class LoRAConfig(Strict):
    rank: int = Field(16, ge=1)
    alpha: float = Field(32.0, ge=0)
    dropout: float = Field(0.0, ge=0, le=1)
    target_modules: list[str] = [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
        "experts",
        "fc1_latent_proj",
        "fc2_latent_proj",
    ]
    modules_to_save: list[str] = []


class TrainerModelConfig(Strict):
    """[trainer.model]: prime-rl trainer engineering knobs (prime-rl backend only)."""

    attn: Literal["flash_attention_2", "flash_attention_3", "flash_attention_4", "auto"] = "auto"
    compile: CompileConfig | None = CompileConfig()  # "None" = eager (faster start-up)
    ac: ActivationCheckpointConfig | None = ActivationCheckpointConfig()
    ac_offloading: ActivationOffloadingConfig | None = ActivationOffloadingConfig()
    fsdp_cpu_offload: bool = False
    optim_cpu_offload: bool = True
    impl: Literal["hf", "custom", "auto"] = "auto"
    optimization_dtype: Literal["bfloat16", "float32"] = "float32"
    reduce_dtype: Literal["bfloat16", "float32"] = "float32"
    lora: LoRAConfig | None = None

    @model_validator(mode="after")
    def _offload_exclusive(self) -> TrainerModelConfig:
        if self.fsdp_cpu_offload and self.optim_cpu_offload:
            raise FieldProblem(
                ("fsdp_cpu_offload", "cannot be combined with optim_cpu_offload (prime-rl rejects it)")
            )
        return self


class TrainerConfig(Strict):
    optim: OptimConfig = OptimConfig()
    scheduler: SchedulerConfig = ConstantScheduler()
    loss: LossConfig = DefaultLoss()
    model: TrainerModelConfig = TrainerModelConfig()

    @model_validator(mode="after")
    def _min_lr_below_lr(self) -> TrainerConfig:
        min_lr = getattr(self.scheduler, "min_lr", 0.0)
        if min_lr > self.optim.lr:
            raise FieldProblem(
                ("scheduler.min_lr", f"({min_lr}) must be <= trainer.optim.lr ({self.optim.lr})")
            )
        return self


# ---- orchestrator ------------------------------------------------------------------------------------


class SamplingConfig(Strict):
    """[orchestrator.train.sampling]: top_p is fixed at 1.0 by prime-rl."""

    temperature: float = Field(1.0, ge=0, le=2)
    max_completion_tokens: int | None = Field(None, ge=1)  # None: until EOS or the context is full


class LengthPenalty(Strict):
    """Subtracted from each reward before the GRPO baseline, scaled by the group's mean reward."""

    type: Literal["linear"] = "linear"
    num_output_tokens_weight: float = Field(0.25, ge=0, allow_inf_nan=False)
    num_input_tokens_weight: float = Field(0.1, ge=0, allow_inf_nan=False)
    num_turns_weight: float = Field(0.1, ge=0, allow_inf_nan=False)


class GRPOAlgo(Strict):
    type: Literal["grpo"] = "grpo"
    length_penalty: LengthPenalty | None = None


class MaxRLAlgo(Strict):
    """prime-rl only: advantage = (R - mean) / mean."""

    type: Literal["max_rl"] = "max_rl"


class RAEAlgo(Strict):
    """prime-rl only: reward minus a per-agent EMA baseline."""

    type: Literal["rae"] = "rae"
    decay: float = Field(0.95, ge=0, lt=1)


class EchoRole(Strict):
    alpha: float = Field(0.1, gt=0)


class EchoRoles(Strict):
    system: EchoRole | None = None
    user: EchoRole | None = None
    assistant: EchoRole | None = None
    tool: EchoRole | None = None


class EchoAlgo(Strict):
    """prime-rl only: GRPO plus weighted CE on env-provided tokens."""

    type: Literal["echo"] = "echo"
    length_penalty: LengthPenalty | None = None
    roles: EchoRoles = EchoRoles(tool=EchoRole())


class OPSDAlgo(Strict):
    """prime-rl only: on-policy self-distillation against demonstrations."""

    type: Literal["opsd"] = "opsd"
    demo_key: str = "demonstration"
    template: str = (
        "Here is an example of an expert response:\n<demonstration>\n{demonstration}\n</demonstration>"
    )


AlgoConfig = Annotated[GRPOAlgo | MaxRLAlgo | RAEAlgo | EchoAlgo | OPSDAlgo, Field(discriminator="type")]


class TasksetConfig(Strict):
    """[orchestrator.train.source.env.taskset]: `id` plus the taskset's own fields (free-form)."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1)


class EnvConfig(Strict):
    taskset: TasksetConfig


class StandardSampler(Strict):
    type: Literal["standard"] = "standard"


class DifficultyPool(Strict):
    threshold: float
    weight: float = Field(ge=0)


class DifficultyPoolSampler(Strict):
    type: Literal["difficulty_pool"] = "difficulty_pool"
    pools: dict[str, DifficultyPool] = {
        "hard": DifficultyPool(threshold=0.25, weight=0.2),
        "normal": DifficultyPool(threshold=0.75, weight=1.0),
        "easy": DifficultyPool(threshold=1.0, weight=0.2),
    }


class AdvantageRangeGate(Strict):
    """Rejects a whole group whose advantages fall in [reject_min, reject_max]."""

    type: Literal["advantage_range"] = "advantage_range"
    reject_min: float = 0.0
    reject_max: float = 0.0

    @model_validator(mode="after")
    def _ordered(self) -> AdvantageRangeGate:
        if self.reject_min > self.reject_max:
            raise FieldProblem(("reject_min", "must be <= reject_max"))
        return self


class CurriculumConfig(Strict):
    """prime-rl only: task sampler and admission gates."""

    sampler: Annotated[StandardSampler | DifficultyPoolSampler, Field(discriminator="type")] = (
        StandardSampler()
    )
    gates: dict[str, AdvantageRangeGate] = {}


class SourceConfig(Strict):
    """One [[orchestrator.train.source]]. group_size and sampling inherit the orchestrator's when unset."""

    name: str | None = None  # defaults to the taskset id
    ratio: float = Field(1.0, gt=0, allow_inf_nan=False)
    group_size: int = Field(1, ge=1)
    sampling: SamplingConfig = SamplingConfig()
    env: EnvConfig
    curriculum: CurriculumConfig | None = None

    @property
    def resolved_name(self) -> str:
        return self.name or self.env.taskset.id


class OrchestratorTrainConfig(Strict):
    source: list[SourceConfig] = Field(default_factory=list)
    sampling: SamplingConfig = SamplingConfig()
    filter_zero_advantages: bool = True

    @model_validator(mode="after")
    def _sources(self) -> OrchestratorTrainConfig:
        problems = []
        names = [s.resolved_name for s in self.source]
        for i, name in enumerate(names):
            if names.index(name) != i:
                problems.append(
                    (f"source.{i}.name", f"'{name}' is used by another source; names must be unique")
                )
            if name == "agg":
                problems.append((f"source.{i}.name", "'agg' is reserved by prime-rl for aggregated metrics"))
        if problems:
            raise FieldProblem(*problems)
        # prime-rl semantics: a source's sampling inherits the group-level fields it does not set itself
        for src in self.source:
            merged = self.sampling.model_dump() | src.sampling.model_dump(exclude_unset=True)
            src.sampling = SamplingConfig(**merged)
        return self


class OrchestratorConfig(Strict):
    batch_size: int | None = Field(None, ge=1)  # rollouts per step; None -> 128 unless token_batch_size
    token_batch_size: int | None = Field(None, ge=1)  # prime-rl only: fill each step by tokens
    group_size: int = Field(1, ge=1)
    max_off_policy_steps: int = Field(8, ge=0)
    algo: AlgoConfig = GRPOAlgo()
    train: OrchestratorTrainConfig = Field(default_factory=OrchestratorTrainConfig)

    @model_validator(mode="after")
    def _batching(self) -> OrchestratorConfig:
        if self.batch_size is not None and self.token_batch_size is not None:
            raise FieldProblem(("token_batch_size", "set exactly one of batch_size or token_batch_size"))
        if self.batch_size is None and self.token_batch_size is None:
            self.batch_size = 128  # prime-rl's default
        problems = []
        if self.batch_size is not None and self.batch_size % self.group_size:
            problems.append(
                ("batch_size", f"({self.batch_size}) must be divisible by group_size ({self.group_size})")
            )
        for i, src in enumerate(self.train.source):
            if "group_size" not in src.model_fields_set:
                src.group_size = self.group_size  # prime-rl: sources inherit the orchestrator's group_size
            elif self.batch_size is not None and self.batch_size % src.group_size:
                problems.append(
                    (
                        f"train.source.{i}.group_size",
                        f"({src.group_size}) must divide orchestrator.batch_size ({self.batch_size})",
                    )
                )
        if problems:
            raise FieldProblem(*problems)
        return self


class ModelConfig(Strict):
    name: str = Field("Qwen/Qwen3-0.6B", min_length=1)  # HF id or local directory


class TrainConfig(Strict):
    """train.toml. Field names are prime-rl's keys; defaults are prime-rl's (pinned 559b447)."""

    model: ModelConfig = ModelConfig()
    max_steps: int | None = Field(None, ge=1)  # None: until the budget stops training
    seq_len: int = Field(2048, ge=16)
    trainer: TrainerConfig = TrainerConfig()
    orchestrator: OrchestratorConfig = OrchestratorConfig()

    @model_validator(mode="after")
    def _cross_checks(self) -> TrainConfig:
        problems = []
        if not self.orchestrator.train.source:
            problems.append(
                (
                    "orchestrator.train.source",
                    "is missing: add at least one [[orchestrator.train.source]] table",
                )
            )
        group = self.orchestrator.train.sampling
        sampling = [("orchestrator.train.sampling", group)]
        sources = self.orchestrator.train.source
        sampling += [(f"orchestrator.train.source.{i}.sampling", s.sampling) for i, s in enumerate(sources)]
        for i, (where, s) in enumerate(sampling):
            if s.max_completion_tokens is not None and s.max_completion_tokens >= self.seq_len:
                if i > 0 and s.max_completion_tokens == group.max_completion_tokens:
                    continue  # inherited from the group level, reported there
                problems.append(
                    (
                        f"{where}.max_completion_tokens",
                        f"({s.max_completion_tokens}) must be < seq_len ({self.seq_len}): "
                        "the prompt has to fit in the sequence too",
                    )
                )
        sched = self.trainer.scheduler
        if isinstance(sched, LinearScheduler):
            if sched.warmup_steps == 0 and sched.decay_steps == 0:
                problems.append(
                    (
                        "trainer.scheduler.type",
                        "linear needs warmup_steps > 0 or decay_steps > 0 (or use constant)",
                    )
                )
            if sched.decay_steps > 0 and self.max_steps is None:
                problems.append(("trainer.scheduler.decay_steps", "> 0 needs max_steps to be set (prime-rl)"))
            elif self.max_steps is not None and sched.warmup_steps + sched.decay_steps > self.max_steps:
                problems.append(
                    (
                        "trainer.scheduler.decay_steps",
                        f"warmup_steps ({sched.warmup_steps}) + decay_steps ({sched.decay_steps}) "
                        f"must not exceed max_steps ({self.max_steps})",
                    )
                )
        if isinstance(sched, CosineScheduler):
            if self.max_steps is None:
                problems.append(("trainer.scheduler.type", "cosine needs max_steps to be set (prime-rl)"))
            elif sched.warmup_steps >= self.max_steps:
                problems.append(
                    (
                        "trainer.scheduler.warmup_steps",
                        f"({sched.warmup_steps}) must be < max_steps ({self.max_steps})",
                    )
                )
        if problems:
            raise FieldProblem(*problems)
        return self


# ====================================================================================================
# Refusals: harness-owned keys, keys that would run code, keys only the prime-rl backend runs
# ====================================================================================================

_HARNESS = "is owned by the harness"
SOURCE = "orchestrator.train.source.*"
REFUSED: dict[str, str] = {
    # seeds first: at any depth, whatever the table
    "**.seed": "is owned by the harness: seeds are set per trial by run.py (--seeds); changing a seed is "
    "never an experiment",
    "**.output_dir": f"{_HARNESS}: every trial writes into its own run directory (runs/...)",
    "run": f"{_HARNESS}: the run name and directory are set per trial",
    "clean": f"{_HARNESS}: run directories are created fresh per trial",
    "dry_run": f"{_HARNESS}: use `uv run run.py --dry-run`",
    "**.env_vars": f"{_HARNESS}: environment variables can change what code runs; they are not an experiment",
    "deployment": f"{_HARNESS}: GPUs are assigned by the harness (GPU 0 vLLM, GPU 1 trainer)",
    "slurm": f"{_HARNESS}: trials run on the local machine",
    "inference": f"{_HARNESS}: the harness starts and configures vLLM",
    "**.weight_broadcast": f"{_HARNESS}: weights are broadcast to disk so the eval always finds the latest",
    "**.rollout_transport": f"{_HARNESS}: process plumbing between orchestrator and trainer",
    "**.monitors": f"{_HARNESS}: metrics go to the run directory's metrics.jsonl",
    "**.ckpt": f"{_HARNESS}: weights are saved by the harness; checkpoints would write outside the run",
    "**.resume": f"{_HARNESS}: every trial starts from the prepared base model",
    "**.log": f"{_HARNESS}: logs go to the run directory",
    "**.tokenizer": f"{_HARNESS}: the tokenizer is the prepared model's",
    "**.heartbeat": f"{_HARNESS}: no external monitoring endpoints",
    "**.metrics_server": f"{_HARNESS}: no network endpoints",
    "trainer.trace_path": f"{_HARNESS}: it writes files outside the run directory",
    "trainer.memory_profiler_path": f"{_HARNESS}: it writes files outside the run directory",
    "trainer.model.conversion_dir": f"{_HARNESS}: it writes files outside the run directory",
    "orchestrator.eval": f"{_HARNESS}: the evaluation is fixed (see eval.toml) so that scores stay "
    "comparable across trials",
    "orchestrator.model": f"{_HARNESS}: the client/base_url of the vLLM server is set by the harness",
    "orchestrator.renderer": f"{_HARNESS}: it picks the renderer that fits the prepared model",
    "trainer.loss.type=custom": "is refused: a custom loss imports and runs arbitrary code (import_path)",
    "trainer.loss.import_path": "is refused: it imports and runs arbitrary code",
    "trainer.loss.kwargs": "is refused: it belongs to the custom loss, which runs arbitrary code",
    "orchestrator.algo.filter": "is refused: echo filters import and run arbitrary code (import_path)",
    "orchestrator.algo.sampling": "is refused: rollouts are sampled from the policy the harness serves",
    "orchestrator.algo.type=opd": "is refused: opd needs an externally hosted teacher (base_url), which the "
    "harness does not provide",
    "orchestrator.algo.type=sft": "is refused: sft needs an externally hosted teacher (base_url), which the "
    "harness does not provide",
    f"{SOURCE}.env.agent": f"{_HARNESS}: the harness/runtime are fixed (harness null, runtime subprocess) so "
    "rollouts run locally with no sandbox or tools",
    f"{SOURCE}.env.taskset.system_prompt": "is refused: it names a file to read; the prompt format "
    "belongs to the environment",
    f"{SOURCE}.env.taskset.task.rewards.*.fn": "is refused: reward functions are import paths (code "
    "execution); the reward belongs to the environment",
    f"{SOURCE}.env.taskset.task.metrics.*.fn": "is refused: metric functions are import paths (code "
    "execution)",
    f"{SOURCE}.env.taskset.task.stops.*.fn": "is refused: stop functions are import paths (code execution)",
    f"{SOURCE}.env.taskset.task.judges": "is refused: judges call external model endpoints",
}

# Accepted keys that only the prime-rl backend runs: the embedded trainer refuses them by name.
EMBEDDED_UNSUPPORTED: tuple[str, ...] = (
    "trainer.model.attn",
    "trainer.model.compile",
    "trainer.model.ac",
    "trainer.model.ac_offloading",
    "trainer.model.fsdp_cpu_offload",
    "trainer.model.optim_cpu_offload",
    "trainer.model.impl",
    "trainer.model.optimization_dtype",
    "trainer.model.reduce_dtype",
    "trainer.model.lora",
    "orchestrator.token_batch_size",
    "orchestrator.algo.type=max_rl",
    "orchestrator.algo.type=rae",
    "orchestrator.algo.type=echo",
    "orchestrator.algo.type=opsd",
    f"{SOURCE}.curriculum",
)
_PRIMERL_ONLY = "is supported on the prime-rl backend only"

# Keys of older prime-rl versions (reference §10) and their HEAD equivalents.
_OLD_KEYS = {
    "rollouts_per_example": "renamed: use `orchestrator.group_size`",
    "inference_gpu_ids": "GPUs are owned by the harness",
    "trainer_gpu_ids": "GPUs are owned by the harness",
    "max_async_level": "gone in prime-rl HEAD; the nearest is `orchestrator.max_off_policy_steps`",
    "token_mask_high": "gone; the nearest is `trainer.loss.dppo_mask_high` (a probability gap, 0.2)",
    "token_mask_low": "gone; the nearest is `trainer.loss.dppo_mask_low` (a probability gap, 0.2)",
    "ratio_type": "gone in prime-rl HEAD (the loss is a global token mean)",
    "teacher_tau": 'gone; on-policy distillation is `orchestrator.algo.type = "opd"` (refused here)',
    "advantage": "gone; the nearest is [orchestrator.algo.length_penalty]",
    "env": "renamed: use [[orchestrator.train.source]] with env.taskset.id",
    "buffer": "gone; use per-source `ratio`",
    "wandb": "metrics monitors are owned by the harness",
}


def _hint(key: str) -> str | None:
    """Explain an unknown key better than a spelling suggestion, where we can."""
    path = key.split(".")
    last = path[-1]
    if path[0] in ("trainer", "orchestrator") and last in ("max_steps", "seq_len", "name") and len(path) <= 3:
        shared = {"max_steps": "max_steps", "seq_len": "seq_len", "name": "model.name"}[last]
        if last != "name" or path[-2] == "model":
            return (
                f"set the shared top-level `{shared}` instead (prime-rl copies it into trainer and "
                "orchestrator)"
            )
    if key == "orchestrator.sampling" or key.startswith("orchestrator.sampling."):
        return "moved: use [orchestrator.train.sampling]"
    if last in _OLD_KEYS and not is_primerl_key(key):
        return _OLD_KEYS[last]
    if is_primerl_key(key):
        return "a prime-rl key that autorl's train.toml does not accept (docs/config.md lists those it does)"
    return None


# ====================================================================================================
# Loading train.toml
# ====================================================================================================


@dataclass
class LoadedConfig:
    path: Path
    text: str
    data: dict  # the raw TOML, exactly as written
    model: TrainConfig  # validated, with prime-rl's defaults filled in
    config_hash: str


def load_train_config(
    path: Path, backend: str | None = None, prepared_model: str | None = None
) -> LoadedConfig:
    """Load and validate train.toml; raise ConfigError naming every problem (file:line, key, why).

    backend="embedded" also refuses the keys only prime-rl runs (EMBEDDED_UNSUPPORTED). prepared_model is the
    model prepare.py set up; a different `model.name` is refused (the model is harness-owned once prepared).
    """
    refused = dict(REFUSED)
    if backend == "embedded":
        refused |= {key: _PRIMERL_ONLY for key in EMBEDDED_UNSUPPORTED if key not in refused}
    checks: list[Check] = []
    if prepared_model is not None:

        def check_model(data: dict) -> list[tuple[KeyPath, str]]:
            table = data.get("model", {})
            name = table.get("name", ModelConfig().name) if isinstance(table, dict) else None
            if not isinstance(name, str) or name == prepared_model:
                return []
            return [
                (
                    ("model", "name"),
                    f"`model.name` is '{name}' but the prepared model is '{prepared_model}': the model is "
                    "owned by the harness once prepared (base score and data belong to it); re-run "
                    "`uv run prepare.py` to switch models",
                )
            ]

        checks.append(check_model)
    text, data, model = load_toml(Path(path), TrainConfig, refused, hint=_hint, checks=checks)
    assert isinstance(model, TrainConfig)
    return LoadedConfig(path=Path(path), text=text, data=data, model=model, config_hash=config_hash(data))
