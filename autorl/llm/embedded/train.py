"""The embedded GRPO trainer (``python -m autorl.llm.embedded.train --config F --run-dir D --seed K``).

One process does what prime-rl spreads over an orchestrator, an inference server and a trainer
(prime-rl 559b447; the formulas themselves are in grpo.py and scheduler.py):

1. Tasks. For each group a source is drawn with probability proportional to its ``ratio``
   (src/prime_rl/orchestrator/train_source.py) and its next example is taken; groups are drawn until
   ``batch_size`` rollouts are requested (src/prime_rl/orchestrator/train_sink.py counts traces).
2. Rollouts. ``group_size`` completions per task, sampled at the source's ``temperature`` with at most
   ``max_completion_tokens`` new tokens (None = up to ``seq_len``), keeping each token's sampling logprob
   after temperature (generation.py). Reward = ``env.score(completion, example)``.
3. Advantages per group, ``A = R - mean(R)`` (optionally length-shaped), then ``filter_zero_advantages``
   (grpo.py; src/prime_rl/orchestrator/algo/grpo.py, train_sink.py).
4. One trainer step on exactly ``batch_size`` rollouts, oldest first: samples cut at ``seq_len`` tokens
   (src/prime_rl/trainer/batch.py ``prepare_sample``), logprobs recomputed from ``logits / temperature``,
   the default or ipo loss summed over micro-batches and divided by the step's global RL-token count,
   ``clip_grad_norm_(max_norm)``, AdamW, scheduler (src/prime_rl/trainer/rl/train.py, loss.py).

Off-policy lag (``max_off_policy_steps``). prime-rl overlaps sampling and training: the orchestrator may
run one step ahead of the trainer (``TARGET_LAG = 1`` in src/prime_rl/orchestrator/orchestrator.py), so in
steady state step n trains on rollouts sampled by the policy of step n-1, and the importance ratio,
trust-region masks and KL term act on a real policy gap. Rollouts older than ``max_off_policy_steps``
versions are dropped (train_sink.py ``_drop_stale``). Here:

- ``max_off_policy_steps >= 1`` (prime-rl's default 8): we reproduce the one-step lag exactly. A queue holds
  one pre-sampled batch: step 1 samples two batches with the base policy and trains on the first, every later
  step samples one batch with the current policy and trains on the batch sampled one step earlier. The
  staleness never exceeds 1, so values above 1 behave like 1 (as in prime-rl when sampling keeps up).
- ``max_off_policy_steps = 0``: every rollout older than the trained policy would be dropped by prime-rl,
  so only on-policy batches train: here each step samples with the current policy and trains on that batch
  (ratio = 1 up to numerics, the masks never fire and the KL gradient is 0).

With the lag, step n's sampling (for step n+1) and its training both start from the weights of step n-1, so
they can run at once: on a CPU with a spare core the ``hf-process`` sampler (sampler_process.py) does that in
a second process, with the same rollouts as in-process sampling.

Child protocol (autorl/engine/progress.py): ``ready`` right before the first step (model and data loading are
not charged to the budget), ``step`` after every optimizer step (the same dict is appended to
``<run_dir>/metrics.jsonl``), ``saved`` after each weights save, ``done`` at the end. Weights are saved in
Hugging Face format to ``<run_dir>/weights/`` atomically (written to ``weights.tmp/``, marked complete with
a ``STABLE`` file, then renamed; the previous save is kept as ``weights.old/`` until the rename is done)
every ``save_interval_s`` (at least 20x the last save's duration, so big models do not spend their budget
saving), at ``max_steps``, and on SIGTERM/SIGINT: the current step is abandoned (its sampling or its
optimizer update never lands), the weights of the last completed step are saved, and the process exits 0.
A long seed of `autorl fidelity` (``snapshot_s``) also keeps a copy of its weights each time its training
clock passes one of those seconds, in ``snapshots/at-<s>s/`` (the clock paused meanwhile: ``pause``,
``resume``, then ``snapshot``); the runner evaluates them after the run (autorl/engine/seed.py). A rung
(``rungs``) is kept in ``snapshots/rung-<k>/`` for the runner to score at once, the run paused (``rung``).

Precision: float32 on CPU; on a GPU float32 master weights with bf16 autocast (prime-rl's default
``optimization_dtype = float32`` with bf16 compute). Seeded: python, numpy and torch RNGs, the sampling
generator and the task stream all derive from ``--seed``, so the same config and seed on the same machine
give the same first steps.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import set_seed

from autorl.engine import progress
from autorl.io.machine import own_cpu_ids, peak_rss_gb
from autorl.llm.embedded import compiled_train, grpo, prewarm
from autorl.llm.embedded.backend import (
    COMPLETE_MARKER,
    EmbeddedChildArgs,
    RunSpec,
    cpu_compiles_train,
    cpu_sampler,
    snapshot_dir,
)
from autorl.llm.embedded.batches import Batches, BatchPlan, Sample, default_env_loader
from autorl.llm.embedded.generation import HFSampler, VLLMSampler, vllm_available
from autorl.llm.embedded.logprobs import completion_logprobs
from autorl.llm.embedded.policy import device_of, eos_ids, load_policy
from autorl.llm.embedded.sampler_process import ProcessSampler
from autorl.llm.embedded.scheduler import build_scheduler
from autorl.llm.embedded.slots import CPU_MICRO_BATCH_TOKENS, GPU_MICRO_BATCH_TOKENS
from autorl.llm.embedded.static_sampler import StaticSampler

# prime-rl's orchestrator aborts after this many consecutive empty train batches (orchestrator.py).
MAX_CONSECUTIVE_EMPTY_BATCHES = 10


def peak_memory_gb(device: torch.device) -> float:
    """Peak GPU memory allocated on a GPU, else this process's peak RSS (GiB)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 1024**3
    return peak_rss_gb()


def _optimizer(model: torch.nn.Module, spec: RunSpec) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW with the config's settings, and its lr schedule (the scheduler type's own fields). Its fused
    kernel where torch has one (one core: 0.20 ms a step against the foreach kernels' 0.63 ms on the
    tiny model, 2026-11-28, studies/fast-2026-11-28/parts.log); the same update up to float rounding."""
    o = spec.optim
    fused = next(model.parameters()).device.type in ("cpu", "cuda")
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=o.lr,
        betas=(o.betas1, o.betas2),
        weight_decay=o.weight_decay,
        **({"fused": True} if fused else {"foreach": True}),
    )
    sched = spec.scheduler  # warmup_steps, decay_steps, min_lr: as its type has them
    scheduler = build_scheduler(
        optimizer, sched.type, o.lr, spec.max_steps, **sched.model_dump(exclude={"type"})
    )
    return optimizer, scheduler


class Trainer:
    """The whole loop; ``run()`` trains until max_steps or a stop request."""

    def __init__(
        self,
        spec: RunSpec,
        run_dir: Path,
        seed: int,
        env_loader: Callable[[str, dict[str, Any]], Any] = default_env_loader,
    ):
        self.spec, self.seed = spec, seed
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stop_requested = False
        set_seed(seed)  # random, numpy, torch (and CUDA)
        self.device, self.autocast_dtype = device_of(spec)
        self.tokenizer, self.model, self.checkpointed = load_policy(
            spec.model_path, self.device, spec.num_threads, spec.activation_checkpointing
        )
        self.pad_id = self.tokenizer.pad_token_id
        if self.pad_id is None:
            self.pad_id = self.tokenizer.eos_token_id
        self.eos_ids = eos_ids(self.tokenizer, self.model)
        self.batches = Batches(spec, self.tokenizer, self.eos_ids, seed, env_loader)
        self.optimizer, self.scheduler = _optimizer(self.model, spec)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)
        self.lag = 1 if spec.max_off_policy_steps >= 1 else 0  # 1: train on the previous step's rollouts
        self.sampler, self.process_sampler, self.sampler_name = self._samplers()
        n_params = sum(p.numel() for p in self.model.parameters())
        compile_train = spec.compile_train is True or (
            self.device.type == "cpu" and cpu_compiles_train(spec.compile_train, self.sampler_name, n_params)
        )
        self.train_decoder = compiled_train.compiled_decoder(self.model) if compile_train else None
        # Big vocabularies make the logits the largest activation: smaller chunks on a GPU.
        gpu = self.device.type == "cuda"
        self.micro_batch_tokens = spec.micro_batch_tokens or (
            GPU_MICRO_BATCH_TOKENS if gpu else CPU_MICRO_BATCH_TOKENS
        )
        self.empty_batches = 0
        self.queue: deque[Sample] = deque()
        self.step = 0
        self.saved_step = 0
        self.last_save = time.perf_counter()
        self.last_save_seconds = 0.0
        self.metrics_path = self.run_dir / "metrics.jsonl"
        self.snapshots_due = sorted(spec.snapshot_s)  # training seconds still to pass (autorl fidelity)
        self.paused_s = 0.0  # time spent saving snapshots and at rungs: not charged to the budget
        self.rungs_due = [(k, f, s) for k, (f, s) in enumerate(spec.rungs, 1)]  # (rung, fraction, seconds)

    def _sampler_name(self) -> str:
        """The sampler `auto` stands for here: vLLM where it imports on a GPU, else hf-graphs (its decode step
        captured as CUDA graphs: 3.5x HFSampler's trainer samples/s on the 0.6B shape, H200); on a CPU
        backend.cpu_sampler's choice for this process's threads and cores."""
        spec = self.spec
        if spec.sampler != "auto" or self.device.type == "cpu":
            return cpu_sampler(spec.sampler, self.lag, torch.get_num_threads(), len(own_cpu_ids()))
        return "vllm" if vllm_available() else "hf-graphs" if self.device.type == "cuda" else "hf"

    def _samplers(self) -> tuple[HFSampler | VLLMSampler, ProcessSampler | None, str]:
        """(the sampler, the CPU's second-process sampler or None, the name the header prints)."""
        spec, name = self.spec, self._sampler_name()
        if name == "vllm":
            vllm = VLLMSampler(
                spec.model_path,
                self.pad_id,
                self.seed,
                # room for any prompt up to seq_len plus a full completion (the trainer cuts at seq_len)
                max_model_len=spec.seq_len + max(s.max_completion_tokens or 0 for s in spec.sources),
                gpu_memory_utilization=spec.vllm_gpu_memory_utilization * spec.gpu_share,
                dtype="bfloat16" if self.device.type == "cuda" else "float32",  # the trainer's compute dtype
                device=str(self.device),
            )
            return vllm, None, name
        if name in ("hf-static", "hf-graphs"):
            graphs = name == "hf-graphs"
            static = StaticSampler(self.model, self.pad_id, self.eos_ids, compiled=not graphs, graphs=graphs)
            return static, None, name
        hf = HFSampler(self.model, self.pad_id, self.eos_ids)
        if name == "hf":
            return hf, None, name
        if self.device.type != "cpu":
            raise ValueError(
                f"sampler {name!r} is for CPU training (on a GPU: 'hf', 'hf-static', 'hf-graphs' or 'vllm')"
            )
        warm = self._warm_shape() if name == "hf-static-process" else None
        process = ProcessSampler(self.model, spec.model_path, self.pad_id, self.eos_ids, self.seed, warm)
        return hf, process, name

    # ------------------------------------------------------------------ control

    def request_stop(self, *_: Any) -> None:
        self.stop_requested = True

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)

    # ------------------------------------------------------------------ sampling

    def submit_batch(self) -> BatchPlan:
        """Plan a batch and hand it to the process sampler with the current weights; returns at once."""
        assert self.process_sampler is not None
        plan = self.batches.plan(self.step)
        self.process_sampler.publish()
        self.process_sampler.submit([(c.prompts, c.temperature, c.limit) for c in plan.calls])
        return plan

    def sample_batch(self) -> list[Sample] | None:
        """One batch of rollouts from the current policy, sampled now; None when a stop request arrived."""
        if self.process_sampler is not None:
            plan = self.submit_batch()
            rollouts = self.process_sampler.collect(self._stopping)
            return None if rollouts is None else self.batches.finish(plan, rollouts)
        plan = self.batches.plan(self.step)
        out = []
        for call in plan.calls:
            with self._autocast():
                r = self.sampler.sample(
                    call.prompts, call.temperature, call.limit, self.generator, self._stopping
                )
            if r is None:
                return None
            out.append(r)
        return self.batches.finish(plan, out)

    def _stopping(self) -> bool:
        return self.stop_requested

    # ------------------------------------------------------------------ training

    def _micro_batches(self, rows: list[tuple[Sample, int]]) -> list[list[tuple[Sample, int]]]:
        """Consecutive chunks of at most ``micro_batch_tokens`` tokens (distinct prompts + completions)."""
        chunks: list[list[tuple[Sample, int]]] = []
        current: list[tuple[Sample, int]] = []
        prompts: set[tuple[int, ...]] = set()
        max_p = max_c = 0
        for row in rows:
            key = tuple(row[0].prompt_ids)
            new_p, new_c = max(max_p, len(key)), max(max_c, row[1])
            n_prompts = len(prompts | {key})
            if current and n_prompts * new_p + (len(current) + 1) * new_c > self.micro_batch_tokens:
                chunks.append(current)
                current, prompts, new_p, new_c = [], set(), len(key), row[1]
            current.append(row)
            prompts.add(key)
            max_p, max_c = new_p, new_c
        if current:
            chunks.append(current)
        return chunks

    def train_step(self, batch: list[Sample]) -> dict[str, Any] | None:
        """One optimizer step on ``batch``; None when a stop request arrived before the update.

        A batch with no RL token left (every group had equal rewards and filter_zero_advantages dropped them
        all) takes no step, as prime-rl's orchestrator ships no empty batch: returns ``{"empty": True}``.
        """
        spec = self.spec
        counts = grpo.rl_token_counts(
            [len(s.completion_ids) for s in batch],
            [len(s.prompt_ids) for s in batch],
            [s.advantage for s in batch],
            spec.seq_len,
            spec.filter_zero_advantages,
        )
        rows = [(s, keep) for s, keep in zip(batch, counts, strict=True) if keep > 0]
        num_rl_tokens = sum(keep for _, keep in rows)
        totals = {"tokens": 0.0, "masked": 0.0, "masked_low": 0.0, "masked_high": 0.0, "mismatch_kl": 0.0}
        loss_value = 0.0
        lr = self.optimizer.param_groups[0]["lr"]
        if not rows:
            return {"empty": True}
        for chunk in self._micro_batches(rows):
            if self.stop_requested:
                self.optimizer.zero_grad(set_to_none=True)
                return None
            logpi, logmu, adv, mask = completion_logprobs(
                self.model, chunk, self.pad_id, self.device, self._autocast(), decoder=self.train_decoder
            )
            loss_sum, m = grpo.token_loss(logpi, logmu, adv, mask, spec.loss)
            loss = grpo.step_loss_share(loss_sum, num_rl_tokens)  # global token mean over the step batch
            loss.backward()
            loss_value += float(loss.detach())
            for k in totals:
                totals[k] += float(m[k])
        if self.stop_requested:
            self.optimizer.zero_grad(set_to_none=True)
            return None
        params = [p for p in self.model.parameters() if p.grad is not None]
        if spec.optim.max_norm is not None:
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, spec.optim.max_norm))
        else:
            grad_norm = float(torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None]))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        if self.sampler_name == "vllm":
            self.sampler.sync_weights(self.model)

        n = max(totals["tokens"], 1.0)
        rewards = [s.reward for s in batch]
        out: dict[str, Any] = {
            "loss": loss_value,
            "lr": lr,
            "grad_norm": grad_norm,
            "reward_mean": float(np.mean(rewards)) if rewards else 0.0,
            "rl_tokens": int(num_rl_tokens),
            "rl_samples": len(rows),
            "zero_adv_frac": float(np.mean([s.advantage == 0.0 for s in batch])) if batch else 0.0,
            "masked_frac": totals["masked"] / n,
            "masked_low_frac": totals["masked_low"] / n,
            "masked_high_frac": totals["masked_high"] / n,
            "mismatch_kl": totals["mismatch_kl"] / n,
            "completion_len_mean": float(np.mean([len(s.completion_ids) for s in batch])) if batch else 0.0,
            "truncated_frac": float(np.mean([s.truncated for s in batch])) if batch else 0.0,
            "policy_lag_mean": float(np.mean([self.step - s.version for s in batch])) if batch else 0.0,
        }
        sources = {s.source for s in batch}
        if len(sources) > 1:
            for name in sorted(sources):
                out[f"reward_mean/{name}"] = float(np.mean([s.reward for s in batch if s.source == name]))
        return out

    # ------------------------------------------------------------------ saving

    def _write_weights(self, tmp: Path, **marker: Any) -> None:
        """The current weights in Hugging Face format into `tmp`, marked complete last."""
        shutil.rmtree(tmp, ignore_errors=True)
        self.model.save_pretrained(tmp)  # type: ignore[operator]  # a PreTrainedModel, typed as its Module
        self.tokenizer.save_pretrained(tmp)
        info = {"step": self.step, "seed": self.seed, **marker}
        (tmp / COMPLETE_MARKER).write_text(json.dumps(info) + "\n")

    def save(self) -> Path:
        """Write the current weights atomically to ``weights/`` (see the module docstring)."""
        start = time.perf_counter()
        tmp, final, old = (self.run_dir / n for n in ("weights.tmp", "weights", "weights.old"))
        self._write_weights(tmp)
        if final.exists():
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        self.saved_step = self.step
        self.last_save = time.perf_counter()
        self.last_save_seconds = self.last_save - start
        progress.emit("saved", step=self.step, path=str(final), seconds=round(self.last_save_seconds, 3))
        return final

    def _keep(self, final: Path, at_s: float, trained_s: float) -> None:
        """A copy of the weights at `final` (written beside, marked complete, renamed)."""
        tmp = final.with_name(final.name + ".tmp")
        self._write_weights(tmp, at_s=at_s, trained_s=round(trained_s, 3))
        tmp.rename(final)

    def _snapshots(self, trained_s: float) -> None:
        """Keep a copy of the weights for each RunSpec.snapshot_s the training clock has passed, in
        snapshots/at-<s>s/; the runner's clock is paused meanwhile, and so is the one counted here."""
        while self.snapshots_due and trained_s - self.paused_s >= self.snapshots_due[0]:
            at_s, start = self.snapshots_due.pop(0), time.perf_counter()
            progress.emit("pause")
            self._keep(final := snapshot_dir(self.run_dir, at_s), at_s, trained_s - self.paused_s)
            self.paused_s += time.perf_counter() - start
            progress.emit("resume")
            progress.emit("snapshot", step=self.step, at_s=at_s, path=str(final))

    def _rungs(self, trained_s: float) -> None:
        """At each rung the training clock has passed: keep the weights in snapshots/rung-<k>/ for the runner
        to score, then wait, paused, for its word (autorl.engine.progress.wait_for_go); a SIGTERM meanwhile
        (the early abort) ends training as at the budget."""
        while self.rungs_due and trained_s - self.paused_s >= self.rungs_due[0][2] and not self._stopping():
            (k, fraction, at_s), start = self.rungs_due.pop(0), time.perf_counter()
            go = self.run_dir / f"rung-{k}.go"
            progress.emit("pause")
            self._keep(final := self.run_dir / "snapshots" / f"rung-{k}", at_s, trained_s - self.paused_s)
            where = {"rung": k, "fraction": fraction, "at_s": at_s, "step": self.step, "weights": str(final)}
            progress.emit("rung", **where, go=str(go))
            progress.wait_for_go(go, self._stopping)
            self.paused_s += time.perf_counter() - start
            progress.emit("resume")

    def _save_due(self) -> bool:
        interval = max(self.spec.save_interval_s, 20 * self.last_save_seconds)
        return time.perf_counter() - self.last_save >= interval

    # ------------------------------------------------------------------ loop

    def run(self) -> int:
        try:
            return self._train()
        finally:
            if self.process_sampler is not None:
                self.process_sampler.close()

    def _train(self) -> int:
        spec = self.spec
        self._start()
        start = self.last_save = time.perf_counter()
        # With the process sampler the next batch is sampled while this step trains (same lag, same rollouts).
        overlapped = self.process_sampler is not None and self.lag == 1
        queued = spec.batch_size * (1 if overlapped else 1 + self.lag)
        while not self.stop_requested and (spec.max_steps is None or self.step < spec.max_steps):
            t0 = time.perf_counter()
            # Keep one extra batch queued (or being sampled) when reproducing prime-rl's one-step lag.
            if not self._fill_queue(queued):
                break
            pending = self.submit_batch() if overlapped else None
            t1 = time.perf_counter()
            batch = [self.queue.popleft() for _ in range(spec.batch_size)]
            stats = self.train_step(batch)
            t2 = time.perf_counter()
            if stats is None:
                break
            # A stop while collecting the next batch: the step itself is complete and is recorded below.
            aborted = pending is not None and not self._collect(pending)
            if stats.get("empty"):
                self._count_empty_batch()
            else:
                self._record_step(stats, len(batch), t0, t2 - t1, start)
            if aborted:
                break
        if self.step > self.saved_step:
            self.save()
        progress.emit("done", step=self.step, stopped=self.stop_requested)
        return 0

    def _start(self) -> None:
        """Say `compiling` and compile the steps that are compiled (start-up, not training time; a stop
        request meanwhile exits at once, as during loading: `exit_on_stop`), say what runs, then take over
        SIGTERM/SIGINT (a stop request from here on) and say `ready`."""
        static = isinstance(self.sampler, StaticSampler) and self.sampler.compiled
        compiles = static or self._process_compiles() or self.train_decoder is not None
        if compiles and not prewarm.COMPILED:  # (in its warm starter: found at once)
            progress.emit("compiling")  # a minute where inductor's cache is cold: the runner says so
        warm = None
        if isinstance(self.sampler, StaticSampler):
            with self._autocast():
                warm = self.sampler.warm(*self._warm_shape())
        trained = self._warm_train()  # meanwhile a sampling process loads, and compiles its step
        if self.process_sampler is not None:
            warm = self.process_sampler.wait_ready()
        n_params = sum(p.numel() for p in self.model.parameters())
        print(
            f"embedded trainer: model {self.spec.model_path} on {self.device} "
            f"({n_params / 1e6:.2f}M params), "
            f"sampler {self.sampler_name}"
            + (f" (its step compiled in {warm:.1f} s before the clock)" if warm is not None else "")
            + (f", its training step compiled in {trained:.1f} s" if trained is not None else "")
            + (", found compiled in its warm starter" if prewarm.COMPILED else "")
            + (f", activations checkpointed in {self.checkpointed} layers" if self.checkpointed else "")
            + f", {torch.get_num_threads()} threads, lag {self.lag}, seed {self.seed}",
            flush=True,
        )
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        progress.emit("ready")

    def _warm_train(self) -> float | None:
        """Compile the training step's decoder now (`compile_train`; start-up): its seconds, or None when
        nothing compiles or the compile failed (one warning line; the decoder runs eagerly from then on)."""
        if self.train_decoder is None:
            return None
        try:
            return compiled_train.warm(
                self.model, self.train_decoder, self.pad_id, self.spec.loss, self._autocast()
            )
        except Exception as exc:
            self.train_decoder = None
            self.model.zero_grad(set_to_none=True)
            print(f"warning: the compiled training step failed ({type(exc).__name__}: {exc}); eager from now")
            return None

    def _process_compiles(self) -> bool:
        """Whether the sampling process compiles its step (hf-static-process)."""
        return self.process_sampler is not None and self.process_sampler.warm is not None

    def _warm_shape(self) -> tuple[int, int]:
        """The shape a compiled sampler step is warmed with: one call of batch_size rows, the sources'
        longest completion."""
        limit = max(s.max_completion_tokens or 0 for s in self.spec.sources) or self.spec.seq_len // 2
        return self.spec.batch_size, limit

    def _fill_queue(self, queued: int) -> bool:
        """Sample batches until ``queued`` rollouts wait; False when a stop request arrived meanwhile."""
        while len(self.queue) < queued:
            samples = self.sample_batch()
            if samples is None:
                return False
            self.queue.extend(samples)
        return True

    def _collect(self, pending: BatchPlan) -> bool:
        """Queue the batch the process sampler sampled during the step; False when a stop request came."""
        assert self.process_sampler is not None
        rollouts = self.process_sampler.collect(self._stopping)
        if rollouts is None:
            return False
        self.queue.extend(self.batches.finish(pending, rollouts))
        return True

    def _count_empty_batch(self) -> None:
        """A batch without RL tokens took no step; too many in a row end the run as prime-rl does."""
        self.empty_batches += 1
        print(f"empty train batch (no RL token), consecutive: {self.empty_batches}", flush=True)
        if self.empty_batches >= MAX_CONSECUTIVE_EMPTY_BATCHES:
            raise RuntimeError(
                f"{self.empty_batches} consecutive empty train batches (every group had equal "
                "rewards): a task too easy or too hard, a sampling temperature too low, or a policy that "
                "collapsed (a learning rate too high: its reward falling step by step, `autorl show`)"
            )

    def _record_step(
        self, stats: dict[str, Any], n_samples: int, t0: float, train_seconds: float, start: float
    ) -> None:
        """Count the step, append its metrics row (``step`` event too), save when a save is due."""
        self.empty_batches = 0
        self.step += 1
        t3 = time.perf_counter()
        seconds = t3 - t0
        row = {
            "step": self.step,
            **stats,
            "reward": stats["reward_mean"],
            "seconds": seconds,
            "gen_seconds": seconds - train_seconds,  # sampling the step waited for (not overlapped)
            "train_seconds": train_seconds,
            "samples_per_s": n_samples / seconds if seconds > 0 else 0.0,
            "elapsed_s": t3 - start,
            "peak_memory_gb": peak_memory_gb(self.device),
        }
        row = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in row.items()}
        with open(self.metrics_path, "a") as f:
            f.write(json.dumps(row) + "\n")
        progress.emit("step", **row)
        self._snapshots(t3 - start)
        self._rungs(t3 - start)
        if self._save_due():
            self.save()


def exit_on_stop() -> None:
    """Until the trainer takes over SIGTERM/SIGINT (right before `ready`), a stop request exits at once: there
    is nothing to save yet, and a compile at start-up can take a minute where inductor's cache is cold."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(0))


def main(argv: list[str] | None = None) -> int:
    args = EmbeddedChildArgs.parse(argv, "autorl embedded GRPO trainer (prime-rl semantics)")
    exit_on_stop()
    spec = RunSpec.model_validate_json(args.config.read_text())
    if args.threads is not None:
        spec = spec.model_copy(update={"num_threads": args.threads})
    if args.gpu_share is not None:
        spec = spec.model_copy(update={"gpu_share": args.gpu_share})
    trainer = Trainer(spec, args.run_dir, args.seed)
    return trainer.run()


if __name__ == "__main__":
    sys.exit(main())
