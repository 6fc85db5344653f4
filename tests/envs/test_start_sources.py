"""Start sources of the learned env: real resets, recorded episodes, fixed starts; bad ones are clear errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.envs.start_sources import DatasetStarts, EnvStarts, FixedStarts, Start, make_start_source

POINT = "cosmos_robot/PushBlockPoint-v0"


def test_env_starts_are_the_real_envs_reset_frames():
    source = EnvStarts(POINT)
    start = source.draw(np.random.default_rng(3))
    env = gym.make(POINT)
    obs, _ = env.reset(seed=start.info["start_seed"])
    env.close()
    source.close()
    np.testing.assert_array_equal(start.frame, obs["pixels"])
    np.testing.assert_array_equal(start.state, obs["agent_pos"])


def test_dataset_starts_are_first_frames_of_episodes(point_images_dataset):
    source = make_start_source(point_images_dataset)
    assert isinstance(source, DatasetStarts)
    start = source.draw(np.random.default_rng(0))
    assert start.frame.shape == (64, 64, 3) and start.frame.any() and "episode" in start.info


def test_fixed_starts_cycle_in_order_and_rewind():
    starts = [Start(np.full((2, 2, 3), i, np.uint8), np.array([i], np.float32), {"i": i}) for i in range(2)]
    source = FixedStarts(starts)
    rng = np.random.default_rng(0)
    assert [source.draw(rng).info["i"] for _ in range(3)] == [0, 1, 0]
    source.rewind()
    assert source.draw(rng).info["i"] == 0
    with pytest.raises(ValueError, match="starts=\\[\\] is empty"):
        FixedStarts([])


def test_an_env_without_pixels_and_agent_pos_is_refused():
    env = gym.make("CartPole-v1")
    with pytest.raises(ValueError, match="expected a Dict with 'pixels'"):
        EnvStarts(env)
    env.close()


def test_starts_come_at_the_models_size(point_images_dataset):
    rng = np.random.default_rng(0)
    assert make_start_source(point_images_dataset, size=32).draw(rng).frame.shape == (32, 32, 3)
    source = make_start_source("tests.envs.third_party_env:ThirdPartySlider-v0", size=48)
    assert source.draw(rng).frame.shape == (48, 48, 3)
    source.close()
