"""Example inputs are well formed: masks match the dimensions asked for, times advance at the fps."""

from __future__ import annotations

import torch

from cosmos_robot.model.config import preset
from cosmos_robot.model.example_inputs import example_inputs, example_prior_batch


def test_channels_times_and_shapes_follow_the_arguments():
    config = preset("tiny")
    reasoner, generator = example_inputs(config, batch=2, num_frames=5, num_actions=8, action_dim=3, state_dim=4)
    assert generator.action_channels.sum(1).tolist() == [3, 3] and generator.state_channels.sum(1).tolist() == [4, 4]
    assert generator.actions[..., 3:].abs().max() == 0 and generator.states[..., 4:].abs().max() == 0
    torch.testing.assert_close(generator.frame_time[0], torch.arange(5) / 10.0)
    # Two actions per frame interval: stamped at half-intervals, the last one on the last frame.
    assert generator.action_time[0, -1] == generator.frame_time[0, -1]
    assert reasoner.observed_frames.shape == (2, 1, config.image_size, config.image_size, 3)
    prior = example_prior_batch(generator, chunk=4)
    assert prior.actions.shape == (2, 4, config.action_width) and prior.action_valid.all()
