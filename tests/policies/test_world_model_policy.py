"""WorldModelPolicy on the tiny smoke checkpoint: chunk shapes, receding horizon, ensembling, errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.policies.world_model_policy import WorldModelPolicy
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


@pytest.fixture(scope="module")
def first_obs():
    env = gym.make("cosmos_robot/PushBlockPoint-v0")
    obs, _ = env.reset(seed=3)
    env.close()
    return obs


def test_a_chunk_has_one_action_and_one_predicted_frame_per_future_step(model, first_obs):
    policy = WorldModelPolicy(model, "point", steps=2)
    actions, frames = policy.predict_action_chunk(first_obs)
    assert actions.shape == (model.future_frames, 2) and actions.dtype == np.float32
    assert frames.shape == (model.future_frames, 64, 64, 3) and frames.dtype == np.uint8
    assert len(policy.chunks) == 1 and policy.chunks[0].step == 0


@pytest.mark.parametrize("execute_steps", [1, 2])
def test_receding_horizon_replans_every_execute_steps(model, first_obs, execute_steps):
    policy = WorldModelPolicy(model, "point", execute_steps=execute_steps, steps=2)
    for _ in range(4):
        assert policy.select_action(first_obs).shape == (2,)
    assert [c.step for c in policy.chunks] == list(range(0, 4, execute_steps))
    policy.reset()
    assert policy.chunks == []


def test_temporal_ensemble_averages_the_live_chunks(model, first_obs):
    policy = WorldModelPolicy(model, "point", temporal_ensemble=0.0, steps=2)
    policy.select_action(first_obs)
    second = policy.select_action(first_obs)
    # m = 0: a plain mean of chunk 0's second action and chunk 1's first action.
    expected = (policy.chunks[0].actions[1] + policy.chunks[1].actions[0]) / 2
    np.testing.assert_allclose(second, expected, rtol=1e-5)


def test_same_seed_same_actions(model, first_obs):
    a = WorldModelPolicy(model, "point", steps=2, seed=7).select_action(first_obs)
    b = WorldModelPolicy(model, "point", steps=2, seed=7).select_action(first_obs)
    np.testing.assert_array_equal(a, b)


def test_guidance_scale_reaches_the_model(model, first_obs):
    default = WorldModelPolicy(model, "point", steps=2, seed=7).predict_action_chunk(first_obs)[0]
    unguided = WorldModelPolicy(model, "point", steps=2, seed=7, guidance_scale=1.0)
    chunk = unguided.predict_action_chunk(first_obs)[0]
    expected = model.policy(
        first_obs["pixels"],
        "point",
        state=first_obs["agent_pos"],
        steps=2,
        seed=int(np.random.default_rng(7).integers(2**31)),
        guidance_scale=1.0,
    ).actions[0]
    np.testing.assert_allclose(chunk, expected, rtol=1e-5, atol=1e-6)
    assert unguided.guidance_scale == 1.0
    assert WorldModelPolicy(model, "point").guidance_scale is None  # None: the model's default
    assert default.shape == chunk.shape


def test_action_estimate_reaches_the_model(model, first_obs):
    chunk = WorldModelPolicy(model, "point", steps=2, seed=7, action_estimate="prior").predict_action_chunk(first_obs)[
        0
    ]
    expected = model.policy(
        first_obs["pixels"], "point", state=first_obs["agent_pos"], steps=2, action_estimate="prior"
    ).actions[0]
    np.testing.assert_allclose(chunk, expected, rtol=1e-5, atol=1e-6)  # the prior's chunk draws no noise


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"embodiment": "octopus"}, "embodiment='octopus'"),
        ({"execute_steps": 99}, "execute_steps=99"),
        ({"temporal_ensemble": -1.0}, "temporal_ensemble=-1.0"),
        ({"steps": 0}, "steps=0"),
        ({"guidance_scale": -0.5}, "guidance_scale=-0.5"),
    ],
)
def test_bad_settings_are_clear_errors(model, kwargs, message):
    with pytest.raises(ValueError, match=message):
        WorldModelPolicy(model, **({"embodiment": "point"} | kwargs))


def test_an_observation_without_pixels_is_a_clear_error(model):
    with pytest.raises(ValueError, match="expected a dict with 'pixels'"):
        WorldModelPolicy(model, "point").select_action({"agent_pos": np.zeros(2)})
