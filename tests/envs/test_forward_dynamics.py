"""ForwardDynamicsEnv and its vector form on a tiny trained checkpoint: API, determinism, clipping,
start sources, registration, check_env, and a real PPO (stable-baselines3) run."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cosmos_robot.envs import FORWARD_DYNAMICS_ID, PUSH_BLOCK_IDS
from cosmos_robot.envs.forward_dynamics import ForwardDynamicsEnv, ForwardDynamicsVectorEnv
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


@pytest.fixture
def env(model):
    env = ForwardDynamicsEnv(model, "point", sampling_steps=2, max_episode_steps=5)
    yield env
    env.close()


def test_spaces_match_the_reference_env(env):
    real = gym.make(PUSH_BLOCK_IDS["point"])
    assert env.observation_space == real.observation_space
    assert env.action_space == real.action_space
    real.close()


def test_reset_and_step_follow_the_spaces(env):
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs) or obs["pixels"].shape == (64, 64, 3)
    assert obs["pixels"].dtype == np.uint8 and obs["agent_pos"].dtype == np.float32
    assert info["is_success"] is False and "start_seed" in info
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert obs["pixels"].shape == (64, 64, 3) and obs["agent_pos"].shape == (2,)
    assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
    assert isinstance(info["is_success"], bool)


def test_start_frame_is_the_real_envs_first_frame(env):
    obs, info = env.reset(seed=3)
    real = gym.make(PUSH_BLOCK_IDS["point"])
    real_obs, _ = real.reset(seed=info["start_seed"])
    np.testing.assert_array_equal(obs["pixels"], real_obs["pixels"])
    np.testing.assert_allclose(obs["agent_pos"], real_obs["agent_pos"])
    real.close()


def test_deterministic_under_a_seed(env):
    actions = [np.array([0.2, -0.1], np.float32), np.array([-0.3, 0.3], np.float32)]

    def rollout():
        obs, _ = env.reset(seed=7)
        frames = [obs["pixels"]]
        for a in actions:
            frames.append(env.step(a)[0]["pixels"])
        return np.stack(frames)

    np.testing.assert_array_equal(rollout(), rollout())


def x_reward(obs, action, next_obs) -> float:
    return float(next_obs["agent_pos"][0])


def test_imagined_episodes_stay_in_latent_space(smoke_checkpoint):
    # Each step continues from the model's latents, never from its own decoded frame re-encoded: with
    # the deterministic forward prior alone, stepping the env is one multi-step model call.
    model = WorldActionModel.from_pretrained(smoke_checkpoint)
    model.forward_path = "prior"
    actions = np.array([[0.3, 0.0], [0.0, -0.3], [-0.2, 0.2]], np.float32)
    env = ForwardDynamicsEnv(model, "point", max_episode_steps=5, reward_fn=x_reward)
    vector = ForwardDynamicsVectorEnv(2, model, "point", max_episode_steps=2, reward_fn=x_reward)
    try:
        obs, _ = env.reset(seed=1)
        whole = model.forward_dynamics(obs["pixels"][None], actions, "point", states=obs["agent_pos"])
        for h, action in enumerate(actions):
            obs, *_ = env.step(action)
            np.testing.assert_allclose(obs["agent_pos"], whole.states[0, h], atol=1e-5)
        np.testing.assert_allclose(env._latents, whole.latents, atol=1e-5)
        # The vector env carries latents per sub-env and drops them for a sub-env that resets.
        vector.reset(seed=1)
        vector.step(actions[:2])
        assert np.isfinite(vector._latents).all()
        vector.step(actions[:2])  # truncated after 2 steps: both restart
        assert np.isnan(vector._latents).all()
        obs, *_ = vector.step(actions[:2])
        assert np.isfinite(vector._latents).all() and np.isfinite(obs["agent_pos"]).all()
    finally:
        env.close()
        vector.close()


def test_state_observations_decode_no_frame_and_follow_the_same_rollout(model, monkeypatch):
    # With the reward and success given, both modes step the same states (the agent heads, or with them off
    # the forward prior); only pixels decode.
    settings = {"reward_fn": x_reward, "success_fn": lambda obs: False, "max_episode_steps": 6}
    state_env = ForwardDynamicsVectorEnv(2, model, "point", observation="state", **settings)
    pixel_env = ForwardDynamicsVectorEnv(2, model, "point", **settings)
    assert state_env.single_observation_space == gym.spaces.Dict(
        {"agent_pos": pixel_env.single_observation_space["agent_pos"]}
    )
    actions = np.random.default_rng(0).uniform(-0.3, 0.3, (4, 2, 2)).astype(np.float32)
    original = model._decode
    rollouts = {}
    for heads in (False, True):
        monkeypatch.setattr(model, "agent_heads", heads)
        pixel_env.reset(seed=3)
        pixel_states = [pixel_env.step(a)[0]["agent_pos"] for a in actions]
        decodes = []
        monkeypatch.setattr(
            model, "_decode", lambda tokens, fast=False, calls=decodes: calls.append(1) or original(tokens, fast)
        )
        obs, _ = state_env.reset(seed=3)
        assert set(obs) == {"agent_pos"}
        for a, expected in zip(actions, pixel_states, strict=True):
            obs, rewards, *_ = state_env.step(a)
            assert set(obs) == {"agent_pos"}
            np.testing.assert_allclose(obs["agent_pos"], expected, atol=1e-6)
            np.testing.assert_allclose(rewards, obs["agent_pos"][:, 0], atol=1e-6)
        assert not decodes
        monkeypatch.setattr(model, "_decode", original)
        rollouts[heads] = np.array(pixel_states)
    assert not np.allclose(rollouts[True], rollouts[False], atol=1e-6)  # two models of the same motion
    state_env.close()
    pixel_env.close()


def test_state_observations_pass_check_env(smoke_checkpoint):
    env = gym.make(
        FORWARD_DYNAMICS_ID,
        checkpoint=str(smoke_checkpoint),
        embodiment="point",
        observation="state",
        reward_fn=x_reward,
    )
    check_env(env.unwrapped, skip_render_check=True)
    assert set(env.observation_space.spaces) == {"agent_pos"}
    env.close()


def test_state_observations_with_learned_rewards_keep_the_frames_the_mot_reads(model):
    # Without reward_fn and without the block's reward head the MoT predicts reward from pixels: the env
    # keeps its decoded frames as history. The block's reward head reads the carried pose: nothing decoded.
    objects = model.network.object_pose
    heads = objects.reward
    for scored_by_the_block in (False, True):
        objects.reward = heads if scored_by_the_block else None
        try:
            env = ForwardDynamicsEnv(model, "point", sampling_steps=1, observation="state")
            obs, _ = env.reset(seed=0)
            start = env._history.copy()
            obs, reward, *_ = env.step(np.array([0.3, 0.0], np.float32))
        finally:
            objects.reward = heads
        assert set(obs) == {"agent_pos"} and np.isfinite(reward)
        assert np.array_equal(env._history, start) == scored_by_the_block
        env.close()


def test_the_prior_path_needs_a_reward_fn(smoke_checkpoint):
    model = WorldActionModel.from_pretrained(smoke_checkpoint)
    model.forward_path = "prior"
    with pytest.raises(ValueError, match="forward_path='prior' predicts no reward"):
        ForwardDynamicsEnv(model, "point")


def test_truncates_at_max_episode_steps(env):
    env.reset(seed=0)
    flags = [env.step(np.zeros(2, np.float32))[3] for _ in range(5)]
    assert flags == [False] * 4 + [True]


def test_out_of_range_actions_are_clipped_and_counted(env):
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([5.0, 0.0], np.float32))
    assert info["action_clipped"] and info["clipped_actions"] == 1
    _, _, _, _, info = env.step(np.array([0.1, 0.0], np.float32))
    assert not info["action_clipped"] and info["clipped_actions"] == 1


def test_nan_actions_raise(env):
    env.reset(seed=0)
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.array([np.nan, 0.0], np.float32))


def test_step_before_reset_raises(model):
    env = ForwardDynamicsEnv(model, "point", sampling_steps=1)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, np.float32))


def test_user_reward_and_success(model):
    calls = []

    def reward_fn(obs, action, next_obs):
        calls.append(action.copy())
        return float(next_obs["agent_pos"][0])

    env = ForwardDynamicsEnv(model, "point", sampling_steps=1, reward_fn=reward_fn, success_fn=lambda obs: True)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(np.array([0.1, 0.0], np.float32))
    assert reward == pytest.approx(float(obs["agent_pos"][0])) and len(calls) == 1
    assert terminated and info["is_success"]


def test_batched_task_functions_give_the_per_episode_values(model):
    """batched_fns: one call per step on the whole batch, the same rewards and flags as one call per row."""
    calls = []

    def per_row(obs, action, next_obs):
        return float(next_obs["agent_pos"][0] - obs["agent_pos"][1] + action[0])

    def batched(obs, action, next_obs):
        calls.append(len(action))
        return next_obs["agent_pos"][:, 0] - obs["agent_pos"][:, 1] + action[:, 0]

    actions = np.random.default_rng(0).uniform(-0.3, 0.3, (3, 4, 2)).astype(np.float32)
    results = []
    for reward_fn, success_fn, flag in [
        (per_row, lambda obs: bool(obs["agent_pos"][0] > 0.0), False),
        (batched, lambda obs: obs["agent_pos"][:, 0] > 0.0, True),
    ]:
        envs = ForwardDynamicsVectorEnv(
            4,
            model,
            "point",
            sampling_steps=1,
            reward_fn=reward_fn,
            success_fn=success_fn,
            batched_fns=flag,
            terminate_on_success=False,
            observation="state",
        )
        envs.reset(seed=3)
        steps = [envs.step(a) for a in actions]
        results.append([(step[1], step[4]["is_success"]) for step in steps])
        envs.close()
    assert calls == [4, 4, 4]
    for (rewards, success), (batched_rewards, batched_success) in zip(*results, strict=True):
        np.testing.assert_allclose(batched_rewards, rewards, rtol=1e-6)
        np.testing.assert_array_equal(batched_success, success)
        assert batched_rewards.dtype == np.float64 and batched_success.dtype == bool
    assert any(r.std() > 0 for r, _ in results[0])  # the rewards vary: the comparison means something


def test_batched_task_function_of_the_wrong_shape_names_it(model):
    envs = ForwardDynamicsVectorEnv(
        2,
        model,
        "point",
        sampling_steps=1,
        reward_fn=lambda obs, action, next_obs: 0.0,
        success_fn=lambda obs: obs["agent_pos"][:, 0] > 0,
        batched_fns=True,
        observation="state",
    )
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=r"reward_fn returned shape \(\) with batched_fns=True; expected \(2,\)"):
        envs.step(np.zeros((2, 2), np.float32))
    envs.close()


def test_starts_from_a_dataset(model, point_images_dataset):
    env = ForwardDynamicsEnv(model, "point", start=point_images_dataset, sampling_steps=1)
    obs, info = env.reset(seed=0)
    assert "episode" in info and obs["pixels"].shape == (64, 64, 3)


def test_bad_arguments_name_the_field(model):
    with pytest.raises(ValueError, match="embodiment='cartpole'"):
        ForwardDynamicsEnv(model, "cartpole", reference=PUSH_BLOCK_IDS["point"])
    with pytest.raises(ValueError, match="sampling_steps"):
        ForwardDynamicsEnv(model, "point", sampling_steps=0)
    with pytest.raises(ValueError, match="start="):
        ForwardDynamicsEnv(model, "point", start="no/such/thing")
    with pytest.raises(ValueError, match="observation='depth'"):
        ForwardDynamicsEnv(model, "point", observation="depth")
    with pytest.raises(ValueError, match="render_mode='rgb_array' with observation='state'"):
        ForwardDynamicsEnv(model, "point", observation="state", render_mode="rgb_array")


def test_passes_check_env(smoke_checkpoint):
    env = gym.make(FORWARD_DYNAMICS_ID, checkpoint=str(smoke_checkpoint), embodiment="point", sampling_steps=1)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_vector_env_batches_and_resets_in_place(model):
    # No learned termination: the tiny model's success head may fire at random, and this test is about truncation.
    envs = ForwardDynamicsVectorEnv(
        3, model, "point", sampling_steps=1, max_episode_steps=2, terminate_on_success=False
    )
    obs, info = envs.reset(seed=0)
    assert obs["pixels"].shape == (3, 64, 64, 3) and obs["agent_pos"].shape == (3, 2)
    actions = envs.action_space.sample()
    obs, rewards, terminated, truncated, info = envs.step(actions)
    assert rewards.shape == terminated.shape == truncated.shape == (3,)
    assert not (terminated | truncated).any()
    obs, rewards, terminated, truncated, info = envs.step(actions)
    assert truncated.all() and not terminated.any()  # two steps: every sub-env ended and was reset in place
    assert info["_final_obs"].all() and info["final_obs"][0]["pixels"].shape == (64, 64, 3)
    assert envs.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    envs.close()


def test_vector_env_matches_the_single_env_start(model):
    envs = ForwardDynamicsVectorEnv(2, model, "point", sampling_steps=1)
    obs, _ = envs.reset(seed=[11, 12])
    single = ForwardDynamicsEnv(model, "point", sampling_steps=1)
    # Same start source and seed => the same start frame.
    first = np.random.default_rng(11)
    start = single.imagination.start_source.draw(first)
    np.testing.assert_array_equal(obs["pixels"][0], start.frame)
    envs.close()
    single.close()


def test_make_vec_uses_the_batched_env(smoke_checkpoint):
    envs = gym.make_vec(
        FORWARD_DYNAMICS_ID,
        num_envs=2,
        vectorization_mode="vector_entry_point",
        checkpoint=str(smoke_checkpoint),
        embodiment="point",
        sampling_steps=1,
    )
    assert isinstance(envs.unwrapped, ForwardDynamicsVectorEnv)
    envs.close()


@pytest.mark.slow
def test_ppo_trains_on_it(smoke_checkpoint):
    from stable_baselines3 import PPO

    settings = {"embodiment": "point", "sampling_steps": 1, "max_episode_steps": 16}
    env = gym.make(FORWARD_DYNAMICS_ID, checkpoint=str(smoke_checkpoint), **settings)
    agent = PPO("MultiInputPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    before = [p.detach().clone() for p in agent.policy.parameters()]
    agent.learn(total_timesteps=128)
    assert agent.num_timesteps >= 128
    assert any((p.detach() - b).abs().max() > 0 for p, b in zip(agent.policy.parameters(), before, strict=True))
    env.close()
