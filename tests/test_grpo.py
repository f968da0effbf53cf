"""The embedded trainer's math: advantages, prime-rl's default/ipo loss, normalisation and the lr schedulers.

Every expected value is computed by hand from prime-rl's formulas (see the docstrings of
autorl/llm/embedded/grpo.py and scheduler.py), not by calling the code under test twice.
"""

from __future__ import annotations

import math

import pytest
import torch

from autorl.llm.embedded import grpo
from autorl.llm.embedded.scheduler import build_scheduler
from autorl.llm.schema import DefaultLoss, IPOLoss, LengthPenalty, check_scheduler

# ---------------------------------------------------------------------------------------------- advantages


def test_advantage_is_reward_minus_group_mean_without_std():
    adv = grpo.group_advantages(torch.tensor([2.0, 0.0, 0.0, 0.0]))
    assert adv.tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5])
    # Doubling every reward doubles the advantages: there is no std normalisation.
    assert grpo.group_advantages(torch.tensor([4.0, 0.0, 0.0, 0.0])).tolist() == pytest.approx(
        [3, -1, -1, -1]
    )


def test_single_survivor_and_equal_rewards_give_zero():
    assert grpo.group_advantages(torch.tensor([1.0])).tolist() == [0.0]
    assert grpo.group_advantages(torch.tensor([1.0, 1.0, 1.0])).tolist() == [0.0, 0.0, 0.0]


def test_group_ids_shape_the_advantage_groups():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0])
    pairs = grpo.batch_advantages(rewards, torch.tensor([0, 0, 1, 1]))  # group_size 2
    whole = grpo.batch_advantages(rewards, torch.tensor([0, 0, 0, 0]))  # group_size 4
    assert pairs.tolist() == pytest.approx([0.5, -0.5, 0.0, 0.0])
    assert whole.tolist() == pytest.approx([0.75, -0.25, -0.25, -0.25])


def test_length_penalty_shapes_rewards_before_the_baseline():
    rewards = torch.tensor([1.0, 1.0, 0.0])
    out_tokens = torch.tensor([10, 20, 20])
    in_tokens = torch.tensor([5, 5, 5])
    lp = LengthPenalty(num_output_tokens_weight=0.25, num_input_tokens_weight=0.1, num_turns_weight=0.1)
    adv = grpo.group_advantages(rewards, out_tokens, in_tokens, None, lp)
    mean_r = 2 / 3
    frac = [0.25 * o / 20 + 0.1 * 1 + 0.1 * 1 for o in (10, 20, 20)]
    shaped = [r - mean_r * f for r, f in zip([1, 1, 0], frac, strict=True)]
    expected = [s - sum(shaped) / 3 for s in shaped]
    assert adv.tolist() == pytest.approx(expected)
    # The shorter correct answer now beats the longer one.
    assert adv[0] > adv[1] > adv[2]


def test_filter_zero_advantages_drops_zero_advantage_tokens_and_seq_len_cuts():
    # completions of 2, 3 and 6 tokens after prompts of 4, 4 and 6 tokens, seq_len 10: the last is cut at 4
    completion, prompt = [2, 3, 6], [4, 4, 6]
    adv = [0.0, 0.5, -0.5]
    assert grpo.rl_token_counts(completion, prompt, adv, 10, filter_zero_advantages=True) == [0, 3, 4]
    assert grpo.rl_token_counts(completion, prompt, adv, 10, filter_zero_advantages=False) == [2, 3, 4]
    assert grpo.rl_token_counts([5], [12], [1.0], 10, filter_zero_advantages=True) == [0]  # prompt too long


# ---------------------------------------------------------------------------------------------- loss


def _loss(logpi, logmu, adv, mask=None, **settings):
    mask = torch.ones_like(logpi, dtype=torch.bool) if mask is None else mask
    loss = IPOLoss if settings.pop("type", "default") == "ipo" else DefaultLoss
    # model_construct: the formulas are tested at edge values (masks of 0) that train.toml refuses
    return grpo.token_loss(logpi, logmu, adv, mask, loss.model_construct(**settings))


def test_on_policy_gradient_is_minus_advantage_and_nothing_is_masked():
    logmu = torch.log(torch.tensor([[0.2, 0.5, 0.9], [0.3, 0.3, 0.6]]))
    logpi = logmu.clone().requires_grad_(True)
    adv = torch.tensor([1.0, -2.0])
    loss, m = _loss(logpi, logmu, adv, dppo_mask_low=0.0, dppo_mask_high=0.0, kl_tau=0.5)
    loss.backward()
    assert m["masked"].item() == 0
    assert loss.item() == pytest.approx(-(3 * 1.0 + 3 * -2.0))  # -sum(A * ratio), ratio = 1
    # d loss / d logpi = -A * ratio + 2 kl_tau log_ratio = -A on policy (the KL gradient is 0).
    assert logpi.grad.flatten().tolist() == pytest.approx([-1.0] * 3 + [2.0] * 3)


def test_lower_dppo_mask_high_masks_more_tokens_when_policies_differ():
    logmu = torch.log(torch.tensor([[0.10, 0.10, 0.10, 0.10]]))
    logpi = torch.log(torch.tensor([[0.15, 0.25, 0.35, 0.45]]))  # delta = 0.05, 0.15, 0.25, 0.35
    adv = torch.tensor([1.0])
    counts = [float(_loss(logpi, logmu, adv, dppo_mask_high=h)[1]["masked"]) for h in (0.4, 0.2, 0.1, 0.01)]
    assert counts == [0.0, 2.0, 3.0, 4.0]
    # Positive advantages are judged by the high side only.
    assert float(_loss(logpi, logmu, adv, dppo_mask_high=0.4, dppo_mask_low=0.0)[1]["masked"]) == 0.0


def test_dppo_mask_low_applies_to_non_positive_advantages():
    logmu = torch.log(torch.tensor([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]))
    logpi = torch.log(torch.tensor([[0.45, 0.35, 0.2], [0.45, 0.35, 0.2]]))  # delta = -0.05, -0.15, -0.3
    adv = torch.tensor([-1.0, 0.0])  # A == 0 uses the low side too (torch.where(A > 0, high, low))
    _, loose = _loss(logpi, logmu, adv, dppo_mask_low=0.2, dppo_mask_high=0.0)
    _, tight = _loss(logpi, logmu, adv, dppo_mask_low=0.1, dppo_mask_high=0.0)
    assert float(loose["masked"]) == 2.0 and float(tight["masked"]) == 4.0
    assert float(tight["masked_low"]) == 2.0  # the metric counts negative advantages only, like prime-rl


def test_masked_tokens_leave_the_pg_term_but_keep_the_kl_term():
    logmu = torch.log(torch.tensor([[0.1, 0.1]]))
    logpi = torch.log(torch.tensor([[0.5, 0.12]])).requires_grad_(True)  # token 0: delta 0.4 -> masked
    adv = torch.tensor([1.0])
    loss, m = _loss(logpi, logmu, adv, dppo_mask_high=0.2, kl_tau=0.1, adv_tau=1.0)
    loss.backward()
    lr0, lr1 = math.log(5.0), math.log(1.2)
    assert float(m["masked"]) == 1.0
    assert loss.item() == pytest.approx(-1.2 + 0.1 * (lr0**2 + lr1**2), rel=1e-5)
    # masked token: only the KL gradient 2 kl_tau log_ratio; kept token: -A ratio + 2 kl_tau log_ratio
    assert logpi.grad[0, 0].item() == pytest.approx(2 * 0.1 * lr0, rel=1e-5)
    assert logpi.grad[0, 1].item() == pytest.approx(-1.2 + 2 * 0.1 * lr1, rel=1e-5)


def test_kl_tau_and_adv_tau_scale_their_terms():
    logmu = torch.log(torch.tensor([[0.3, 0.3]]))
    logpi = torch.log(torch.tensor([[0.33, 0.27]]))
    adv = torch.tensor([0.5])
    ratio_sum = (0.33 + 0.27) / 0.3
    kl_sum = math.log(1.1) ** 2 + math.log(0.9) ** 2
    for adv_tau, kl_tau in [(1.0, 0.0), (2.0, 0.0), (1.0, 1.0), (0.5, 3.0)]:
        loss, _ = _loss(logpi, logmu, adv, adv_tau=adv_tau, kl_tau=kl_tau)
        assert float(loss) == pytest.approx(-adv_tau * 0.5 * ratio_sum + kl_tau * kl_sum, rel=1e-5)


def test_ipo_masks_symmetrically_by_threshold():
    logmu = torch.log(torch.tensor([[0.5, 0.5, 0.5, 0.5]]))
    logpi = torch.log(torch.tensor([[0.7, 0.3, 0.55, 0.45]]))  # |delta| = 0.2, 0.2, 0.05, 0.05
    for adv in (torch.tensor([1.0]), torch.tensor([-1.0])):
        assert float(_loss(logpi, logmu, adv, type="ipo", ipo_threshold=0.1)[1]["masked"]) == 2.0
        assert float(_loss(logpi, logmu, adv, type="ipo", ipo_threshold=0.01)[1]["masked"]) == 4.0


def test_padding_is_ignored_even_when_it_holds_inf():
    logmu = torch.tensor([[-1.0, float("-inf")]])
    logpi = torch.tensor([[-1.0, float("nan")]])
    mask = torch.tensor([[True, False]])
    loss, m = _loss(logpi, logmu, torch.tensor([1.0]), mask)
    assert math.isfinite(float(loss)) and float(m["tokens"]) == 1.0
    assert float(loss) == pytest.approx(-1.0)


def test_global_token_mean_over_micro_batches():
    """Splitting a step batch into micro-batches does not change the loss: each is divided by the global N."""
    torch.manual_seed(0)
    logmu = torch.log_softmax(torch.randn(4, 5), -1)
    logpi = logmu + 0.05 * torch.randn(4, 5)
    adv = torch.tensor([1.0, -1.0, 0.5, 0.0])
    mask = torch.tensor(
        [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0], [1, 1, 0, 0, 0]], dtype=torch.bool
    )
    n = int(mask.sum())
    whole, _ = _loss(logpi, logmu, adv, mask)
    parts = [_loss(logpi[i : i + 2], logmu[i : i + 2], adv[i : i + 2], mask[i : i + 2])[0] for i in (0, 2)]
    shares = [float(grpo.step_loss_share(part, n)) for part in parts]
    assert sum(shares) == pytest.approx(float(whole) / n, rel=1e-6)
    assert float(grpo.step_loss_share(whole, 0)) == float(whole)  # no RL token: max(N, 1)
    # A long completion weighs more than a short one (no per-sequence averaging).
    per_row = [
        float(_loss(logpi[i : i + 1], logmu[i : i + 1], adv[i : i + 1], mask[i : i + 1])[0]) for i in range(4)
    ]
    assert float(whole) == pytest.approx(sum(per_row), rel=1e-6)


# ---------------------------------------------------------------------------------------------- scheduler


def _lrs(type_, steps, **kw):
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = build_scheduler(opt, type_, 1.0, steps, **kw)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])  # the lr the step trains with
        opt.step()
        sched.step()
    return out


def test_constant_scheduler():
    assert _lrs("constant", 5) == [1.0] * 5


def test_linear_scheduler_warmup_stable_decay():
    # warmup 2 from min_lr/lr = 0.1, stable until max_steps - decay_steps = 5, decay over decay_steps - 1 = 2.
    got = _lrs("linear", 8, warmup_steps=2, decay_steps=3, min_lr=0.1)
    assert got == pytest.approx([0.1, 0.55, 1.0, 1.0, 1.0, 1.0, 0.55, 0.1])
    # Warmup only, min_lr = 0: starts at 1e-8 * lr.
    assert _lrs("linear", 4, warmup_steps=2, decay_steps=0) == pytest.approx([1e-8, 0.5, 1.0, 1.0], abs=1e-7)


def test_cosine_scheduler():
    got = _lrs("cosine", 6, warmup_steps=2, min_lr=0.0)
    cos = [0.5 * (1 + math.cos(math.pi * k / 4)) for k in range(4)]  # T_max = max_steps - warmup = 4
    assert got == pytest.approx([1e-8, 0.5, *cos], abs=1e-7)
    assert _lrs("cosine", 3, warmup_steps=0, min_lr=0.2) == pytest.approx(
        [
            1.0,
            0.2 + 0.8 * 0.5 * (1 + math.cos(math.pi / 3)),
            0.2 + 0.8 * 0.5 * (1 + math.cos(2 * math.pi / 3)),
        ]
    )


def test_scheduler_refusals_match_prime_rl():
    assert check_scheduler("linear", 0, 0, 10) is not None
    assert check_scheduler("linear", 2, 3, None) is not None
    assert check_scheduler("linear", 6, 6, 10) is not None
    assert check_scheduler("cosine", 2, 0, None) is not None
    assert check_scheduler("linear", 2, 0, None) is None  # warmup only needs no max_steps
