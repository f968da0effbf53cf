"""The modules run.py's `--budget` passes through on its way to the training clock, counted (issue 51).

Runs one classic trial (one seed, nothing to prepare) in a temporary root with a distinctive budget and a
profile hook on every thread of the runner: a call of an autorl function one of whose arguments holds the
budget (the number, or an object that holds it within three attribute hops: RunOptions, TrialRequest,
BudgetSpec, a Setup, a pool run) counts that function's module. The trial's clock is the runner's
(autorl/engine/process.py counts the training seconds and stops the child at the budget), so the runner's
process is the whole path. Prints the modules in the order the budget reached them, then their count.

    uv run python scripts/budget_path.py            # the count, at this commit
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BUDGET = 47.25  # seconds: a number nothing else in a trial holds
PACKAGE = str(REPO / "autorl")


def holds(value: Any, depth: int = 3) -> bool:
    """Whether `value` is the budget or holds it within `depth` attribute (or field) hops."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        return value == BUDGET
    if depth == 0 or isinstance(value, str | bytes | Path | type):
        return False
    if dataclasses.is_dataclass(value):
        children = [getattr(value, f.name, None) for f in dataclasses.fields(value)]
    elif hasattr(value, "__dict__") and type(value).__module__.startswith("autorl"):
        children = list(vars(value).values())
    else:
        return False
    return any(holds(c, depth - 1) for c in children)


def main() -> None:
    seen: dict[str, set[str]] = {}  # module -> functions, in the order first reached

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not frame.f_code.co_filename.startswith(PACKAGE):
            return
        code = frame.f_code
        args = [frame.f_locals.get(n) for n in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]]
        if any(holds(a) for a in args):
            module = os.path.relpath(code.co_filename, REPO).removesuffix(".py").replace(os.sep, ".")
            seen.setdefault(module, set()).add(code.co_name)

    with tempfile.TemporaryDirectory() as root:
        os.environ["AUTORL_ROOT"] = root
        from autorl.commands import trial

        argv = ["--track", "classic", "--config", str(REPO / "classic.toml"), "--budget", f"{BUDGET}"]
        argv += ["--seeds", "1", "--allow-dirty-harness"]
        threading.setprofile(profile)
        sys.setprofile(profile)
        try:
            code = trial.main(argv)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    print(f"run.py {' '.join(argv)}: exit {code}")
    for module, functions in seen.items():
        print(f"  {module}: {', '.join(sorted(functions))}")
    print(f"modules the budget passes through: {len(seen)}")


if __name__ == "__main__":
    # No options: `--help` says what it does instead of running the trial (as it did), a stray one is refused.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
