"""``[trainer.scheduler]``: constant, linear (warmup-stable-decay) and cosine, as prime-rl builds them.

Source: prime-rl 559b447 ``src/prime_rl/trainer/scheduler.py`` (``setup_*_scheduler``) with the validation
of ``packages/prime-rl-configs/src/prime_rl/configs/trainer.py`` (``validate_scheduler``, mirrored by
autorl.llm.schema.check_scheduler). prime-rl composes torch's own schedulers, and so do we, so the learning
rate of every step is the same:

- ``constant``: ``lr`` at every step.
- ``linear``: warmup ``LinearLR`` from ``f0 = min_lr/lr`` (``1e-8`` when ``min_lr == 0``) to 1 over
  ``warmup_steps``; then constant until ``max_steps - decay_steps``; then ``LinearLR`` from 1 to ``f0`` over
  ``decay_steps - 1`` iterations. Needs ``warmup_steps > 0 or decay_steps > 0``; ``decay_steps > 0`` needs
  ``max_steps`` and ``warmup_steps + decay_steps <= max_steps``.
- ``cosine``: the same warmup, then ``CosineAnnealingLR(T_max = max_steps - warmup_steps, eta_min=min_lr)``.
  Needs ``max_steps``.

The scheduler steps once after every optimizer step, so step 1 trains at the scheduler's initial value
(with warmup that is ``lr * f0``, i.e. almost 0, exactly as in prime-rl).
"""

from __future__ import annotations

from torch.optim import Optimizer
from torch.optim.lr_scheduler import ConstantLR, CosineAnnealingLR, LinearLR, LRScheduler, SequentialLR

from autorl.llm.schema import check_scheduler


def build_scheduler(
    optimizer: Optimizer,
    type_: str,
    lr: float,
    max_steps: int | None,
    warmup_steps: int = 10,
    decay_steps: int = 10,
    min_lr: float = 0.0,
) -> LRScheduler:
    problem = check_scheduler(type_, warmup_steps, decay_steps, max_steps)
    if problem:
        raise ValueError(f"`{problem[0]}` {problem[1]}")
    if type_ == "constant":
        return ConstantLR(optimizer, factor=1.0)

    start = min_lr / lr if min_lr > 0 else 1e-8
    phases: list[LRScheduler] = []
    milestones: list[int] = []
    if warmup_steps > 0:
        phases.append(LinearLR(optimizer, start_factor=start, end_factor=1.0, total_iters=warmup_steps))
        milestones.append(warmup_steps)

    if type_ == "linear":
        if decay_steps > 0:
            assert max_steps is not None
            decay_start = max_steps - decay_steps
            phases.append(
                LinearLR(optimizer, start_factor=1.0, end_factor=1.0, total_iters=decay_start - warmup_steps)
            )
            phases.append(
                LinearLR(optimizer, start_factor=1.0, end_factor=start, total_iters=decay_steps - 1)
            )
            milestones.append(decay_start)
    else:  # cosine
        assert max_steps is not None
        phases.append(CosineAnnealingLR(optimizer, T_max=max_steps - warmup_steps, eta_min=min_lr))

    if len(phases) == 1:
        return phases[0]
    return SequentialLR(optimizer, phases, milestones=milestones)
