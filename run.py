"""One trial: `uv run run.py [--config train.toml] [--budget S] [--seeds N] [--description TEXT] [--dry-run]`.

Validates the config, trains under a fixed wall-clock budget, runs the fixed evaluation, prints a summary
after `---` and appends one row to results.tsv. See README.md and `uv run run.py --help`.
"""

import sys

from autorl.trial import main

if __name__ == "__main__":
    sys.exit(main())
