"""The compiled training step's warm-up (compile_train) on the shipped train.toml, timed: one line.

    .venv/bin/python studies/fast-2026-11-29/warm_time.py LABEL

warm-time.log alternated the tree before the one-line warm-up (the warm-up compiled the three-line batch
only) and after it (the one-line batch too), twice, on the 2-core VM, 2026-11-29 07:11 UTC (`git stash` of
autorl/llm/embedded/compiled_train.py for `before`).
"""

import sys
import tempfile

import torch

from autorl.llm.config import load_train_config
from autorl.llm.embedded.backend import build_spec
from autorl.llm.embedded.train import Trainer

torch.set_num_threads(1)
update = {"compile_train": True, "sampler": "hf", "num_threads": 1}
spec = build_spec(load_train_config("train.toml").model).model_copy(update=update)
with tempfile.TemporaryDirectory() as d:
    trainer = Trainer(spec, d, 0)
    print(sys.argv[1], "warm seconds", round(trainer._warm_train() or 0.0, 1), flush=True)
