"""One trial: `uv run run.py [--config train.toml] [--budget S] [--seeds N] [--description TEXT] [--dry-run]`.

Validates the config, trains under a fixed wall-clock budget, runs the fixed evaluation, prints a summary
after `---` and appends one row to results.tsv. See README.md and `uv run run.py --help`.
"""

# No file that git does not track may run inside run.py. `python run.py` puts this directory first on
# sys.path, so an untracked `json.py` (any module named like one the harness imports) would shadow the real
# one and run before the harness check could refuse it. So this directory leaves sys.path before anything
# else is imported (`sys` is built in, `os` loaded at start-up: neither can be shadowed), and the harness
# package is loaded from its explicit path, this repository's autorl/.
import os
import sys

ROOT = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != ROOT]

import importlib.util  # noqa: E402 (after sys.path is cleaned)


def load_harness() -> None:
    """Import `autorl` from ROOT/autorl (its submodules follow from there)."""
    package = os.path.join(ROOT, "autorl")
    spec = importlib.util.spec_from_file_location(
        "autorl", os.path.join(package, "__init__.py"), submodule_search_locations=[package]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["autorl"] = module
    spec.loader.exec_module(module)


if __name__ == "__main__":
    try:  # Ctrl-C while the harness loads (its first second): said as later, not a traceback
        load_harness()
        from autorl.commands.trial import main
        from autorl.io.streams import survive_lost_reader
    except KeyboardInterrupt:
        print("\n[trial] interrupted before training started: nothing recorded", file=sys.stderr, flush=True)
        sys.exit(130)  # as a trial stopped by SIGINT exits (autorl.engine.console.EXIT_SIGNAL)

    survive_lost_reader()  # an agent stopped while it read this output through a pipe: the row still lands
    sys.exit(main())
