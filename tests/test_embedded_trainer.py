"""The embedded trainer end to end on a tiny random Qwen2 model (seconds on a CPU).

In-process tests drive ``Trainer`` with a dense-reward toy environment, so that a random model gets
non-zero advantages; the subprocess test runs the real child (``python -m autorl.llm.embedded.train``)
on the autorl-arithmetic environment and stops it with SIGTERM.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import tomlkit
import torch
from conftest import float_scalars
from transformers import Qwen2ForCausalLM

from autorl.engine import progress
from autorl.engine.backend import Slot, Snapshot
from autorl.io.machine import own_cpu_ids
from autorl.io.tomlcheck import ConfigError
from autorl.llm.config import LoadedConfig, load_train_config
from autorl.llm.embedded.backend import (
    COMPLETE_MARKER,
    EmbeddedBackend,
    RunSpec,
    build_spec,
    latest_weights,
)
from autorl.llm.embedded.generation import HFSampler
from autorl.llm.embedded.logprobs import completion_logprobs
from autorl.llm.embedded.static_sampler import StaticSampler
from autorl.llm.embedded.train import Sample, Trainer

# ---------------------------------------------------------------------------------------------- fixtures


@dataclass(frozen=True)
class Example:
    id: str
    prompt: str
    answer: str


class CountEnv:
    """Toy task with a dense reward (fraction of characters with an odd code point), so that a random
    model's completions of one prompt almost never all score the same."""

    def train_examples(self, seed: int):
        i = 0
        while True:
            yield Example(id=f"{seed}-{i}", prompt=f"say a {i % 7}\n", answer="a")
            i += 1

    def eval_examples(self, n: int):
        return [Example(id=f"eval-{i}", prompt=f"say a {i}\n", answer="a") for i in range(n)]

    def score(self, completion: str, example: Example) -> float:
        return sum(ord(c) % 2 for c in completion) / max(len(completion), 1)


def count_env_loader(taskset_id: str, fields: dict) -> CountEnv:
    return CountEnv()


def make_spec(model: Path, **overrides) -> RunSpec:
    source = {
        "name": "count",
        "group_size": 4,
        "temperature": 1.0,
        "max_completion_tokens": 6,
        "taskset_id": "count",
        "ratio": 1.0,
    }
    source.update(overrides.pop("source", {}))
    base = {
        "model_path": str(model),
        "max_steps": 2,
        "seq_len": 64,
        "batch_size": 8,
        "max_off_policy_steps": 0,
        "filter_zero_advantages": True,
        "optim": {"lr": 1e-2},
        "scheduler": {"type": "constant"},
        "loss": {"type": "default"},
        "length_penalty": None,
        "sources": [source],
        "save_interval_s": 1e9,
        "num_threads": 1,  # tiny ops: one thread is fastest, and immune to a busy neighbour core
        "sampler": "hf",  # in-process; the hf-process sampler has its own tests
    }
    for key, value in overrides.items():  # a table (optim, loss) overrides the keys it names
        base[key] = {**base[key], **value} if isinstance(base.get(key), dict) else value
    return RunSpec.model_validate(base)


def make_trainer(model: Path, run_dir: Path, seed: int = 0, **overrides) -> Trainer:
    return Trainer(make_spec(model, **overrides), run_dir, seed, env_loader=count_env_loader)


def metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------------------------------------- tokenizer


def _plain_tokenizers_model(tiny_model: Path, out: Path) -> Path:
    """The tiny model with a tokenizer saved as a plain `tokenizers` one (tokenizer_class TokenizersBackend):
    one token per character, spaces and newlines included."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    shutil.copytree(tiny_model, out)
    vocab = {c: i for i, c in enumerate(["<pad>", "<eos>", " ", "\n", *map(chr, range(33, 127))])}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<eos>"))
    raw.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    raw.decoder = decoders.Fuse()
    PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>", pad_token="<pad>").save_pretrained(out)
    return out


def test_trainer_and_eval_encode_a_prompt_to_the_same_ids(tiny_model, tmp_path):
    """The trainer learns on the ids the eval scores with, for the project's tokenizer and for one saved as a
    plain `tokenizers` tokenizer (which transformers' AutoTokenizer would re-tokenize as Qwen2's)."""
    from autorl.llm.eval import HFGenerator, encode_prompt

    prompt = "What is 12 + 7?\nAnswer with #### N."
    plain = _plain_tokenizers_model(tiny_model, tmp_path / "plain")
    for model in (tiny_model, plain):
        trainer = make_trainer(model, tmp_path / f"run-{model.name}")
        train_ids = encode_prompt(trainer.tokenizer, prompt)
        eval_ids = encode_prompt(HFGenerator(model, None, "cpu").tokenizer, prompt)
        assert train_ids == eval_ids
        assert trainer.tokenizer.decode(train_ids) == prompt  # spaces and newlines kept


# ---------------------------------------------------------------------------------------------- sampling


def test_sampling_logprobs_are_after_temperature(tiny_model, tmp_path):
    """The sampler's logprobs are log_softmax(logits / T) of the tokens it drew (vLLM processed_logprobs)."""
    trainer = make_trainer(tiny_model, tmp_path)
    model = trainer.model
    sampler = HFSampler(model, trainer.pad_id, trainer.eos_ids)
    prompt = trainer.tokenizer("say a 1\n", add_special_tokens=False)["input_ids"]
    for temperature in (0.5, 2.0):
        gen = torch.Generator().manual_seed(1)
        roll = sampler.sample([prompt, prompt[:-2]], temperature, 5, gen)
        for row in range(2):
            ids = roll.completion_token_lists()[row]
            p = roll.prompt_ids[row][roll.prompt_mask[row]].tolist()
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([p + ids])).logits[0, len(p) - 1 : -1]
            expected = torch.log_softmax(logits / temperature, -1).gather(-1, torch.tensor(ids)[:, None])[
                :, 0
            ]
            got = roll.logprobs[row, : len(ids)]
            torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    # Different temperatures give different logprobs for the same token.
    gen = torch.Generator().manual_seed(1)
    lo = sampler.sample([prompt], 0.5, 3, gen)
    gen = torch.Generator().manual_seed(1)
    hi = sampler.sample([prompt], 2.0, 3, gen)
    assert not torch.allclose(lo.logprobs[0, :1], hi.logprobs[0, :1])


def test_trainer_divides_logits_by_the_sample_temperature(tiny_model, tmp_path):
    trainer = make_trainer(tiny_model, tmp_path)
    prompt = trainer.tokenizer("say a 2\n", add_special_tokens=False)["input_ids"]
    completion = trainer.tokenizer("aab", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = trainer.model(input_ids=torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1]
    for temperature in (0.7, 1.5):
        s = Sample(prompt, completion, [0.0] * 3, 1.0, 1.0, temperature, 0, "count", False)
        with torch.no_grad():
            logpi, *_ = completion_logprobs(trainer.model, [(s, 3)], trainer.pad_id, trainer.device)
        expected = torch.log_softmax(logits / temperature, -1).gather(-1, torch.tensor(completion)[:, None])[
            :, 0
        ]
        torch.testing.assert_close(logpi[0], expected, atol=1e-5, rtol=1e-5)


def test_group_size_shapes_the_groups(tiny_model, tmp_path):
    for group_size in (2, 4):
        trainer = make_trainer(tiny_model, tmp_path, source={"group_size": group_size})
        batch = trainer.sample_batch()
        assert len(batch) == 8
        for g in range(0, 8, group_size):
            group = batch[g : g + group_size]
            assert len({tuple(s.prompt_ids) for s in group}) == 1  # one task per group
            mean = sum(s.reward for s in group) / group_size
            for s in group:
                assert s.advantage == pytest.approx(s.reward - mean, abs=1e-6)
        assert len({tuple(s.prompt_ids) for s in batch}) == 8 // group_size


def test_on_policy_step_matches_sampler_and_masks_nothing(tiny_model, tmp_path):
    """max_off_policy_steps = 0: the trainer recomputes the sampling logprobs (ratio 1), nothing is masked."""
    trainer = make_trainer(
        tiny_model, tmp_path, max_steps=2, loss={"dppo_mask_high": 1e-4, "dppo_mask_low": 1e-4}
    )
    trainer.run()
    rows = metrics(tmp_path)
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert r["policy_lag_mean"] == 0
        assert r["masked_frac"] == 0
        assert r["mismatch_kl"] < 1e-6


def test_one_step_lag_and_lower_dppo_mask_high_masks_more(tiny_model, tmp_path):
    """max_off_policy_steps >= 1 reproduces prime-rl's one-step lag: step 2 trains on rollouts of policy 0,
    so pi != mu there, and a lower dppo_mask_high masks more of its tokens (same seed, same batches)."""
    masked = {}
    for high in (0.5, 0.001):
        run_dir = tmp_path / f"high-{high}"
        trainer = make_trainer(
            tiny_model, run_dir, max_off_policy_steps=1, optim={"lr": 0.05}, loss={"dppo_mask_high": high}
        )
        trainer.run()
        rows = metrics(run_dir)
        assert rows[0]["policy_lag_mean"] == 0 and rows[1]["policy_lag_mean"] == 1
        assert rows[1]["mismatch_kl"] > 1e-6
        masked[high] = rows[1]["masked_high_frac"]
    assert masked[0.001] > masked[0.5]


def test_filter_zero_advantages_drops_their_tokens(tiny_model, tmp_path):
    trainer = make_trainer(tiny_model, tmp_path)
    batch = trainer.sample_batch()
    for s in batch[2:]:
        s.advantage = s.advantage or 0.5  # a reward can equal its group's mean: keep only our two at zero
    batch[0].advantage = batch[1].advantage = 0.0  # as if their group had equal rewards
    all_tokens = sum(len(s.completion_ids) for s in batch)
    zero_tokens = len(batch[0].completion_ids) + len(batch[1].completion_ids)
    kept = trainer.train_step(batch)
    assert kept["rl_tokens"] == all_tokens - zero_tokens and kept["rl_samples"] == 6
    trainer.spec.filter_zero_advantages = False
    everything = trainer.train_step(batch)
    assert everything["rl_tokens"] == all_tokens and everything["rl_samples"] == 8


def test_all_zero_advantage_batch_takes_no_step(tiny_model, tmp_path):
    trainer = make_trainer(tiny_model, tmp_path)
    batch = trainer.sample_batch()
    for s in batch:
        s.advantage = 0.0
    before = [p.detach().clone() for p in trainer.model.parameters()]
    assert trainer.train_step(batch) == {"empty": True}
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(), strict=True))


def test_seq_len_truncates_trained_tokens(tiny_model, tmp_path):
    trainer = make_trainer(tiny_model, tmp_path)
    batch = trainer.sample_batch()
    for s in batch:
        s.advantage = 1.0
    full = trainer.train_step(batch)["rl_tokens"]
    trainer.spec.seq_len = len(batch[0].prompt_ids) + 2  # at most 2 completion tokens survive
    cut = trainer.train_step(batch)["rl_tokens"]
    assert cut == sum(min(2, len(s.completion_ids)) for s in batch) < full


def test_scheduler_lr_reaches_the_steps(tiny_model, tmp_path):
    trainer = make_trainer(
        tiny_model,
        tmp_path,
        max_steps=4,
        optim={"lr": 0.01},
        scheduler={"type": "linear", "warmup_steps": 2, "decay_steps": 0},
    )
    trainer.run()
    assert [r["lr"] for r in metrics(tmp_path)] == pytest.approx([1e-10, 0.005, 0.01, 0.01], abs=1e-9)


def test_same_seed_same_first_steps(tiny_model, tmp_path):
    def run(seed: int, name: str):
        run_dir = tmp_path / name
        make_trainer(tiny_model, run_dir, seed=seed, max_off_policy_steps=1).run()
        keys = ("reward_mean", "loss", "grad_norm", "rl_tokens", "mismatch_kl")
        params = Qwen2ForCausalLM.from_pretrained(run_dir / "weights").state_dict()
        return [[r[k] for k in keys] for r in metrics(run_dir)], params

    a, wa = run(0, "a")
    b, wb = run(0, "b")
    c, _ = run(1, "c")
    assert a == b
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert a != c


def test_process_sampler_gives_the_same_run_as_in_process_sampling(tiny_model, tmp_path):
    """hf-process samples in a second process, overlapped with the train step: same rollouts (same
    generator stream, same weights at each request), so the same steps and weights as in-process sampling."""

    def run(sampler: str):
        run_dir = tmp_path / sampler
        trainer = make_trainer(
            tiny_model, run_dir, seed=3, max_steps=4, max_off_policy_steps=1, sampler=sampler
        )
        assert trainer.sampler_name == sampler
        trainer.run()
        if trainer.process_sampler is not None:
            assert not trainer.process_sampler.process.is_alive()  # closed when run() returns
        keys = ("reward_mean", "loss", "grad_norm", "rl_tokens", "mismatch_kl", "policy_lag_mean")
        params = Qwen2ForCausalLM.from_pretrained(run_dir / "weights").state_dict()
        return [[r[k] for k in keys] for r in metrics(run_dir)], params

    (a, wa), (b, wb) = run("hf"), run("hf-process")
    assert len(a) == 4 and a == b
    assert a[1][-1] == 1  # step 2 trained on rollouts of policy 0: the lag is there
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_static_process_sampler_warms_in_the_child_and_draws_what_hf_process_draws(
    tiny_model, tmp_path, monkeypatch
):
    """hf-static-process: the child samples with StaticSampler, its step compiled (here its body run eagerly:
    torch.compile patched in the parent, which the forked child inherits) and warmed before the child says
    `ready`, so the trainer's header reports the seconds; the draws are HFSampler's, so the run is
    hf-process's up to the float rounding of a static cache's logprobs."""
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)

    def run(sampler: str):
        trainer = make_trainer(
            tiny_model, tmp_path / sampler, seed=3, max_steps=4, max_off_policy_steps=1, sampler=sampler
        )
        warmed = trainer.process_sampler.wait_ready()
        trainer.run()
        return [(r["reward_mean"], r["rl_tokens"], r["loss"]) for r in metrics(tmp_path / sampler)], warmed

    (a, warm_hf), (b, warm_static) = run("hf-process"), run("hf-static-process")
    assert warm_hf is None and warm_static is not None and warm_static >= 0
    assert [r[:2] for r in a] == [r[:2] for r in b]  # the same completions, so the same rewards and tokens
    assert [r[2] for r in b] == pytest.approx([r[2] for r in a], abs=1e-5)


def test_the_sampling_process_compiles_while_the_trainer_compiles(tiny_model, tmp_path, monkeypatch, capsys):
    """hf-static-process with compile_train: the trainer's start-up (its training step's compile) runs while
    the forked child compiles its sampler step; the trainer waits for the child's `ready` only after its own,
    and its header reports both. Here the child's warm-up (patched before the fork, so the child runs it)
    returns 1 s once the trainer's warm-up has begun, -1 s after 20 s without it (the order before: the
    child's `ready` awaited first)."""
    from autorl.llm.embedded import compiled_train

    begun = tmp_path / "trainer-warm-begun"

    def child_warm(self, rows, max_new_tokens):
        deadline = time.monotonic() + 20
        while not begun.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return 1.0 if begun.exists() else -1.0

    def trainer_warm(*args, **kwargs):
        begun.touch()
        return 0.5

    monkeypatch.setattr(StaticSampler, "warm", child_warm)
    monkeypatch.setattr(compiled_train, "warm", trainer_warm)
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)
    trainer = make_trainer(
        tiny_model, tmp_path, max_off_policy_steps=1, sampler="hf-static-process", compile_train=True
    )
    monkeypatch.setattr(signal, "signal", lambda *_: None)  # _start takes over SIGTERM/SIGINT
    try:
        assert not trainer.process_sampler.ready and not begun.exists()
        trainer._start()
        assert trainer.process_sampler.ready
        out = capsys.readouterr().out
        assert "(its step compiled in 1.0 s before the clock), its training step compiled in 0.5 s" in out
        assert 0 <= out.index('{"event": "compiling"}') < out.index('{"event": "ready"}')
    finally:
        trainer.process_sampler.close()


def test_a_stop_request_during_the_start_up_compile_exits_at_once(tiny_model, tmp_path, capsys):
    """SIGTERM while the trainer compiles its steps (start-up: nothing trained, nothing to save) exits at
    once with status 0, as during loading (train.exit_on_stop, what the child's main installs), instead of
    after a compile that takes a minute where inductor's cache is cold: no `ready`, no `done`. The handler
    that saves the weights is the trainer's only from `ready` on."""
    from autorl.llm.embedded import train

    trainer = make_trainer(tiny_model, tmp_path / "run", sampler="hf-static")
    assert isinstance(trainer.sampler, StaticSampler) and trainer.sampler.compiled

    def interrupted_compile(rows: int, max_new_tokens: int) -> float:
        os.kill(os.getpid(), signal.SIGTERM)  # the runner's stop, in the middle of the compile
        time.sleep(60)
        raise AssertionError("the compile ran on after the stop")

    trainer.sampler.warm = interrupted_compile  # type: ignore[method-assign]
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    t0 = time.monotonic()
    try:
        train.exit_on_stop()
        with pytest.raises(SystemExit) as stopped:
            trainer.run()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert stopped.value.code == 0 and time.monotonic() - t0 < 10
    out = capsys.readouterr().out
    assert '"compiling"' in out and '"ready"' not in out and '"done"' not in out


@pytest.mark.parametrize("compile_fails", [False, True], ids=["compiled", "compile-fails"])
def test_compile_train_warms_before_the_clock_and_trains_as_eager(
    tiny_model, tmp_path, monkeypatch, capsys, compile_fails
):
    """compile_train: the training step's decoder compiled (dynamo's capture for real, run by its `eager`
    backend: inductor's numerics and speed are studies/fast-2026-11-29's) and warmed before `ready` with a
    forward and backward that leave no gradient and draw nothing: the run's rollouts, losses and gradient
    norms are the eager run's, step for step. A compile that fails is one warning line, then eager."""
    real_compile = torch.compile

    def fake_compile(fn, **kwargs):
        if not compile_fails:
            return real_compile(fn, backend="eager", **kwargs)

        def broken(*args, **kwargs):
            raise RuntimeError("no compiler here")

        return broken

    monkeypatch.setattr(torch, "compile", fake_compile)

    def run(name: str, **overrides) -> tuple[list[tuple], str]:
        trainer = make_trainer(tiny_model, tmp_path / name, seed=3, max_steps=3, **overrides)
        assert (trainer.train_decoder is not None) == bool(overrides)
        trainer.run()
        rows = [
            (r["reward_mean"], r["rl_tokens"], r["loss"], r["grad_norm"]) for r in metrics(tmp_path / name)
        ]
        return rows, capsys.readouterr().out

    (eager, eager_out), (compiled, out) = run("eager"), run("compiled", compile_train=True)
    assert len(eager) == 3 and [r[:2] for r in compiled] == [r[:2] for r in eager]  # the same rollouts
    assert [r[2:] for r in compiled] == pytest.approx([r[2:] for r in eager], rel=1e-5)
    assert "training step compiled" not in eager_out
    if compile_fails:
        assert "warning: the compiled training step failed (RuntimeError: no compiler here); eager" in out
        assert "training step compiled in" not in out
    else:
        assert "its training step compiled in " in out and "warning" not in out


def test_compile_train_leaves_no_batch_shape_to_compile_on_the_clock(tiny_model, tmp_path, monkeypatch):
    """After `warm`, batches of one group (one packed line: a size of 1, which dynamic shapes compile apart),
    two and five groups, with other prompt and completion lengths, run without compiling again (a 180 s
    trial's one-group step compiled for 45.6 s on its training clock while `warm` compiled 3 lines only:
    studies/fast-2026-11-29/trial-2core-180.log). The graphs go to a backend that counts them; none takes a
    float as an input (the model's floats are constants: compiling.py)."""
    from autorl.llm.embedded import compiled_train

    graphs = []
    real_compile = torch.compile

    def counting(gm, example_inputs):
        graphs.append(gm)
        assert float_scalars(example_inputs) == []  # before: each norm's epsilon, attention's scaling, ...
        return gm.forward

    monkeypatch.setattr(torch, "compile", lambda fn, **kw: real_compile(fn, backend=counting, **kw))
    trainer = make_trainer(tiny_model, tmp_path, compile_train=True)
    model, decoder = trainer.model, trainer.train_decoder
    compiled_train.warm(model, decoder, trainer.pad_id, trainer.spec.loss)
    warmed = len(graphs)
    assert warmed >= 2  # the three-line batch's graph and the one-line batch's

    def batch(groups: int) -> list[tuple[Sample, int]]:
        rows = []
        for g in range(groups):
            prompt = [3 + (g + i) % 20 for i in range(4 + 3 * g)]
            for r in range(8):  # a group of 8 rows, completions of 2 to 9 tokens
                n = 2 + r
                sample = Sample(
                    prompt, [4 + (r + i) % 20 for i in range(n)], [-1.0] * n, 1.0, r - 3.5, 1.0, 0, "t", False
                )
                rows.append((sample, n))
        return rows

    for groups in (1, 2, 5):
        logpi = completion_logprobs(model, batch(groups), trainer.pad_id, trainer.device, decoder=decoder)[0]
        logpi.sum().backward()
    assert len(graphs) == warmed


@pytest.mark.parametrize(
    ("cores", "lag", "expected"),
    [(2, 1, "hf-static-process"), (2, 0, "hf"), (1, 1, "hf-static"), (1, 0, "hf-static")],
)
def test_auto_picks_the_sampler_measured_fastest_on_the_cpu(
    tiny_model, tmp_path, monkeypatch, cores, lag, expected
):
    """`auto` on a CPU: a second core and the one-step lag sample in a second process; one core compiles the
    static sampler's step (1.17x HFSampler's trainer samples/s there, docs/verified.md); else HFSampler.
    compile_train's auto: on beside either compiled sampler (hf-static-process, hf-static), off beside
    HFSampler."""
    import autorl.llm.embedded.train as train_module

    monkeypatch.setattr(train_module, "own_cpu_ids", lambda: list(range(cores)))
    monkeypatch.setattr(train_module, "vllm_available", lambda: True)  # a GPU's; never on the CPU
    monkeypatch.setattr(torch, "compile", lambda fn, **_: fn)  # what would compile runs eagerly here
    trainer = make_trainer(tiny_model, tmp_path, sampler="auto", max_off_policy_steps=lag, device="cpu")
    try:
        assert trainer.sampler_name == expected
        assert (trainer.process_sampler is not None) == (expected == "hf-static-process")
        assert (trainer.train_decoder is not None) == (expected != "hf")
    finally:
        if trainer.process_sampler is not None:
            trainer.process_sampler.close()


def test_process_sampler_stop_mid_run_saves_the_last_step(tiny_model, tmp_path):
    """A stop request while the child samples: the completed step is kept and saved, the child ends."""
    trainer = make_trainer(
        tiny_model, tmp_path, max_steps=10_000, max_off_policy_steps=1, sampler="hf-process"
    )
    real_collect = trainer.process_sampler.collect

    def collect_then_stop(should_stop):
        if trainer.step >= 2:
            trainer.request_stop()  # as SIGTERM would, while a batch is being sampled
        return real_collect(should_stop)

    trainer.process_sampler.collect = collect_then_stop
    trainer.run()
    assert trainer.step == 3  # step 3 trained before its next batch was abandoned
    assert [r["step"] for r in metrics(tmp_path)] == [1, 2, 3]
    assert json.loads((tmp_path / "weights" / COMPLETE_MARKER).read_text())["step"] == 3
    assert not trainer.process_sampler.process.is_alive()
    # It ended on its own when the trainer closed the pipe (its fork's copy of the trainer's end closed),
    # not SIGKILLed after the close's 5 s wait.
    assert trainer.process_sampler.process.exitcode == 0


def test_weights_saved_atomically_with_marker(tiny_model, tmp_path):
    trainer = make_trainer(tiny_model, tmp_path, max_steps=1)
    trainer.run()
    weights = latest_weights(tmp_path)
    assert weights == tmp_path / "weights"
    assert json.loads((weights / COMPLETE_MARKER).read_text())["step"] == 1
    assert not (tmp_path / "weights.tmp").exists() and not (tmp_path / "weights.old").exists()
    Qwen2ForCausalLM.from_pretrained(weights)  # a loadable HF checkpoint
    # A save cut between its two renames leaves the previous complete save in weights.old: still found.
    (tmp_path / "weights").rename(tmp_path / "weights.old")
    assert latest_weights(tmp_path) == tmp_path / "weights.old"
    (tmp_path / "weights.old" / COMPLETE_MARKER).unlink()
    assert latest_weights(tmp_path) is None


# ---------------------------------------------------------------------------------------------- backend


def _cfg(tmp_path: Path, **model) -> LoadedConfig:
    """train.toml with `model`'s dotted keys set, loaded for the embedded backend."""
    tree = {
        "model": {"name": "some/model"},
        "max_steps": 5,
        "seq_len": 128,
        "trainer": {"optim": {"lr": 1e-4, "max_norm": "None"}, "loss": {"type": "default"}},
        "orchestrator": {
            "batch_size": 8,
            "group_size": 4,
            "max_off_policy_steps": 8,
            "train": {
                "filter_zero_advantages": True,
                "sampling": {"temperature": 0.7, "max_completion_tokens": 16},
                "source": [
                    {"name": "arith", "env": {"taskset": {"id": "autorl-arithmetic", "max_digits": 2}}}
                ],
            },
        },
    }
    for key, value in model.items():
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[parts[-1]] = value
    path = tmp_path / "train.toml"
    path.write_text(tomlkit.dumps(tree))
    return load_train_config(path, backend="embedded")


def _refusal(tmp_path: Path, **model) -> str:
    """What the embedded backend refuses in this config (the loader's problems, then check()'s), or ""."""
    try:
        EmbeddedBackend().check(_cfg(tmp_path, **model))
    except ConfigError as e:
        return str(e)
    return ""


def test_build_spec_maps_prime_rl_keys(tmp_path):
    spec = build_spec(_cfg(tmp_path).model)
    assert spec.optim.max_norm is None and spec.optim.lr == 1e-4
    src = spec.sources[0]
    assert (src.group_size, src.temperature, src.max_completion_tokens) == (4, 0.7, 16)
    assert src.taskset_id == "autorl-arithmetic" and src.taskset_fields == {"max_digits": 2}
    # Per-source overrides win.
    spec = build_spec(
        _cfg(
            tmp_path,
            **{
                "orchestrator.train.source": [
                    {
                        "name": "x",
                        "group_size": 2,
                        "sampling": {"temperature": 1.3},
                        "env": {"taskset": {"id": "t"}},
                    }
                ]
            },
        ).model
    )
    assert (spec.sources[0].group_size, spec.sources[0].temperature) == (2, 1.3)


def test_semantic_refusals_name_the_key(tmp_path):
    # A custom loss runs arbitrary code: refused on every backend (autorl.llm.config.REFUSED).
    assert "trainer.loss.type" in _refusal(tmp_path, **{"trainer.loss": {"type": "custom"}})
    error = _refusal(tmp_path, **{"orchestrator.algo": {"type": "max_rl"}})
    assert "orchestrator.algo.type" in error and "prime-rl backend only" in error
    assert "temperature" in _refusal(tmp_path, **{"orchestrator.train.sampling": {"temperature": 0.0}})
    with pytest.warns(UserWarning, match="group_size = 1"):
        assert _refusal(tmp_path, **{"orchestrator.group_size": 1}) == ""
    assert "orchestrator.batch_size" in _refusal(tmp_path, **{"orchestrator.batch_size": 6})
    error = _refusal(tmp_path, **{"trainer.scheduler": {"type": "cosine"}, "max_steps": "None"})
    assert "trainer.scheduler" in error
    error = _refusal(
        tmp_path, **{"orchestrator.train.source.0.env": {"taskset": {"id": "someone/other-env"}}}
    )
    assert "orchestrator.train.source.0.env.taskset.id" in error and "prime-rl backend only" in error


def test_launch_and_eval_commands(tmp_path, write_resolved):
    backend = EmbeddedBackend()
    cfg = _cfg(tmp_path)
    run_dir = tmp_path / "seed-3"
    write_resolved(backend, cfg, run_dir, 3)
    launch = backend.launch(cfg, run_dir, 3)
    assert launch.argv[1:3] == ["-m", "autorl.llm.embedded.train"]
    assert launch.argv[-6:] == [
        "--config",
        str(run_dir / "resolved.json"),
        "--run-dir",
        str(run_dir),
        "--seed",
        "3",
    ]
    assert launch.cpus == () and "CUDA_VISIBLE_DEVICES" not in launch.env
    assert RunSpec.model_validate_json((run_dir / "resolved.json").read_text()).batch_size == 8
    ev = backend.eval_command(cfg, None, tmp_path / "eval.jsonl")
    assert ev.argv[1:] == [
        "-m",
        "autorl.llm.eval",
        "--weights",
        "some/model",
        "--out",
        str(tmp_path / "eval.jsonl"),
    ]
    ev = backend.eval_command(cfg, tmp_path / "weights", tmp_path / "e.jsonl")
    assert ev.argv[ev.argv.index("--weights") + 1] == str(tmp_path / "weights")


def test_launch_runs_the_seed_on_its_slot(tmp_path, write_resolved):
    """The slot's cores, threads and GPU share reach the child: affinity, --threads, CUDA_VISIBLE_DEVICES."""
    backend = EmbeddedBackend()
    cfg = _cfg(tmp_path)
    write_resolved(backend, cfg, tmp_path, 0)
    launch = backend.launch(
        cfg, tmp_path, 0, Slot(index=1, cpus=(2, 3), threads=1, gpus=(1,), gpu_share=0.25)
    )
    assert launch.cpus == (2, 3) and launch.env["CUDA_VISIBLE_DEVICES"] == "1"
    argv = launch.argv
    assert argv[argv.index("--threads") + 1] == "1" and argv[argv.index("--gpu-share") + 1] == "0.25"


def test_shared_prompt_forward_equals_a_full_forward_per_row(tiny_model, tmp_path):
    """Running each distinct prompt once (packed lines: logprobs.packed_layout) on a sampled batch gives the
    same logprobs and gradients as a plain forward of every prompt+completion row."""
    trainer = make_trainer(tiny_model, tmp_path)
    batch = trainer.sample_batch()
    rows = [(s, len(s.completion_ids)) for s in batch]
    logpi, _, _, mask = completion_logprobs(trainer.model, rows, trainer.pad_id, trainer.device)
    logpi[mask].sum().backward()
    shared_grads = [p.grad.clone() for p in trainer.model.parameters()]
    trainer.model.zero_grad()
    total = 0.0
    for i, (s, keep) in enumerate(rows):
        ids = torch.tensor([s.prompt_ids + s.completion_ids])
        logits = trainer.model(input_ids=ids).logits[0, len(s.prompt_ids) - 1 : -1] / s.temperature
        row = torch.log_softmax(logits, -1).gather(-1, torch.tensor(s.completion_ids)[:, None])[:, 0]
        torch.testing.assert_close(logpi[i, :keep], row, atol=1e-5, rtol=1e-5)
        total = total + row.sum()
    total.backward()
    for shared, full in zip(shared_grads, trainer.model.parameters(), strict=True):
        torch.testing.assert_close(shared, full.grad, atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------------------------------------- child process

CHILD_TOML = """
max_steps = 1000
seq_len = 48
[model]
name = "{model}"
[trainer.optim]
lr = 1e-3
[orchestrator]
batch_size = 8
group_size = 4
[orchestrator.train]
filter_zero_advantages = false   # a random model never scores on arithmetic: keep training anyway
[orchestrator.train.sampling]
temperature = 1.0
max_completion_tokens = 6
[[orchestrator.train.source]]
name = "arith"
[orchestrator.train.source.env.taskset]
id = "autorl-arithmetic"
"""


def test_child_saves_weights_and_exits_cleanly_on_sigterm(tiny_model, tmp_path, write_resolved, monkeypatch):
    """The real child, started as the runner starts it, stopped mid-run by SIGTERM: it saves the weights of
    its last completed step (atomically, marked complete), says so, and exits 0. Given snapshot times (an
    `autorl fidelity` long seed), it also keeps a copy when its clock passes each, the clock paused. At a rung
    (the trial's, autorl/record/rungs.py) it keeps its weights and waits, paused, until the runner's `go`.
    Its sampling process runs eagerly (hf-process): the 2-core default compiles both steps at start-up, a
    minute where inductor's cache is cold, which the tests above cover in-process."""
    from autorl.llm.embedded import backend as embedded_backend

    built = embedded_backend.build_spec
    eager = {"sampler": "hf-process", "compile_train": False}
    monkeypatch.setattr(embedded_backend, "build_spec", lambda c: built(c).model_copy(update=eager))
    (tmp_path / "train.toml").write_text(CHILD_TOML.format(model=tiny_model))
    loaded = load_train_config(tmp_path / "train.toml", backend="embedded")
    # snapshots after the first step and never; a rung after the first step, another never reached
    cfg = dataclasses.replace(loaded, snapshot_s=(0.0, 1e6), rungs=((0.25, 0.0), (0.5, 1e6)))
    backend = EmbeddedBackend()
    backend.check(cfg)
    run_dir = tmp_path / "seed-0"
    write_resolved(backend, cfg, run_dir, 0)
    launch = backend.launch(cfg, run_dir, 0)
    proc = subprocess.Popen(
        launch.argv, cwd=launch.cwd, env={**os.environ, **launch.env}, stdout=subprocess.PIPE, text=True
    )
    events, lines = [], []
    deadline = time.monotonic() + 240
    try:
        for line in proc.stdout:
            lines.append(line)
            event = launch.parse_line(line.rstrip("\n"))
            if event is not None:
                events.append(event)
                if event["event"] == "rung":  # what the runner does once it has scored the rung
                    assert (Path(event["weights"]) / COMPLETE_MARKER).exists()
                    Path(event["go"]).touch()
            if sum(e["event"] == "step" for e in events) >= 3:
                proc.send_signal(signal.SIGTERM)
                break
            assert time.monotonic() < deadline, "child too slow"
        rest = proc.communicate(timeout=120)[0]
    finally:
        proc.kill()
    events += [e for e in map(progress.parse, rest.splitlines()) if e is not None]
    assert proc.returncode == 0
    # On 2+ cores the default CPU setup samples in a second process: it must end with the trainer. On one
    # core it compiles the static sampler's step before `ready` (the header says how long).
    sampler = "hf-process," if len(own_cpu_ids()) >= 2 else "hf-static (its step compiled in"
    assert any(f"sampler {sampler}" in line for line in lines)
    names = [e["event"] for e in events]
    assert names[0] == "ready" and names[-1] == "done" and "saved" in names
    last_step = max(e["step"] for e in events if e["event"] == "step")
    saved = [e for e in events if e["event"] == "saved"][-1]
    assert saved["step"] == last_step
    outcome = backend.collect(cfg, run_dir)
    assert outcome.weights_dir == run_dir / "weights" and outcome.steps == last_step
    assert outcome.snapshots == [Snapshot(0.0, 1, run_dir / "snapshots" / "at-0s")]
    first = names.index("step")
    assert names[first + 1 : first + 6] == ["pause", "resume", "snapshot", "pause", "rung"]
    assert names[first + 6] == "resume" and names.count("rung") == 1
    rung = next(e for e in events if e["event"] == "rung")
    assert (rung["rung"], rung["fraction"], rung["step"]) == (1, 0.25, 1)
    Qwen2ForCausalLM.from_pretrained(rung["weights"])  # what the runner evaluates as it evaluates the end
    Qwen2ForCausalLM.from_pretrained(outcome.snapshots[0].path)  # a loadable HF checkpoint
    assert json.loads((run_dir / "weights" / COMPLETE_MARKER).read_text())["step"] == last_step
    assert outcome.peak_memory_gb is not None and outcome.peak_memory_gb > 0
    rows = metrics(run_dir)
    assert [r["step"] for r in rows] == list(range(1, last_step + 1))
    for key in ("step", "reward_mean", "loss", "lr", "seconds", "samples_per_s"):
        assert key in rows[0]


def test_vllm_sampler_up_to_the_engine_boundary(monkeypatch, tiny_model):
    """vLLM is not installable here: a stand-in `vllm` module checks what VLLMSampler asks of the engine
    (processed logprobs, top_p 1, seeded params, weights pushed after a step) and how it reads the outputs."""
    import types

    calls: dict = {"loaded": None, "reset": 0}

    class LLM:
        def __init__(self, **kwargs):
            calls["init"] = kwargs

        def generate(self, prompts, params, use_tqdm=False):
            calls["params"] = params
            outs = []
            for i in range(len(prompts)):
                ids = [5, 6, 1] if i == 0 else [7]  # row 0 stops with EOS (1), row 1 hits the limit
                lps = [{t: SimpleNamespace(logprob=-0.1 * (j + 1))} for j, t in enumerate(ids)]
                reason = "stop" if i == 0 else "length"
                outs.append(
                    SimpleNamespace(
                        outputs=[SimpleNamespace(token_ids=ids, logprobs=lps, finish_reason=reason)]
                    )
                )
            return outs

        def collective_rpc(self, method, kwargs):
            assert method == "reload_weights"
            calls["loaded"] = dict(kwargs["weights_iterator"])

        def reset_prefix_cache(self):
            calls["reset"] += 1

    class SamplingParams:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = LLM, SamplingParams
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = lambda prompt_token_ids: {"prompt_token_ids": prompt_token_ids}
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)
    from autorl.llm.embedded.generation import VLLMSampler

    sampler = VLLMSampler(str(tiny_model), pad_id=0, seed=3, max_model_len=64, device="cpu")
    assert calls["init"]["logprobs_mode"] == "processed_logprobs"
    roll = sampler.sample([[10, 11, 12], [10, 11]], 0.7, 4, torch.Generator().manual_seed(0))
    params = [p.kwargs for p in calls["params"]]
    assert all(p["temperature"] == 0.7 and p["top_p"] == 1.0 and p["max_tokens"] == 4 for p in params)
    assert all(p["logprobs"] == 0 for p in params) and len({p["seed"] for p in params}) == 2
    assert roll.completion_token_lists() == [[5, 6, 1], [7]]
    assert roll.completion_mask.tolist() == [[True, True, True], [True, False, False]]
    torch.testing.assert_close(roll.logprobs[0], torch.tensor([-0.1, -0.2, -0.3]))
    assert roll.truncated.tolist() == [False, True]
    assert roll.prompt_mask.tolist() == [[True, True, True], [False, True, True]]
    model = Qwen2ForCausalLM.from_pretrained(tiny_model)
    sampler.sync_weights(model)
    assert set(calls["loaded"]) == set(model.state_dict()) and calls["reset"] == 1


def test_checkpointed_layers_give_the_same_loss_and_gradients(tiny_model):
    """Activation checkpointing (policy.checkpoint_layers, prime-rl's trainer.model.ac) recomputes a layer's
    forward in the backward, and the log-probs then run each row whole (as the GPU kit measured such a model,
    logprobs.packs): the same GRPO loss and gradients (fp32, CPU) as keeping every activation, for every
    layer (freq 1) and every second (freq 2), on prompts of mixed lengths; the default: none for the tiny
    model, every layer from SMALL_MODEL_PARAMS on, train.toml's freq where it is set."""
    from autorl.llm.embedded import grpo, policy
    from autorl.llm.embedded.slots import SMALL_MODEL_PARAMS, checkpoint_every
    from autorl.llm.schema import DefaultLoss

    def grads(every: int):
        torch.manual_seed(0)
        model = Qwen2ForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
        model.train()
        model.config.use_cache = False
        layers = policy.checkpoint_layers(model, every)
        g = torch.Generator().manual_seed(1)
        batch = []
        for i in range(6):  # two groups, prompts of 3 and 5 tokens; completions of 7 and 4 kept tokens
            prompt, n = ([5, 6, 7], 7) if i < 3 else ([9, 8, 7, 6, 5], 4)
            ids = torch.randint(3, 60, (n,), generator=g).tolist()
            batch.append((Sample(prompt, ids, [-1.0] * n, 1.0, 0.5 - i % 2, 1.0, 0, "s", False), n))
        logpi, logmu, adv, mask = completion_logprobs(model, batch, 0, torch.device("cpu"))
        loss, _ = grpo.token_loss(logpi, logmu, adv, mask, DefaultLoss())
        loss.backward()
        return layers, loss.item(), {n: p.grad.clone() for n, p in model.named_parameters()}

    n_layers = Qwen2ForCausalLM.from_pretrained(tiny_model).config.num_hidden_layers
    none, every, second = grads(0), grads(1), grads(2)
    assert (none[0], every[0], second[0]) == (0, n_layers, (n_layers + 1) // 2)
    for _, loss, g in (every, second):
        assert loss == pytest.approx(none[1], abs=1e-6)
        assert all(torch.allclose(g[k], none[2][k], atol=1e-5) for k in g)
    assert checkpoint_every(None, 200_000) == 0 and checkpoint_every(None, SMALL_MODEL_PARAMS) == 1
    assert checkpoint_every(3, 200_000) == 3 and checkpoint_every(0, SMALL_MODEL_PARAMS) == 0


def test_cpu_threads_default_to_one_for_a_tiny_model():
    from autorl.llm.embedded.policy import cpu_threads

    assert cpu_threads(0, 200_000) == 1
    assert cpu_threads(0, 600_000_000) == len(own_cpu_ids())
    assert cpu_threads(3, 200_000) == 3  # an explicit num_threads wins


@pytest.mark.parametrize(("vllm", "expected"), [(True, "vllm"), (False, "hf-graphs")])
def test_auto_on_a_gpu_picks_vllm_else_the_captured_sampler(
    tiny_model, tmp_path, monkeypatch, vllm, expected
):
    """`auto` on a GPU: vLLM where it imports, else StaticSampler with its decode step captured as CUDA graphs
    (3.5x HFSampler's trainer samples/s on the 0.6B shape, H200, 2026-11-28: docs/verified.md). The trainer
    is built on the CPU and asked what it would pick on a GPU (CI has none)."""
    import autorl.llm.embedded.train as train_module

    monkeypatch.setattr(train_module, "vllm_available", lambda: vllm)
    trainer = make_trainer(tiny_model, tmp_path, sampler="auto", max_off_policy_steps=0, device="cpu")
    trainer.device = torch.device("cuda")
    assert trainer._sampler_name() == expected


def test_vllm_sampler_on_a_cpu_trainer_gets_its_device_and_dtype(monkeypatch, tiny_model, tmp_path):
    """The trainer hands VLLMSampler its own device and compute dtype (it used to get cuda/bf16 whatever the
    trainer ran on), and on the CPU a fixed KV cache instead of a share of host memory."""
    import types

    calls: dict = {}
    vllm = types.ModuleType("vllm")
    vllm.LLM = lambda **kwargs: calls.setdefault("init", kwargs)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    trainer = make_trainer(tiny_model, tmp_path / "run", sampler="vllm", device="cpu")
    assert trainer.sampler_name == "vllm" and trainer.sampler.device == torch.device("cpu")
    init = calls["init"]
    assert init["dtype"] == "float32" and init["kv_cache_memory_bytes"] > 0
    assert init["logprobs_mode"] == "processed_logprobs"
