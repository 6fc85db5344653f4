"""Shared fixtures: small real datasets collected once per test session."""

from __future__ import annotations

import gc

import pytest

import cosmos_robot  # noqa: F401  (sets MUJOCO_GL=egl before anything imports mujoco)


@pytest.fixture(autouse=True)
def _collect_renderers():
    # MuJoCo renderers freed late can blank a newer context (FACTS.md): free them between tests.
    yield
    gc.collect()


@pytest.fixture(scope="session")
def point_images_dataset(tmp_path_factory):
    """A 4-episode noisy-expert PushBlockPoint dataset stored as lossless images."""
    from cosmos_robot.datasets.collect import collect

    out = tmp_path_factory.mktemp("data") / "point_images"
    collect("cosmos_robot/PushBlockPoint-v0", 4, out, noise=0.3, seed=100, video=False, progress=False)
    return out


@pytest.fixture(scope="session")
def point_video_dataset(tmp_path_factory):
    """A 3-episode expert PushBlockPoint dataset stored as mp4."""
    from cosmos_robot.datasets.collect import collect

    out = tmp_path_factory.mktemp("data") / "point_video"
    collect("cosmos_robot/PushBlockPoint-v0", 3, out, seed=200, progress=False)
    return out
