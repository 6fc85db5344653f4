"""The model's rate: data recorded at a whole multiple of it is subsampled on the way in.

A model steps at one rate (10 Hz in the presets). A dataset recorded k times faster becomes the
same episodes at the model's rate: every k-th frame and state, the mean of the k actions taken in
between (the action a controller would hold for k steps: exact for data recorded with action
repeat, the right summary of velocity and torque commands otherwise), the rewards of the k steps
summed, success and done if any of them was. The env then runs k of its own steps per model step
with the model's action held (:class:`cosmos_robot.envs.action_repeat.ActionRepeat`). Other rates
are an error naming the fix.
"""

from __future__ import annotations

import numpy as np

from cosmos_robot.datasets.episodes import EpisodeArrays
from cosmos_robot.keys import ACTION, DONE, REWARD, SUCCESS

# The rate of the presets' models and the default of ``cosmos-robot train --fps``.
MODEL_FPS = 10.0

# Keys rebuilt for the new rate rather than taken from the first row of each block.
_COUNTERS = ("frame_index", "index", "timestamp")


TRAIN_FIX = "record or resample at one, or train a model at this rate (`cosmos-robot train --fps {fps:g}`)"


def rate_ratio(fps: float, model_fps: float, what: str, fix: str = TRAIN_FIX) -> int:
    """k when ``fps`` is k times ``model_fps``; otherwise a one-line error about ``what`` ending in ``fix``
    (formatted with ``fps``)."""
    ratio = float(fps) / float(model_fps)
    k = round(ratio)
    if k < 1 or abs(ratio - k) > 1e-3:
        raise ValueError(
            f"{what} is at fps={fps:g}; the model runs at {model_fps:g} fps and subsamples whole multiples of it "
            f"(e.g. {2 * model_fps:g}, {3 * model_fps:g}); expected such a rate: " + fix.format(fps=fps)
        )
    return k


def to_model_rate(episodes: EpisodeArrays, model_fps: float, source: str) -> EpisodeArrays:
    """The episodes at ``model_fps`` (in memory); the same object when they already are.

    An episode keeps ``length // k`` frames: each kept frame starts a block of k source steps whose
    actions all exist, so every kept action is a full k-step mean.
    """
    k = rate_ratio(episodes.fps, model_fps, source)
    if k == 1:
        return episodes
    lengths = episodes.episode_lengths() // k
    if not lengths.all():
        short = int(np.argmin(lengths))
        raise ValueError(
            f"{source}: episode {short} has {int(episodes.episode_lengths()[short])} frames, fewer than the {k} "
            f"source steps of one model step at {model_fps:g} fps; expected every episode to span at least one"
        )
    starts = episodes.episode_ends - episodes.episode_lengths()
    firsts = np.concatenate([s + k * np.arange(n) for s, n in zip(starts, lengths, strict=True)])
    blocks = firsts[:, None] + np.arange(k)  # (M, k) source rows of each model step
    data: dict[str, np.ndarray] = {}
    for key, array in episodes.data.items():
        values = np.asarray(array[:])
        if key == ACTION:
            data[key] = values[blocks].mean(axis=1).astype(values.dtype)
        elif key == REWARD:
            data[key] = values[blocks].sum(axis=1).astype(values.dtype)
        elif key in (SUCCESS, DONE):
            data[key] = values[blocks].max(axis=1)
        elif key not in _COUNTERS:
            data[key] = values[firsts]
    frame_index = np.concatenate([np.arange(n) for n in lengths])
    rebuilt = {"frame_index": frame_index, "index": np.arange(len(firsts)), "timestamp": frame_index / model_fps}
    for key in _COUNTERS:
        if key in episodes.data:
            like = np.asarray(episodes.data[key][:1])
            data[key] = rebuilt[key].astype(like.dtype).reshape((len(firsts),) + like.shape[1:])
    meta = dict(episodes.meta, source_fps=float(episodes.fps))
    return EpisodeArrays(
        data, np.cumsum(lengths), float(model_fps), episodes.features, list(episodes.tasks), episodes.robot_type, meta
    )
