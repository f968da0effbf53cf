"""Build the default base model without any hub: a tiny Qwen2 LM, a character tokenizer, a short warm-start.

The model is a Qwen2-architecture causal LM (transformers.Qwen2Config) over single characters, trained with
supervised steps on the formats of the default tasks (TASKS: ``47+38=`` -> ``#### 85``, ``rev hgfad=`` ->
``#### dafgh``) until it is *partially* competent: it always writes the format and gets a part of the problems
right, so RL has room to improve it. The built model is shipped in the repo (SHIPPED_DIR): prepare installs it
instead of building, so every machine starts from the same weights.

The warm-start stops at a competence target, not at a fixed step count: the model learns abruptly, and where
the jump happens depends on float rounding (a fixed 600-step recipe gave a base score of 0.40 on one CPU and
0.65 on another). Every PROBE_EVERY steps the model answers the *probe* greedily: per task, PROBE_SIZE
train-split problems the warm-start never trains on (so never an eval problem either), drawn like the eval
(one per eval example, of the same shape); the warm-start stops at the first probe accuracy (mean over tasks,
as eval_score) >= PROBE_TARGET.

Deterministic for a fixed seed and thread count on one machine (CPU, float32). Saved in Hugging Face format
with ``save_pretrained``; a marker file (recipe + build info) written last makes the build idempotent (a
complete model built from the same recipe is never rebuilt; a half-written one, or one built from another
recipe, is).

    uv run python -m autorl.llm.model_builder --out models/tiny-default   # rebuild the shipped model
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import inspect
import itertools
import json
import math
import platform
import re
import shutil
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from autorl.io import atomic, paths
from autorl.llm import envs
from autorl.llm.eval import inference_mode
from autorl.llm.tokenizer import format_prompt

# torch, tokenizers and transformers are imported where used: run.py checks the recipe of a built model
# (build_recipe, is_complete) before every trial, and importing them would add seconds to each start.
if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

MODEL_NAME = "tiny-arith"
MARKER = "autorl-model.json"  # written last; its presence means the build completed (recipe + build info)
# The default base model, built once from the recipe below and shipped in the repo (weights, tokenizer, build
# info: ~1 MB), so every machine starts from the same weights; prepare checks its sha256 and copies it to
# .autorl/models/tiny-arith instead of running the warm-start. After a change of the recipe, rebuild it with
# `uv run python -m autorl.llm.model_builder --out models/tiny-default` and put the printed sha256 here.
SHIPPED_DIR = paths.REPO_ROOT / "models" / "tiny-default"
SHIPPED_SHA256 = "96376cd07fee25cbd38b174c94996df1acea2e5d4646b7887cd5e764ae659f55"

# Tokenizer: one token per byte (256 byte-level symbols, no merges) plus two special tokens. It is built as a
# Qwen2Tokenizer because that is what AutoTokenizer returns for a qwen2 model whatever tokenizer_config.json
# says: building the same class guarantees that every reload (eval, trainer, vLLM) tokenizes identically.
PAD_TOKEN = "<|pad|>"
EOS_TOKEN = "<|endoftext|>"
# The chat template (Jinja, saved in tokenizer_config.json as HF tokenizers carry it). prime-rl renders every
# prompt through it (the `renderers` package), the eval and the embedded trainer too
# (tokenizer.format_prompt), so a prompt is the same token sequence on every backend. It adds no characters: a
# user turn is its text (the task prompt already ends with the cue, `47+38=`), a system turn its text and a
# newline, an assistant turn its text and EOS; the generation prompt is empty. A character-level model pays
# for every character.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- message['content'] -}}"
    "{%- if message['role'] == 'system' -%}{{- '\\n' -}}"
    "{%- elif message['role'] == 'assistant' -%}{{- eos_token -}}{%- endif -%}"
    "{%- endfor -%}"
)

# Model (Qwen2), ~0.21M parameters: small, so that a 600 s CPU trial makes thousands of GRPO steps (each
# trial's metrics.jsonl records the seconds per step).
HIDDEN_SIZE = 64
INTERMEDIATE_SIZE = 256
NUM_LAYERS = 3
NUM_HEADS = 4
NUM_KV_HEADS = 4
MAX_POSITIONS = 256  # prompt + completion of the arithmetic task are < 40 characters

# Supervised warm-start on the train splits (never an eval problem: see the cores) of the default train.toml
# sources and eval.toml environments (taskset id -> fields; the defaults), one batch row from each in turn.
TASKS: dict[str, dict] = {"autorl-arithmetic": {}, "autorl-reverse": {}}
# At most SFT_MAX_STEPS steps (a cosine schedule over them); the probe stopped seeds 0-9 after 440-770 steps
# (25-45 s on one core). Check a built model with `uv run python -m autorl.llm.eval --weights DIR --out F`.
SFT_MAX_STEPS = 1500
SFT_BATCH_SIZE = 64
SFT_LR = 3e-3
SFT_WARMUP_STEPS = 30
SFT_WEIGHT_DECAY = 0.01
SFT_SEED = 0
SFT_THREADS = 1  # deterministic everywhere; 2 threads are ~6x *slower* when other processes share the cores
# The probe (module docstring). A 500-problem probe costs ~0.2 s; the accuracy moves by up to ~0.2 between
# checks 10 steps apart (the lr is still high there), so a check every 10 steps overshoots the target little.
PROBE_TARGET = 0.40  # greedy accuracy on the probe that ends the warm-start
PROBE_EVERY = 10  # steps between probes
PROBE_SIZE = 500  # problems per environment in the probe (as eval.toml's num_examples)
PROBE_SEED = 10_000  # the probe's draws (the warm-start draws from SFT_SEED)
PROBE_BUCKETS = 10  # 1 train problem in PROBE_BUCKETS is probe-only
PROBE_MAX_TOKENS = 16  # as eval.toml's max_tokens


def build_tokenizer() -> PreTrainedTokenizerFast:
    """A character-level tokenizer: byte-level BPE with an alphabet-only vocabulary and no merges, so every
    ASCII character is one token (and any text round-trips). Qwen2's own pre-tokenizer/decoder pipeline."""
    from tokenizers import pre_tokenizers
    from transformers import Qwen2Tokenizer

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {tok: i for i, tok in enumerate([PAD_TOKEN, EOS_TOKEN, *alphabet])}
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=[],
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        unk_token=EOS_TOKEN,  # unused: every byte is in the vocabulary
        padding_side="left",  # generation pads on the left
        clean_up_tokenization_spaces=False,
        model_max_length=MAX_POSITIONS,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def model_dims(**overrides) -> dict:
    dims = dict(
        hidden_size=HIDDEN_SIZE,
        intermediate_size=INTERMEDIATE_SIZE,
        num_hidden_layers=NUM_LAYERS,
        num_attention_heads=NUM_HEADS,
        num_key_value_heads=NUM_KV_HEADS,
        max_position_embeddings=MAX_POSITIONS,
    )
    return {**dims, **overrides}


def build_config(tokenizer: PreTrainedTokenizerFast, **overrides) -> Qwen2Config:
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=len(tokenizer),
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **model_dims(**overrides),
    )


def _batch(tokenizer: PreTrainedTokenizerFast, pairs: list[tuple[str, str]]):
    """Right-padded (prompt, completion) ids, rendered by the chat template as the eval renders them, with
    labels only on the completion (and its EOS)."""
    import torch

    rows, labels = [], []
    for prompt, completion in pairs:
        p = tokenizer(format_prompt(tokenizer, prompt), add_special_tokens=False)["input_ids"]
        c = tokenizer(completion, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        rows.append(p + c)
        labels.append([-100] * len(p) + c)
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    lab = torch.full((len(rows), width), -100)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (r, y) in enumerate(zip(rows, labels, strict=True)):
        ids[i, : len(r)] = torch.tensor(r)
        lab[i, : len(y)] = torch.tensor(y)
        mask[i, : len(r)] = 1
    return ids, lab, mask


def task_envs(split: str) -> list[envs.Env]:
    """The warm-start's environments (TASKS) on ``split``."""
    return [envs.load_env(taskset_id, {**fields, "split": split}) for taskset_id, fields in TASKS.items()]


def is_probe_problem(env: envs.Env, example: envs.Example) -> bool:
    """Probe-only train problems: hashed like the train/eval split, on the problem's canonical key (the
    core's ``canonical_key``: ``3+5=`` and ``5+3=`` fall on the same side)."""
    key = env.core.canonical_key(example.prompt)
    digest = hashlib.sha256(f"probe|{env.name}|{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % PROBE_BUCKETS == 0


def warm_start_pairs(seed: int) -> Iterator[tuple[str, str]]:
    """The warm-start's endless (prompt, reference completion) stream: train-split problems minus the
    probe's, one from each environment in turn."""

    def pairs(env: envs.Env) -> Iterator[tuple[str, str]]:
        for ex in env.train_examples(seed):
            if not is_probe_problem(env, ex):
                yield ex.prompt, env.core.format_answer(ex.answer)

    return itertools.chain.from_iterable(zip(*map(pairs, task_envs("train")), strict=True))


def shape(prompt: str) -> str:
    """A prompt with every digit written 0 and every letter a: ``47+8=`` -> ``00+0=``."""
    return re.sub(r"[a-zA-Z]", "a", re.sub(r"[0-9]", "0", prompt))


def probe_sets() -> list[tuple[envs.Env, list[envs.Example]]]:
    """Per environment, PROBE_SIZE probe-only train problems drawn like the eval: one for each of the first
    PROBE_SIZE eval examples, of the same shape (digits and letters per position), so the probe has the eval's
    mix of problem sizes exactly (its problems are never eval problems). The probe's accuracy is the mean
    over environments, as eval_score."""
    sets = []
    for env, eval_env in zip(task_envs("train"), task_envs("eval"), strict=True):
        evals = eval_env.eval_examples(PROBE_SIZE)
        wanted = Counter(shape(ex.prompt) for ex in evals)
        found: dict[str, list[envs.Example]] = defaultdict(list)
        stream = (ex for ex in env.train_examples(PROBE_SEED) if is_probe_problem(env, ex))
        for ex in itertools.islice(stream, 1000 * PROBE_SIZE):
            if len(found[shape(ex.prompt)]) < wanted[shape(ex.prompt)]:
                found[shape(ex.prompt)].append(ex)
                if sum(map(len, found.values())) == PROBE_SIZE:
                    break
        else:
            raise RuntimeError(
                f"{env.name}: the probe found no train problems shaped like some eval problems"
            )
        # in the eval's order of shapes, so that a prefix of the probe has the eval's mix too
        queues = {k: iter(v) for k, v in found.items()}
        sets.append((env, [next(queues[shape(ex.prompt)]) for ex in evals]))
    return sets


@inference_mode
def greedy_accuracy(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    env: envs.Env,
    problems: list[envs.Example],
) -> float:
    """Share of ``problems`` answered right with greedy decoding, as the fixed eval scores them."""
    from transformers import GenerationConfig

    config = GenerationConfig(
        max_new_tokens=PROBE_MAX_TOKENS,
        do_sample=False,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    prompts = [
        tokenizer(format_prompt(tokenizer, p.prompt), add_special_tokens=False)["input_ids"] for p in problems
    ]
    batch = tokenizer.pad({"input_ids": prompts}, return_tensors="pt")  # left padding
    was_training = model.training
    model.eval()
    out = model.generate(**batch, generation_config=config)
    model.train(was_training)
    texts = tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
    return sum(env.score(t, p) for t, p in zip(texts, problems, strict=True)) / len(problems)


def probe_accuracy_of(
    model: Qwen2ForCausalLM, tokenizer: PreTrainedTokenizerFast, probe: list[tuple[envs.Env, list]]
) -> float:
    """Mean over environments of the greedy accuracy on their probe problems (as eval_score)."""
    return sum(greedy_accuracy(model, tokenizer, env, problems) for env, problems in probe) / len(probe)


def _lr(step: int, steps: int, warmup: int) -> float:
    """Linear warmup, then cosine decay to 10% of the peak."""
    if step < warmup:
        return SFT_LR * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return SFT_LR * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def model_sha256(model_dir: Path) -> str:
    """sha256 over a model directory's files (names and contents, in name order)."""
    h = hashlib.sha256()
    for path in sorted(p for p in Path(model_dir).iterdir() if p.is_file()):
        h.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


class ShippedModelError(RuntimeError):
    """The shipped model's files are not the ones the code pins (SHIPPED_SHA256)."""


def install_shipped_model(out_dir: Path, progress: bool = True) -> Path | None:
    """Copy the shipped model (SHIPPED_DIR) to ``out_dir`` after checking its sha256, and return ``out_dir``;
    None when the code's recipe is not the one the shipped model was built from (then build it instead).
    Raises ShippedModelError when the shipped files differ from SHIPPED_SHA256."""
    if not is_complete(SHIPPED_DIR, build_recipe()):
        return None
    digest = model_sha256(SHIPPED_DIR)
    if digest != SHIPPED_SHA256:
        raise ShippedModelError(
            f"{SHIPPED_DIR} has sha256 {digest}, not {SHIPPED_SHA256} (model_builder.SHIPPED_SHA256): its "
            "files were modified or not checked out; `git checkout models/` restores them"
        )
    out_dir = Path(out_dir)
    if is_complete(out_dir) and model_sha256(out_dir) == digest:
        if progress:
            print(f"base model: {out_dir} already installed (sha256 {digest[:12]})", file=sys.stderr)
        return out_dir
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(SHIPPED_DIR, tmp)
    tmp.rename(out_dir)  # complete or absent
    if progress:
        print(
            f"base model: the shipped {SHIPPED_DIR.name} (sha256 {digest[:12]}) -> {out_dir}", file=sys.stderr
        )
    return out_dir


def is_complete(out_dir: Path, recipe: dict | None = None) -> bool:
    """A finished build is there (and, given ``recipe``, one built from that recipe)."""
    marker = Path(out_dir) / MARKER
    if not marker.is_file():
        return False
    return recipe is None or json.loads(marker.read_text()).get("recipe") == recipe


def build_recipe(
    steps: int = SFT_MAX_STEPS,
    seed: int = SFT_SEED,
    batch_size: int = SFT_BATCH_SIZE,
    target: float | None = PROBE_TARGET,
    **model_overrides,
) -> dict:
    """Everything that determines the built weights (default: the shipped model's); a model built from
    another recipe is rebuilt."""
    sft = dict(
        max_steps=steps,
        seed=seed,
        batch_size=batch_size,
        lr=SFT_LR,
        warmup=SFT_WARMUP_STEPS,
        weight_decay=SFT_WEIGHT_DECAY,
    )
    probe = None
    if target is not None:
        probe = dict(
            target=target, every=PROBE_EVERY, size=PROBE_SIZE, seed=PROBE_SEED, buckets=PROBE_BUCKETS
        )
    # The resolved task settings, so that a change of a taskset's defaults also rebuilds the model, and the
    # source of each reward (the probe scores with it, so a new reward stops the warm-start elsewhere).
    train_envs = task_envs("train")
    tasks = {env.name: dataclasses.asdict(env.settings) for env in train_envs}
    rewards = {
        env.name: hashlib.sha256(inspect.getsource(env.core.score).encode()).hexdigest()[:16]
        for env in train_envs
    }
    return {
        "model": model_dims(**model_overrides),
        "sft": sft,
        "probe": probe,
        "tasks": tasks,
        "rewards": rewards,
    }


def _warm_start(
    model: Qwen2ForCausalLM,
    tokenizer: PreTrainedTokenizerFast,
    steps: int,
    seed: int,
    batch_size: int,
    target: float | None,
    progress: bool,
    start: float,
) -> tuple[int, float | None]:
    """At most ``steps`` SFT steps on the warm-start stream, stopping at the first probe accuracy >=
    ``target`` (None: no probe); returns the steps taken and the last probe accuracy."""
    import torch

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optim = torch.optim.AdamW(
        [{"params": decay, "weight_decay": SFT_WEIGHT_DECAY}, {"params": no_decay, "weight_decay": 0.0}],
        lr=SFT_LR,
        betas=(0.9, 0.98),
    )
    stream = warm_start_pairs(seed)
    probe = probe_sets() if target is not None else []
    probe_accuracy: float | None = None
    reached = False
    warmup = min(SFT_WARMUP_STEPS, max(1, steps // 10))
    model.train()
    done = 0
    while done < steps and not reached:
        ids, labels, mask = _batch(tokenizer, list(itertools.islice(stream, batch_size)))
        for group in optim.param_groups:
            group["lr"] = _lr(done, steps, warmup)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optim.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        done += 1
        if probe and done % PROBE_EVERY == 0:
            probe_accuracy = probe_accuracy_of(model, tokenizer, probe)
            reached = target is not None and probe_accuracy >= target
        if progress and (done % 50 == 0 or done == 1 or done == steps or reached):
            shown = "" if probe_accuracy is None else f"  probe {probe_accuracy:.3f}"
            elapsed = time.perf_counter() - start
            print(
                f"  step {done:>5}/{steps}  loss {loss.item():.4f}{shown}  {elapsed:5.1f}s", file=sys.stderr
            )
    if probe and not reached and progress:
        print(
            f"base model: warning: the probe never reached {target:.2f} in {steps} steps "
            f"(last {probe_accuracy}); the model is less competent than intended",
            file=sys.stderr,
        )
    return done, probe_accuracy


def _save(model: Qwen2ForCausalLM, tokenizer: PreTrainedTokenizerFast, out_dir: Path) -> None:
    """Weights and tokenizer into a fresh ``out_dir``; the caller writes the marker last, so an interrupted
    build leaves no marker and is redone."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    model.eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = None
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir, save_jinja_files=False)  # the template inside tokenizer_config.json


def build_base_model(
    out_dir: Path | None = None,
    steps: int | None = None,
    seed: int = SFT_SEED,
    progress: bool = True,
    batch_size: int = SFT_BATCH_SIZE,
    target: float | None = PROBE_TARGET,
    threads: int = SFT_THREADS,
    **model_overrides,
) -> Path:
    """Build (or find) the tiny base model in ``out_dir`` (default ``.autorl/models/tiny-arith``).

    Trains at most ``steps`` warm-start steps (default SFT_MAX_STEPS) and stops at the first probe accuracy
    >= ``target`` (None: no probe, exactly ``steps`` steps). ``model_overrides`` are Qwen2Config dims (tests
    build tiny ones). ``threads``: torch CPU threads (float rounding differs with the count, so a build on
    another count is a measure of what CPU float differences do). Returns the directory; does nothing when a
    complete model is already there.
    """
    import torch

    out_dir = Path(out_dir) if out_dir is not None else paths.models_dir() / MODEL_NAME
    steps = SFT_MAX_STEPS if steps is None else steps
    recipe = build_recipe(steps, seed, batch_size, target, **model_overrides)
    if is_complete(out_dir, recipe):
        if progress:
            print(f"base model: {out_dir} already built", file=sys.stderr)
        return out_dir
    if is_complete(out_dir) and progress:
        print(f"base model: {out_dir} was built from another recipe: rebuilding", file=sys.stderr)
    start = time.perf_counter()
    torch.set_num_threads(threads)
    torch.manual_seed(seed)

    tokenizer = build_tokenizer()
    config = build_config(tokenizer, **model_overrides)
    from transformers import Qwen2ForCausalLM

    model = Qwen2ForCausalLM(config)
    n_params = sum(p.numel() for p in model.parameters())
    if progress:
        goal = "" if target is None else f", until {target:.2f} accuracy on {PROBE_SIZE} probe problems"
        print(
            f"base model: {n_params / 1e6:.2f}M params, at most {steps} warm-start steps{goal} -> {out_dir}",
            file=sys.stderr,
        )

    done, probe_accuracy = _warm_start(model, tokenizer, steps, seed, batch_size, target, progress, start)
    _save(model, tokenizer, out_dir)
    seconds = time.perf_counter() - start
    info = {
        "recipe": recipe,
        "params": n_params,
        "steps": done,  # warm-start steps taken (the probe usually stops the build before the cap)
        "probe_accuracy": probe_accuracy,
        "seed": seed,
        "batch_size": batch_size,
        "seconds": round(seconds, 1),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "platform": platform.platform(),
    }
    atomic.write_text(out_dir / MARKER, json.dumps(info, indent=2) + "\n")  # whole or absent
    if progress:
        print(f"base model: built in {seconds:.0f}s ({done} warm-start steps)", file=sys.stderr)
        print(f"base model: sha256 {model_sha256(out_dir)}", file=sys.stderr)
    return out_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="default: .autorl/models/tiny-arith")
    parser.add_argument(
        "--steps", type=int, default=None, help=f"most warm-start steps (default {SFT_MAX_STEPS})"
    )
    parser.add_argument(
        "--target",
        type=float,
        default=PROBE_TARGET,
        help=f"probe accuracy that ends the warm-start (default {PROBE_TARGET}; a negative value: no probe)",
    )
    parser.add_argument("--seed", type=int, default=SFT_SEED)
    parser.add_argument(
        "--threads", type=int, default=SFT_THREADS, help=f"torch CPU threads (default {SFT_THREADS})"
    )
    args = parser.parse_args(argv)
    target = None if args.target < 0 else args.target
    print(build_base_model(args.out, steps=args.steps, seed=args.seed, target=target, threads=args.threads))


if __name__ == "__main__":
    main()
