"""Any gymnasium MuJoCo env through the adapter: pixels + agent_pos, cheap rendering, no black frames."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cosmos_robot.envs.gym_adapter import make_env


def test_reacher_observes_pixels_and_state():
    env = make_env("Reacher-v5", width=64, height=48)
    obs, info = env.reset(seed=0)
    assert obs["pixels"].shape == (48, 64, 3) and obs["pixels"].dtype == np.uint8
    assert obs["agent_pos"].shape == (10,) and obs["agent_pos"].dtype == np.float32
    assert obs["pixels"].any()
    assert info["is_success"] is False
    _, _, _, _, info = env.step(env.action_space.sample())
    assert isinstance(info["is_success"], bool)
    base = env.unwrapped
    assert base.model.vis.quality.offsamples == 0 and base.model.vis.quality.shadowsize == 0
    env.close()


def test_reacher_wrapper_passes_check_env():
    env = make_env("Reacher-v5")
    check_env(env, skip_render_check=True)
    env.close()


def test_recreating_envs_in_one_process_gives_non_black_frames():
    # The pitfall: a renderer freed late, at garbage collection, wipes the next env's context.
    for _ in range(4):
        env = make_env("Reacher-v5")
        obs, _ = env.reset(seed=1)
        assert obs["pixels"].any()
        env.step(env.action_space.sample())
        del env  # dropped without close(): make_env must still cope


def test_the_task_camera_shows_the_arm_large():
    env = make_env("Reacher-v5")
    obs, _ = env.reset(seed=0)
    pixels = obs["pixels"].astype(int)
    background = np.median(pixels.reshape(-1, 3), axis=0)
    foreground = np.abs(pixels - background).sum(-1) > 60
    assert foreground.sum() > 40, "the arm should cover dozens of pixels at 64x64"
    env.close()


def test_unknown_env_id_is_a_clear_error():
    with pytest.raises(ValueError, match="env='NotAnEnv-v9' is not a registered gymnasium id"):
        make_env("NotAnEnv-v9")


def test_bad_size_is_rejected_before_making_the_env():
    with pytest.raises(ValueError, match="height=20"):
        make_env("Reacher-v5", height=20)


def test_push_block_ids_pass_through():
    env = make_env("cosmos_robot/PushBlockArm2-v0", width=32, height=32)
    obs, _ = env.reset(seed=0)
    assert obs["pixels"].shape == (32, 32, 3)
    env.close()


THIRD_PARTY = "tests.envs.third_party_env:ThirdPartySlider-v0"


def _red_column(pixels: np.ndarray) -> float:
    red = (pixels[..., 0] > 150) & (pixels[..., 1] < 80)
    return float(np.argwhere(red)[:, 1].mean())


def test_a_third_party_env_with_its_own_constructor_renders_through_its_model():
    # module:EnvId imports the module (which registers the id); the constructor takes no render
    # arguments, so the adapter draws the env's own MuJoCo model.
    env = make_env(THIRD_PARTY, width=64, height=64)
    obs, info = env.reset(seed=0)
    assert obs["pixels"].shape == (64, 64, 3) and obs["agent_pos"].shape == (4,) and info["is_success"] is False
    before, x_before = _red_column(obs["pixels"]), obs["agent_pos"][0]
    for _ in range(5):
        obs, *_ = env.step(np.array([1.0, 0.0], np.float32))  # push the puck along +x
    assert obs["agent_pos"][0] > x_before + 0.03  # it moved
    assert abs(_red_column(obs["pixels"]) - before) > 2  # and the camera saw it move
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_an_env_registered_by_an_installed_plugin_package_is_found(tmp_path, monkeypatch):
    package = tmp_path / "lerobot_env_cosmos_test_plugin"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import gymnasium as gym\n"
        "from tests.envs.third_party_env import ThirdPartySlider\n"
        "gym.register('CosmosPluginSlider-v0', entry_point=ThirdPartySlider, max_episode_steps=5)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    env = make_env("CosmosPluginSlider-v0")
    obs, _ = env.reset(seed=1)
    assert obs["pixels"].any()
    env.close()


def test_a_module_that_cannot_be_imported_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot import 'no_such_package'"):
        make_env("no_such_package:Env-v0")
