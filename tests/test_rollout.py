"""The shared rollout runner: episodes end where the env says, or run on to a fixed horizon; replays are exact."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.policies.scripted import ScriptedExpert
from cosmos_robot.rollout import replay_actions, run_episode

POINT = "cosmos_robot/PushBlockPoint-v0"


@pytest.fixture
def env():
    env = gym.make(POINT)
    yield env
    env.close()


def test_an_expert_episode_ends_at_success_and_keeps_every_step(env):
    episode = run_episode(env, ScriptedExpert.for_env(env, seed=1).act, seed=1)
    assert episode.success and episode.terminated and not episode.truncated
    assert len(episode.observations) == len(episode.infos) == episode.length + 1 == len(episode.rewards) + 1
    assert episode.frames().shape == (episode.length + 1, 64, 64, 3) and episode.frames()[0].any()
    assert episode.total_return == pytest.approx(sum(episode.rewards))


def test_a_fixed_horizon_runs_on_past_the_end_and_a_replay_reproduces_it(env):
    expert = run_episode(env, ScriptedExpert.for_env(env, seed=1).act, seed=1)
    longer = run_episode(env, ScriptedExpert.for_env(env, seed=1).act, 1, expert.length + 5, ignore_episode_end=True)
    assert longer.length == expert.length + 5
    replayed = run_episode(env, replay_actions(np.stack(expert.actions)), seed=1, max_steps=expert.length)
    np.testing.assert_array_equal(replayed.frames(), expert.frames())
    np.testing.assert_array_equal(replayed.states(), expert.states())


def test_before_step_is_kept_per_step(env):
    calls = iter(range(1000))
    episode = run_episode(
        env, lambda obs, info: env.action_space.sample(), 0, max_steps=3, before_step=lambda: {"k": next(calls)}
    )
    assert [extra["k"] for extra in episode.extras] == [0, 1, 2]


def test_a_fixed_horizon_needs_max_steps(env):
    with pytest.raises(ValueError, match="ignore_episode_end=True needs max_steps"):
        run_episode(env, lambda obs, info: env.action_space.sample(), 0, ignore_episode_end=True)
