"""Samples/s of the embedded GRPO trainer vs TRL's GRPOTrainer: same model, data, batch shape and machine.

    uv run --extra bench python scripts/bench_trl.py                  # the default train.toml
    uv run --extra bench python scripts/bench_trl.py --steps 20 --threads 2
    uv run --extra bench python scripts/bench_trl.py --threads 2 --sampler hf-static-process  # run.py's
    uv run --extra bench python scripts/bench_trl.py --threads 1 --sampler hf-static    # run.py's on 1 core
    uv run --extra bench python scripts/bench_trl.py --threads 2 --sampler hf-static-process --trl-threads 1

``--sampler hf`` (the default here) and ``hf-static`` sample in the trainer's process, so both trainers use
``--threads`` threads of one process. ``--sampler hf-static-process`` is what run.py uses on a CPU with 2+
cores: a 1-thread trainer plus a 1-thread sampling process overlapped with it (2 cores), its step compiled
there, and the training step compiled too (``hf-process``: the same with both steps eager); compare it with
TRL at ``--threads 2`` and, since TRL may run faster on one thread, with ``--trl-threads 1``. A compiled
sampler step is compiled before the timed steps (start-up, as in a trial), and so is the training step's
decoder (the RunSpec's ``compile_train``: by default as in a trial, on beside ``hf-static-process`` and
``hf-static``; ``--compile-train`` / ``--no-compile-train`` set it).

Both trainers run in this process one after the other, with the same torch thread count, on the model,
environment and batch shape of the config: ``batch_size`` rollouts per optimizer step, ``group_size``
completions per prompt, the same temperature and ``max_completion_tokens``, one optimizer step per batch.
TRL is set up to do the same work as prime-rl's GRPO: ``num_generations = group_size``,
``per_device_train_batch_size = batch_size``, ``num_iterations = 1`` (no extra old-policy forward),
``beta = 0`` (no reference model), ``scale_rewards = "none"``, token-level loss (``dapo``), top_p 1, no top_k.

samples/s = rollouts trained per wall-clock second, from the end of the warm-up steps to the end of the last
step (the first steps pay one-time costs: lazy imports, allocator warm-up). The ratio is ours / TRL's.
Run it on an otherwise idle machine; `uptime` load is printed next to the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
# As the harness runs its children (EmbeddedBackend.launch): idle OpenMP threads sleep instead of spinning.
# Must be set before torch is imported; it applies to both trainers alike.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def load_spec(config: Path):
    from autorl.llm.config import load_train_config
    from autorl.llm.embedded.backend import build_spec
    from autorl.llm.prepare import require_model

    spec = build_spec(load_train_config(config, backend="embedded").model)
    require_model(spec.model_path)
    return spec


def bench_embedded(spec, steps: int, warmup: int, seed: int, threads: int, sampler: str) -> dict:
    from autorl.llm.embedded.train import Trainer

    run_dir = Path(tempfile.mkdtemp(prefix="bench-embedded-"))
    update = {"max_steps": warmup + steps, "save_interval_s": 1e9, "sampler": sampler}
    update["num_threads"] = 1 if sampler.endswith("-process") else threads  # the sampler process has its own
    spec = spec.model_copy(update=update)
    trainer = Trainer(spec, run_dir, seed)
    times: list[float] = []
    original = trainer.train_step  # stamp the end of every optimizer step (empty batches take no step)

    def timed(batch):
        out = original(batch)
        if out is not None and not out.get("empty"):
            times.append(time.perf_counter())
        return out

    trainer.train_step = timed  # type: ignore[method-assign]
    _, printed = _quiet(trainer.run)
    compiled = re.search(r"its step compiled in ([\d.]+) s", printed)  # the trainer's header line
    trained = re.search(r"its training step compiled in ([\d.]+) s", printed)  # compile_train
    if failed := re.search(r"warning: the compiled .*", printed):  # the trainer fell back to eager
        print(failed.group(0), file=sys.stderr, flush=True)
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    shutil.rmtree(run_dir, ignore_errors=True)
    seconds = times[-1] - times[warmup - 1]
    return {
        "samples_per_s": steps * spec.batch_size / seconds,
        "seconds_per_step": seconds / steps,
        "compile_s": float(compiled.group(1)) if compiled else None,  # start-up, before the clock
        "compile_train_s": float(trained.group(1)) if trained else None,  # the same
        "reward_mean": sum(r["reward_mean"] for r in rows) / len(rows),
        "completion_len_mean": sum(r["completion_len_mean"] for r in rows) / len(rows),
        # the share of a step's seconds spent sampling (that training did not overlap)
        "gen_share": sum(r["gen_seconds"] for r in rows)
        / sum(r["gen_seconds"] + r["train_seconds"] for r in rows),
    }


def bench_trl(spec, steps: int, warmup: int, seed: int, threads: int) -> dict:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from autorl.llm.envs import load_env
    from autorl.llm.tokenizer import load_tokenizer

    torch.set_num_threads(threads)
    source = spec.sources[0]
    env = load_env(source.taskset_id, dict(source.taskset_fields))
    prompts_needed = (warmup + steps) * spec.batch_size // source.group_size
    stream = iter(env.train_examples(seed))
    examples = [next(stream) for _ in range(prompts_needed)]
    by_prompt = {ex.prompt: ex for ex in examples}
    dataset = Dataset.from_list([{"prompt": ex.prompt} for ex in examples])

    lengths: list[int] = []  # completion tokens, when TRL passes completion_ids to reward functions

    def reward(prompts, completions, completion_ids=None, **_):
        lengths.extend(len(ids) for ids in completion_ids or [])
        return [float(env.score(c, by_prompt[p])) for p, c in zip(prompts, completions, strict=True)]

    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            times.append(time.perf_counter())

    out_dir = Path(tempfile.mkdtemp(prefix="bench-trl-"))
    args = GRPOConfig(
        output_dir=str(out_dir),
        per_device_train_batch_size=spec.batch_size,
        num_generations=source.group_size,
        max_completion_length=source.max_completion_tokens or spec.seq_len,
        temperature=source.temperature,
        top_p=1.0,
        top_k=0,
        learning_rate=spec.optim.lr,
        weight_decay=spec.optim.weight_decay,
        adam_beta1=spec.optim.betas1,
        adam_beta2=spec.optim.betas2,
        max_grad_norm=spec.optim.max_norm or 0.0,
        lr_scheduler_type="constant",
        beta=0.0,
        num_iterations=1,
        scale_rewards="none",
        loss_type="dapo",
        max_steps=warmup + steps,
        use_cpu=not torch.cuda.is_available(),
        bf16=torch.cuda.is_available(),
        save_strategy="no",
        report_to="none",
        logging_steps=10**6,
        disable_tqdm=True,
        shuffle_dataset=False,
        seed=seed,
    )
    tokenizer = load_tokenizer(spec.model_path)
    model = AutoModelForCausalLM.from_pretrained(spec.model_path)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[Clock()],
    )
    _quiet(trainer.train)
    shutil.rmtree(out_dir, ignore_errors=True)
    seconds = times[-1] - times[warmup - 1]
    return {
        "samples_per_s": steps * spec.batch_size / seconds,
        "seconds_per_step": seconds / steps,
        "completion_len_mean": sum(lengths) / len(lengths) if lengths else None,
    }


def _quiet(fn):
    """Run fn with stdout silenced (the trainer's progress lines), keeping stderr: (its result, what it
    printed)."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()) as out:
        return fn(), out.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=REPO / "train.toml")
    ap.add_argument("--steps", type=int, default=10, help="measured optimizer steps per trainer")
    ap.add_argument("--warmup", type=int, default=2, help="steps run before the clock starts")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument(
        "--trl-threads",
        type=int,
        help="TRL's torch threads (default: --threads; on the 2-core VMs TRL ran faster on 1 than on 2)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--sampler",
        choices=["hf", "hf-process", "hf-static-process", "hf-static", "hf-graphs"],
        default="hf",
        help="the embedded trainer's sampler",
    )
    ap.add_argument(
        "--compile-train",
        action=argparse.BooleanOptionalAction,
        help="the training step's decoder compiled before the clock, or eager (default: as in a trial, "
        "compiled beside hf-static-process and hf-static)",
    )
    ap.add_argument(
        "--no-filter",
        action="store_true",
        help="train every rollout (filter_zero_advantages = false), as TRL does: compares raw compute only",
    )
    args = ap.parse_args()
    assert args.warmup >= 1, "at least one warm-up step"
    for name in ("threads", "trl_threads"):
        if (value := getattr(args, name)) is not None and value < 1:
            ap.error(f"--{name.replace('_', '-')}: at least 1, got {value}")

    spec = load_spec(args.config)
    if args.no_filter:
        spec = spec.model_copy(update={"filter_zero_advantages": False})
    if args.compile_train is not None:
        spec = spec.model_copy(update={"compile_train": args.compile_train})
    src = spec.sources[0]
    prompts = spec.batch_size // src.group_size
    print(f"model {spec.model_path}")
    print(
        f"batch: {spec.batch_size} rollouts = {prompts} prompts x {src.group_size}, temperature "
        f"{src.temperature}, max_completion_tokens {src.max_completion_tokens}; {args.steps} steps after "
        f"{args.warmup} warm-up; {args.threads} threads; filter_zero_advantages "
        f"{spec.filter_zero_advantages}; load {os.getloadavg()[0]:.2f}"
    )
    ours = bench_embedded(spec, args.steps, args.warmup, args.seed, args.threads, args.sampler)
    print(
        f"embedded ({args.sampler}{', compile-train' if ours['compile_train_s'] else ''}): "
        f"{ours['samples_per_s']:8.1f} samples/s  "
        f"({ours['seconds_per_step']:.3f} s/step; sampling not overlapped {ours['gen_share']:.0%} of it)"
        + (f"; its step compiled in {ours['compile_s']:.1f} s at start-up" if ours["compile_s"] else "")
        + (f"; its training step in {ours['compile_train_s']:.1f} s" if ours["compile_train_s"] else ""),
        flush=True,
    )
    trl_threads = args.trl_threads or args.threads
    trl = bench_trl(spec, args.steps, args.warmup, args.seed, trl_threads)
    print(
        f"TRL     : {trl['samples_per_s']:8.1f} samples/s  ({trl['seconds_per_step']:.3f} s/step; "
        f"{trl_threads} threads)"
    )
    ratio = ours["samples_per_s"] / trl["samples_per_s"]
    print(f"ratio embedded/TRL: {ratio:.2f}x  (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
