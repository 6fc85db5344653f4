"""The packed network: shapes, cached == joint, masks, domains, describe()."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.model.config import preset
from cosmos_robot.model.example_inputs import example_inputs
from cosmos_robot.model.network import WorldActionNetwork


def perturbed_network(seed: int = 0) -> WorldActionNetwork:
    """A tiny network with its zero-initialised layers made non-zero, so outputs depend on everything."""
    torch.manual_seed(seed)
    net = WorldActionNetwork(preset("tiny")).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return net


def test_output_shapes():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=3, num_frames=4, num_actions=6)
    out = net(reasoner, gen)
    assert out.frames.shape == gen.frames.shape == (3, 4, 16, net.config.frame_token_dim)
    assert out.actions.shape == (3, 6, net.config.action_width)
    assert out.states.shape == (3, 4, net.config.state_width)
    assert out.reward.shape == out.success_logit.shape == (3, 6)


def test_cached_forward_equals_joint_forward():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2, context_frames=2)
    a, b = net(reasoner, gen), net(reasoner, gen, joint=True)
    for name in ("frames", "actions", "states", "reward", "success_logit"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name), atol=1e-5, rtol=1e-5)


def test_padded_channels_are_zero_in_the_output_and_ignored_in_the_input():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2, action_dim=2, state_dim=3)
    out = net(reasoner, gen)
    assert out.actions[..., 2:].abs().max() == 0 and out.states[..., 3:].abs().max() == 0
    junk = gen.replace(
        actions=gen.actions + 5.0 * ~gen.action_channels[:, None],
        states=gen.states + 5.0 * ~gen.state_channels[:, None],
    )
    torch.testing.assert_close(net(reasoner, junk).frames, out.frames)


def test_the_domain_selects_the_action_projection():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2)
    other = gen.replace(domain=(gen.domain + 1) % net.config.num_domains)
    assert (net(reasoner, gen).actions - net(reasoner, other).actions).abs().max() > 1e-4


def test_actions_change_the_predicted_frames():
    # The generator must be able to read its actions (FD that ignores actions is the failure users report).
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=1)
    moved = gen.replace(actions=gen.actions + 1.0 * gen.action_channels[:, None])
    assert (net(reasoner, gen).frames - net(reasoner, moved).frames).abs().max() > 1e-4


def test_untrained_network_predicts_zero_velocity():
    net = WorldActionNetwork(preset("tiny"))
    reasoner, gen = example_inputs(net.config)
    out = net(reasoner, gen)
    assert out.frames.abs().max() == 0 and out.actions.abs().max() == 0


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_describe_reports_towers_and_flops(name):
    net = WorldActionNetwork(preset(name))
    info = net.describe()
    assert info["params_reasoner_tower"] > 0 and info["params_generator_tower"] > info["params_reasoner_tower"]
    assert info["flops_forward"] == pytest.approx(info["flops_reasoner"] + info["flops_generator_step"])
    assert info["params_total"] == sum(p.numel() for p in net.parameters())
