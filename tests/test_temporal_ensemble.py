"""The temporal ensemble of inverse-dynamics windows: every step covered, overlaps averaged, spread kept."""

from __future__ import annotations

import doctest

import numpy as np

import cosmos_robot.temporal_ensemble as temporal_ensemble
from cosmos_robot.temporal_ensemble import average_windows, window_starts


def test_windows_cover_every_step_and_end_aligned():
    assert window_starts(10, 5, 2) == [0, 2, 4, 5]
    assert window_starts(3, 5, 1) == [0]  # shorter than a window: one window
    assert doctest.testmod(temporal_ensemble).failed == 0


def test_overlaps_are_averaged_and_their_spread_reported():
    # Video of 6 frames (5 steps); windows of 4 frames (3 steps) at 0 and 2: step 2 is covered twice.
    pred = np.zeros((1, 2, 3, 1))
    pred[0, 0, :, 0] = [1.0, 1.0, 1.0]
    pred[0, 1, :, 0] = [3.0, 5.0, 5.0]
    mean, spread = average_windows(pred, [0, 2], 6)
    np.testing.assert_allclose(mean[0, :, 0], [1, 1, 2, 5, 5])
    np.testing.assert_allclose(spread[0, :, 0], [0, 0, 1, 0, 0])
