"""Does torch.compile make the embedded trainer's training step cheaper on one CPU core? The tiny model,
train.toml, `hf-static`: the packed forward, GRPO loss and backward of 30 sampled batches, with the decoder
eager and compiled (dynamic shapes) in alternating passes; CPU ms a batch (time.process_time).

    uv run python studies/fast-2026-11-29/compile_train.py > studies/fast-2026-11-29/compile-train.log 2>&1
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the harness runs its children
REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

import torch  # noqa: E402

torch.set_num_threads(1)
from bench_trl import load_spec  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

from autorl.llm.embedded import grpo  # noqa: E402
from autorl.llm.embedded import logprobs as lp  # noqa: E402
from autorl.llm.embedded.train import Trainer  # noqa: E402

PASSES = 5


def main() -> None:
    spec = load_spec(REPO / "train.toml")
    update = {"max_steps": 10**6, "save_interval_s": 1e9, "sampler": "hf-static", "num_threads": 1}
    trainer = Trainer(spec.model_copy(update=update), Path(tempfile.mkdtemp()), 0)
    with trainer._autocast():
        trainer.sampler.warm(*trainer._warm_shape())  # type: ignore[union-attr]
    for _ in range(3):
        trainer.train_step(trainer.sample_batch())  # type: ignore[arg-type]
    batches = [trainer.sample_batch() for _ in range(30)]
    rowsets = [[(s, len(s.completion_ids)) for s in b if s.advantage != 0] for b in batches]  # type: ignore[union-attr]
    rowsets = [r for r in rowsets if r]
    model = trainer.model
    print(f"{len(rowsets)} batches, rows {min(map(len, rowsets))}-{max(map(len, rowsets))}")

    def one_pass() -> float:
        start = time.process_time()
        for rows in rowsets:
            logpi, logmu, adv, mask = lp.completion_logprobs(model, rows, trainer.pad_id, trainer.device)
            loss, _ = grpo.token_loss(logpi, logmu, adv, mask, spec.loss)
            loss.backward()
        return (time.process_time() - start) / len(rowsets) * 1e3

    eager = model.get_decoder()  # what logprobs._packed runs (it unwraps a compiled `model.model`)
    compiled = torch.compile(eager, dynamic=True)
    frames = counters["frames"]["total"]  # the sampler's compiled step's
    t0 = time.perf_counter()
    model.get_decoder = lambda: compiled  # type: ignore[method-assign]
    one_pass()
    print(f"compile and first pass: {time.perf_counter() - t0:.1f} s")
    assert counters["frames"]["total"] > frames, "the decoder did not compile"
    model.get_decoder = lambda: eager  # type: ignore[method-assign]
    one_pass()  # warm
    times: dict[str, list[float]] = {"eager": [], "compiled": []}
    for _ in range(PASSES):
        for name, decoder in (("eager", eager), ("compiled", compiled)):
            model.get_decoder = lambda decoder=decoder: decoder  # type: ignore[method-assign]
            times[name].append(one_pass())
    for name, ms in times.items():
        each = ", ".join(f"{x:.1f}" for x in ms)
        print(f"{name:9s} CPU ms a batch: median {statistics.median(ms):.1f} ({each})")
    ratio = statistics.median(c / e for c, e in zip(times["compiled"], times["eager"], strict=True))
    print(f"compiled / eager, paired by pass: median {ratio:.2f}")
    print({k: dict(v) for k, v in counters.items() if v})


if __name__ == "__main__":
    main()
