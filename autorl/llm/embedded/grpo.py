"""GRPO advantages and prime-rl's default / ipo loss as pure tensor functions.

Every formula here reproduces prime-rl at commit 559b447 (read for semantics, not copied):

- advantages: ``src/prime_rl/orchestrator/algo/grpo.py`` (``GRPOAlgorithm.score_group``)
  ``A_i = R_i - mean_j R_j`` over the group, no std division, no length normalisation. With
  ``[orchestrator.algo.length_penalty]`` the rewards are shaped first:
  ``R'_i = R_i - mean(R) * (w_out*o_i/max(o) + w_in*in_i/max(in) + w_turns*n_i/max(n))`` (each max over the
  group, clamped to >= 1) and ``A_i = R'_i - mean(R')``. ``A_i`` is copied to every sampled token
  (``src/prime_rl/orchestrator/algo/routing.py``, ``assign_advantages``).
- ``filter_zero_advantages``: ``src/prime_rl/orchestrator/train_sink.py`` (``_prune_zero_advantages``):
  tokens whose advantage is exactly 0 get RL weight 0: they leave the policy-gradient term, the KL term and
  the denominator; a sample left with no RL token is dropped.
- loss: ``src/prime_rl/trainer/rl/loss.py`` (``default_loss_fn``, ``ipo_loss_fn``, ``compute_loss``):

  - ``log_ratio = logpi - logmu`` (``logpi`` from the trainer, ``logmu`` the sampler's processed logprobs),
    ``ratio = exp(log_ratio)``, ``delta = exp(logpi) - exp(logmu)`` (a probability gap, not a ratio).
  - default loss: a token is masked out of the policy-gradient term when ``A > 0 and delta > dppo_mask_high``
    or ``A <= 0 and delta < -dppo_mask_low`` (``torch.where(A > 0, high, low)``, so A == 0 uses the low
    side). ipo loss: masked when ``|delta| > ipo_threshold`` whatever the sign of A.
  - per token: ``l_t = -keep_t * adv_tau * A * ratio_t + kl_tau * log_ratio_t**2``. The ratio is not
    detached (gradient ``-adv_tau * A * ratio * grad logpi``), there is no PPO clipping, and the KL term
    covers every RL token, masked ones included.
  - normalisation: ``L = sum over the whole step batch of l_t / max(N, 1)``, N = number of RL tokens in the
    step batch (all micro-batches): a global token mean, so long completions weigh more.

The tensors are padded ``[batch, time]``; ``loss_mask`` marks the RL tokens (sampled completion tokens,
minus filtered zero-advantage ones, minus anything cut by ``seq_len``). Padding positions may hold any
value: they are zeroed before exponentiation so they can never produce NaN.

The embedded trainer calls each of these (batches.py: ``batch_advantages``; train.py: ``rl_token_counts``,
``token_loss``, ``step_loss_share``), so tests/test_grpo.py checks the code that trains.
"""

from __future__ import annotations

import torch
from torch import Tensor

from autorl.llm.schema import DefaultLoss, IPOLoss, LengthPenalty


def group_advantages(
    rewards: Tensor,
    num_output_tokens: Tensor | None = None,
    num_input_tokens: Tensor | None = None,
    num_turns: Tensor | None = None,
    length_penalty: LengthPenalty | None = None,
) -> Tensor:
    """Advantages of one group (the ``group_size`` rollouts of one task), shape ``[group]``.

    A group of one gets advantage 0 (its own mean), exactly as in prime-rl.
    """
    rewards = rewards.to(torch.float32)
    if length_penalty is None:
        return rewards - rewards.mean()
    assert num_output_tokens is not None and num_input_tokens is not None
    out = num_output_tokens.to(rewards.dtype)
    inp = num_input_tokens.to(rewards.dtype)
    turns = torch.ones_like(rewards) if num_turns is None else num_turns.to(rewards.dtype)
    penalty_frac = (
        length_penalty.num_output_tokens_weight * (out / out.max().clamp(min=1))
        + length_penalty.num_input_tokens_weight * (inp / inp.max().clamp(min=1))
        + length_penalty.num_turns_weight * (turns / turns.max().clamp(min=1))
    )
    shaped = rewards - rewards.mean() * penalty_frac
    return shaped - shaped.mean()


def batch_advantages(
    rewards: Tensor,
    group_ids: Tensor,
    num_output_tokens: Tensor | None = None,
    num_input_tokens: Tensor | None = None,
    length_penalty: LengthPenalty | None = None,
) -> Tensor:
    """Advantages for a flat batch of rollouts; ``group_ids[i]`` names the group of rollout i.

    Groups may have different sizes (``group_size`` can be set per source).
    """
    adv = torch.zeros_like(rewards, dtype=torch.float32)
    for gid in torch.unique(group_ids):
        idx = (group_ids == gid).nonzero(as_tuple=True)[0]
        adv[idx] = group_advantages(
            rewards[idx],
            None if num_output_tokens is None else num_output_tokens[idx],
            None if num_input_tokens is None else num_input_tokens[idx],
            None,
            length_penalty,
        )
    return adv


def rl_token_counts(
    completion_lens: list[int],
    prompt_lens: list[int],
    advantages: list[float],
    seq_len: int,
    filter_zero_advantages: bool,
) -> list[int]:
    """The RL tokens of each sample: the first ``n`` of its sampled completion tokens, ``n`` being what fits
    in ``seq_len`` after the prompt (prime-rl truncates there), and 0 for a zero advantage when filtering.

    A sample with 0 RL tokens leaves the step batch (prime-rl drops a sample with no RL token left)."""
    counts = []
    for completion, prompt, adv in zip(completion_lens, prompt_lens, advantages, strict=True):
        fits = min(completion, max(0, seq_len - prompt))
        counts.append(0 if filter_zero_advantages and adv == 0.0 else fits)
    return counts


def token_loss(
    trainer_logprobs: Tensor,
    inference_logprobs: Tensor,
    advantages: Tensor,
    loss_mask: Tensor,
    settings: DefaultLoss | IPOLoss,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Sum of prime-rl's per-token loss over ``loss_mask`` (not yet divided by N) and its metrics.

    ``trainer_logprobs``/``inference_logprobs``/``loss_mask``: ``[batch, time]``; ``advantages``: ``[batch]``
    (one per sample, broadcast over its tokens) or ``[batch, time]``. Divide the sum by the step's global RL
    token count N (``max(N, 1)``) to get prime-rl's loss.

    Metrics are sums/counts over ``loss_mask`` so that micro-batches can be added up:
    ``tokens``, ``masked`` (is_masked), ``masked_low``, ``masked_high``, ``mismatch_kl`` (sum of
    ``ratio - log ratio - 1``).
    """
    mask = loss_mask.bool()
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(-1).expand_as(trainer_logprobs)
    # Padding may hold garbage (e.g. -inf); zero it so exp() and the products stay finite.
    logpi = torch.where(mask, trainer_logprobs, torch.zeros_like(trainer_logprobs))
    logmu = torch.where(mask, inference_logprobs.to(logpi.dtype), torch.zeros_like(logpi))
    adv = advantages.to(logpi.dtype)

    log_ratio = logpi - logmu
    ratio = torch.exp(log_ratio)
    delta = torch.exp(logpi) - torch.exp(logmu)

    positive = adv > 0
    if isinstance(settings, DefaultLoss):
        too_high = delta > settings.dppo_mask_high
        too_low = delta < -settings.dppo_mask_low
        is_masked = torch.where(positive, too_high, too_low)
        masked_high = positive & too_high
        masked_low = (adv < 0) & too_low
    else:  # ipo
        is_masked = delta.abs() > settings.ipo_threshold
        masked_high = is_masked & (delta > 0)
        masked_low = is_masked & (delta < 0)
    keep = mask & ~is_masked

    pg = keep * (settings.adv_tau * adv) * ratio
    kl = mask * log_ratio**2
    per_token = -pg + settings.kl_tau * kl
    loss_sum = per_token.sum()

    with torch.no_grad():
        mismatch_kl = ratio - log_ratio - 1
        metrics = {
            "tokens": mask.sum().float(),
            "masked": (mask & is_masked).sum().float(),
            "masked_low": (mask & masked_low).sum().float(),
            "masked_high": (mask & masked_high).sum().float(),
            "mismatch_kl": (mismatch_kl * mask).sum().float(),
        }
    return loss_sum, metrics


def step_loss_share(loss_sum: Tensor, num_rl_tokens: int) -> Tensor:
    """prime-rl's normalisation, one micro-batch at a time: its summed loss over the whole step batch's RL
    token count N (max(N, 1)). The shares of a step's micro-batches add up to the step's global token mean."""
    return loss_sum / max(num_rl_tokens, 1)
