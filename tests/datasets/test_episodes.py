"""EpisodeArrays: episodes end to end, with bounds and lengths, validated on construction."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.datasets.episodes import EpisodeArrays


def episodes(ends=(3, 5, 9)) -> EpisodeArrays:
    n = ends[-1]
    return EpisodeArrays({"action": np.arange(n * 2, dtype=np.float32).reshape(n, 2)}, np.array(ends), 10.0, {}, ["t"])


def test_bounds_and_lengths_follow_episode_ends():
    data = episodes()
    assert data.num_episodes == 3 and data.num_frames == 9
    assert data.episode_bounds(1) == (3, 5) and data.episode_lengths().tolist() == [3, 2, 4]
    start, stop = data.episode_bounds(2)
    np.testing.assert_array_equal(data.data["action"][start:stop, 0], [10, 12, 14, 16])


@pytest.mark.parametrize(
    ("ends", "rows", "message"),
    [((3, 3), 3, "strictly increasing"), ((0, 2), 2, "strictly increasing and positive"), ((4,), 5, "has 5 rows")],
)
def test_inconsistent_episodes_are_refused(ends, rows, message):
    with pytest.raises(ValueError, match=message):
        EpisodeArrays({"action": np.zeros((rows, 2))}, np.array(ends), 10.0, {}, ["t"])
