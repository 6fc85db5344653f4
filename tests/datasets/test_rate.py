"""The model's rate: data at a whole multiple of it is subsampled, other rates are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.datasets.episodes import EpisodeArrays
from cosmos_robot.datasets.rate import rate_ratio, to_model_rate
from cosmos_robot.keys import ACTION, DONE, OBS_STATE, REWARD, SUCCESS


def episodes_at(fps: float, lengths: list[int]) -> EpisodeArrays:
    n = sum(lengths)
    steps = np.concatenate([np.arange(length) for length in lengths])
    data = {
        "observation.images.top": np.arange(n, dtype=np.uint8)[:, None, None, None].repeat(3, -1),
        OBS_STATE: np.arange(n, dtype=np.float32)[:, None],
        ACTION: np.arange(n, dtype=np.float32)[:, None] * 2,
        REWARD: np.ones(n, np.float32),
        SUCCESS: (np.arange(n) == 4),
        DONE: np.zeros(n, bool),
        "frame_index": steps,
        "timestamp": (steps / fps).astype(np.float32),
        "index": np.arange(n),
    }
    return EpisodeArrays(data, np.cumsum(lengths), fps, {}, ["t"], "robot")


def test_a_multiple_of_the_model_rate_keeps_every_kth_frame_and_summarises_the_steps_between():
    out = to_model_rate(episodes_at(30.0, [7, 6]), 10.0, "data/x")
    assert out.fps == 10.0 and out.episode_lengths().tolist() == [2, 2]  # 7 // 3 and 6 // 3
    assert out.data[OBS_STATE][:, 0].tolist() == [0, 3, 7, 10]  # the first row of each block of 3
    assert out.data[ACTION][:, 0].tolist() == [2.0, 8.0, 16.0, 22.0]  # the mean of the 3 actions taken
    assert out.data[REWARD].tolist() == [3.0] * 4  # summed over the 3 steps
    assert out.data[SUCCESS].tolist() == [False, True, False, False]  # step 4 succeeded, inside block 2
    assert out.data["frame_index"].tolist() == [0, 1, 0, 1] and out.data["index"].tolist() == [0, 1, 2, 3]
    assert out.data["timestamp"].tolist() == pytest.approx([0.0, 0.1, 0.0, 0.1])
    assert out.meta["source_fps"] == 30.0


def test_the_model_rate_itself_is_left_as_it_is():
    episodes = episodes_at(10.0, [5])
    assert to_model_rate(episodes, 10.0, "data/x") is episodes


@pytest.mark.parametrize("fps", [25.0, 5.0, 12.5])
def test_another_rate_is_a_one_line_error_naming_the_fix(fps):
    with pytest.raises(ValueError, match=f"data/x is at fps={fps:g}.*train --fps {fps:g}") as error:
        to_model_rate(episodes_at(fps, [9]), 10.0, "data/x")
    assert "\n" not in str(error.value)


def test_an_episode_shorter_than_one_model_step_is_an_error():
    with pytest.raises(ValueError, match="episode 1 has 2 frames, fewer than the 3 source steps"):
        to_model_rate(episodes_at(30.0, [6, 2]), 10.0, "data/x")


def test_rate_ratio():
    assert rate_ratio(50.0, 10.0, "reacher") == 5
    with pytest.raises(ValueError, match="resample the video first"):
        rate_ratio(24.0, 10.0, "the video", fix="resample the video first")
