"""The environment's bytecode, written once where Python would not write it itself.

Where PYTHONDONTWRITEBYTECODE is set, no process caches what it compiles, so every import of torch and
transformers compiles their sources again (17 s of imports instead of 6 on the 2-core VM). uv's own
`compile-bytecode` setting would write it at install but also on every `uv run` (astral-sh/uv#12202), so the
project leaves it off and prepare.py writes the bytecode here, once (docs/verified.md).
"""

import compileall
import importlib.util
import sys
import sysconfig
import warnings
from collections.abc import Callable
from pathlib import Path


def missing() -> bool:
    """True when this Python writes no bytecode and torch's has not been written (the heavy import)."""
    if not sys.dont_write_bytecode:
        return False  # Python writes each module's bytecode at its first import
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return False
    return not Path(importlib.util.cache_from_source(spec.origin)).exists()


def compile_once(say: Callable[[str], None]) -> None:
    """Write the bytecode of the environment's packages when `missing()`; `say` prints progress."""
    if not missing():
        return
    site = sysconfig.get_paths()["purelib"]
    say(f"PYTHONDONTWRITEBYTECODE is set and {site} has no bytecode: writing it once (~30 s on 2 cores)")
    with warnings.catch_warnings():  # packages' own SyntaxWarnings and test files for newer Pythons: not ours
        warnings.simplefilter("ignore")
        compileall.compile_dir(site, quiet=2, workers=0)
