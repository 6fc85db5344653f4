"""Inverse dynamics over a whole video: overlapping windows, averaged where they overlap.

Both backends label a video the same way: windows of the model's length start every ``stride``
frames (plus one aligned with the end, so every step is covered), and each step's action is the
mean over the windows covering it, with their standard deviation as a confidence.
"""

from __future__ import annotations

import numpy as np


def window_starts(num_frames: int, window: int, stride: int) -> list[int]:
    """First frames of ``window``-frame windows every ``stride`` frames, plus one aligned with the end.

    >>> window_starts(10, 5, 2)
    [0, 2, 4, 5]
    """
    last = max(0, num_frames - window)
    return sorted(set(range(0, last + 1, stride)) | {last})


def average_windows(pred: np.ndarray, starts: list[int], num_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Temporal ensemble of per-window action predictions over a video of ``num_frames`` frames.

    Args:
        pred: (B, W, window - 1, A) actions of the windows starting at ``starts``.
        starts: first frame of each window (:func:`window_starts`).
        num_frames: frames of the video (N); windows reaching past it are cut.

    Returns:
        (mean, spread), each (B, N - 1, A) float32: the average over the windows covering each step and
        their standard deviation (0 where one window covers it).
    """
    b, _, per_window, a = pred.shape
    total = np.zeros((b, num_frames - 1, a))
    total_sq = np.zeros_like(total)
    count = np.zeros((1, num_frames - 1, 1))
    for w, s in enumerate(starts):
        m = min(per_window, num_frames - 1 - s)
        total[:, s : s + m] += pred[:, w, :m]
        total_sq[:, s : s + m] += pred[:, w, :m] ** 2
        count[:, s : s + m] += 1
    mean = total / count
    spread = np.sqrt(np.maximum(total_sq / count - mean**2, 0.0))
    return mean.astype(np.float32), spread.astype(np.float32)
