"""``StaticSampler``: HFSampler's sampling (the same loop, draws and logprobs) on a preallocated KV cache, its
decode step optionally compiled once (issue 50 item 1).

HFSampler's ``DynamicCache`` grows by one token a step (a concatenation per layer) and its attention mask by
one column, so no two steps have the same shapes. Here the prompts' prefill (shared_prefill, each distinct
prompt once) is copied into a transformers ``StaticCache`` of ``prompt width + max_new_tokens`` positions and
the attention mask is preallocated at that width, so every decode step of a call has the same shapes and
writes the cache in place: what ``torch.compile`` needs to capture the step (``compiled``, with dynamic
shapes: one compile, 16 s cold for the tiny model on the 2-core VM, 5 s from inductor's disk cache, serves
every batch size and prompt width).
scripts/bench_sampler.py measured the compiled step (dynamic shapes) at 1.24x HFSampler's tokens/s on one core
(1.39x compiled for one fixed shape), scripts/bench_trl.py the trainer with it at 1.17x HFSampler's samples/s
on one core: the one-core CPU default since 2026-11-28 (docs/verified.md). The trainer compiles it before
`ready` (``warm``: start-up, outside the training clock); in the ``hf-static-process`` sampler the sampling
process compiles and warms it before it says ready (sampler_process.py). On a CPU machine the warm starter
has compiled it already (prewarm.py): ``warm`` then finds it.

``graphs`` (for a CUDA GPU, where a decode step is launch-bound: a few hundred small kernels for a few
milliseconds of weight reads) compiles the step with ``mode="reduce-overhead"``: fixed shapes, each shape's
step captured once as a CUDA graph and replayed (on a CPU the same compiled step, without graphs). Its shapes
stay fixed from call to call: the cache and the attention mask are kept per (rows, cache width), and the
prompts' width is rounded up to ``WIDTH_STEP`` (the new tokens are written from there; the gap is masked),
so a run's batches share one capture. On an H200 (the kit's part 6, 2026-11-28, docs/verified.md) the trainer
with it ran the Qwen3-0.6B shape at 3.50x HFSampler's samples/s, the GPU default since (without vLLM).

On a CPU the compiled step (dynamic shapes, one graph) runs all of dynamo's guards at a call's first decode
step only. They check what the step is handed: the model's modules and parameters, the cache's layers, the
tensors' dtypes, layouts and size relations, and the global state (grad mode, autocast). A call's later steps
are handed the same model and cache and tensors of the same layouts; only `t`'s values differ, and no guard
reads them, where every layer is a full-attention StaticLayer (its `update` writes tensors in place; a
sliding-window layer counts its tokens in a guarded Python int, and its steps keep their guards). So they run
under dynamo's ``skip_guard_eval_unsafe`` stance, which checks only the global state and what tells two
compiled entries apart; where a change there would compile anew, dynamo raises before running anything, and
the step runs again with its guards (`_unguarded`: safe because the step is one graph, ``fullgraph``). On one
CPU thread whole sampling calls of the trainer's shape took 1.047-1.085x as long with the guards at every step
(medians paired by block, three runs; studies/fast-2026-11-29/guard-once.log); the trainer beside TRL showed
no difference the VM's swings resolve (guard-once-rounds.log). With ``graphs``, and on a GPU, every step keeps
its guards unless asked (``guard_once``): unmeasured there. The guards count tensors and modules, not their
sizes: on a model of Qwen3-0.6B's structure (28 layers) at tiny widths they cost 0.09-0.61 ms a decode step
(four runs; 3 layers: 0.11 ms) on one core of the 2-core VM (studies/fast-2026-12-01/guard-layers.log),
against ~7.9 ms a new token (prefill and draw included) in the kit's H200 run of 2026-11-28; the kit's
fast/sampler row times `graphs` both ways.

Under autocast the cache holds autocast's dtype (`cache_dtype`) and each layer casts the keys and values it is
given (`casting`): a Qwen3 layer's keys come out of a float32 norm, its values out of a bf16 projection.

``fused`` compiles the next draw into the step too (generation.pick: the temperature's log-softmax, the draw
at uniforms the call drew at its start, the bookkeeping of ended rows; tensors only), so that with ``graphs``
a decode step is one replay, not a replay and ~25 small kernels launched one by one. It is a default nowhere:
on the CPU a compiled draw gained nothing (2026-12-01: its exp and log dominate); on a GPU the kit's
fast/sampler row times it (``fused_vs_graphs``), with ``guard_once`` and ``sync_every = 8``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from autorl.llm.embedded.compiling import compile_step
from autorl.llm.embedded.generation import Decode, Fixed, HFSampler, Picked, Rollouts, pick, shared_prefill

WIDTH_STEP = 64  # graphs: prompt widths are rounded up to a multiple of this (one capture per rounded width)
WARM_STEPS = 3  # decode steps `warm` runs: torch's CUDA graph trees warm up on the first and capture later


def cache_dtype(device: torch.device, keys: torch.dtype) -> torch.dtype:
    """The static cache's dtype: autocast's where it is on (attention computes in it: storing the keys and
    values so loses nothing, and halves the cache a decode step reads), else the prefill's keys'."""
    if torch.is_autocast_enabled(device.type):
        return torch.get_autocast_dtype(device.type)
    return keys


@functools.cache
def casting(layer_class: Any) -> Any:
    """`layer_class` (a transformers cache layer: StaticLayer, or its sliding-window kind) whose `update`
    casts the new keys and values to the cache's dtype first. Under autocast a Qwen3 layer's keys come out of
    its float32 RMSNorm and its values out of a bf16 projection, and StaticLayer's `index_copy_` takes
    neither into a cache of the other dtype (DynamicCache's concatenation promotes; found by the GPU kit's
    first part-6 run, 2026-11-28). A class, one per layer class, not a closure per layer: the compiled step
    sees the same `update` at every call (no recompile: TORCH_LOGS=recompiles over 4 calls of the tiny model)
    and a cache holds no cycle that would keep it past its call."""

    def update(self: Any, keys: Tensor, values: Tensor, *args: Any, **kwargs: Any) -> Any:
        return layer_class.update(self, keys.to(self.dtype), values.to(self.dtype), *args, **kwargs)

    return type(f"Casting{layer_class.__name__}", (layer_class,), {"update": update})


class StaticSampler(HFSampler):
    """Temperature sampling on a preallocated KV cache (see the module docstring)."""

    def __init__(
        self,
        model: torch.nn.Module,
        pad_id: int,
        eos_ids: Sequence[int],
        compiled: bool = False,
        graphs: bool = False,
        guard_once: bool | None = None,
        sync_every: int = 1,
        fused: bool = False,
    ):
        super().__init__(model, pad_id, eos_ids, sync_every)
        self.graphs = graphs
        # the compiled step's guards at a call's first decode step only (the module docstring); None: where
        # that is measured, a CPU without graphs. The GPU kit's fast/sampler row times graphs both ways.
        self.guard_once = guard_once
        # the next draw (generation.pick) in the compiled step too: with graphs, one replay a step where the
        # draw and the bookkeeping launch ~25 small kernels one by one. The kit's fast/sampler row times it
        self.fused = fused
        self.compiled = compiled or graphs
        self.static = True  # False once a compiled step failed: HFSampler's way from then on
        # graphs: (rows, cache width, dtype) -> (cache, attention mask), kept from call to call
        self._kept: dict[tuple[int, int, torch.dtype], tuple[Any, Tensor]] = {}
        if graphs:  # fixed shapes, a CUDA graph per shape (none on a CPU)
            compiling: Any = functools.partial(compile_step, mode="reduce-overhead", dynamic=False)
        elif compiled:  # dynamic shapes: one compile serves every batch (rows and prompt width change); one
            # graph (a model that breaks it samples HFSampler's way): `_unguarded` reruns a whole step
            compiling = functools.partial(compile_step, dynamic=True, fullgraph=True)
        else:
            compiling = lambda fn: fn  # noqa: E731
        self._step: Any = compiling(self._forward)  # torch.compile compiles at a first call: one of the two
        self._fused_step: Any = compiling(self._forward_pick)
        self._feed: Any = None  # this call's way to run a compiled step (`start`)

    def sample(self, *args: Any, **kwargs: Any) -> Rollouts | None:
        """HFSampler.sample on the static cache; if the compiled step fails (a compiler missing, a model
        torch.compile cannot capture), one warning line and HFSampler's way for the rest of the process."""
        try:
            return super().sample(*args, **kwargs)
        except Exception as exc:
            if not (self.compiled and self.static):
                raise
            self._fall_back(exc)
            return super().sample(*args, **kwargs)

    @torch.no_grad()
    def warm(self, rows: int, max_new_tokens: int) -> float | None:
        """Compile the decode step now, before the training clock starts: a few decode steps on one-token
        prompts, drawing nothing (the run's generator is untouched). Compiled with dynamic shapes, that one
        compile serves every call; with `graphs`, the capture is for `rows` prompts of at most WIDTH_STEP
        tokens and `max_new_tokens` (a batch's shape where its sources set max_completion_tokens), and a call
        of another shape captures at its first use. The seconds it took; None when nothing compiles or the
        compile failed (one warning line, then HFSampler's way, as `sample`)."""
        if not (self.compiled and self.static):
            return None
        device = next(self.model.parameters()).device
        was_training = self.model.training
        self.model.eval()
        t0 = time.perf_counter()
        try:
            _, decode, _ = self.start([[self.pad_id]] * rows, max_new_tokens, device)
            tok = torch.full((rows, 1), self.pad_id, dtype=torch.long, device=device)
            # pick's arguments as `sample` makes them (a fused step guards on their shapes and dtypes)
            u = torch.zeros((rows, 1), device=device)
            finished = torch.zeros(rows, dtype=torch.bool, device=device)
            fixed: Fixed = (torch.tensor(1.0, device=device), self.eos_ids.to(device))
            for t in range(min(WARM_STEPS, max_new_tokens)):  # graphs: warm-up runs, then the capture
                self.step(decode, tok, t, u, finished, fixed)
            return time.perf_counter() - t0
        except Exception as exc:
            self._fall_back(exc)
            return None
        finally:
            self.model.train(was_training)

    def _fall_back(self, exc: Exception) -> None:
        self.static = False
        print(f"warning: the compiled sampler failed ({type(exc).__name__}: {exc}); HFSampler from now")

    def _forward(self, tok: Tensor, attn: Tensor, pos: Tensor, cache_position: Tensor, cache: Any) -> Tensor:
        out = self.model(
            input_ids=tok,
            attention_mask=attn,
            position_ids=pos,
            cache_position=cache_position,
            past_key_values=cache,
            use_cache=True,
        )
        return out.logits[:, -1]

    def _forward_pick(
        self,
        tok: Tensor,
        attn: Tensor,
        pos: Tensor,
        cache_position: Tensor,
        cache: Any,
        u: Tensor,
        finished: Tensor,
        temperature: Tensor,
        eos: Tensor,
    ) -> Picked:
        """The decode step and the next draw in one (`fused`): `_forward`'s arguments, then `pick`'s."""
        logits = self._forward(tok, attn, pos, cache_position, cache)
        return pick(logits, u, finished, temperature, eos, self.pad_id)

    def step(self, decode: Decode, tok: Tensor, t: int, u: Tensor, finished: Tensor, fixed: Fixed) -> Picked:
        """HFSampler.step; `fused`, the compiled step with the draw, fed as this call's `decode` feeds."""
        if not (self.fused and self.static):
            return super().step(decode, tok, t, u, finished, fixed)
        picked = self._feed(self._fused_step, tok, t, u, finished, *fixed)
        # a replay overwrites a graph's outputs: the loop stores the others before the next step
        return picked._replace(finished=picked.finished.clone()) if self.graphs else picked

    def start(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int, device: torch.device
    ) -> tuple[Tensor, Decode, Tensor]:
        if not self.static:
            return super().start(prompts, max_new_tokens, device)
        logits, grown, prompt_mask, prompt_lens = shared_prefill(self.model, prompts, self.pad_id, device)
        batch, width = prompt_mask.shape
        room = -(-width // WIDTH_STEP) * WIDTH_STEP if self.graphs else width  # where the new tokens go
        dtype = cache_dtype(device, grown.layers[0].keys.dtype)  # type: ignore[attr-defined]
        cache, attn = self._cache(batch, room + max_new_tokens, dtype, device)
        layers: list[Any] = list(cache.layers)  # StaticLayer: keys, values, cumulative_length
        for layer, prefilled in zip(layers, grown.layers, strict=True):  # type: ignore[attr-defined]
            if not layer.is_initialized:
                layer.lazy_initialization(prefilled.keys.to(dtype), prefilled.values.to(dtype))
                layer.__class__ = casting(type(layer))  # type: ignore[arg-type]
            layer.keys[:, :, :width].copy_(prefilled.keys)
            layer.values[:, :, :width].copy_(prefilled.values)
            layer.cumulative_length.fill_(room)  # StaticLayer.update writes the next token there
        attn.zero_()  # a kept cache's other positions hold an earlier call's keys: masked out
        attn[:, :width] = prompt_mask.long()
        next_pos = prompt_lens.unsqueeze(-1)
        where = torch.arange(room, room + max_new_tokens, device=device)

        # the guards once a call (the module docstring), where every layer is full attention (a sliding-window
        # layer keeps a Python count of its tokens, guarded)
        once = self.guard_once if self.guard_once is not None else not self.graphs and device.type == "cpu"
        unguarded = self.compiled and once and not any(layer.is_sliding for layer in layers)

        def feed(step: Any, tok: Tensor, t: int, *after: Tensor) -> Any:
            """Run a compiled step (`_step`, or `_fused_step` with pick's arguments `after`) on token t."""
            attn[:, room + t] = 1  # the token fed now sits at position room + t of the cache
            if self.graphs:
                torch.compiler.cudagraph_mark_step_begin()  # the last step's output is no longer read
            # contiguous: a column of the caller's token buffer has its width as stride, `warm`'s tokens
            # have 1; the compiled step guards on strides and would compile again at the first real call
            args = (tok.contiguous(), attn, next_pos + t, where[t : t + 1], cache, *after)
            return self._unguarded(step, args) if unguarded and t > 0 else step(*args)

        def decode(tok: Tensor, t: int) -> Tensor:
            logits = feed(self._step, tok, t)
            return logits.clone() if self.graphs else logits  # a replay overwrites a graph's output

        self._feed = feed
        return logits, decode, prompt_mask

    @staticmethod
    def _unguarded(step: Any, args: tuple[Any, ...]) -> Any:
        """The compiled step without the guards its call's first step ran (the module docstring). Where dynamo
        finds, among what it still checks, that the step would compile anew, it raises before running
        anything: then the step runs with its guards."""
        try:
            with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
                return step(*args)
        except RuntimeError as exc:  # "Recompilation triggered with skip_guard_eval_unsafe stance"
            if "skip_guard_eval_unsafe" not in str(exc):
                raise
        return step(*args)

    def _cache(self, batch: int, length: int, dtype: torch.dtype, device: torch.device) -> tuple[Any, Tensor]:
        """A StaticCache of `length` positions and its attention mask: new for each call, or with `graphs`
        kept per (rows, length, dtype), so that a captured step finds its tensors where it left them (and a
        call under autocast never gets a cache made without it). One per prompt width rounded up to
        WIDTH_STEP and row count: a run's batches of one shape share one."""
        from transformers import StaticCache

        key = (batch, length, dtype)
        kept = self._kept.get(key) if self.graphs else None
        if kept is None:
            cache = StaticCache(config=self.model.config, max_cache_len=length)
            kept = cache, torch.zeros((batch, length), dtype=torch.long, device=device)
            if self.graphs:
                torch._dynamo.mark_static_address(kept[1])  # updated in place between the replays
                self._kept[key] = kept
        return kept
