"""Scripted experts: expert success, graded noise, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.envs.gym_adapter import make_env
from cosmos_robot.policies.scripted import ScriptedExpert, plan_effector_velocity


def success_rate(env_id: str, noise: float, episodes: int, seed0: int = 1000) -> float:
    env = make_env(env_id)
    expert = ScriptedExpert.for_env(env, noise=noise)
    successes = []
    for k in range(episodes):
        obs, info = env.reset(seed=seed0 + k)
        expert.reset(seed=seed0 + k)
        while True:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            if terminated or truncated:
                break
        successes.append(info["is_success"])
    env.close()
    return float(np.mean(successes))


@pytest.mark.parametrize("env_id", ["cosmos_robot/PushBlockPoint-v0", "cosmos_robot/PushBlockArm2-v0"])
def test_expert_succeeds_in_at_least_90_percent_of_seeded_episodes(env_id):
    assert success_rate(env_id, noise=0.0, episodes=30) >= 0.9


def test_reacher_expert_reaches_the_target():
    assert success_rate("Reacher-v5", noise=0.0, episodes=5) >= 0.8


def test_noise_degrades_success_down_to_random():
    env_id = "cosmos_robot/PushBlockPoint-v0"
    expert, noisy, random = (success_rate(env_id, n, episodes=20) for n in (0.0, 0.5, 1.0))
    assert expert > noisy > random
    assert random <= 0.15


def test_actions_stay_in_the_box_and_noise_is_seeded():
    env = make_env("cosmos_robot/PushBlockArm2-v0")
    obs, info = env.reset(seed=0)
    a = ScriptedExpert.for_env(env, noise=0.5, seed=3)
    b = ScriptedExpert.for_env(env, noise=0.5, seed=3)
    for _ in range(20):
        act_a, act_b = a.act(obs, info), b.act(obs, info)
        np.testing.assert_array_equal(act_a, act_b)
        assert env.action_space.contains(act_a)
        obs, _, _, _, info = env.step(act_a)
    env.close()


def test_planner_pushes_towards_the_goal_once_behind_the_block():
    block, goal = np.array([0.0, 0.0]), np.array([0.1, 0.0])
    behind = np.array([-0.06, 0.0])
    velocity = plan_effector_velocity(behind, block, goal)
    assert velocity[0] > 0.05 and abs(velocity[1]) < 1e-6


def test_planner_goes_around_a_block_it_is_in_front_of():
    block, goal = np.array([0.0, 0.0]), np.array([0.1, 0.0])
    in_front = np.array([0.07, 0.01])
    velocity = plan_effector_velocity(in_front, block, goal)
    assert velocity[1] > 0, "should swing round on its own side (+y), not push the block backwards"


@pytest.mark.parametrize("noise", [-0.1, 1.5, "high"])
def test_noise_out_of_range_is_rejected(noise):
    env = make_env("cosmos_robot/PushBlockPoint-v0")
    with pytest.raises(ValueError, match="noise="):
        ScriptedExpert.for_env(env, noise=noise)
    env.close()


def test_env_without_expert_is_rejected_unless_random():
    env = make_env("Pusher-v5")
    with pytest.raises(ValueError, match="env='Pusher-v5' has no scripted expert"):
        ScriptedExpert.for_env(env, noise=0.0)
    random = ScriptedExpert.for_env(env, noise=1.0, seed=0)  # random works for any env
    obs, info = env.reset(seed=0)
    assert env.action_space.contains(random.act(obs, info))
    env.close()
