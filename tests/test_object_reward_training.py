"""The block's reward head, on real PushBlock data: attached untrained and recorded in the config, the
fit learns the goal and the recorded rewards, a step's outcome is the next row; bad arguments are named."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.object_pose_training import attach_object_pose, object_embodiments
from cosmos_robot.object_reward_training import (
    _after,
    attach_object_reward,
    fit_object_reward,
    goal_frames,
    goal_readout_mm,
    reward_examples,
    score_rewards,
)


@pytest.fixture(scope="module")
def prepared(smoke_data):
    config = ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": True})
    data = TrainingSet(smoke_data, config, num_frames=5, seed=0)
    torch.manual_seed(0)
    autoencoder = FrameAutoencoder(config.latent_channels, config.patch_merge).requires_grad_(False).eval()
    data.prepare(autoencoder)
    return data, config


def carrying(data: TrainingSet, config: ModelConfig) -> WorldActionNetwork:
    torch.manual_seed(0)
    network = WorldActionNetwork(config)
    attach_object_pose(network, tuple(data.data[n].embodiment.domain_id for n in object_embodiments(data)))
    return network


def test_a_steps_outcome_is_the_next_row_and_the_last_is_extrapolated():
    values = torch.tensor([[0.0], [1.0], [3.0], [10.0], [11.0]])
    after = _after(values, [(0, 3), (3, 5)])
    torch.testing.assert_close(after, torch.tensor([[1.0], [3.0], [5.0], [11.0], [12.0]]))


def test_the_attached_head_is_in_the_config_and_refuses_a_second(prepared):
    data, config = prepared
    network = carrying(data, config)
    assert not network.object_pose.has_reward
    attach_object_reward(network)
    assert network.object_pose.has_reward and network.config.object_reward
    WorldActionNetwork(network.config).load_state_dict(network.state_dict())  # a checkpoint of it loads
    with pytest.raises(ValueError, match="already has a reward head"):
        attach_object_reward(network)
    with pytest.raises(ValueError, match="carries no object"):
        attach_object_reward(WorldActionNetwork(config))
    with pytest.raises(ValueError, match="object_reward=True needs object_pose_domains"):
        ModelConfig.from_dict(config.to_dict() | {"object_reward": True})


def test_the_fit_learns_the_goal_and_the_recorded_rewards(prepared):
    # Scored on the training split: the smoke data's four episodes per robot hold three goals.
    data, config = prepared
    scores = {}
    for steps in (1, 120):
        network = carrying(data, config)
        attach_object_reward(network)
        report = fit_object_reward(network, data, steps, seed=0, progress=False)
        objects = network.object_pose
        scores[steps] = {"goal": goal_readout_mm(objects, *goal_frames(data, ["arm2", "point"], "train", config))}
        for name in ("point", "arm2"):
            domain = data.data[name].embodiment.domain_id
            scores[steps] |= {name: score_rewards(objects, reward_examples(data, name, "train"), domain)}
    objects = network.object_pose
    untrained, trained = scores[1], scores[120]
    assert {"goal_readout_mm", "point_reward_mae", "arm2_success_recall", "seconds"} <= set(report)
    assert trained["goal"] < 0.5 * untrained["goal"]
    for name in ("point", "arm2"):
        domain = data.data[name].embodiment.domain_id
        assert trained[name]["reward_mae"] < 0.5 * untrained[name]["reward_mae"]
        # Three successful steps per robot at most: the flag is ranked, not thresholded.
        examples = reward_examples(data, name, "train")
        with torch.no_grad():
            said = objects.reward_logits(examples.poses, examples.effector, examples.goals, domain)[:, 1]
        success = examples.success > 0.5
        assert said[success].min() > torch.quantile(said[~success], 0.95)
    assert not any(p.requires_grad for p in network.object_pose.parameters())


def test_the_examples_pair_each_steps_reward_with_where_things_end_up(prepared):
    data, _ = prepared
    examples = reward_examples(data, "point", "train")
    n = len(examples.rewards)
    assert examples.poses.shape == (n, 3) and examples.effector.shape == examples.goals.shape == (n, 2)
    # The recorded reward is -|block - goal| - 0.1 |effector - block| (+1 on success) after the step: the
    # examples' geometry reproduces it except at episodes' ends, where the state after is extrapolated.
    implied = -(examples.poses[:, :2] - examples.goals).norm(dim=-1)
    implied = implied - 0.1 * (examples.effector - examples.poses[:, :2]).norm(dim=-1) + examples.success
    assert (implied - examples.rewards).abs().median() < 1e-3


def test_bad_arguments_are_named(prepared):
    data, config = prepared
    network = carrying(data, config)
    with pytest.raises(ValueError, match="no reward head"):
        fit_object_reward(network, data, 5, seed=0, progress=False)
    attach_object_reward(network)
    with pytest.raises(ValueError, match="steps=0"):
        fit_object_reward(network, data, 0, seed=0, progress=False)
