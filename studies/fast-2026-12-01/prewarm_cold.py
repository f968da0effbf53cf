"""How long the warm starter's prewarm takes (prewarm.compile_steps: the sampler's decode step and the
training step's decoder of the shipped train.toml, one thread each), with inductor's disk caches cold (a new
TORCHINDUCTOR_CACHE_DIR: a fresh clone's first trial) and warm (the same directory again), the training
step's compile in a forked helper beside the sampler's (`parallel`, on 2+ cores) or after it (`serial`).
One process per run, so each starts with nothing compiled in memory. The ways are written here: `serial` as
prewarm.compile_steps does (one after the other), `parallel` the training step first compiled in a forked
child whose disk caches this process then reads, `sampler-helper` the sampler's step in the child instead,
this process compiling the training step meanwhile. Measured, and left serial (docs/verified.md).

    .venv/bin/python studies/fast-2026-12-01/prewarm_cold.py ROUNDS > studies/fast-2026-12-01/prewarm-cold.log
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ONE = """
import os, sys, time
import torch
from autorl.llm.config import load_train_config
from autorl.llm.embedded import compiled_train, prewarm
from autorl.llm.embedded.backend import build_spec, planned_prewarm
from autorl.llm.embedded.policy import load_policy
from autorl.llm.embedded.static_sampler import StaticSampler
from autorl.llm.schema import DefaultLoss


def steps(plan, way):
    torch.set_num_threads(1)
    torch.ones(1, requires_grad=True).sum().backward()
    with prewarm._quiet_and_in_process():
        _, model, _ = load_policy(plan.model_path, torch.device("cpu"), 1, plan.activation_checkpointing)

        def train():
            compiled_train.warm(model, compiled_train.compiled_decoder(model), 0, DefaultLoss())

        def sampler():
            StaticSampler(model, 0, [], compiled=True).warm(prewarm.WARM_ROWS, prewarm.WARM_TOKENS)

        ways = {"parallel": (train, sampler), "sampler-helper": (sampler, train)}
        helper, here = ways.get(way, (None, sampler))
        pid = os.fork() if helper else None
        if pid == 0:
            try:
                helper()
            finally:
                os._exit(0)
        here()
        if pid is not None:
            os.waitpid(pid, 0)
        (sampler if here is train else train)()


plan = planned_prewarm(build_spec(load_train_config("train.toml").model))
assert plan is not None and plan.sampler and plan.train, plan
t0 = time.perf_counter()
steps(plan, sys.argv[1])
print(f"{time.perf_counter() - t0:.1f}")
"""


def once(way: str, cache: str) -> float:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", ONE, way], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    print(f"# {len(os.sched_getaffinity(0))} cores, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    for r in range(rounds):
        for way in ("serial", "parallel") if r % 2 == 0 else ("parallel", "serial"):
            with tempfile.TemporaryDirectory(prefix="inductor-") as cache:
                cold = once(way, cache)
                warm = once(way, cache)
            print(f"round {r + 1} {way:8s}: cold {cold:5.1f} s, warm {warm:5.1f} s", flush=True)


if __name__ == "__main__":
    main()
