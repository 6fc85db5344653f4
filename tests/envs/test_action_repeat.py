"""ActionRepeat: a real env at a model's rate, each action held for the env steps one model step spans."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.envs.action_repeat import ActionRepeat, action_repeat

SLIDER = "tests.envs.third_party_env:ThirdPartySlider-v0"


def test_one_step_is_repeat_env_steps_with_the_action_held():
    action = np.array([0.5, -0.3], np.float32)
    plain, held = gym.make(SLIDER), ActionRepeat(gym.make(SLIDER), 3)
    plain.reset(seed=4)
    held.reset(seed=4)
    rewards = [plain.step(action)[1] for _ in range(3)]
    obs, reward, *_ = held.step(action)
    np.testing.assert_allclose(obs, plain.unwrapped._obs())
    assert reward == pytest.approx(sum(rewards))


def test_an_episode_that_ends_midway_ends_the_step_and_success_is_any_of_the_steps():
    env = ActionRepeat(gym.make(SLIDER), 3)  # the registration truncates at 20 env steps
    env.reset(seed=0)
    lengths = 0
    while True:
        *_, truncated, _ = env.step(env.action_space.sample())
        lengths += 1
        if truncated:
            break
    assert lengths == 7  # 6 full steps of 3, then 2 env steps

    class SucceedsOnce(gym.Wrapper):
        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            self.count = getattr(self, "count", 0) + 1
            return obs, reward, terminated, truncated, dict(info, is_success=self.count == 2)

    env = ActionRepeat(SucceedsOnce(gym.make(SLIDER)), 3)
    env.reset(seed=0)
    assert env.step(env.action_space.sample())[-1]["is_success"] is True


@pytest.mark.parametrize("repeat", [0, 1.5, True])
def test_bad_repeats_are_rejected(repeat):
    with pytest.raises(ValueError, match=f"repeat={repeat!r}; expected a positive integer"):
        ActionRepeat(gym.make(SLIDER), repeat)


def test_the_repeat_is_the_embodiments_recorded_rate_over_the_models(smoke_checkpoint):
    from cosmos_robot.world_model import WorldActionModel

    model = WorldActionModel.from_pretrained(smoke_checkpoint)
    assert action_repeat(model, "point") == 1
    assert action_repeat(object(), "anything") == 1  # a backend that stores no rates
