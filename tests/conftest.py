"""Shared fixtures: small real datasets collected once per test session."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import cosmos_robot  # noqa: F401  (sets MUJOCO_GL=egl before anything imports mujoco)

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers on two cores: one thread each, or torch's default of one per core oversubscribes them.
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def push_block_frames() -> torch.Tensor:
    """256 frames of random PushBlock scenes (both embodiments)."""
    from cosmos_robot.envs.push_block import PushBlockEnv

    frames = []
    for embodiment in ("point", "arm2"):
        env = PushBlockEnv(embodiment)
        rng = np.random.default_rng(0)
        for seed in range(16):
            obs, _ = env.reset(seed=seed)
            for _ in range(8):
                frames.append(obs["pixels"])
                obs, *_ = env.step(rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32))
        env.close()
    return torch.from_numpy(np.stack(frames))


@pytest.fixture(scope="session")
def point_images_dataset(tmp_path_factory):
    """A 4-episode noisy-expert PushBlockPoint dataset stored as lossless images."""
    from cosmos_robot.collect import collect

    out = tmp_path_factory.mktemp("data") / "point_images"
    collect("cosmos_robot/PushBlockPoint-v0", 4, out, noise=0.3, seed=100, video=False, progress=False)
    return out


@pytest.fixture(scope="session")
def point_video_dataset(tmp_path_factory):
    """A 3-episode expert PushBlockPoint dataset stored as mp4."""
    from cosmos_robot.collect import collect

    out = tmp_path_factory.mktemp("data") / "point_video"
    collect("cosmos_robot/PushBlockPoint-v0", 3, out, seed=200, progress=False)
    return out


@pytest.fixture(scope="session")
def smoke_data(tmp_path_factory):
    """The smoke recipe's datasets (two embodiments, four noisy episodes each)."""
    from cosmos_robot.recipes import get_recipe, prepare_data

    return prepare_data(get_recipe("smoke"), tmp_path_factory.mktemp("smoke_data"), progress=False)


def smoke_config(datasets, out, **changes):
    """The smoke recipe's TrainConfig (tiny model, a few steps), one thread for reproducible sums."""
    from cosmos_robot.recipes import get_recipe
    from cosmos_robot.train import TrainConfig

    settings = get_recipe("smoke").train | {"threads": 1} | changes
    return TrainConfig(datasets=list(datasets), out=str(out), **settings)


@pytest.fixture(scope="session")
def smoke_checkpoint(smoke_data, tmp_path_factory):
    """A tiny model trained for a few steps on the smoke data."""
    from cosmos_robot.train import train

    out = tmp_path_factory.mktemp("ckpt") / "smoke"
    train(smoke_config(smoke_data, out), progress=False)
    return out
