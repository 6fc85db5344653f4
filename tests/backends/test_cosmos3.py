"""The Cosmos 3 backend on a tiny random diffusers pipeline: the facade's three calls and the three tools."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.backends.cosmos3 import Cosmos3Backend, quantile_stats, resolution_tier_for
from cosmos_robot.datasets.lerobot_io import read_lerobot
from cosmos_robot.datasets.video_io import write_video
from cosmos_robot.envs.forward_dynamics import ForwardDynamicsEnv
from cosmos_robot.keys import ACTION
from cosmos_robot.labeler import label
from cosmos_robot.policies.world_model_policy import WorldModelPolicy
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def backend():
    return Cosmos3Backend.tiny_random(seed=0)


@pytest.fixture(scope="module")
def obs():
    env = gym.make("cosmos_robot/PushBlockPoint-v0")
    first, _ = env.reset(seed=11)
    env.close()
    return first


def test_quantile_normalisation_maps_q01_q99_to_minus_one_one_and_back():
    stats = quantile_stats("point", {"q01": [-0.3, 0.0], "q99": [0.3, 2.0]})
    raw = np.array([[-0.3, 0.0], [0.3, 2.0], [0.0, 1.0], [0.6, 3.0]], np.float32)
    np.testing.assert_allclose(stats.normalize(raw), [[-1, -1], [1, 1], [0, 0], [2, 2]], atol=1e-6)
    np.testing.assert_allclose(stats.denormalize(stats.normalize(raw)), raw, atol=1e-6)
    with pytest.raises(ValueError, match="q99 > q01"):
        quantile_stats("point", {"q01": [1.0], "q99": [0.0]})


def test_the_smallest_tier_that_holds_the_frame_is_used():
    assert resolution_tier_for(64, 64) == 256 and resolution_tier_for(300, 300) == 480


def test_forward_dynamics_over_more_than_one_chunk(backend, obs):
    actions = np.zeros((6, 2), np.float32)  # 6 > chunk 4: two pipeline calls, the second from the last frame
    p = backend.forward_dynamics(obs["pixels"][None], actions, "point", states=obs["agent_pos"])
    assert p.frames.shape == (1, 6, 64, 64, 3) and p.frames.dtype == np.uint8
    np.testing.assert_array_equal(p.states[0], np.repeat(obs["agent_pos"][None], 6, 0))  # carried: no state head
    assert not p.rewards.any() and not p.success.any()


def test_inverse_dynamics_labels_every_transition_in_raw_units(backend, obs):
    frames = np.stack([obs["pixels"]] * 7)
    actions, spread = backend.inverse_dynamics(frames, "point", return_spread=True)
    assert actions.shape == (1, 6, 2) and spread.shape == (1, 6, 2)
    normalized = backend.inverse_dynamics(frames, "point", normalized=True)
    np.testing.assert_allclose(backend.action_stats["point"].denormalize(normalized), actions, atol=1e-5)


def test_policy_returns_a_raw_chunk_and_its_frames(backend, obs):
    chunk = backend.policy(obs["pixels"], "point", instruction="push the block")
    assert chunk.actions.shape == (1, 4, 2) and chunk.frames.shape == (1, 4, 64, 64, 3)
    with pytest.raises(ValueError, match="history is not supported"):
        backend.policy(obs["pixels"], "point", history=obs["pixels"][None])
    with pytest.raises(ValueError, match="action_estimate='mean'.*jointly"):
        backend.policy(obs["pixels"], "point", action_estimate="mean")


def test_pixel_residual_keeps_the_real_frame_where_the_pipeline_changes_little(backend, obs):
    plain = backend.forward_dynamics(obs["pixels"][None], np.zeros((2, 2), np.float32), "point", seed=1).frames
    kept = backend.forward_dynamics(
        obs["pixels"][None], np.zeros((2, 2), np.float32), "point", seed=1, pixel_residual=True
    ).frames
    # A random pipeline redraws everything; keeping unchanged pixels brings its frames closer to the real one.
    real = obs["pixels"][None, None].astype(np.float64)
    assert np.abs(kept - real).mean() < np.abs(plain - real).mean()


def test_guidance_scale_reaches_the_pipeline(backend, obs):
    a = backend.policy(obs["pixels"], "point", seed=3, guidance_scale=1.0).actions
    b = backend.policy(obs["pixels"], "point", seed=3, guidance_scale=4.0).actions
    assert not np.allclose(a, b)


def test_a_backend_without_instructions_asks_for_one(backend, obs):
    bare = Cosmos3Backend(backend.pipeline, {"point": {"q01": [-0.3, -0.3], "q99": [0.3, 0.3]}}, num_inference_steps=1)
    with pytest.raises(ValueError, match="instruction=None.*'point'"):
        bare.policy(obs["pixels"], "point")


def test_unknown_embodiments_and_domains_are_clear_errors(backend, obs):
    with pytest.raises(ValueError, match="embodiment='arm2'.*Cosmos 3 domains: .*pusht"):
        backend.policy(obs["pixels"], "arm2")
    with pytest.raises(ValueError, match="domain 'nope'.*expected one of"):
        Cosmos3Backend(backend.pipeline, {"point": {"q01": [-1, -1], "q99": [1, 1]}}, domains={"point": "nope"})
    with pytest.raises(ValueError, match="has 2"):
        Cosmos3Backend(backend.pipeline, {"point": {"q01": [-1], "q99": [1]}})


def test_the_facade_loads_a_saved_cosmos3_folder(backend, obs, tmp_path):
    backend.save_pretrained(tmp_path / "c3")
    loaded = WorldActionModel.from_pretrained(tmp_path / "c3", backend="cosmos3", num_inference_steps=2)
    assert isinstance(loaded, Cosmos3Backend) and loaded.embodiments == ["point"]
    a = backend.policy(obs["pixels"], "point", seed=3).actions
    np.testing.assert_allclose(loaded.policy(obs["pixels"], "point", seed=3).actions, a, atol=1e-5)
    (tmp_path / "c3" / "cosmos_robot_action_stats.json").unlink()
    with pytest.raises(FileNotFoundError, match="action_stats"):
        WorldActionModel.from_pretrained(tmp_path / "c3", backend="cosmos3")


def test_forward_dynamics_env_runs_on_the_backend(backend):
    env = ForwardDynamicsEnv(backend, "point", sampling_steps=2, max_episode_steps=3)
    obs, info = env.reset(seed=0)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert obs["pixels"].shape == (64, 64, 3) and truncated and "is_success" in info


def test_the_labeler_runs_on_the_backend(backend, obs, tmp_path):
    write_video(tmp_path / "videos" / "clip.mp4", np.stack([obs["pixels"]] * 9), fps=10)
    out = label(tmp_path / "videos", backend, "point", tmp_path / "labeled", steps=2, progress=False)
    labeled = read_lerobot(out)
    assert labeled.data[ACTION].shape == (9, 2)


def test_the_policy_runs_on_the_backend(backend, obs):
    policy = WorldModelPolicy(backend, "point", steps=2, execute_steps=2)
    assert policy.select_action(obs).shape == (2,) and policy.select_action(obs).shape == (2,)
    assert len(policy.chunks) == 1 and policy.chunks[0].frames.shape == (4, 64, 64, 3)
