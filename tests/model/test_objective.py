"""The training objective: mixed-mode batches, masks, and a network that can fit a batch."""

from __future__ import annotations

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
    for _ in range(120):
        noise = draw_noise(clean, torch.Generator().manual_seed(0))
        terms = training_loss(net, reasoner, clean, plan, noise, rewards, successes)
        assert torch.isfinite(terms.total)
        first = first if first is not None else float(terms.total)
        opt.zero_grad()
        terms.total.backward()
        opt.step()
    assert float(terms.total) < 0.5 * first


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
        r = type(reasoner)(**{k: v[part] for k, v in vars(reasoner).items()})
        g = clean.replace(**{k: v[part] for k, v in vars(clean).items()})
        halves.append(training_loss(net, r, g, plan.select(part), noise.select(part)).total)
    torch.testing.assert_close(whole, (halves[0] + halves[1]) / 2)


def test_the_prior_loss_is_added_and_trains_the_prior_alone():
    torch.manual_seed(0)
    net = WorldActionNetwork(preset("tiny"))
    reasoner, clean = example_inputs(net.config, batch=4, num_frames=5, num_actions=4)
    plan = BatchPlan.from_modes([Mode.POLICY] * 4, 5, 4)
    noise = draw_noise(clean, torch.Generator().manual_seed(0))
    prior_batch = example_prior_batch(clean)
    without = training_loss(net, reasoner, clean, plan, noise)
    with_prior = training_loss(net, reasoner, clean, plan, noise, prior_batch=prior_batch)
    assert with_prior.prior > 0 and without.prior == 0.0
    torch.testing.assert_close(with_prior.total, without.total + with_prior.prior)
    # The generator's use of the prior is detached: the flow loss gives the prior no gradient.
    without.total.backward()
    assert all(p.grad is None or p.grad.abs().max() == 0 for p in net.action_prior.parameters())
    opt = torch.optim.AdamW(net.action_prior.parameters(), lr=3e-3)
    first = with_prior.prior
    for _ in range(60):
        terms = training_loss(net, reasoner, clean, plan, noise, prior_batch=prior_batch)
        opt.zero_grad()
        terms.total.backward()
        opt.step()
    assert terms.prior < 0.2 * first


def test_the_inverse_loss_is_added_and_trains_the_inverse_prior_alone():
    torch.manual_seed(0)
    net = WorldActionNetwork(preset("tiny"))
    reasoner, clean = example_inputs(net.config, batch=4, num_frames=5, num_actions=4)
    plan = BatchPlan.from_modes([Mode.INVERSE_DYNAMICS] * 4, 5, 4)
    noise = draw_noise(clean, torch.Generator().manual_seed(0))
    batch = example_transition_batch(clean)
    without = training_loss(net, reasoner, clean, plan, noise)
    with_inverse = training_loss(net, reasoner, clean, plan, noise, inverse_batch=batch)
    assert with_inverse.inverse > 0 and without.inverse == 0.0
    torch.testing.assert_close(with_inverse.total, without.total + with_inverse.inverse)
    # The generator's use of the estimate is detached: the flow loss gives the inverse prior no gradient.
    without.total.backward()
    assert all(p.grad is None or p.grad.abs().max() == 0 for p in net.inverse_prior.parameters())
    opt = torch.optim.AdamW(net.inverse_prior.parameters(), lr=3e-3)
    first = with_inverse.inverse
    for _ in range(60):
        terms = training_loss(net, reasoner, clean, plan, noise, inverse_batch=batch)
        opt.zero_grad()
        terms.total.backward()
        opt.step()
    assert terms.inverse < 0.2 * first
