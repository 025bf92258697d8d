"""The offline GRPO loss against a case worked out by hand."""

import math

import pytest
import torch

from harness_learning.training.loss import grpo_loss, token_logprobs


def _case():
    ratios = torch.tensor([[1.5, 0.9], [0.7, 1.0]])
    logp = torch.log(ratios).requires_grad_(True)
    old = torch.zeros(2, 2)
    adv = torch.tensor([1.0, -2.0])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    return logp, old, adv, mask


def test_clipped_loss_matches_hand_computation():
    logp, old, adv, mask = _case()
    loss, stats = grpo_loss(logp, old, adv, mask, epsilon=0.2, epsilon_high=0.28)
    # row 0 (A=+1): r=1.5 clips at 1.28 -> -1.28; r=0.9 unclipped -> -0.9
    # row 1 (A=-2): r=0.7 clips at 0.8 -> +1.6; second token masked out
    expected = (-1.28 - 0.9 + 1.6) / 3
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert stats.clip_fraction == pytest.approx(2 / 3)
    loss.backward()
    # only the unclipped token has a gradient: d(-A r)/d logp = -A r, over 3 tokens
    assert logp.grad[0, 1].item() == pytest.approx(-0.9 / 3, abs=1e-6)
    assert logp.grad[0, 0].item() == 0.0 and logp.grad[1, 0].item() == 0.0
    assert logp.grad[1, 1].item() == 0.0


def test_kl_term_is_k3_estimate_to_reference():
    logp, old, adv, mask = _case()
    ref = torch.zeros(2, 2)
    base, _ = grpo_loss(logp, old, adv, mask, 0.2, 0.28)
    loss, stats = grpo_loss(logp, old, adv, mask, 0.2, 0.28, ref_logprobs=ref, beta=0.1)
    k3 = [1 / r - math.log(1 / r) - 1 for r in (1.5, 0.9, 0.7)]  # exp(d) - d - 1, d = -log r
    assert stats.kl == pytest.approx(sum(k3) / 3, abs=1e-6)
    assert loss.item() == pytest.approx(base.item() + 0.1 * sum(k3) / 3, abs=1e-6)


def test_symmetric_clip_when_no_upper_bound_given():
    logp, old, adv, mask = _case()
    loss, _ = grpo_loss(logp, old, adv, mask, epsilon=0.2)
    assert loss.item() == pytest.approx((-1.2 - 0.9 + 1.6) / 3, abs=1e-6)


def test_shape_mismatch_is_a_clear_error():
    logp, old, adv, mask = _case()
    with pytest.raises(ValueError, match="shape mismatch"):
        grpo_loss(logp, old[:, :1], adv, mask)


def test_token_logprobs_pick_next_token():
    logits = torch.log(torch.tensor([[[0.1, 0.9], [0.6, 0.4], [0.5, 0.5]]]))
    ids = torch.tensor([[0, 1, 0]])
    got = token_logprobs(logits, ids)
    assert torch.allclose(got, torch.log(torch.tensor([[0.9, 0.6]])))
