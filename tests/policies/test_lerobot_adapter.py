"""A real LeRobot Diffusion Policy, trained for a few steps by lerobot-train, run by our harness."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cosmos_robot.eval.closed_loop import evaluate_policy, make_policy

POINT = "cosmos_robot/PushBlockPoint-v0"


def lerobot_train(data: Path, out: Path) -> Path:
    cli = Path(sys.executable).with_name("lerobot-train")
    command = [
        str(cli),
        "--policy.type=diffusion",
        "--policy.device=cpu",
        "--policy.push_to_hub=false",
        "--policy.pretrained_backbone_weights=null",
        "--policy.horizon=16",
        "--policy.n_action_steps=8",
        "--policy.down_dims=[32,64]",
        "--policy.noise_scheduler_type=DDIM",
        "--policy.num_inference_steps=2",
        f"--dataset.repo_id=local/{data.name}",
        f"--dataset.root={data}",
        "--steps=2",
        "--save_freq=2",
        "--batch_size=4",
        "--num_workers=0",
        "--wandb.enable=false",
        f"--output_dir={out}",
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, env=os.environ | {"HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    return out / "checkpoints" / "last" / "pretrained_model"


@pytest.fixture(scope="module")
def datasets(smoke_data, tmp_path_factory):
    from lerobot.datasets.dataset_tools import remove_feature
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    source = Path(smoke_data[0])  # the point dataset
    pixels = tmp_path_factory.mktemp("dp") / "point_pixels"
    dataset = LeRobotDataset("local/point", root=source, video_backend="pyav")
    remove_feature(dataset, "observation.environment_state", output_dir=pixels, repo_id="local/point_pixels")
    return source, pixels


@pytest.mark.slow
def test_a_lerobot_diffusion_policy_runs_in_our_harness(datasets, tmp_path):
    _, pixels = datasets
    policy = make_policy("lerobot", POINT, str(lerobot_train(pixels, tmp_path / "run")))
    result = evaluate_policy(policy, POINT, episodes=1, progress=False)
    assert result.per_episode[0]["length"] >= 1
    assert result.success_rate == float(result.per_episode[0]["success"])


@pytest.mark.slow
def test_a_policy_that_reads_privileged_state_is_refused(datasets, tmp_path):
    source, _ = datasets
    path = lerobot_train(source, tmp_path / "run")
    with pytest.raises(ValueError, match="observation.environment_state"):
        make_policy("lerobot", POINT, str(path))


def test_a_folder_without_a_config_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        make_policy("lerobot", POINT, str(tmp_path))
