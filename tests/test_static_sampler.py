"""StaticSampler (autorl/llm/embedded/static_sampler.py) against HFSampler on the tiny model (fp32, CPU): from
the same generator state it draws the same tokens with the same logprobs, and those are the model's own
(a full forward per row), with prompts of mixed lengths, rows that stop at an EOS mid-batch and rows cut by
the token limit."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from conftest import float_scalars
from transformers import AutoModelForCausalLM

from autorl.llm.embedded.generation import HFSampler, draw
from autorl.llm.embedded.static_sampler import WARM_STEPS, StaticSampler

PAD = 0


@pytest.fixture(scope="module")
def model(tiny_model: Path) -> torch.nn.Module:
    return AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)


def prompts(vocab: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(5)
    lens = (3, 7, 7, 1, 5, 3)
    return [torch.randint(2, vocab, (n,), generator=g).tolist() for n in lens]


def before_step_1(switch: Callable[[], object]) -> Callable[[], bool]:
    """A should_stop that never stops and calls `switch` right before a call's second decode step."""
    calls = iter(range(100))

    def should_stop() -> bool:
        if next(calls) == 1:
            switch()
        return False

    return should_stop


def test_the_static_cache_draws_what_the_growing_one_draws(model):
    vocab = model.config.vocab_size
    eos = list(range(2, 2 + vocab // 12))  # a twelfth of the vocabulary ends a row: EOS mid-batch
    batch = prompts(vocab)
    for temperature in (0.7, 1.3):
        got = []
        for sampler in (HFSampler(model, PAD, eos), StaticSampler(model, PAD, eos)):
            got.append(sampler.sample(batch, temperature, 9, torch.Generator().manual_seed(11)))
        hf, static = got
        assert hf is not None and static is not None
        assert torch.equal(hf.completion_ids, static.completion_ids)
        assert torch.equal(hf.completion_mask, static.completion_mask)
        assert torch.equal(hf.truncated, static.truncated)
        torch.testing.assert_close(static.logprobs, hf.logprobs, atol=1e-5, rtol=1e-5)
        lens = static.completion_lens.tolist()
        assert min(lens) < 9 and max(lens) == 9 and static.truncated.any() and not static.truncated.all()
        for row, p in enumerate(batch):  # the model's own logprobs after temperature
            ids = static.completion_token_lists()[row]
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([p + ids])).logits[0, len(p) - 1 : -1]
            own = torch.log_softmax(logits / temperature, -1).gather(-1, torch.tensor(ids)[:, None])[:, 0]
            torch.testing.assert_close(static.logprobs[row, : len(ids)], own, atol=1e-4, rtol=1e-4)


def test_looking_at_the_batch_every_8_steps_samples_what_looking_at_every_step_samples(model):
    """HFSampler.sync_every (the GPU's fewer host syncs): the steps run past the last row's end draw and
    sample nothing, so one call's completions, masks and logprobs are those of a look at every step, on the
    growing cache and on the static one; a diverged row still raises, at the next look."""
    vocab = model.config.vocab_size
    eos = list(range(2, 2 + vocab // 4))  # every row ends well before the limit
    batch = prompts(vocab)
    got = [
        sampler.sample(batch, 1.0, 40, torch.Generator().manual_seed(2))
        for sampler in (
            HFSampler(model, PAD, eos),
            HFSampler(model, PAD, eos, sync_every=8),
            StaticSampler(model, PAD, eos, sync_every=8),
        )
    ]
    every, *fewer = got
    assert every is not None and not every.truncated.any()
    width = every.completion_ids.shape[1]
    assert width < 40 and width % 8 != 0  # the last look came after the last row's end: steps trimmed
    for out in fewer:
        assert out is not None
        assert torch.equal(out.completion_ids, every.completion_ids)
        assert torch.equal(out.completion_mask, every.completion_mask)
        assert torch.equal(out.truncated, every.truncated)
        torch.testing.assert_close(out.logprobs, every.logprobs, atol=1e-5, rtol=1e-5)
    broken = copy.deepcopy(model)
    with torch.no_grad():
        broken.lm_head.weight[3].fill_(float("nan"))  # every row's probabilities
    for sync_every in (1, 4):
        with pytest.raises(RuntimeError, match="inf or nan"):
            HFSampler(broken, PAD, [], sync_every=sync_every).sample(batch, 1.0, 9, torch.Generator())


def test_draw_samples_each_rows_categorical_and_never_a_token_of_probability_zero():
    """The samplers' draw (generation.draw, one uniform a row against the cumulative sums): frequencies
    match the probabilities and a zero-probability token is never drawn; a uniform of 0 takes the first
    token of positive probability, one that rounding puts at the top of the sums over a zero-probability
    tail takes the most probable token; the rows' sums come back, not finite where a probability is not
    (the sampler raises on them: the test above)."""
    p = torch.tensor([[0.0, 0.1, 0.6, 0.3, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0]])
    n = 40_000
    u = torch.rand((2 * n, 1), generator=torch.Generator().manual_seed(3))
    tok, sums = draw(p.repeat(n, 1), u)
    tok = tok.view(n, 2)
    freq = torch.stack([torch.bincount(tok[:, r], minlength=5) for r in (0, 1)]).float() / n
    assert (freq[p == 0] == 0).all()
    torch.testing.assert_close(freq, p, atol=0.01, rtol=0)  # 4 binomial sds at n = 40000 are < 0.01
    torch.testing.assert_close(sums, torch.ones(2 * n))
    for at, expected in ((0.0, [1, 3]), (1.0, [2, 3])):
        assert draw(p, torch.full((2, 1), at))[0].tolist() == expected
    _, sums = draw(torch.tensor([[0.5, float("nan")], [0.5, 0.5]]), torch.full((2, 1), 0.5))
    assert torch.isfinite(sums).tolist() == [False, True]


def test_a_stop_request_returns_nothing_and_leaves_the_model_training(model):
    sampler = StaticSampler(model, PAD, [1])
    calls = iter(range(100))
    model.train()
    batch = prompts(model.config.vocab_size)
    out = sampler.sample(batch, 1.0, 9, torch.Generator(), lambda: next(calls) == 3)
    assert out is None and model.training


def test_a_compiled_step_that_fails_falls_back_to_hfsampler_with_one_warning(model, capsys):
    sampler = StaticSampler(model, PAD, [1], compiled=True)

    def broken(*_):
        raise RuntimeError("no C++ compiler")

    sampler._step = broken
    batch = prompts(model.config.vocab_size)
    first = sampler.sample(batch, 1.0, 5, torch.Generator().manual_seed(2))
    assert first is not None and first.completion_ids.shape[0] == len(batch) and not sampler.static
    again = sampler.sample(batch, 1.0, 5, torch.Generator().manual_seed(2))
    hf = HFSampler(model, PAD, [1]).sample(batch, 1.0, 5, torch.Generator().manual_seed(2))
    assert again is not None and hf is not None and torch.equal(again.completion_ids, hf.completion_ids)
    out = capsys.readouterr().out
    assert out.count("warning: the compiled sampler failed (RuntimeError: no C++ compiler)") == 1


def test_graphs_keeps_a_cache_per_shape_and_draws_what_hfsampler_draws(model):
    """`graphs`: prompt widths rounded up (the gap masked), one kept cache per (rows, width) reused with an
    earlier call's keys still in it; the step is its compiled body run eagerly here (the capture needs a
    CUDA GPU: the kit's part 6)."""
    vocab = model.config.vocab_size
    eos = list(range(2, 2 + vocab // 12))
    sampler = StaticSampler(model, PAD, eos, graphs=True)
    sampler._step = sampler._forward
    batch = prompts(vocab)
    for call in (batch, batch[:4], [p + [5, 6] for p in batch]):  # widths 7, 7, 9: one rounded width
        hf = HFSampler(model, PAD, eos).sample(call, 0.9, 9, torch.Generator().manual_seed(3))
        got = sampler.sample(call, 0.9, 9, torch.Generator().manual_seed(3))
        assert hf is not None and got is not None
        assert torch.equal(hf.completion_ids, got.completion_ids)
        assert torch.equal(hf.completion_mask, got.completion_mask)
        torch.testing.assert_close(got.logprobs, hf.logprobs, atol=1e-5, rtol=1e-5)
    assert sorted(sampler._kept) == [(4, 64 + 9, torch.float32), (6, 64 + 9, torch.float32)]


def test_warm_runs_a_batch_shaped_step_before_the_clock_and_draws_nothing(model, capsys):
    """The trainer calls `warm` before `ready`, so the compile is start-up, not training time: it runs the
    step WARM_STEPS times for a batch's shape (with graphs, that shape's kept cache), leaves the model in
    training mode, and the next call, on the cache the warm-up dirtied, draws what HFSampler draws, its step
    fed tokens laid out as the warm-up's. Nothing compiled: None; a step that fails: None, one warning,
    HFSampler's way."""
    vocab = model.config.vocab_size
    eos = list(range(2, 2 + vocab // 12))
    assert StaticSampler(model, PAD, eos).warm(6, 9) is None  # the eager static cache: nothing to compile
    sampler = StaticSampler(model, PAD, eos, graphs=True)
    shapes, strides = [], []

    def step(*args):
        shapes.append(tuple(args[0].shape))
        strides.append(args[0].stride())
        return sampler._forward(*args)

    sampler._step = step  # the compiled body, run eagerly (the capture needs a CUDA GPU: the kit's part 6)
    model.train()
    seconds = sampler.warm(6, 9)
    assert seconds is not None and seconds >= 0 and model.training and sampler.static
    assert shapes == [(6, 1)] * WARM_STEPS and sorted(sampler._kept) == [(6, 64 + 9, torch.float32)]
    batch = prompts(vocab)
    hf = HFSampler(model, PAD, eos).sample(batch, 0.9, 9, torch.Generator().manual_seed(3))
    got = sampler.sample(batch, 0.9, 9, torch.Generator().manual_seed(3))
    assert hf is not None and got is not None and torch.equal(hf.completion_ids, got.completion_ids)
    assert sorted(sampler._kept) == [(6, 64 + 9, torch.float32)]  # the warm-up's capture serves the batch
    # a real call feeds the step its tokens with the warm-up's strides: the compiled step guards on them
    # (a column of the sampler's token buffer, stride 9, once recompiled at the first step of a run)
    assert len(strides) > WARM_STEPS and set(strides) == {(1, 1)}

    failing = StaticSampler(model, PAD, eos, compiled=True)

    def broken(*_):
        raise RuntimeError("no C++ compiler")

    failing._step = broken
    assert failing.warm(6, 9) is None and not failing.static
    out = capsys.readouterr().out
    assert out.count("warning: the compiled sampler failed (RuntimeError: no C++ compiler)") == 1


def test_the_compiled_steps_floats_are_constants_and_its_guards_run_at_a_calls_first_step(model, monkeypatch):
    """The decode step compiled with dynamic shapes, its graphs sent to a backend that records their inputs
    and runs them eagerly.
    - Its graph takes no float input: the model's floats (each norm's epsilon, attention's scaling) are
      compiled in (compiling.py; made symbolic, dynamo restarted its analysis over F.embedding's norm_type
      and the compile took twice as long). One graph serves the warm-up and calls of other widths and rows.
    - Dynamo's guards run at a call's first decode step only (static_sampler.py's docstring). Probed with
      the model's training flag, which the guards check, switched on by `should_stop` (called before each
      step) before a call's second step: nothing compiles (its later steps skip the guards). Grad mode,
      which dynamo still checks there, switched on the same way: the step compiles anew, draws what
      HFSampler draws under the same switch, and the sampler stays compiled. A one-row call compiles a
      graph of its own at its first step (dynamo specializes a size of 1: the guards ran), and its later
      steps, past the guards, run that one. Each call draws what HFSampler draws."""
    graphs = []
    real_compile = torch.compile

    def recording(gm, example_inputs):
        graphs.append(float_scalars(example_inputs))
        return gm.forward

    monkeypatch.setattr(torch, "compile", lambda fn, **kw: real_compile(fn, backend=recording, **kw))
    torch._dynamo.reset()  # no earlier test's compiled entries for the step's code
    vocab = model.config.vocab_size
    eos = list(range(2, 2 + vocab // 12))
    sampler = StaticSampler(model, PAD, eos, compiled=True)
    assert sampler.warm(6, 9) is not None
    assert graphs == [[]]  # before: a 0-d tensor in the graph for each float
    batch = prompts(vocab)

    assert sampler.sample(batch, 0.9, 9, torch.Generator(), before_step_1(model.train)) is not None
    assert graphs == [[]] and sampler.static
    grad_on = functools.partial(torch.set_grad_enabled, True)  # still checked without the guards
    got = sampler.sample(batch, 0.9, 9, torch.Generator().manual_seed(3), before_step_1(grad_on))
    # compiled anew at step 1, and at step 2: step 1 wrote keys that need grad into the cache
    assert graphs == [[]] * 3 and sampler.static  # not HFSampler's way from then on
    hf_way = HFSampler(model, PAD, eos)  # under the same switch
    hf = hf_way.sample(batch, 0.9, 9, torch.Generator().manual_seed(3), before_step_1(grad_on))
    assert hf is not None and got is not None and torch.equal(hf.completion_ids, got.completion_ids)
    torch.testing.assert_close(got.logprobs, hf.logprobs.detach(), atol=1e-5, rtol=1e-5)
    for call, compiled in ((batch, 3), (batch[:1], 4), (batch[:4], 4)):
        hf = HFSampler(model, PAD, eos).sample(call, 0.9, 9, torch.Generator().manual_seed(3))
        got = sampler.sample(call, 0.9, 9, torch.Generator().manual_seed(3))
        assert hf is not None and got is not None and torch.equal(hf.completion_ids, got.completion_ids)
        torch.testing.assert_close(got.logprobs, hf.logprobs, atol=1e-5, rtol=1e-5)
        assert graphs == [[]] * compiled and sampler.static


def recorded_compiles(monkeypatch) -> list[int]:
    """torch.compile with a backend that records each graph dynamo hands it (its input count) and runs it
    eagerly (graphs' mode names the CUDA graphs: none here)."""
    graphs: list[int] = []
    real_compile = torch.compile

    def recording(gm, example_inputs):
        graphs.append(len(example_inputs))
        return gm.forward

    def compile_eagerly(fn, mode=None, **kw):
        return real_compile(fn, backend=recording, **kw)

    monkeypatch.setattr(torch, "compile", compile_eagerly)
    return graphs


def test_fused_compiles_the_decode_step_and_the_next_draw_as_one_graph(model, monkeypatch):
    """`fused`: generation.pick inside the compiled step. Dynamo traces the step and the draw as one graph
    (no break: on a GPU, one replay a step for both), compiled once for a run's calls, guarded at a call's
    first step only where asked; it draws what HFSampler draws (EOS mid-batch, the token limit, mixed
    widths), also looking at the batch every 4 steps, and eagerly (no compile) the same."""
    graphs = recorded_compiles(monkeypatch)
    vocab = model.config.vocab_size
    eos = list(range(2, 2 + vocab // 12))
    batch = prompts(vocab)
    for sampler, compiles in (
        (StaticSampler(model, PAD, eos, fused=True), 0),
        (StaticSampler(model, PAD, eos, graphs=True, guard_once=True, fused=True), 1),
        (StaticSampler(model, PAD, eos, graphs=True, sync_every=4, fused=True), 1),
    ):
        torch._dynamo.reset()
        graphs.clear()
        if compiles:
            assert sampler.warm(6, 9) is not None and len(graphs) == 1
        for temperature in (0.9, 1.2):
            got = sampler.sample(batch, temperature, 9, torch.Generator().manual_seed(3))
            hf = HFSampler(model, PAD, eos).sample(batch, temperature, 9, torch.Generator().manual_seed(3))
            assert hf is not None and got is not None and sampler.static
            assert torch.equal(hf.completion_ids, got.completion_ids)
            assert torch.equal(hf.completion_mask, got.completion_mask)
            assert torch.equal(hf.truncated, got.truncated) and hf.truncated.any() and not hf.truncated.all()
            torch.testing.assert_close(got.logprobs, hf.logprobs, atol=1e-5, rtol=1e-5)
        assert len(graphs) == compiles  # the temperature is a tensor: no compile for another


def test_graphs_guards_at_every_step_unless_asked_once_a_call(model, monkeypatch):
    """`graphs` (fixed shapes, each step a CUDA graph on a GPU) keeps dynamo's guards at every decode step
    (the trainer's `hf-graphs`); with `guard_once` (the GPU kit times both ways) they run at a call's first
    step only, as on a CPU. Probed as above, with the model's training flag switched on before a call's second
    step: with every step guarded that step compiles anew, guarded once it does not. Both draw what
    HFSampler draws; the compiled step here is the graph run eagerly (no CUDA)."""
    graphs = recorded_compiles(monkeypatch)
    vocab = model.config.vocab_size
    eos = list(range(2, 2 + vocab // 12))
    batch = prompts(vocab)
    for guard_once, compiles in ((None, 2), (True, 1)):
        torch._dynamo.reset()
        graphs.clear()
        sampler = StaticSampler(model, PAD, eos, graphs=True, guard_once=guard_once)
        assert sampler.warm(6, 9) is not None and len(graphs) == 1
        model.eval()
        got = sampler.sample(batch, 0.9, 9, torch.Generator().manual_seed(3), before_step_1(model.train))
        assert len(graphs) == compiles and sampler.static, guard_once
        model.eval()
        hf = HFSampler(model, PAD, eos).sample(batch, 0.9, 9, torch.Generator().manual_seed(3))
        assert hf is not None and got is not None and torch.equal(hf.completion_ids, got.completion_ids)
        torch.testing.assert_close(got.logprobs, hf.logprobs, atol=1e-5, rtol=1e-5)


def test_under_bf16_autocast_a_qwen3_layer_fills_a_bf16_cache():
    """Under autocast a Qwen3 layer's keys leave its float32 RMSNorm (k_norm) while its values leave a bf16
    projection; StaticLayer's `index_copy_` took neither into the other's dtype (the GPU kit's part 6, H200,
    2026-11-28: RuntimeError, self Float and source BFloat16). The cache now holds autocast's dtype (attention
    computes in it) and each layer casts what it is given; the draws are HFSampler's, the logprobs within
    bf16's rounding of its."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        intermediate_size=128,
        vocab_size=512,
        tie_word_embeddings=True,
    )
    qwen3 = Qwen3ForCausalLM(config).eval()
    batch = prompts(config.vocab_size)
    got = {}
    graphs = StaticSampler(qwen3, PAD, [], graphs=True)
    graphs._step = graphs._forward  # the captured step's body, eagerly (the capture needs a CUDA GPU)
    for name, sampler in (
        ("hf", HFSampler(qwen3, PAD, [])),
        ("static", StaticSampler(qwen3, PAD, [])),
        ("graphs", graphs),
    ):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got[name] = sampler.sample(batch, 1.0, 9, torch.Generator().manual_seed(11))
    cache, _ = graphs._kept[(6, 64 + 9, torch.bfloat16)]
    assert {layer.keys.dtype for layer in cache.layers} == {layer.values.dtype for layer in cache.layers}
    assert cache.layers[0].values.dtype == torch.bfloat16
    assert {type(layer).__name__ for layer in cache.layers} == {"CastingStaticLayer"}  # one class, no closure
    for name in ("static", "graphs"):
        assert torch.equal(got["hf"].completion_ids, got[name].completion_ids), name
        torch.testing.assert_close(got[name].logprobs, got["hf"].logprobs, atol=0.05, rtol=0)
    # without autocast the same shape gets a float32 cache of its own, never the bf16 one
    plain = graphs.sample(batch, 1.0, 9, torch.Generator().manual_seed(11))
    hf = HFSampler(qwen3, PAD, []).sample(batch, 1.0, 9, torch.Generator().manual_seed(11))
    assert hf is not None and plain is not None and torch.equal(hf.completion_ids, plain.completion_ids)
    assert set(graphs._kept) == {(6, 64 + 9, torch.bfloat16), (6, 64 + 9, torch.float32)}
