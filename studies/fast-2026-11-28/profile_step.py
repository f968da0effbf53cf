"""Where a one-core step of the embedded trainer goes (the tiny model, train.toml, `hf-static`), in CPU
seconds of this process (time.process_time: what another process on the machine takes is not counted):
sampling and training per step, then the training step's parts on one batch, then cProfile of 20 steps.

    uv run python studies/fast-2026-11-28/profile_step.py > studies/fast-2026-11-28/profile-step.log 2>&1
"""

from __future__ import annotations

import cProfile
import os
import pstats
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

from autorl.llm.embedded import grpo  # noqa: E402
from autorl.llm.embedded import logprobs as lp  # noqa: E402
from autorl.llm.embedded.train import Trainer  # noqa: E402


def cpu_ms(fn, n: int = 30) -> float:
    fn()
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e3


def main() -> None:
    spec = load_spec(REPO / "train.toml")
    update = {"max_steps": 10**6, "save_interval_s": 1e9, "sampler": "hf-static", "num_threads": 1}
    trainer = Trainer(spec.model_copy(update=update), Path(tempfile.mkdtemp()), 0)
    with trainer._autocast():
        trainer.sampler.warm(*trainer._warm_shape())  # type: ignore[union-attr]
    for _ in range(5):  # warm-up steps
        trainer.train_step(trainer.sample_batch())  # type: ignore[arg-type]
    batches = [trainer.sample_batch() for _ in range(20)]
    start = time.process_time()
    for _ in range(20):
        trainer.sample_batch()
    sample = (time.process_time() - start) / 20
    start = time.process_time()
    for batch in batches:
        trainer.train_step(batch)  # type: ignore[arg-type]
    train = (time.process_time() - start) / 20
    print(f"CPU ms a step: sampling {sample * 1e3:.1f}, training {train * 1e3:.1f}")
    rows = [(s, len(s.completion_ids)) for s in batches[0] if s.advantage != 0]  # type: ignore[union-attr]
    prompt_len = sum(len(s.prompt_ids) for s, _ in rows) / len(rows)
    completion_len = sum(k for _, k in rows) / len(rows)
    print(f"one batch: {len(rows)} rows, prompt {prompt_len:.2f} tokens, completion {completion_len:.2f}")
    model = trainer.model

    def forward():
        return lp.completion_logprobs(model, rows, trainer.pad_id, trainer.device)

    def forward_backward():
        logpi, logmu, adv, mask = forward()
        loss, _ = grpo.token_loss(logpi, logmu, adv, mask, spec.loss)
        loss.backward()

    params = list(model.parameters())
    print(f"  pack                   {cpu_ms(lambda: lp.pack(rows, trainer.pad_id, trainer.device)):6.2f} ms")
    print(f"  forward                {cpu_ms(forward):6.2f} ms")
    print(f"  forward + backward     {cpu_ms(forward_backward):6.2f} ms")

    def clip_adamw():
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        trainer.optimizer.step()

    print(f"  clip + AdamW           {cpu_ms(clip_adamw):6.2f} ms")
    model.zero_grad(set_to_none=True)
    for name, fn in (
        ("sampling", lambda: [trainer.sample_batch() for _ in range(20)]),
        ("training", lambda: [trainer.train_step(b) for b in batches]),
    ):  # type: ignore[arg-type]
        profile = cProfile.Profile(time.process_time)
        profile.runcall(fn)
        print(f"\n== cProfile, 20 steps' {name} (CPU time; the profiler's own cost inflates Python calls)")
        pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
