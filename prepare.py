"""One-time setup: `uv run prepare.py [--config train.toml] [--prime-rl PATH]`.

Inspects the machine (CPUs, RAM, GPUs, prime-rl), picks the backend, fetches or builds the model,
prepares the environments' data and writes .autorl/machine.json, which run.py reads.
"""

import sys

from autorl.llm.prepare import main

if __name__ == "__main__":
    sys.exit(main())
