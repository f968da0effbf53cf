"""Range-checked argparse types: every numeric flag is finite and bounded, every text flag non-empty.

    p.add_argument("--budget", type=positive_float(86_400), help=...)
    p.add_argument("--trials", type=positive_int(10_000), help=...)

A bad value ends in argparse's usage line plus `argument --budget: must be a finite number in (0, 86400],
got 'nan'` (exit 2), before anything runs. Shared by the `autorl` commands and run.py's parser.

A dataclass whose fields are declared with `flag(...)` is a set of flags declared once: `add_flags` builds
the parser's arguments from its fields and `from_args` builds the dataclass from the parsed values
(run.py's `autorl.commands.options.RunOptions`).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

# Seeds of one trial (run.py --seeds, confirm --seeds): more than any decision needs (power saturates near
# 16); a typo guard.
MAX_SEEDS = 64
CONFIRM_MAX_SEEDS = 16  # autorl confirm --max-seeds: the sized confirm's most seeds per side
# A trial's training budget per seed, in seconds: from a tenth of a second (tests' doubles; the budget clock
# polls every 0.05 s, so less is no budget at all) to a week (a typo guard: a night is 28,800 s).
MIN_BUDGET_S = 0.1
DEFAULT_BUDGET_S = 600.0  # a track's first baseline, when --budget is not given
QUICK_BUDGET_S = 60.0  # run.py --quick: one seed of this many seconds, unless --budget
MAX_BUDGET_S = 7 * 86_400.0


def _fmt(x: float) -> str:
    return f"{x:g}"


def float_in(low: float, high: float, low_open: bool = True) -> Callable[[str], float]:
    """A finite float in (low, high] (or [low, high] with low_open=False)."""
    bounds = f"{'(' if low_open else '['}{_fmt(low)}, {_fmt(high)}]"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number in {bounds}, got {text!r}") from None
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            raise argparse.ArgumentTypeError(f"must be a finite number in {bounds}, got {text!r}")
        return value

    parse.__name__ = "float"
    return parse


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An integer in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer in [{low}, {high}], got {text!r}")
        return value

    parse.__name__ = "int"
    return parse


def positive_float(maximum: float) -> Callable[[str], float]:
    """A finite float in (0, maximum]."""
    return float_in(0.0, maximum)


def positive_int(maximum: int) -> Callable[[str], int]:
    """An integer in [1, maximum]."""
    return int_in(1, maximum)


def budget_seconds(text: str) -> float:
    """A training budget: a finite number of seconds in [MIN_BUDGET_S, MAX_BUDGET_S]."""
    return float_in(MIN_BUDGET_S, MAX_BUDGET_S, low_open=False)(text)


def nonempty_str(text: str) -> str:
    """Text with something in it besides whitespace."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def ray_address(text: str) -> str:
    """run.py --ray: `local` or HOST:PORT (the head's `ray start --head --port`)."""
    text = text.strip()
    host, sep, port = text.rpartition(":")
    if text != "local" and (not sep or not host or not port.isdigit() or not 0 < int(port) < 65536):
        raise argparse.ArgumentTypeError(f"expected 'local' or HOST:PORT (port 1..65535), got {text!r}")
    return text


def config_path(text: str) -> Path:
    """A config file's path with something in it (`--config ""` would name the current directory)."""
    return Path(nonempty_str(text))


def auto_or_seeds(text: str) -> int | None:
    """run.py --parallel: `auto` (None: as many as the machine has slots for) or a count of seeds."""
    if text == "auto":
        return None
    return positive_int(MAX_SEEDS)(text)


# --- flags declared once, on a dataclass's fields ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Flag:
    """How a dataclass field is given on the command line: `--` + its name with dashes (or `name`), and
    these. argparse's help shows the default after the text (the text never restates it)."""

    help: str
    type: Callable[[str], Any] | None = None  # parses and range-checks the text; None: the text as given
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    name: str | None = None  # the option string when it is not the field's name (`--json` for as_json)
    positional: bool = False  # an argument, not an option (`autorl mark keep`)
    nargs: str | None = None  # "?": a positional that may be left out
    required: bool = False


def flag(default: Any, help: str, **how: Any) -> Any:
    """A dataclass field that is also a flag: `budget: float = flag(600.0, "help", type=budget_seconds)`.
    A field whose default is False is a switch (present: True)."""
    return dataclasses.field(default=default, metadata={"flag": Flag(help, **how)})


def ray_flag() -> Any:
    """--ray, as run.py, `autorl confirm` and `autorl fidelity` take it."""
    return flag(
        None,
        "run the seeds as Ray tasks on the cluster at HOST:PORT ('local' starts Ray here); docs/ray.md",
        type=ray_address,
        metavar="ADDRESS",
    )


def _help(how: Flag, default: Any) -> str:
    """The help text, then the default unless the text speaks of it (or there is none to show)."""
    given = how.required or (how.positional and how.nargs is None)
    nothing = default is None or default is False or default == ""
    shown = not given and not nothing and "default" not in how.help
    text = (
        f"{how.help} (default: {default:g})"
        if shown and isinstance(default, float)
        else (f"{how.help} (default: {default})" if shown else how.help)
    )
    return text.replace("%", "%%")  # argparse formats help with %: "80% power" broke `autorl confirm --help`


def add_flags(parser: argparse.ArgumentParser, options: type) -> None:
    """One argument per `flag` field of the dataclass `options`, in field order, with the field's default."""
    for f in dataclasses.fields(options):
        how: Flag | None = f.metadata.get("flag")
        if how is None:
            continue
        extra: dict[str, Any]
        if how.positional:
            name, extra = f.name, {"nargs": how.nargs} if how.nargs else {}
        else:
            name, extra = how.name or "--" + f.name.replace("_", "-"), {"dest": f.name}
            if how.required:
                extra["required"] = True
        if f.default is False:
            parser.add_argument(name, action="store_true", help=how.help, **extra)
            continue
        given: dict[str, Any] = {"type": how.type, "choices": how.choices, "metavar": how.metavar}
        parser.add_argument(
            name,
            default=f.default,
            help=_help(how, f.default),
            **extra,
            **{k: v for k, v in given.items() if v is not None},
        )


T = TypeVar("T")


def from_args(options: type[T], args: argparse.Namespace) -> T:
    """The dataclass `options` from a namespace parsed by a parser that `add_flags` built."""
    flags = [f.name for f in dataclasses.fields(cast(Any, options)) if "flag" in f.metadata]
    return options(**{name: getattr(args, name) for name in flags})
