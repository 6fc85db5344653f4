"""PushBlock: gymnasium contract, determinism, rendering, visibility of actions."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.push_block import PushBlockEnv, arm_fingertip, arm_jacobian, effector_from_state

EMBODIMENTS = list(PUSH_BLOCK_IDS)


@pytest.mark.parametrize("embodiment", EMBODIMENTS)
def test_passes_gymnasium_check_env(embodiment):
    env = PushBlockEnv(embodiment, render_mode="rgb_array")
    check_env(env)
    env.close()


@pytest.mark.parametrize("env_id", list(PUSH_BLOCK_IDS.values()))
def test_registered_ids_make_dict_observations(env_id):
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    assert set(obs) == {"pixels", "agent_pos"}
    assert obs["pixels"].shape == (64, 64, 3) and obs["pixels"].dtype == np.uint8
    assert obs["agent_pos"].dtype == np.float32 and obs["agent_pos"].shape == (2,)
    assert env.spec.max_episode_steps == 80
    assert info["is_success"] is False
    env.close()


@pytest.mark.parametrize("embodiment", EMBODIMENTS)
def test_seeded_resets_and_steps_are_deterministic(embodiment):
    def rollout(seed):
        env = PushBlockEnv(embodiment)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(0)
        frames, states = [obs["pixels"]], [obs["agent_pos"]]
        for _ in range(5):
            obs, *_ = env.step(rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32))
            frames.append(obs["pixels"])
            states.append(obs["agent_pos"])
        env.close()
        return np.stack(frames), np.stack(states)

    frames_a, states_a = rollout(7)
    frames_b, states_b = rollout(7)
    frames_c, _ = rollout(8)
    np.testing.assert_array_equal(frames_a, frames_b)
    np.testing.assert_array_equal(states_a, states_b)
    assert not np.array_equal(frames_a[0], frames_c[0])


@pytest.mark.parametrize("embodiment", EMBODIMENTS)
def test_every_step_reports_success_and_reward_terms(embodiment):
    env = PushBlockEnv(embodiment)
    env.reset(seed=3)
    _, reward, terminated, truncated, info = env.step(np.zeros(2, dtype=np.float32))
    assert isinstance(info["is_success"], bool)
    terms = info["reward_dist"] + info["reward_reach"] + info["reward_success"]
    assert reward == pytest.approx(terms)
    assert info["reward_dist"] < 0 and terminated is False and truncated is False
    env.close()


def test_success_terminates_when_block_is_on_goal():
    env = PushBlockEnv("point")
    env.reset(seed=0)
    # Put the block on the goal by hand: the next step must report success and terminate.
    goal = env.goal_pos()
    env.data.qpos[env._block_qadr[:2]] = goal
    _, reward, terminated, _, info = env.step(np.zeros(2, dtype=np.float32))
    assert info["is_success"] and terminated and info["reward_success"] == 1.0
    env.close()


@pytest.mark.parametrize("embodiment", EMBODIMENTS)
def test_frames_are_not_black_and_show_the_scene(embodiment):
    env = PushBlockEnv(embodiment)
    obs, _ = env.reset(seed=1)
    pixels = obs["pixels"].astype(int)
    assert pixels.mean() > 50
    red = (pixels[..., 0] > 150) & (pixels[..., 1] < 80) & (pixels[..., 2] < 80)
    green = (pixels[..., 1] > 150) & (pixels[..., 0] < 100) & (pixels[..., 2] < 100)
    blue = (pixels[..., 2] > 150) & (pixels[..., 0] < 100)
    assert red.sum() > 20, "block not visible"
    assert green.sum() > 20, "goal not visible"
    assert blue.sum() > 3, "effector not visible"
    env.close()


def test_a_full_speed_step_moves_the_pusher_several_pixels():
    # Actions must be visible: a step must move the effector by pixels, not sub-pixels.
    env = PushBlockEnv("point")
    obs, _ = env.reset(seed=1)

    def blue_centroid(pixels):
        p = pixels.astype(int)
        ys, xs = np.nonzero((p[..., 2] > 150) & (p[..., 0] < 100))
        return np.array([xs.mean(), ys.mean()])

    before = blue_centroid(obs["pixels"])
    direction = -np.sign(env.effector_pos())  # towards the centre: never blocked by the joint limits
    obs, *_ = env.step((0.3 * direction / np.sqrt(2)).astype(np.float32))
    moved = np.linalg.norm(blue_centroid(obs["pixels"]) - before)
    assert moved >= 3.0, f"pusher moved only {moved:.2f} px in one full-speed step"
    env.close()


def test_velocity_commands_are_realised_within_a_step():
    # Stiff velocity servos: commanded and realised motion agree (labels are recoverable from video).
    env = PushBlockEnv("point")
    env.reset(seed=2)
    start = env.effector_pos()
    command = -0.2 * np.sign(start)
    env.step(command.astype(np.float32))
    realised = (env.effector_pos() - start) / 0.1
    np.testing.assert_allclose(realised, command, atol=0.02)
    env.close()


def test_arm_jacobian_matches_finite_differences():
    q = np.array([1.1, -0.7])
    eps = 1e-6
    numeric = np.stack([(arm_fingertip(q + eps * e) - arm_fingertip(q - eps * e)) / (2 * eps) for e in np.eye(2)], 1)
    np.testing.assert_allclose(arm_jacobian(q), numeric, atol=1e-6)


def test_arm_fingertip_matches_mujoco():
    env = PushBlockEnv("arm2")
    obs, _ = env.reset(seed=4)
    np.testing.assert_allclose(arm_fingertip(obs["agent_pos"].astype(float)), env.effector_pos(), atol=1e-5)
    env.close()


@pytest.mark.parametrize("embodiment", ["point", "arm2"])
def test_effector_from_state_matches_mujoco_along_an_episode(embodiment):
    env = PushBlockEnv(embodiment)
    obs, _ = env.reset(seed=5)
    states, effector = [obs["agent_pos"]], [env.effector_pos()]
    for _ in range(5):
        obs, *_ = env.step(env.action_space.sample())
        # mj_step leaves geom positions at the last substep's start: the kinematics of qpos as it is now.
        mujoco.mj_kinematics(env.model, env.data)
        states.append(obs["agent_pos"])
        effector.append(env.effector_pos())
    env.close()
    # float32 observations: within a micrometre or so of MuJoCo's float64 geometry.
    np.testing.assert_allclose(effector_from_state(embodiment, np.stack(states)), np.stack(effector), atol=1e-5)
    with pytest.raises(ValueError, match="embodiment='cheetah'"):
        effector_from_state("cheetah", np.zeros((1, 2)))


@pytest.mark.parametrize(("field", "value"), [("width", 60), ("height", 0), ("width", -8), ("height", 64.0)])
def test_bad_image_sizes_are_rejected_with_the_field_name(field, value):
    with pytest.raises(ValueError, match=f"{field}="):
        PushBlockEnv("point", **{field: value})


def test_unknown_embodiment_is_rejected():
    with pytest.raises(ValueError, match="embodiment='hexapod'"):
        PushBlockEnv("hexapod")


def test_nan_action_raises():
    env = PushBlockEnv("point")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.array([np.nan, 0.0], dtype=np.float32))
    env.close()


def test_image_size_is_configurable():
    env = PushBlockEnv("arm2", width=96, height=48)
    obs, _ = env.reset(seed=0)
    assert obs["pixels"].shape == (48, 96, 3)
    assert obs["pixels"].any()
    env.close()


@pytest.mark.parametrize("embodiment", EMBODIMENTS)
def test_without_pixels_the_frame_is_black_and_the_physics_the_same(embodiment):
    def rollout(pixels):
        env = PushBlockEnv(embodiment, pixels=pixels)
        obs, _ = env.reset(seed=3)
        rng = np.random.default_rng(0)
        observations, poses = [obs], [env.block_pose()]
        for _ in range(6):
            obs, *_ = env.step(rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32))
            observations.append(obs)
            poses.append(env.block_pose())
        env.close()
        return observations, np.stack(poses)

    blind, blind_poses = rollout(False)
    seen, seen_poses = rollout(True)
    space = PushBlockEnv(embodiment, pixels=False).observation_space
    assert all(space.contains(obs) and not obs["pixels"].any() for obs in blind)
    assert all(obs["pixels"].any() for obs in seen)
    np.testing.assert_array_equal(np.stack([o["agent_pos"] for o in blind]), np.stack([o["agent_pos"] for o in seen]))
    np.testing.assert_array_equal(blind_poses, seen_poses)
    check_env(gym.make(PUSH_BLOCK_IDS[embodiment], pixels=False).unwrapped, skip_render_check=True)


def test_pixels_must_be_a_bool():
    with pytest.raises(ValueError, match="pixels='no'"):
        PushBlockEnv("point", pixels="no")
