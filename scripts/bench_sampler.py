"""How fast each embedded sampler samples a GRPO batch (issue 50 item 1): HFSampler (a growing DynamicCache),
StaticSampler eager (a preallocated StaticCache) and StaticSampler compiled (its decode step through
torch.compile), on one model, in rounds that alternate their order; the first call of each is timed apart
(the compiled one's compile time is start-up, paid once a process). Printed per round: sampled tokens per
second of each; then the medians and the ratios to HFSampler.

The batch is the shipped train.toml's shape by default: 8 prompts x 8 completions (batch_size 64, group_size
8) of random tokens, prompts of 24-40 tokens, 12 new tokens each (max_completion_tokens), no EOS (every row
runs to the limit, so the figure is per token).

    uv run python scripts/bench_sampler.py --model .autorl/models/tiny-arith [--threads 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True, help="a local HF model directory")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=50, help="timed sampler calls a round and sampler")
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--new-tokens", type=int, default=12)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    from autorl.llm.embedded.generation import HFSampler
    from autorl.llm.embedded.static_sampler import StaticSampler

    torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).to(device)
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(0)
    batch = []
    for _ in range(a.prompts):
        width = int(torch.randint(24, 41, (1,), generator=g))
        prompt = torch.randint(2, vocab, (width,), generator=g).tolist()
        batch += [prompt] * a.group
    samplers = {
        "hf": HFSampler(model, 0, []),
        "static": StaticSampler(model, 0, []),
        "static-compiled": StaticSampler(model, 0, [], compiled=True),
    }
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    tokens = len(batch) * a.new_tokens

    def timed(name: str, calls: int) -> float:
        gen = torch.Generator(device=device).manual_seed(1)
        sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            samplers[name].sample(batch, 1.0, a.new_tokens, gen)
        sync()
        return time.perf_counter() - t0

    where = f"{a.device}, {a.threads} thread(s), {model.num_parameters():,} parameters"
    print(f"{where}: {a.prompts} prompts x {a.group}, {a.new_tokens} new tokens ({tokens} a call)")
    for name in samplers:
        print(f"first call of {name}: {timed(name, 1):.2f} s (compile included where compiled)", flush=True)
    rates: dict[str, list[float]] = {name: [] for name in samplers}
    for r in range(a.rounds):
        order = list(samplers) if r % 2 == 0 else list(reversed(samplers))
        for name in order:
            rates[name].append(a.calls * tokens / timed(name, a.calls))
        print(f"round {r + 1}: " + ", ".join(f"{n} {rates[n][-1]:,.0f} tok/s" for n in samplers), flush=True)
    med = {n: statistics.median(v) for n, v in rates.items()}
    print("median: " + ", ".join(f"{n} {med[n]:,.0f} tok/s ({med[n] / med['hf']:.2f}x hf)" for n in samplers))


if __name__ == "__main__":
    main()
