"""What one training step of the Qwen3-0.6B shape holds on the CPU above its fixed state (weights, gradients,
AdamW's state), with the trainer's log-probs the plain way (every position's full-vocabulary logits, fp32),
chunked (autorl/llm/embedded/logprobs.py), and chunked with every decoder layer's activations checkpointed
(`checkpointed`: autorl/llm/embedded/policy.py, the trainer's default for a model this size), at the same
micro-batch (issue 50 items 2 and 4).

Each measurement is its own process: build the model from its config (random weights, fp32), take one step on
a one-token batch so that the gradients and AdamW's state exist (the fixed state; gradients zeroed, not
freed), read the resident memory, then run the measured micro-batch's log-probs, GRPO loss and backward,
then the optimizer step (AdamW with foreach, as the trainer builds it), while a thread samples the resident
memory every millisecond. Printed: each phase's peak above the fixed state, per way, in rounds that
alternate the order, then the loss phase's medians and their ratio.

    uv run python scripts/bench_logprobs_memory.py [--rounds 2] [--rows 8] [--completion 128] [--prompt 32]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WAYS = ("plain", "chunked", "checkpointed")
sys.path.insert(0, str(REPO))


def qwen3_shape() -> dict:
    """Qwen3-0.6B's config shape, from its one home (scripts/gpu_proof.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_proof", REPO / "scripts" / "gpu_proof.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_proof"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return dict(module.QWEN3_06B)


def rows(n: int, prompt: int, completion: int, vocab: int, seed: int = 0) -> list:
    """n rows of one prompt (a GRPO group) with full-length completions, random tokens."""
    import torch

    from autorl.llm.embedded.batches import Sample

    g = torch.Generator().manual_seed(seed)
    p = torch.randint(2, vocab, (prompt,), generator=g).tolist()
    out = []
    for i in range(n):
        ids = torch.randint(2, vocab, (completion,), generator=g).tolist()
        out.append((Sample(p, ids, [-1.0] * completion, 1.0, 0.5 - i % 2, 1.0, 0, "s", False), completion))
    return out


def measure(way: str, n: int, prompt: int, completion: int, threads: int) -> dict:
    """One process's measurement (see the module docstring)."""
    import psutil
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from autorl.llm.embedded import grpo, policy
    from autorl.llm.embedded.logprobs import completion_logprobs
    from autorl.llm.schema import DefaultLoss

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    shape = qwen3_shape()
    model = Qwen3ForCausalLM(Qwen3Config(**shape, dtype="float32"))
    model.train()
    policy.checkpoint_layers(model, 1 if way == "checkpointed" else 0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=True)  # as the trainer builds it
    cpu, chunk = torch.device("cpu"), None if way == "plain" else 32 * 2**20

    def loss(batch: list) -> None:
        logpi, logmu, adv, mask = completion_logprobs(model, batch, 0, cpu, chunk_bytes=chunk)
        loss_sum, _ = grpo.token_loss(logpi, logmu, adv, mask, DefaultLoss())
        grpo.step_loss_share(loss_sum, int(mask.sum())).backward()

    def update() -> None:
        opt.step()
        opt.zero_grad(set_to_none=False)

    loss(rows(1, 1, 1, shape["vocab_size"], seed=1))  # the gradients and AdamW's state now exist
    update()
    proc = psutil.Process()
    fixed = proc.memory_info().rss

    def peak_of(phase) -> tuple[float, float]:
        """(the resident peak while `phase` ran, its seconds)"""
        peak, done = [proc.memory_info().rss], threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], proc.memory_info().rss)
                time.sleep(0.001)

        watcher = threading.Thread(target=sample, daemon=True)
        watcher.start()
        t0 = time.perf_counter()
        phase()
        seconds = time.perf_counter() - t0
        done.set()
        watcher.join()
        return peak[0], seconds

    loss_peak, seconds = peak_of(lambda: loss(rows(n, prompt, completion, shape["vocab_size"])))
    update_peak, update_s = peak_of(update)
    gib = 2**30
    out = {"way": way, "fixed_gib": fixed / gib, "above_gib": (loss_peak - fixed) / gib, "step_s": seconds}
    return out | {"optimizer_gib": (update_peak - fixed) / gib, "optimizer_s": update_s}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--rows", type=int, default=8, help="rows of the micro-batch (one prompt's group)")
    p.add_argument("--prompt", type=int, default=32, help="prompt tokens")
    p.add_argument("--completion", type=int, default=128, help="completion tokens a row")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)  # a child's way
    a = p.parse_args()
    if a.one:
        print(json.dumps(measure(a.one, a.rows, a.prompt, a.completion, a.threads)), flush=True)
        return
    tokens = a.rows * a.completion
    batch = f"{a.rows} rows x {a.completion} completion tokens + a {a.prompt}-token prompt ({tokens} RL)"
    print(f"Qwen3-0.6B shape, fp32, {a.threads} threads: micro-batch {batch}", flush=True)
    got: dict[str, list[dict]] = {way: [] for way in WAYS}
    for r in range(a.rounds):
        for way in WAYS if r % 2 == 0 else WAYS[::-1]:
            argv = [sys.executable, __file__, "--one", way, "--rows", str(a.rows), "--prompt", str(a.prompt)]
            argv += ["--completion", str(a.completion), "--threads", str(a.threads)]
            out = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
            got[way].append(out)
            print(
                f"round {r + 1} {way:7s}: fixed {out['fixed_gib']:.2f} GiB; log-probs, loss, backward "
                f"{out['above_gib']:.2f} GiB above it in {out['step_s']:.1f} s; AdamW (foreach) "
                f"{out['optimizer_gib']:.2f} GiB above it in {out['optimizer_s']:.1f} s",
                flush=True,
            )
    med = {w: statistics.median(x["above_gib"] for x in v) for w, v in got.items()}
    secs = {w: statistics.median(x["step_s"] for x in v) for w, v in got.items()}
    for way in WAYS:
        print(
            f"median peak of the loss above the fixed state, {way}: {med[way]:.2f} GiB "
            f"({med[way] / med['plain']:.2f}x plain), in {secs[way]:.1f} s"
        )


if __name__ == "__main__":
    main()
