"""The training objective: mixed-mode batches, masks, and a network that can fit a batch."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.model.config import preset
from cosmos_robot.model.example_inputs import example_inputs, example_prior_batch, example_transition_batch
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.objective import BatchPlan, draw_noise, training_loss
from cosmos_robot.model.plan import Mode


def test_batch_plan_stacks_per_sample_modes():
    plan = BatchPlan.from_modes([Mode.FORWARD_DYNAMICS, Mode.INVERSE_DYNAMICS, Mode.POLICY], 4, 3)
    assert plan.frames.shape == (3, 4) and plan.actions.shape == (3, 3)
    assert plan.actions[1].all() and not plan.actions[0].any() and not plan.frames[1].any()


def test_loss_is_finite_and_a_tiny_network_fits_one_batch():
    torch.manual_seed(0)
    net = WorldActionNetwork(preset("tiny"))
    reasoner, clean = example_inputs(net.config, batch=6)
    plan = BatchPlan.from_modes([Mode.FORWARD_DYNAMICS, Mode.INVERSE_DYNAMICS, Mode.POLICY] * 2, 4, 3)
    rewards, successes = torch.randn(6, 3), torch.rand(6, 3) > 0.5
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3)
    first = None
    for _ in range(40):  # measured: the loss falls to ~5 % of its first value by then
        noise = draw_noise(clean, torch.Generator().manual_seed(0))
        terms = training_loss(net, reasoner, clean, plan, noise, rewards, successes)
        assert torch.isfinite(terms.total)
        first = first if first is not None else float(terms.total.detach())
        opt.zero_grad()
        terms.total.backward()
        opt.step()
    assert float(terms.total.detach()) < 0.2 * first


def test_unknown_rewards_and_successes_are_left_out_of_the_heads_losses():
    torch.manual_seed(0)
    net = WorldActionNetwork(preset("tiny"))
    reasoner, clean = example_inputs(net.config, batch=4)
    plan = BatchPlan.from_modes([Mode.FORWARD_DYNAMICS] * 4, 4, 3)
    noise = draw_noise(clean, torch.Generator().manual_seed(0))
    rewards, successes = torch.randn(4, 3), (torch.rand(4, 3) > 0.5).float()
    unknown = torch.tensor([False, True, False, True])  # samples 1 and 3 come from a dataset without them
    masked = training_loss(
        net, reasoner, clean, plan, noise, rewards.masked_fill(unknown[:, None], float("nan")),
        successes.masked_fill(unknown[:, None], float("nan")),
    )  # fmt: skip
    assert torch.isfinite(masked.total)
    with torch.no_grad():  # the same rows scored with absurd targets: they would dominate the loss
        scored = training_loss(net, reasoner, clean, plan, noise, rewards.masked_fill(unknown[:, None], 1e3), successes)
    assert masked.reward < 10.0 < 1e4 < scored.reward
    none = training_loss(
        net, reasoner, clean, plan, noise, torch.full((4, 3), float("nan")), torch.full((4, 3), float("nan"))
    )
    assert none.reward == 0.0 and none.success == 0.0  # no known target at all trains neither head


def test_clean_only_plans_give_no_flow_loss():
    net = WorldActionNetwork(preset("tiny"))
    reasoner, clean = example_inputs(net.config, batch=2)
    plan = BatchPlan.from_modes([Mode.INVERSE_DYNAMICS] * 2, 4, 3)
    plan.actions[:] = False  # nothing generated at all
    plan.states[:] = False
    terms = training_loss(net, reasoner, clean, plan, draw_noise(clean))
    assert float(terms.total) == 0.0 and terms.frames == 0.0 and terms.actions == 0.0


def test_loss_of_a_split_batch_averages_to_the_whole_batch():
    # What data-parallel training relies on: equal halves, per-sample means, noise drawn for the whole batch.
    torch.manual_seed(0)
    net = WorldActionNetwork(preset("tiny"))
    reasoner, clean = example_inputs(net.config, batch=4)
    plan = BatchPlan.from_modes([Mode.FORWARD_DYNAMICS, Mode.INVERSE_DYNAMICS, Mode.POLICY, Mode.POLICY], 4, 3)
    noise = draw_noise(clean, torch.Generator().manual_seed(1))
    whole = training_loss(net, reasoner, clean, plan, noise).total
    halves = []
    for part in (slice(0, 2), slice(2, 4)):
        halves.append(
            training_loss(net, reasoner.select(part), clean.select(part), plan.select(part), noise.select(part)).total
        )
    torch.testing.assert_close(whole, (halves[0] + halves[1]) / 2)


# (the mode whose action tokens use the prior, how its batch is made, training_loss's keyword, its term, its module)
PRIORS = [
    (Mode.POLICY, example_prior_batch, "prior_batch", "prior", "action_prior"),
    (Mode.INVERSE_DYNAMICS, example_transition_batch, "inverse_batch", "inverse", "inverse_prior"),
]


@pytest.mark.parametrize(("mode", "make_batch", "keyword", "term", "module"), PRIORS)
def test_a_prior_loss_is_added_and_trains_that_prior_alone(mode, make_batch, keyword, term, module):
    torch.manual_seed(0)
    net = WorldActionNetwork(preset("tiny"))
    reasoner, clean = example_inputs(net.config, batch=4, num_frames=5, num_actions=4)
    plan = BatchPlan.from_modes([mode] * 4, 5, 4)
    noise = draw_noise(clean, torch.Generator().manual_seed(0))
    batch = {keyword: make_batch(clean)}
    without = training_loss(net, reasoner, clean, plan, noise)
    with_prior = training_loss(net, reasoner, clean, plan, noise, **batch)
    assert getattr(with_prior, term) > 0 and getattr(without, term) == 0.0
    torch.testing.assert_close(with_prior.total, without.total + getattr(with_prior, term))
    # The generator's use of the prior is detached: the flow loss gives the prior no gradient.
    without.total.backward()
    prior = getattr(net, module)
    assert all(p.grad is None or p.grad.abs().max() == 0 for p in prior.parameters())
    opt = torch.optim.AdamW(prior.parameters(), lr=3e-3)
    first = getattr(with_prior, term)
    for _ in range(60):
        terms = training_loss(net, reasoner, clean, plan, noise, **batch)
        opt.zero_grad()
        terms.total.backward()
        opt.step()
    assert getattr(terms, term) < 0.2 * first
