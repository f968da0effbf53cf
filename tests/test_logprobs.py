"""The trainer's log-probs with the LM head applied a chunk of tokens at a time
(autorl/llm/embedded/logprobs.py) against the plain full-vocabulary way: the same log-probs, GRPO loss and
gradients, on the tiny model (fp32, CPU), with prompts of mixed lengths, rows cut short of their completion,
mixed temperatures and chunks that split rows."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import AutoModelForCausalLM

from autorl.llm.embedded import grpo, logprobs
from autorl.llm.embedded.batches import Sample
from autorl.llm.embedded.logprobs import (
    PACK_WIDTH,
    ChunkedLogprob,
    completion_logprobs,
    packed_layout,
    packs,
    plain_head,
)
from autorl.llm.schema import DefaultLoss

PAD = 0


def rows(vocab: int) -> list[tuple[Sample, int]]:
    """Two groups (prompts of 3 and 6 tokens) of 3 rows each; completions of 1-7 tokens, some cut short."""
    g = torch.Generator().manual_seed(3)

    def ids(n: int) -> list[int]:
        return torch.randint(2, vocab, (n,), generator=g).tolist()

    out = []
    for prompt, temp in ((ids(3), 0.7), (ids(6), 1.3)):
        for n, keep, adv in ((7, 7, 0.5), (4, 2, -0.25), (1, 1, -0.25)):
            logmu = (-torch.rand(n, generator=g) * 3).tolist()
            out.append((Sample(prompt, ids(n), logmu, 1.0, adv, temp, 0, "s", False), keep))
    return out


@pytest.fixture(scope="module")
def model(tiny_model: Path) -> torch.nn.Module:
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)


def loss_and_grads(model: torch.nn.Module, batch: list[tuple[Sample, int]], chunk_bytes: int | None):
    model.zero_grad(set_to_none=True)
    cpu = torch.device("cpu")
    logpi, logmu, adv, mask = completion_logprobs(model, batch, PAD, cpu, chunk_bytes=chunk_bytes)
    loss_sum, _ = grpo.token_loss(logpi, logmu, adv, mask, DefaultLoss())
    loss = grpo.step_loss_share(loss_sum, int(mask.sum()))
    loss.backward()
    return logpi.detach(), mask, loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def test_chunked_logprobs_loss_and_gradients_equal_the_full_vocabulary_ones(model):
    vocab = model.get_output_embeddings().weight.shape[0]
    assert plain_head(model) is not None  # the tiny Qwen2 (tied embeddings) takes the chunked way
    batch = rows(vocab)
    lp_full, mask, loss_full, grads_full = loss_and_grads(model, batch, None)
    for tokens_a_chunk in (1, 3, 1000):  # a token a chunk, chunks across rows, everything in one
        lp, mask2, loss, grads = loss_and_grads(model, batch, 4 * vocab * tokens_a_chunk)
        assert torch.equal(mask, mask2) and int(mask.sum()) == 2 * (7 + 2 + 1)
        torch.testing.assert_close(lp[mask], lp_full[mask], atol=1e-5, rtol=1e-5)
        assert torch.all(lp[~mask] == 0)
        torch.testing.assert_close(loss, loss_full, atol=1e-5, rtol=1e-5)
        for name, g in grads_full.items():
            torch.testing.assert_close(grads[name], g, atol=1e-5, rtol=1e-4, msg=name)


def test_the_chunked_head_has_the_gradient_torch_computes():
    """The autograd function against torch's own log_softmax on random tensors (gradcheck in float64)."""
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(5, 4, dtype=torch.float64, generator=g, requires_grad=True)
    weight = torch.randn(7, 4, dtype=torch.float64, generator=g, requires_grad=True)
    target = torch.tensor([0, 6, 3, 3, 1])
    inv_temp = torch.tensor([1.0, 0.5, 2.0, 1.0, 1.5], dtype=torch.float64)

    def chunked(h, w):
        return ChunkedLogprob.apply(h, w, target, inv_temp, 2)

    assert torch.autograd.gradcheck(chunked, (hidden, weight))
    plain = torch.log_softmax((hidden @ weight.T) * inv_temp[:, None], -1).gather(-1, target[:, None])[:, 0]
    torch.testing.assert_close(chunked(hidden, weight).double(), plain, atol=1e-6, rtol=1e-6)


class Matmuls(TorchDispatchMode):
    """The dtypes of the tensors each matrix multiply is given while it is on."""

    def __init__(self) -> None:
        super().__init__()
        self.dtypes: list[set[torch.dtype]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in (torch.ops.aten.mm, torch.ops.aten.addmm, torch.ops.aten.bmm):
            self.dtypes.append({a.dtype for a in args if isinstance(a, torch.Tensor)})
        return func(*args, **(kwargs or {}))


def test_the_chunked_heads_backward_computes_as_its_forward_under_autocast():
    """Under bf16 autocast (the GPU's training step; here on the CPU) the backward's matmuls take bf16, as the
    forward's do (autograd runs a backward outside autocast: they took float32), and the gradients are the
    plain head's under autocast, within bf16 rounding."""
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(6, 8, generator=g, requires_grad=True)
    weight = torch.randn(11, 8, generator=g, requires_grad=True)
    target = torch.tensor([0, 10, 3, 3, 1, 7])
    inv_temp = torch.tensor([1.0, 0.5, 2.0, 1.0, 1.5, 0.8])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        chunked = ChunkedLogprob.apply(hidden, weight, target, inv_temp, 4)
        z = torch.nn.functional.linear(hidden, weight).float() * inv_temp[:, None]
        plain = torch.log_softmax(z, -1).gather(-1, target[:, None])[:, 0]
    up = torch.randn(6, generator=g)
    with Matmuls() as seen:
        got = torch.autograd.grad(chunked, (hidden, weight), up)
    assert len(seen.dtypes) == 6 and all(d == {torch.bfloat16} for d in seen.dtypes)  # 3 a chunk
    torch.testing.assert_close(chunked, plain, atol=1e-5, rtol=1e-5)
    for mine, torchs in zip(got, torch.autograd.grad(plain, (hidden, weight), up), strict=True):
        torch.testing.assert_close(mine, torchs, atol=2e-2, rtol=2e-2)
    with Matmuls() as seen:  # without autocast the backward stays in the inputs' float32
        torch.autograd.grad(ChunkedLogprob.apply(hidden, weight, target, inv_temp, 4), (hidden, weight), up)
    assert seen.dtypes and all(d == {torch.float32} for d in seen.dtypes)


def test_a_head_that_changes_the_logits_takes_the_plain_way(model, monkeypatch):
    """Soft-capped or scaled logits are not `hidden @ weight.T`: such a model is not chunked."""
    monkeypatch.setattr(model.config, "final_logit_softcapping", 30.0, raising=False)
    assert plain_head(model) is None
    monkeypatch.setattr(model.config, "final_logit_softcapping", None, raising=False)
    assert plain_head(model) is not None


def test_packed_layout_runs_each_prompt_once_with_its_rows_completions():
    """Each distinct prompt once, its rows' completion inputs after it with no padding between them; the
    position that predicts each kept token; and what each of those positions sees: its prompt and its own
    row's earlier tokens, nothing of another row's."""
    batch = rows(50)
    ids, mask, pos, source = packed_layout(batch, PAD)
    # two lines: prompt 3 + inputs 6 + 1 + 0, prompt 6 + the same: width 13, no padding on the longer
    assert ids.shape == (2, 13) and mask.shape == (2, 1, 13, 13)
    assert source.shape == (sum(keep for _, keep in batch),)
    k, line_start = 0, {}
    for sample, keep in batch:
        line = 0 if len(sample.prompt_ids) == 3 else 1
        p = len(sample.prompt_ids)
        assert ids[line, :p].tolist() == sample.prompt_ids
        start = line_start.setdefault(line, p)
        inputs = list(range(start, start + keep - 1))  # this row's input positions on its line
        line_start[line] = start + keep - 1
        for j in range(keep):
            at = int(source[k]) - line * 13
            expected_at = p - 1 if j == 0 else inputs[j - 1]
            assert at == expected_at and int(pos[line, at]) == p - 1 + j
            assert int(ids[line, at]) == (sample.prompt_ids[-1] if j == 0 else sample.completion_ids[j - 1])
            sees = set(torch.nonzero(mask[line, 0, at]).flatten().tolist())
            assert sees == set(range(p)) | set(inputs[:j])
            k += 1
    assert mask[0, 0, 12].tolist() == [False] * 10 + [True] * 3  # padding (10-12) sees only padding


def test_a_model_that_does_not_pack_runs_whole_rows_to_the_same_logprobs(model, monkeypatch):
    """Attention other than sdpa (here eager), a sliding window or a checkpointed layer: each row runs whole
    (`_whole_rows`), to the packed forward's logprobs; a prompt with no token is refused."""
    batch = rows(model.get_output_embeddings().weight.shape[0])
    assert packs(model)
    packed = completion_logprobs(model, batch, PAD, torch.device("cpu"))[0].detach()
    monkeypatch.setattr(model.config, "_attn_implementation", "eager")
    assert not packs(model)
    whole = completion_logprobs(model, batch, PAD, torch.device("cpu"))[0].detach()
    torch.testing.assert_close(whole, packed, atol=1e-5, rtol=1e-5)
    monkeypatch.undo()
    monkeypatch.setattr(model.config, "layer_types", ["sliding_attention"], raising=False)
    assert not packs(model)
    monkeypatch.undo()
    sample = batch[0][0]
    empty = Sample([], sample.completion_ids, sample.logprobs, 1.0, 0.5, 1.0, 0, "s", False)
    with pytest.raises(ValueError, match="prompt has no token"):
        packed_layout([(empty, 2)], PAD)


@pytest.mark.parametrize("pack_width", [PACK_WIDTH, 8])
def test_packed_logprobs_and_gradients_equal_a_forward_per_row(model, monkeypatch, pack_width):
    """The packed forward against each row's prompt and completion run alone (fp32, CPU), on prompts of
    mixed lengths and rows cut short; at 8 positions a line a prompt's rows spread over several lines."""
    monkeypatch.setattr(logprobs, "PACK_WIDTH", pack_width)
    grouped = rows(model.get_output_embeddings().weight.shape[0])
    batch = [grouped[i] for i in (0, 3, 1, 4, 2, 5)]  # the two prompts' rows interleaved
    batch.insert(2, (grouped[0][0], 0))  # a row that keeps no token takes no place
    assert len(packed_layout(batch, PAD)[0]) == (2 if pack_width == PACK_WIDTH else 4)
    model.zero_grad(set_to_none=True)
    logpi, _, _, mask = completion_logprobs(model, batch, PAD, torch.device("cpu"))
    logpi[mask].sum().backward()
    packed = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    total = torch.zeros(())
    for i, (s, keep) in enumerate(batch):
        ids = torch.tensor([s.prompt_ids + s.completion_ids[:keep]])
        logits = model(input_ids=ids).logits[0, len(s.prompt_ids) - 1 : -1] / s.temperature
        row = torch.log_softmax(logits, -1).gather(-1, torch.tensor(s.completion_ids[:keep])[:, None])[:, 0]
        torch.testing.assert_close(logpi[i, :keep].detach(), row.detach(), atol=1e-5, rtol=1e-5)
        total = total + row.sum()
    total.backward()
    for name, p in model.named_parameters():
        torch.testing.assert_close(packed[name], p.grad, atol=1e-5, rtol=1e-4, msg=name)
