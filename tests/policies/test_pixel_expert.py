"""The pixel-driven expert: perception against MuJoCo's true positions, success from pixels alone."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.policies.pixel_expert import PixelExpert, perceive


@pytest.mark.parametrize("embodiment", ["point", "arm2"])
def test_perception_finds_block_goal_and_effector_within_a_pixel_or_two(embodiment):
    env = gym.make(PUSH_BLOCK_IDS[embodiment])
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        seen = perceive(obs["pixels"])
        assert np.linalg.norm(seen["block"] - info["block_pose"][:2]) < 0.012
        assert np.linalg.norm(seen["goal"] - info["goal_pos"]) < 0.012
        assert np.linalg.norm(seen["effector"] - info["effector_pos"]) < 0.015
    env.close()


@pytest.mark.parametrize("embodiment", ["point", "arm2"])
def test_pixel_expert_succeeds_without_privileged_info(embodiment):
    env = gym.make(PUSH_BLOCK_IDS[embodiment])
    successes = 0
    for seed in range(3):
        policy = PixelExpert(PUSH_BLOCK_IDS[embodiment], env.action_space.low, env.action_space.high, seed=seed)
        obs, info = env.reset(seed=2000 + seed)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(policy.act(obs, {}))  # info withheld
            done = terminated or truncated
        successes += info["is_success"]
    assert successes == 3
    env.close()


def test_bad_inputs():
    with pytest.raises(ValueError, match="uint8"):
        perceive(np.zeros((8, 8), np.uint8))
    with pytest.raises(ValueError, match="PushBlock"):
        PixelExpert("Reacher-v5", np.zeros(2), np.ones(2))
