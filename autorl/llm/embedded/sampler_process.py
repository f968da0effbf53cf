"""Sampling in a second process, overlapped with the trainer's step (CPU, the ``hf-process`` sampler).

prime-rl samples and trains at the same time: the inference server generates the batch of step n+1 with the
policy of step n-1 while the trainer runs step n (the one-step lag, train.py's module docstring). In one
process on a CPU the two take turns on one core and the other cores idle (a model this small gains nothing
from a second torch thread). Here the sampling of step n runs in a child process on another core while the
trainer computes step n, which needs only the weights both start from:

- the parent keeps a copy of every parameter in shared memory and refreshes it after each optimizer step
  (``publish``, a 1 MB copy for the default tiny model), only while the child is idle;
- the child's model *is* those shared tensors, so a request is sampled with exactly the published weights;
- the child samples with ``HFSampler`` and a generator seeded like the trainer's, and requests arrive in the
  same order as the in-process sampler would get them, so a run gives the same rollouts (and the same first
  steps) as with ``sampler = "hf"`` on the same machine. tests/test_embedded_trainer.py checks it.

With ``hf-static-process`` the child samples with ``StaticSampler`` instead (the same draws), its step
compiled and warmed before the child says ready, so the compile is start-up; ``wait_ready`` says how long.
The trainer reads that `ready` only after its own start-up (its training step's compile, compile_train), so
the two compiles run at once on the two cores. Forked from a warm starter that compiled them (prewarm.py),
both find their steps compiled and warm them at once.

The child ignores SIGINT/SIGTERM (the runner signals the whole process group): the trainer handles the stop,
abandons the pending batch and closes the pipe, which ends the child. A killed parent closes it too.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from dataclasses import fields
from multiprocessing.connection import Connection
from typing import Any

import torch

from autorl.llm.embedded.generation import HFSampler, Rollouts

# One sampler call: (prompts, temperature, max_new_tokens).
Request = tuple[list[list[int]], float, int]


def _serve(
    conn: Connection,
    parent_end: Connection,
    model_path: str,
    shared: dict[str, torch.Tensor],
    pad_id: int,
    eos_ids: list[int],
    seed: int,
    warm: tuple[int, int] | None,
) -> None:
    """Child: load the model around the shared parameters (with `warm`, (rows, max_new_tokens), a
    StaticSampler whose step it compiles first), then answer requests until the pipe closes."""
    from autorl.engine.process import die_with_parent

    die_with_parent()  # a SIGKILLed trainer takes its sampler along (no wait for a broken pipe)
    parent_end.close()  # the fork's copy of the trainer's end: the pipe must close when the trainer closes it
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    torch.set_num_threads(1)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, attn_implementation="sdpa")
    for name, param in model.named_parameters():
        param.data = shared[name]
    model.eval()
    sampler = HFSampler(model, pad_id, eos_ids)
    seconds = None
    if warm is not None:
        from autorl.llm.embedded.static_sampler import StaticSampler

        sampler = StaticSampler(model, pad_id, eos_ids, compiled=True)
        seconds = sampler.warm(*warm)
    generator = torch.Generator()
    generator.manual_seed(seed)
    conn.send(("ready", seconds))
    while True:
        try:
            requests: list[Request] | None = conn.recv()
        except (EOFError, OSError):
            return
        if requests is None:
            return
        out = []
        for prompts, temperature, max_new_tokens in requests:
            rollouts = sampler.sample(prompts, temperature, max_new_tokens, generator)
            assert rollouts is not None  # no should_stop here: the parent abandons instead
            out.append({f.name: getattr(rollouts, f.name).numpy() for f in fields(Rollouts)})
        try:
            conn.send(out)
        except (BrokenPipeError, OSError):
            return


class ProcessSampler:
    """HF sampling in a forked child process; ``submit`` returns at once, ``collect`` waits.

    Forked, not spawned: a spawned child imports torch and transformers again (about 12 s on a 2-core CPU,
    most of a seed's start-up). The fork inherits the imports and the shared parameters; it runs one torch
    thread (the trainer runs one too when this sampler is used), loads its own copy of the model as a
    spawned child would, and touches no CUDA (CPU training only)."""

    def __init__(
        self,
        model: torch.nn.Module,
        model_path: str,
        pad_id: int,
        eos_ids: Sequence[int],
        seed: int,
        warm: tuple[int, int] | None = None,
    ):
        ctx = torch.multiprocessing.get_context("fork")
        with torch.no_grad():
            self.shared = {n: p.detach().clone().share_memory_() for n, p in model.named_parameters()}
        self.params = dict(model.named_parameters())
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(
            target=_serve,
            args=(child_conn, self.conn, model_path, self.shared, pad_id, list(eos_ids), seed, warm),
            name="autorl-sampler",
            daemon=True,
        )
        self.process.start()
        child_conn.close()
        self.warm = warm  # (rows, max_new_tokens) the child compiles its step for; None: it samples eagerly
        self.ready = False  # the child's `ready` not yet read (wait_ready)
        self.warm_seconds: float | None = None  # the compile's seconds in the child (hf-static-process)
        self.pending = False

    def wait_ready(self) -> float | None:
        """Wait for the child's `ready`: it loads the model (and, with `warm`, compiles its step) while the
        trainer does its own start-up. The compile's seconds in the child, or None."""
        if not self.ready:
            try:
                first = self.conn.recv()
            except EOFError:
                raise RuntimeError(
                    f"sampler process died while loading (exit code {self.process.exitcode})"
                ) from None
            if not (isinstance(first, tuple) and len(first) == 2 and first[0] == "ready"):
                raise RuntimeError(f"sampler process: unexpected first message {first!r}")
            self.ready, self.warm_seconds = True, first[1]
        return self.warm_seconds

    @torch.no_grad()
    def publish(self) -> None:
        """Copy the trainer's current weights to the child (call only with no request pending)."""
        assert not self.pending
        for name, tensor in self.shared.items():
            tensor.copy_(self.params[name])

    def submit(self, requests: list[Request]) -> None:
        assert not self.pending
        self.wait_ready()
        self.conn.send(requests)
        self.pending = True

    def collect(self, should_stop: Callable[[], bool]) -> list[Rollouts] | None:
        """The rollouts of the pending requests, in order; None when ``should_stop()`` turned true first
        (the batch is abandoned and the sampler must not be used again)."""
        while not self.conn.poll(0.005):
            if should_stop():
                return None
            if not self.process.is_alive():
                raise RuntimeError(f"sampler process died (exit code {self.process.exitcode})")
        try:
            out: list[dict[str, Any]] = self.conn.recv()
        except EOFError:
            if should_stop():
                return None
            raise RuntimeError(f"sampler process died (exit code {self.process.exitcode})") from None
        self.pending = False
        return [Rollouts(**{k: torch.from_numpy(v) for k, v in r.items()}) for r in out]

    def close(self) -> None:
        if self.process.is_alive() and not self.pending:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        self.conn.close()  # also ends a child that is still sampling an abandoned batch
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
