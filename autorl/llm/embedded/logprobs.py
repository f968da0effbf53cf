"""The trainer's log-probs of the sampled completion tokens, ``log_softmax(logits / T)`` at each token,
without a full-vocabulary fp32 copy of a micro-batch's logits.

The plain way (``completion_logprobs(..., chunk_bytes=None)``: the model's logits for every position, made
fp32, divided by T, then ``logsumexp``) holds several [rows, positions, vocab] tensors at once, and autograd
keeps them for the backward: on the Qwen3-0.6B shape (vocab 151,936) that is most of a training step's peak.
The chunked way takes the decoder's hidden states at the RL tokens only (``mask``) and applies the LM head a
chunk of tokens at a time in ``ChunkedLogprob``, which keeps only each token's log-normaliser and recomputes a
chunk's logits in the backward (as prime-rl's trainer does with its chunked LM head; and as a fused linear
cross-entropy does). The loss and its gradient are the plain way's up to float rounding
(tests/test_logprobs.py). It applies where the head is a plain linear layer with no bias, no scale and no
soft-capping (``plain_head``); other models take the plain way.

The forward (``packed_layout``): a GRPO batch holds ``group_size`` completions of each prompt. Each distinct
prompt runs once, on a line with its rows' completions after it and no padding between them, under a
block-causal attention mask (a completion token sees its prompt and its own row's earlier tokens). The
gradients of every row flow into the one prompt forward, so the result equals a forward per row up to float
rounding (tests/test_logprobs.py). It replaced a prefill of the distinct prompts whose KV cache was
fanned out to the rows, under a second forward of the completions padded to the longest: one forward
instead of two, no cache copies, no padding (docs/verified.md: 1.2x the training step's speed on one core).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from autorl.llm.embedded.batches import Sample
from autorl.llm.embedded.generation import left_pad, positions

# A chunk's fp32 logits are at most this many bytes (its tokens x vocab x 4); 32 MiB is 55 tokens of the
# Qwen3-0.6B shape's vocab, the whole micro-batch of the shipped tiny model.
CHUNK_BYTES = 32 * 2**20
HEAD_CHANGERS = ("final_logit_softcapping", "logit_scale")  # config keys that change logits after the head
# A packed line holds its prompt and the completions that fit in this many positions (a line with one
# completion is as long as it needs): its attention mask is W x W bools, and attention computes every pair.
PACK_WIDTH = 2048
CPU = torch.device("cpu")


def plain_head(model: torch.nn.Module) -> torch.nn.Linear | None:
    """The model's LM head when its logits are exactly ``hidden @ head.weight.T`` (and its decoder is
    reachable as ``get_decoder()``); None otherwise."""
    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    config = getattr(model, "config", None)
    scaled = any(getattr(config, k, None) not in (None, 1.0) for k in HEAD_CHANGERS)
    if not isinstance(head, torch.nn.Linear) or head.bias is not None or scaled:
        return None
    return head if hasattr(model, "get_decoder") else None


def _logits(hidden: Tensor, weight: Tensor, inv_temp: Tensor) -> Tensor:
    """A chunk's logits over T, in fp32 at least, from its hidden states (the matmul in their dtype, as
    autocast does)."""
    z = torch.nn.functional.linear(hidden, weight.to(hidden.dtype))
    return z.to(torch.promote_types(z.dtype, torch.float32)) * inv_temp[:, None]


class ChunkedLogprob(torch.autograd.Function):
    """``log_softmax(hidden @ weight.T / T)[target]`` per token, a chunk of tokens at a time; the backward
    recomputes each chunk's logits from the saved hidden states and log-normalisers, under the forward's
    autocast (the backward runs outside it: without it, on a GPU under bf16 autocast, its three matmuls a
    chunk, ~8K tokens x the 0.6B shape's 151,936-token vocabulary a step, would run in float32, and its
    logits would not be the ones the forward's normalisers came from)."""

    @staticmethod
    def forward(
        ctx: Any, hidden: Tensor, weight: Tensor, target: Tensor, inv_temp: Tensor, chunk: int
    ) -> Tensor:
        wide = torch.promote_types(hidden.dtype, torch.float32)
        out = torch.empty(hidden.shape[0], dtype=wide, device=hidden.device)
        lse = torch.empty_like(out)
        for s in range(0, hidden.shape[0], chunk):
            z = _logits(hidden[s : s + chunk], weight, inv_temp[s : s + chunk])
            lse[s : s + chunk] = torch.logsumexp(z, dim=-1)
            out[s : s + chunk] = z.gather(-1, target[s : s + chunk, None])[:, 0] - lse[s : s + chunk]
        ctx.save_for_backward(hidden, weight, target, inv_temp, lse)
        ctx.chunk = chunk
        kind = hidden.device.type
        ctx.autocast = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else None
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        kind = ctx.saved_tensors[0].device.type
        with torch.autocast(kind, dtype=ctx.autocast, enabled=ctx.autocast is not None):
            return ChunkedLogprob._backward(ctx, grad)

    @staticmethod
    def _backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        hidden, weight, target, inv_temp, lse = ctx.saved_tensors
        need_h, need_w = ctx.needs_input_grad[:2]
        grad_h = torch.empty_like(hidden) if need_h else None
        wide = torch.promote_types(weight.dtype, torch.float32)
        grad_w = torch.zeros(weight.shape, dtype=wide, device=weight.device) if need_w else None
        w = weight.to(hidden.dtype)
        for s in range(0, hidden.shape[0], ctx.chunk):
            h, t, it = hidden[s : s + ctx.chunk], target[s : s + ctx.chunk], inv_temp[s : s + ctx.chunk]
            # d logp / d z = onehot(target) - softmax(z); then through z = (h @ w.T) / T
            z = _logits(h, weight, it)
            g = grad[s : s + ctx.chunk, None].to(z.dtype)
            dz = torch.exp(z - lse[s : s + ctx.chunk, None]).mul_(-g)
            dz.scatter_add_(-1, t[:, None], g).mul_(it[:, None])
            dz = dz.to(hidden.dtype)
            if grad_h is not None:
                grad_h[s : s + ctx.chunk] = dz @ w
            if grad_w is not None:
                grad_w += (dz.T @ h).to(wide)
        return grad_h, None if grad_w is None else grad_w.to(weight.dtype), None, None, None


def pack(rows: list[tuple[Sample, int]], pad_id: int, device: torch.device) -> tuple[Tensor, ...]:
    """The rows' kept completion tokens [R, W] (pad elsewhere), their mask, their sampling logprobs, each
    row's temperature [R] and advantage [R], on ``device``."""
    keeps = torch.tensor([keep for _, keep in rows], dtype=torch.long)
    width = max(1, int(keeps.max()))
    mask = torch.arange(width) < keeps[:, None]  # each row's kept tokens come first
    comp = torch.full((len(rows), width), pad_id, dtype=torch.long)
    comp[mask] = torch.tensor([t for s, keep in rows for t in s.completion_ids[:keep]], dtype=torch.long)
    logmu = torch.zeros((len(rows), width), dtype=torch.float32)
    logmu[mask] = torch.tensor([x for s, keep in rows for x in s.logprobs[:keep]], dtype=torch.float32)
    temps = torch.tensor([s.temperature for s, _ in rows], dtype=torch.float32)
    adv = torch.tensor([s.advantage for s, _ in rows], dtype=torch.float32)
    return tuple(x.to(device) for x in (comp, mask, logmu, temps, adv))


def packed_layout(
    rows: list[tuple[Sample, int]], pad_id: int, device: torch.device = CPU
) -> tuple[Tensor, ...]:
    """The rows laid out without padding between them: each distinct prompt once, then the inputs of its rows'
    completions (kept tokens 0..n-2) after it on the same line, a line holding at most PACK_WIDTH positions (a
    prompt starts a new line when its line is full). Returns (token ids [L, W], the attention mask
    [L, 1, W, W]: a prompt token sees its prompt's earlier tokens, a completion token its prompt and its own
    row's earlier tokens, a padding token itself and the padding before it; position ids [L, W]; and for each
    kept token, in the rows' order, the flat index [N] of the position that predicts it: the last prompt token
    for token 0, input j - 1 for token j), on ``device``. A row that keeps no token takes no place."""
    lines: list[list[int]] = []
    segments: list[list[int]] = []  # 0 the prompt, r + 1 row r's completion
    position: list[list[int]] = []
    open_line: dict[tuple[int, ...], int] = {}
    line_of, index_in = [], []  # per kept token: its line and where on it the position that predicts it is
    for r, (sample, keep) in enumerate(rows):
        if not sample.prompt_ids:
            raise ValueError("a row's prompt has no token: nothing predicts its first completion token")
        if keep <= 0:
            continue
        prompt, inputs = tuple(sample.prompt_ids), sample.completion_ids[: keep - 1]
        line = open_line.get(prompt)
        if line is None or len(lines[line]) + len(inputs) > PACK_WIDTH:
            line = open_line[prompt] = len(lines)
            lines.append(list(prompt))
            segments.append([0] * len(prompt))
            position.append(list(range(len(prompt))))
        start = len(lines[line])
        line_of += [line] * keep
        index_in += [len(prompt) - 1, *range(start, start + len(inputs))]
        lines[line] += inputs
        segments[line] += [r + 1] * len(inputs)
        position[line] += range(len(prompt), len(prompt) + len(inputs))
    width = max(len(x) for x in lines)
    ids = torch.full((len(lines), width), pad_id, dtype=torch.long)
    seg = torch.full((len(lines), width), -1, dtype=torch.long)
    pos = torch.zeros((len(lines), width), dtype=torch.long)
    for i, (tokens, s, q) in enumerate(zip(lines, segments, position, strict=True)):
        ids[i, : len(tokens)], seg[i, : len(s)], pos[i, : len(q)] = map(torch.tensor, (tokens, s, q))
    ids, seg, pos = (x.to(device) for x in (ids, seg, pos))
    sees, seen = seg[:, :, None], seg[:, None, :]  # the mask is built where it is used: L x W x W
    visible = (seen == sees) | ((seen == 0) & (sees >= 0))
    mask = torch.ones((width, width), dtype=torch.bool, device=device).tril() & visible
    source = (torch.tensor(line_of) * width + torch.tensor(index_in)).to(device)
    return ids, mask[:, None], pos, source


def _packed(
    model: torch.nn.Module,
    rows: list[tuple[Sample, int]],
    pad_id: int,
    device: torch.device,
    hidden: bool,
    decoder: Callable[..., Any] | None = None,
) -> Tensor:
    """The outputs (hidden states, or logits) that predict each kept token [N, .], in the rows' order: one
    forward of `packed_layout`'s lines, each distinct prompt run once for the rows on its line. `decoder`:
    what runs for the model's decoder when `hidden` (compiled_train.py's compiled one)."""
    ids, mask, pos, source = packed_layout(rows, pad_id, device)
    step: Callable[..., Any] = model
    if hidden:
        step = decoder or model.get_decoder()  # type: ignore[operator]
    out = step(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False)
    return (out.last_hidden_state if hidden else out.logits).flatten(0, 1)[source]


def packs(model: torch.nn.Module) -> bool:
    """Whether the model runs the rows packed: its attention is sdpa (which takes the [L, 1, W, W] mask), no
    layer attends through a sliding window (a 4D mask replaces the window's own), and no decoder layer is
    checkpointed (such a model runs whole rows, the way the GPU kit measured it: docs/verified.md)."""
    config: Any = model.config
    windowed = "sliding_attention" in (getattr(config, "layer_types", None) or ()) or bool(
        getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True)
    )
    checkpointed = getattr(model, "is_gradient_checkpointing", False)
    return config._attn_implementation == "sdpa" and not windowed and not checkpointed


def _whole_rows(
    model: torch.nn.Module,
    rows: list[tuple[Sample, int]],
    comp: Tensor,
    mask: Tensor,
    pad_id: int,
    hidden: bool,
) -> Tensor:
    """`_packed`'s outputs from one forward of every row's prompt and completion, left-padded to one width,
    for a model that does not run packed (`packs`). Each row runs its own prompt: on flash_attention_2 (a GPU
    with the `flash-attn` extra) a model too small to be checkpointed shares no prompt compute."""
    ids, prompt_mask = left_pad([s.prompt_ids for s, _ in rows], pad_id, comp.device)
    width, prompt_lens = ids.shape[1], prompt_mask.long().sum(-1)
    after = prompt_lens.unsqueeze(-1) + torch.arange(comp.shape[1] - 1, device=comp.device)
    step = model.get_decoder() if hidden else model  # type: ignore[operator]
    out = step(
        input_ids=torch.cat([ids, comp[:, :-1]], dim=1),
        attention_mask=torch.cat([prompt_mask, mask[:, :-1]], dim=1).long(),
        position_ids=torch.cat([positions(prompt_mask), after], dim=1),
        use_cache=False,
    )
    return (out.last_hidden_state if hidden else out.logits)[:, width - 1 :][mask]


def completion_logprobs(
    model: torch.nn.Module,
    rows: list[tuple[Sample, int]],
    pad_id: int,
    device: torch.device,
    autocast: contextlib.AbstractContextManager | None = None,
    chunk_bytes: int | None = CHUNK_BYTES,
    decoder: Callable[..., Any] | None = None,
) -> tuple[Tensor, ...]:
    """(logpi, logmu, adv, mask): the trainer's logprobs of the rows' kept completion tokens [R, W] (0 off the
    mask), the sampling ones, the advantages [R] and the mask.

    The rows run in one forward of `packed_layout`'s lines (each distinct prompt once, no padding between
    completions); a model that does not (`packs`) runs each row whole.
    ``chunk_bytes`` None (or a head that is not plain) computes every position's full logits, the reference
    the chunked way is tested against. ``decoder`` runs in place of the model's decoder where the rows run
    packed through the chunked head (compiled_train.py)."""
    comp, mask, logmu, temps, adv = pack(rows, pad_id, device)
    head = plain_head(model) if chunk_bytes is not None else None
    inv_temp, target = (1.0 / temps)[:, None].expand_as(mask)[mask], comp[mask]
    with autocast or contextlib.nullcontext():
        if packs(model):
            out = _packed(model, rows, pad_id, device, head is not None, decoder)
        else:
            out = _whole_rows(model, rows, comp, mask, pad_id, head is not None)
        if head is not None:
            assert chunk_bytes is not None
            chunk = max(1, chunk_bytes // (4 * head.weight.shape[0]))
            picked = ChunkedLogprob.apply(out, head.weight, target, inv_temp, chunk)
    if head is None:
        logits = out.float() * inv_temp[:, None]
        picked = logits.gather(-1, target[:, None])[:, 0] - torch.logsumexp(logits, dim=-1)
    logpi = torch.zeros(mask.shape, dtype=picked.dtype, device=device).masked_scatter(mask, picked)
    return logpi, logmu, adv, mask
