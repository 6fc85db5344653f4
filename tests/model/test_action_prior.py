"""The behaviour-cloning action prior: keypoints where the features peak, sinusoidal state features, a masked loss."""

from __future__ import annotations

import torch

from cosmos_robot.model.action_prior import PRIOR_CHUNK, STATE_FREQUENCIES, ActionPrior, SpatialSoftmax, prior_loss


def test_spatial_softmax_finds_the_peak():
    maps = torch.full((1, 1, 8, 8), -50.0)
    maps[0, 0, 0, 7] = 50.0  # top-right corner
    torch.testing.assert_close(SpatialSoftmax()(maps), torch.tensor([[-1.0, 1.0]]), atol=1e-4, rtol=0)


def test_the_prior_reads_sinusoidal_state_features():
    torch.manual_seed(0)
    width, keypoints = 16, 2 * 16
    prior = ActionPrior(8, width, 32, PRIOR_CHUNK, 4)
    assert prior.mlp[0].in_features == keypoints + width * (1 + 2 * STATE_FREQUENCIES)
    with torch.no_grad():  # without the raw state columns, what is left are sin/cos of pi * 2^j * s: period 2
        prior.mlp[0].weight[:, keypoints : keypoints + width] = 0
    grid, domain = torch.randn(2, 8, 8, 8), torch.zeros(2, dtype=torch.long)
    state = torch.rand(2, width) * 2 - 1
    torch.testing.assert_close(prior(grid, state, domain), prior(grid, state + 2.0, domain), atol=1e-4, rtol=1e-4)
    assert (prior(grid, state, domain) - prior(grid, state + 0.5, domain)).abs().max() > 1e-3
    assert prior(grid, state, domain).shape == (2, PRIOR_CHUNK, 32)


def test_the_loss_ignores_padded_channels_and_actions_past_the_episode():
    predicted, actions = torch.zeros(1, 2, 3), torch.ones(1, 2, 3)
    channels = torch.tensor([[True, True, False]])
    valid = torch.tensor([[True, False]])
    assert prior_loss(predicted, actions, channels, valid) == 1.0  # 2 counted errors of 1, mean 1
    actions[0, 1] = 100.0  # past the episode's end: no effect
    actions[0, 0, 2] = 100.0  # padded channel: no effect
    assert prior_loss(predicted, actions, channels, valid) == 1.0
