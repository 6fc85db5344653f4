"""Video reading, writing, resizing and frame-rate matching."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cosmos_robot.datasets.video_io import match_fps, read_video, to_model_size, write_video


def test_lossless_round_trip_keeps_frames_and_fps(tmp_path):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (6, 32, 48, 3)).astype(np.uint8)
    path = write_video(tmp_path / "clip.mp4", frames, fps=10)
    decoded, fps = read_video(path)
    assert decoded.shape == frames.shape and fps == pytest.approx(10.0)
    assert np.abs(decoded.astype(int) - frames.astype(int)).max() <= 2  # rgb<->yuv444 rounding only


def test_centre_crop_then_resize():
    frames = np.zeros((2, 40, 80, 3), np.uint8)
    frames[:, :, 20:60] = 200  # the central 40x40 square
    out = to_model_size(frames, 20)
    assert out.shape == (2, 20, 20, 3) and out.min() == 200


def test_match_fps_subsamples_integer_multiples_only():
    frames = np.arange(12)
    assert match_fps(frames, 30.0, 10.0).tolist() == [0, 3, 6, 9]
    assert match_fps(frames, 10.0, 10.0).tolist() == frames.tolist()
    with pytest.raises(ValueError, match="fps=25"):
        match_fps(frames, 25.0, 10.0)


def test_unreadable_and_missing_videos(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_text("not a video")
    with pytest.raises(ValueError, match="cannot be decoded"):
        read_video(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_video(tmp_path / "missing.mp4")


@pytest.mark.slow
def test_the_learned_env_imports_without_a_video_decoder():
    # PyAV is loaded where videos are read or written: the learned env runs where it is not installed
    # (a GPU image carrying only torch, gymnasium and MuJoCo).
    code = "import sys; sys.modules['av'] = None; import cosmos_robot.envs.forward_dynamics, cosmos_robot.world_model"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
