"""Imagination RL: the reach task's reward, and PPO trained in both worlds and scored in MuJoCo."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.eval.imagination_rl import evaluate_imagination_rl, reach_reward, reach_success
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


def test_reach_task_reward():
    assert reach_reward(np.array([0.1, -0.08])) == pytest.approx(1.0)
    assert reach_reward(np.array([-0.2, 0.2])) == 0.0
    assert reach_success(np.array([0.105, -0.08])) and not reach_success(np.array([0.0, 0.0]))


@pytest.mark.slow
def test_imagination_rl_trains_both_and_evaluates_in_mujoco(model):
    result = evaluate_imagination_rl(model, steps=128, num_envs=2, eval_episodes=2, sampling_steps=1, progress=False)
    for key in ("real_return_imagination_ppo", "real_return_mujoco_ppo", "real_return_random"):
        assert np.isfinite(getattr(result, key)), key
    if result.real_return_mujoco_ppo > 0:
        expected = result.real_return_imagination_ppo / result.real_return_mujoco_ppo
        assert result.ratio_real_return == pytest.approx(expected)
