"""The GPU proof kit's part 6 (issue 50): the embedded trainer's fast path on this machine's GPU. Run its rows
first, in a call of their own (``python scripts/gpu_proof.py --bundle DIR --out gpu-proof/ --parts 6``),
then the older parts in a second call; gpu_proof.py runs this module's ``rows``.

- fast/correct: the shipped tiny model in float32: StaticSampler with its decode step captured as CUDA graphs
  (``graphs``) against HFSampler, from the same generator state: the share of rows drawn alike, the largest
  logprob difference, and its logprobs against the model's own forward (goal: within 1e-4). On a CPU (quick
  mode) the step's body runs eagerly: there is nothing to capture without CUDA.
- fast/sampler: the Qwen3-0.6B shape, float32 master weights under bf16 autocast (as the trainer samples),
  one GRPO batch (8 prompts x 8, the completion limit of part 2, no EOS: every row runs to the limit):
  HFSampler and StaticSampler with graphs (and eager, on a CPU only), its guards at every step (the trainer's
  `hf-graphs`), then one setting added at a time: its guards at a call's first step only (``guard_once``),
  the host's look at the batch every 8 steps, not at each (``sync_every``; each look waits for the GPU),
  the next draw captured in the decode step (``fused``), calls interleaved: tokens/s, the decode
  step's milliseconds against the bandwidth limit (the bf16 weights' bytes / the GPU's memory bandwidth:
  every step reads every weight once), the first call's seconds (compile and capture: start-up).
- fast/trainer: the embedded trainer with ``sampler = "hf-graphs"`` as it is and with fast/sampler's last
  variant (``hf-graphs-tuned``: guard_once, sync_every = 8, fused; not yet a default) against TRL's
  GRPOTrainer (part 2's runs, one round, fewer steps): samples/s, peak GPU memory, generation's share of a
  step. HFSampler's trainer figure is the 2026-11-28 run's (its sampler against graphs: fast/sampler).
- fast/profile: where a step of the trainer's GPU default goes (``hf-graphs``, the 0.6B shape, after two
  warm-up steps): one batch's sampling and one training step under torch.profiler, each timed; the top ops
  by GPU time and by CPU time in ``fast-profile.txt`` beside the kit's files, the largest few in the row,
  and the CUDA launch calls by kind (graph replays against kernels launched one by one).
- fast/memory: one training step's log-probs, GRPO loss and backward on the 0.6B shape: the peak GPU memory
  above the fixed state (weights, gradients, AdamW), chunked (autorl/llm/embedded/logprobs.py) and chunked
  with every layer's activations checkpointed (autorl/llm/embedded/policy.py) against the full logits, at the
  same micro-batch.

A row during which inductor logged that a compiled step runs without its CUDA graph carries those warnings
(``cudagraph_skips``).
"""

from __future__ import annotations

import logging
import math
import statistics
import time
import traceback
from collections.abc import Callable
from typing import Any

# Memory bandwidth by device name, bytes/s (first match wins): the bound on a decode step.
BANDWIDTH = (("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("H200", 4.8e12), ("A100", 2.0e12), ("L40S", 0.864e12))
PROMPTS, GROUP = 8, 8  # the shipped train.toml's batch: batch_size 64, group_size 8
TIMED_CALLS = 2  # timed sampler calls per sampler and round
# fast/sampler's settings of the graphs sampler, one added at a time (the figures' names: graphs + name)
GRAPHS_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("", {"guard_once": None, "sync_every": 1, "fused": False}),
    ("_guard_once", {"guard_once": True, "sync_every": 1, "fused": False}),
    ("_sync_8", {"guard_once": True, "sync_every": 8, "fused": False}),
    ("_fused", {"guard_once": True, "sync_every": 8, "fused": True}),
)
TUNED = GRAPHS_VARIANTS[-1][1]  # fast/trainer's hf-graphs-tuned: fast/sampler's last variant
TRAINER_STEPS, TRAINER_WARMUP = 5, 2  # fast/trainer: measured steps and warm-up steps (the capture) a run


def rows(kit: Any, g: Any) -> list[Any]:
    """Part 6's rows, in the order `--fast-rows` names them (a call that may be cut short runs the rows it
    needs most first); `g` is scripts/gpu_proof.py (its Row, Kit helpers). Each row is isolated: one that
    fails records its error and the next runs."""
    measure = {
        "correct": correct,
        "sampler": sampler_speed,
        "trainer": trainer,
        "profile": profile,
        "memory": memory,
    }
    out = []
    skips = SkipLog.installed()
    for short in kit.settings.fast_rows:
        name, fn = f"fast/{short}", measure[short]
        if kit.stop:
            out.append(g.Row(6, name, "skipped", "skipped: the kit was stopped by a signal"))
            continue
        start, skipped = time.monotonic(), len(skips.messages)
        try:
            out.append(fn(kit, g))
        except Exception as exc:
            traceback.print_exc()
            out.append(g.Row(6, name, "error", f"{type(exc).__name__}: {exc}"))
        if new := skips.messages[skipped:]:  # a compiled step that runs without its CUDA graph, and why
            out[-1].figures["cudagraph_skips"] = sorted(set(new))
        print(f"gpu_proof: {name} done in {time.monotonic() - start:.0f} s", flush=True)
        kit.progress(out)  # the files now: a call cut short (a device's time limit) keeps the rows so far
    return out


class SkipLog(logging.Handler):
    """The "skipping cudagraphs due to ..." warnings inductor logs (torch._inductor.cudagraph_utils) when a
    step compiled with ``mode="reduce-overhead"`` runs without its CUDA graph: its kernels launched one by
    one, a launch-bound decode step again. Part 6's rows carry the ones logged while they ran."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if (message := record.getMessage()).startswith("skipping cudagraphs"):
            self.messages.append(message)

    @classmethod
    def installed(cls) -> SkipLog:
        """The one handler on torch's inductor logger (a second part-6 call in a process reuses it)."""
        logger = logging.getLogger("torch._inductor")
        found = next((h for h in logger.handlers if isinstance(h, cls)), None)
        if found is None:
            found = cls()
            logger.addHandler(found)
        return found


def device(kit: Any):
    import torch

    return torch.device("cuda" if kit.cuda else "cpu")


def batch(vocab: int, seed: int = 0) -> list[list[int]]:
    """PROMPTS prompts of 24-40 random tokens, each GROUP times (a GRPO batch)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    out: list[list[int]] = []
    for _ in range(PROMPTS):
        width = int(torch.randint(24, 41, (1,), generator=gen))
        out += [torch.randint(2, vocab, (width,), generator=gen).tolist()] * GROUP
    return out


def graphs_sampler(model, eos: list[int], kit: Any):
    """StaticSampler with graphs; on a CPU its step's body eagerly (quick mode: no capture, no compile)."""
    from autorl.llm.embedded.static_sampler import StaticSampler

    sampler = StaticSampler(model, 0, eos, graphs=True)
    if not kit.cuda:
        sampler._step, sampler._fused_step = sampler._forward, sampler._forward_pick
    return sampler


# --------------------------------------------------------------------------- fast/correct
def correct(kit: Any, g: Any) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    from autorl.llm.embedded.generation import HFSampler

    dev = device(kit)
    from autorl.llm.prepare import BUILTIN_MODEL

    path = kit.root / BUILTIN_MODEL  # the shipped tiny model, installed as prepare.py does
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(dev)
    vocab = model.config.vocab_size
    eos = list(range(2, 2 + vocab // 12))  # a twelfth of the vocabulary ends a row: EOS mid-batch
    prompts = [p[: 3 + i % 9] for i, p in enumerate(batch(vocab, seed=1))][:24]  # mixed widths
    fast = graphs_sampler(model, eos, kit)
    same, worst_hf, worst_own = 0, 0.0, 0.0
    for call in range(3):  # the first call captures, the others replay
        hf = HFSampler(model, 0, eos).sample(prompts, 1.0, 24, torch.Generator(dev).manual_seed(call))
        got = fast.sample(prompts, 1.0, 24, torch.Generator(dev).manual_seed(call))
        assert hf is not None and got is not None
        alike = (hf.completion_ids == got.completion_ids).all(-1)
        alike &= (hf.completion_mask == got.completion_mask).all(-1)
        same += int(alike.sum())
        both = alike.nonzero().flatten().tolist()
        if both:
            worst_hf = max(worst_hf, float((hf.logprobs[both] - got.logprobs[both]).abs().max()))
        for row in range(len(prompts)):  # the model's own logprobs of what the fast sampler drew
            ids = got.completion_token_lists()[row]
            with torch.no_grad():
                full = torch.tensor([prompts[row] + ids], device=dev)
                logits = model(input_ids=full).logits[0, len(prompts[row]) - 1 : -1].float()
            own = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids, device=dev)[:, None])[:, 0]
            worst_own = max(worst_own, float((got.logprobs[row, : len(ids)] - own).abs().max()))
    figures = {
        "rows_alike": f"{same}/{3 * len(prompts)}",
        "max_logprob_diff_vs_hf": round(worst_hf, 7),
        "max_logprob_diff_vs_forward": round(worst_own, 7),
        "within_1e-4": worst_own <= 1e-4,
        "graphs": bool(kit.cuda and fast.static),
    }
    if not kit.cuda:
        figures["note"] = "CPU: the step's body eagerly (no CUDA graph)"
    return g.Row(6, "fast/correct", "ok", figures=figures)


# --------------------------------------------------------------------------- fast/sampler
def bandwidth(name: str) -> float | None:
    return next((bw for key, bw in BANDWIDTH if key in name), None)


def sampler_speed(kit: Any, g: Any) -> Any:
    import contextlib

    import torch
    from transformers import AutoModelForCausalLM

    from autorl.llm.embedded.generation import HFSampler
    from autorl.llm.embedded.static_sampler import StaticSampler

    dev = device(kit)
    path = g.build_qwen3_shape(kit)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(dev)
    new = kit.settings.completion_tokens
    prompts = batch(model.config.vocab_size)
    graphs = graphs_sampler(model, [], kit)
    # name -> (sampler, its settings): the graphs_* are one sampler (two compiles and captures: its step,
    # and its step with the next draw, `fused`), adding one setting after another: its guards at a call's
    # first step only (guard_once), the host's look at the batch every 8 steps (sync_every), the draw in the
    # captured step (fused). The eager static cache on the CPU only: no GPU default, and at several seconds
    # a call on the 0.6B shape it would cost the call ~35 s
    samplers: dict[str, tuple[Any, dict[str, Any]]] = {"hf": (HFSampler(model, 0, []), {})}
    if not kit.cuda:
        samplers["static"] = (StaticSampler(model, 0, []), {})
    samplers |= {f"graphs{name}": (graphs, settings) for name, settings in GRAPHS_VARIANTS}
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if kit.cuda else contextlib.nullcontext()
    sync = torch.cuda.synchronize if kit.cuda else (lambda: None)

    def timed(name: str, calls: int) -> float:
        sampler, settings = samplers[name]
        for key, value in settings.items():
            setattr(sampler, key, value)
        gen = torch.Generator(dev).manual_seed(1)
        sync()
        t0 = time.perf_counter()
        with autocast:
            for _ in range(calls):
                sampler.sample(prompts, 1.0, new, gen)
        sync()
        return time.perf_counter() - t0

    first = {name: round(timed(name, 1), 2) for name in samplers}  # compile and capture included
    seconds: dict[str, list[float]] = {name: [] for name in samplers}
    for r in range(2):  # interleaved, the order turned the second time
        for name in samplers if r == 0 else reversed(list(samplers)):
            seconds[name].append(timed(name, TIMED_CALLS) / TIMED_CALLS)
    tokens = len(prompts) * new
    figures: dict[str, Any] = {"rows": len(prompts), "new_tokens": new, "first_call_s": first}
    for name, runs in seconds.items():
        call = statistics.median(runs)
        figures[f"{name}_tokens_per_s"] = round(tokens / call, 1)
        figures[f"{name}_step_ms"] = round(1000 * call / new, 3)  # prefill included: an upper bound
    figures["graphs_vs_hf"] = round(figures["graphs_tokens_per_s"] / figures["hf_tokens_per_s"], 2)
    for name, _ in GRAPHS_VARIANTS[1:]:  # above 1: the trainer's hf-graphs should take those settings
        ratio = figures[f"graphs{name}_tokens_per_s"] / figures["graphs_tokens_per_s"]
        figures[f"{name[1:]}_vs_graphs"] = round(ratio, 3)
    bw = bandwidth(kit.device_name) if kit.cuda else None
    if bw is not None:
        weight_bytes = 2 * sum(p.numel() for p in model.parameters())  # bf16
        figures["bandwidth_limit_step_ms"] = round(1000 * weight_bytes / bw, 3)
    return g.Row(6, "fast/sampler", "ok", figures=figures)


# --------------------------------------------------------------------------- fast/trainer
def trainer(kit: Any, g: Any) -> Any:
    bench = g.bench_module()
    spec = g.qwen3_spec(kit, g.build_qwen3_shape(kit))
    threads = 1 if kit.cuda else len(g.cores())
    steps, warmup = (TRAINER_STEPS, TRAINER_WARMUP) if kit.cuda else (1, 1)
    runs: dict[str, dict[str, Any]] = {}
    for name, settings in (("hf-graphs", {}), ("hf-graphs-tuned", TUNED)):
        run: Callable[[], dict[str, Any]] = lambda s=settings: tuned(  # noqa: E731
            s, lambda: bench.bench_embedded(spec, steps, warmup, 0, threads, "hf-graphs")
        )
        runs[name] = g.measured(run, kit.cuda, kit.stop)
    figures: dict[str, Any] = {"steps": steps, "warmup": warmup}
    for name, r in runs.items():
        figures[f"{name}_samples_per_s"] = round(r["samples_per_s"], 2)
        figures[f"{name}_gen_share"] = rounded(r.get("gen_share"))
        if "peak_memory_gb" in r:
            figures[f"{name}_peak_memory_gb"] = round(r["peak_memory_gb"], 2)
    if g.missing("trl", "datasets", "accelerate", "pyarrow") is None:
        trl = g.measured(lambda: bench.bench_trl(spec, steps, warmup, 0, threads), kit.cuda, kit.stop)
        figures["trl_samples_per_s"] = round(trl["samples_per_s"], 2)
        if "peak_memory_gb" in trl:
            figures["trl_peak_memory_gb"] = round(trl["peak_memory_gb"], 2)
        for name in runs:
            figures[f"{name}_vs_trl"] = round(runs[name]["samples_per_s"] / trl["samples_per_s"], 2)
    else:
        figures["trl"] = "not run: trl, datasets, accelerate or pyarrow missing"
    return g.Row(6, "fast/trainer", "ok", figures=figures)


def tuned(settings: dict[str, Any], run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """run() with the trainer's StaticSampler made with `settings` (fast/sampler's, not yet a trainer
    default): the trainer module's name for it patched for the run only."""
    from unittest import mock

    from autorl.llm.embedded import train

    if not settings:
        return run()

    class Tuned(train.StaticSampler):  # a subclass: the trainer tells its samplers apart by isinstance
        made_with = settings

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs, **settings)

    with mock.patch.object(train, "StaticSampler", Tuned):
        return run()


def rounded(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else round(x, 3)


# --------------------------------------------------------------------------- fast/profile
PROFILE_TOP = 25  # ops per table in fast-profile.txt
ROW_TOP = 5  # ops per figure in the row


def profile(kit: Any, g: Any) -> Any:
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, record_function

    from autorl.llm.embedded.train import Trainer

    spec = g.qwen3_spec(kit, g.build_qwen3_shape(kit))
    spec = spec.model_copy(update={"sampler": "hf-graphs", "save_interval_s": 1e9})
    sync = torch.cuda.synchronize if kit.cuda else (lambda: None)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if kit.cuda else [])
    seconds: dict[str, float] = {}

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        sync()
        t0 = time.perf_counter()
        with record_function(f"autorl/{name}"):
            out = fn()
            sync()
        seconds[name] = time.perf_counter() - t0
        return out

    def run() -> dict[str, Any]:
        trainer = Trainer(spec, tempfile.mkdtemp(prefix="gpu-fast-profile-"), 0)
        trainer._start()  # the compile and capture: start-up
        for _ in range(2):  # warm-up steps (a graph's first replays)
            trainer.train_step(trainer.sample_batch())
        with torch.profiler.profile(activities=activities) as prof:
            batch = timed("sample", trainer.sample_batch)
            timed("train", lambda: trainer.train_step(batch))
        return {"events": prof.key_averages()}

    events = g.measured(run, kit.cuda, kit.stop)["events"]
    device_time = "self_device_time_total" if kit.cuda else "self_cpu_time_total"
    text = [
        f"fast/profile: {kit.device_name}; the 0.6B shape, hf-graphs; seconds {seconds}",
        events.table(sort_by=device_time, row_limit=PROFILE_TOP),
        events.table(sort_by="self_cpu_time_total", row_limit=PROFILE_TOP),
    ]
    (kit.out / "fast-profile.txt").write_text("\n\n".join(text) + "\n")

    def top(attribute: str) -> dict[str, float]:
        ranked = sorted(events, key=lambda e: getattr(e, attribute), reverse=True)[:ROW_TOP]
        return {e.key[:60]: round(getattr(e, attribute) / 1e3, 2) for e in ranked}  # ms

    figures: dict[str, Any] = {f"{k}_s": round(v, 3) for k, v in seconds.items()}
    figures["top_cpu_ms"] = top("self_cpu_time_total")
    if kit.cuda:
        figures["top_gpu_ms"] = top("self_device_time_total")
        figures["gpu_busy_s"] = round(sum(e.self_device_time_total for e in events) / 1e6, 3)
        # the CUDA runtime's launch calls by kind: cudaGraphLaunch counts graph replays (the decode steps
        # captured), cudaLaunchKernel and its kin the kernels launched one by one
        figures["launches"] = {e.key: e.count for e in events if e.key.startswith("cu") and "Launch" in e.key}
    figures["file"] = "fast-profile.txt"
    return g.Row(6, "fast/profile", "ok", figures=figures)


# --------------------------------------------------------------------------- fast/memory
def memory(kit: Any, g: Any) -> Any:
    if not kit.cuda:
        return g.Row(6, "fast/memory", "skipped", "GPU only (the CPU's: scripts/bench_logprobs_memory.py)")
    import gc

    import torch
    from transformers import AutoModelForCausalLM

    from autorl.llm.embedded import grpo, policy
    from autorl.llm.embedded.logprobs import completion_logprobs
    from autorl.llm.schema import DefaultLoss

    memory_bench = g.script_module("bench_logprobs_memory")  # its rows: a GRPO group of random tokens
    dev = device(kit)
    path = g.build_qwen3_shape(kit)
    figures: dict[str, Any] = {}
    chunk_bytes = {"plain": None, "chunked": 32 * 2**20, "checkpointed": 32 * 2**20}
    for way in [*memory_bench.WAYS, *memory_bench.WAYS[::-1]]:
        chunk = chunk_bytes[way]
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(dev)
        model.train()
        policy.checkpoint_layers(model, 1 if way == "checkpointed" else 0)  # the trainer's default here
        opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=True)  # as the trainer builds it
        vocab = model.config.vocab_size

        def step(batch: list, chunk=chunk, model=model) -> None:
            autocast = torch.autocast("cuda", dtype=torch.bfloat16)  # as the trainer computes on a GPU
            logpi, logmu, adv, mask = completion_logprobs(model, batch, 0, dev, autocast, chunk_bytes=chunk)
            loss_sum, _ = grpo.token_loss(logpi, logmu, adv, mask, DefaultLoss())
            grpo.step_loss_share(loss_sum, int(mask.sum())).backward()

        step(memory_bench.rows(1, 1, 1, vocab, seed=1))
        opt.step()
        opt.zero_grad(set_to_none=False)
        torch.cuda.synchronize()
        fixed = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step(memory_bench.rows(16, 32, kit.settings.completion_tokens, vocab))
        torch.cuda.synchronize()
        figures.setdefault(f"{way}_above_fixed_gib", []).append(
            round((torch.cuda.max_memory_allocated() - fixed) / 2**30, 3)
        )
        figures["fixed_gib"] = round(fixed / 2**30, 3)
        del model, opt
        gc.collect()
        torch.cuda.empty_cache()
    plain = statistics.median(figures["plain_above_fixed_gib"])
    for way in ("chunked", "checkpointed"):
        figures[f"{way}_vs_plain"] = round(statistics.median(figures[f"{way}_above_fixed_gib"]) / plain, 3)
    figures["micro_batch"] = f"16 rows x (32 + {kit.settings.completion_tokens}) tokens"
    return g.Row(6, "fast/memory", "ok", figures=figures)
