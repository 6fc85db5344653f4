"""The LeRobot plugins (plugins/): discovered by LeRobot, built by its factories, run by lerobot-eval."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch


@pytest.fixture(scope="module")
def registered():
    from lerobot.utils.import_utils import register_third_party_plugins

    register_third_party_plugins()


def test_lerobot_discovers_both_plugins(registered):
    from lerobot.configs import PreTrainedConfig
    from lerobot.envs.configs import EnvConfig

    assert "cosmos_robot" in PreTrainedConfig.get_known_choices()
    assert "pushblock" in EnvConfig.get_known_choices()


def test_lerobot_factories_build_our_policy_for_our_env(registered, smoke_checkpoint):
    from lerobot.envs.configs import EnvConfig
    from lerobot.envs.factory import make_env
    from lerobot.envs.utils import preprocess_observation
    from lerobot.policies.factory import make_policy, make_policy_config, make_pre_post_processors

    env_cfg = EnvConfig.get_choice_class("pushblock")(task="PushBlockPoint-v0")
    policy_cfg = make_policy_config("cosmos_robot", checkpoint=str(smoke_checkpoint), sampling_steps=2)
    policy = make_policy(policy_cfg, env_cfg=env_cfg)
    pre, post = make_pre_post_processors(policy_cfg)
    vec = make_env(env_cfg, n_envs=2)["pushblock"][0]
    try:
        obs, _ = vec.reset(seed=[1, 2])
        batch = pre(preprocess_observation(obs) | {"task": ["", ""]})
        action = post(policy.select_action(batch))
        assert action.shape == (2, 2) and torch.isfinite(action).all()
        chunk = policy.predict_action_chunk(batch)
        assert chunk.shape[0] == 2 and chunk.shape[2] == 2 and chunk.shape[1] >= 1
        vec.step(action.numpy())
    finally:
        vec.close()
    with pytest.raises(NotImplementedError, match="cosmos-robot train"):
        policy.forward({})


def test_a_bad_env_task_is_a_clear_error(registered):
    from lerobot.envs.configs import EnvConfig

    with pytest.raises(ValueError, match="env.task='Nope-v0'"):
        EnvConfig.get_choice_class("pushblock")(task="Nope-v0")


@pytest.mark.slow
def test_lerobot_eval_runs_our_policy_in_our_env(smoke_checkpoint, tmp_path):
    out = tmp_path / "eval"
    cli = Path(sys.executable).with_name("lerobot-eval")
    run = subprocess.run(
        [
            str(cli),
            "--policy.type=cosmos_robot",
            f"--policy.checkpoint={smoke_checkpoint}",
            "--policy.sampling_steps=2",
            "--policy.push_to_hub=false",
            "--env.type=pushblock",
            "--env.task=PushBlockPoint-v0",
            "--eval.n_episodes=2",
            "--eval.batch_size=2",
            "--eval.use_async_envs=false",
            f"--output_dir={out}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ | {"HF_HUB_OFFLINE": "1", "MUJOCO_GL": "egl"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    info = json.loads((out / "eval_info.json").read_text())
    overall = info["overall"]
    assert overall["n_episodes"] == 2 and 0.0 <= overall["pc_success"] <= 100.0
    assert np.isfinite(overall["avg_sum_reward"])
