"""CPU microseconds of the parts the 2026-11-28 change made cheaper, in the tree given (default: this one),
one thread, time.process_time: the draw (torch.multinomial against generation.draw where the tree has it), the
training batch's `pack`, AdamW's foreach against its fused kernel, on the tiny model of train.toml.

    uv run python studies/fast-2026-11-28/parts.py [TREE] >> studies/fast-2026-11-28/parts.log
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]).resolve()
sys.path[:0] = [str(TREE), str(TREE / "scripts")]

import torch  # noqa: E402

torch.set_num_threads(1)
from bench_trl import load_spec  # noqa: E402

from autorl.llm.embedded import generation  # noqa: E402
from autorl.llm.embedded import logprobs as lp  # noqa: E402
from autorl.llm.embedded.train import Trainer  # noqa: E402


def cpu_us(fn, n: int = 300) -> float:
    fn()
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    commit = subprocess.run(["git", "-C", str(TREE), "rev-parse", "--short", "HEAD"], capture_output=True)
    print(f"== {TREE} at {commit.stdout.decode().strip()}, autorl from {Path(generation.__file__).parent}")
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(64, 258, generator=g) * 3 / 0.7, -1)
    print(f"multinomial, 64 x 258   {cpu_us(lambda: torch.multinomial(probs, 1, generator=g)):8.1f} us")
    if hasattr(generation, "draw"):
        print(f"generation.draw         {cpu_us(lambda: generation.draw(probs, g)):8.1f} us")
    spec = load_spec(TREE / "train.toml")
    update = {"max_steps": 10**6, "save_interval_s": 1e9, "sampler": "hf", "num_threads": 1}
    trainer = Trainer(spec.model_copy(update=update), Path(tempfile.mkdtemp()), 0)
    batch = trainer.sample_batch()
    assert batch is not None
    rows = [(s, len(s.completion_ids)) for s in batch]
    pack_us = cpu_us(lambda: lp.pack(rows, trainer.pad_id, trainer.device))
    print(f"pack, {len(rows)} rows            {pack_us:8.1f} us")
    params = list(trainer.model.parameters())
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    for kind in ("foreach", "fused", "foreach", "fused"):
        optimizer = torch.optim.AdamW(params, lr=1e-6, **{kind: True})
        print(f"AdamW step, {kind:8s}    {cpu_us(optimizer.step, 200):8.1f} us")


if __name__ == "__main__":
    main()
