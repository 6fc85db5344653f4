"""Time-aligned training windows: frames at the video rate, actions at the action rate, all with timestamps.

A window is what training consumes: ``num_frames`` frames sampled at ``frame_rate``, the actions
between the first and the last frame at ``action_rate``, states at the frame times, rewards and
success per action, every element with its time in seconds from the episode start, and padding
flags where the window runs past the episode end.

Timestamps follow Cosmos 3: an action is stamped at the time of the frame it leads into, so the
action taken at step ``s`` (which produces the observation at step ``s + 1``) has time
``(s + 1) / fps``. At equal rates action ``i`` of a window shares its time with frame ``i + 1``;
time-aligned rotary positions (``model/rope.py``) rely on exactly this.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from cosmos_robot.datasets.episodes import EpisodeArrays
from cosmos_robot.keys import ACTION, DONE, OBS_ENV_STATE, OBS_STATE, REWARD, SUCCESS


@dataclass(frozen=True)
class WindowSpec:
    """Shape of a training window.

    Attributes:
        num_frames: frames per window (context and targets), at least 2.
        frame_rate: Hz; None means the source fps. Must divide the source fps.
        action_rate: Hz; None means the source fps. Must divide the source fps and be a multiple of
            ``frame_rate``. Below the source rate an action is the mean of the source actions it
            spans, the right summary for the velocity commands our envs take.
        min_real_frames: windows with fewer real (unpadded) frames are not produced.
    """

    num_frames: int = 4
    frame_rate: float | None = None
    action_rate: float | None = None
    min_real_frames: int = 2

    def strides(self, source_fps: float) -> tuple[int, int]:
        """(frame stride, action stride) in source steps; raise ``ValueError`` on rates that do not fit."""
        if self.num_frames < 2:
            raise ValueError(f"num_frames={self.num_frames}; expected at least 2 (a window needs a transition)")
        if not 1 <= self.min_real_frames <= self.num_frames:
            raise ValueError(f"min_real_frames={self.min_real_frames}; expected 1..num_frames ({self.num_frames})")
        frame_stride = _stride("frame_rate", self.frame_rate, source_fps)
        action_stride = _stride("action_rate", self.action_rate, source_fps)
        if frame_stride % action_stride:
            raise ValueError(
                f"action_rate={source_fps / action_stride:g} Hz is not a multiple of frame_rate="
                f"{source_fps / frame_stride:g} Hz; expected a whole number of actions between frames"
            )
        return frame_stride, action_stride


def _stride(field: str, rate: float | None, source_fps: float) -> int:
    if rate is None:
        return 1
    if rate <= 0:
        raise ValueError(f"{field}={rate!r}; expected a positive rate in Hz")
    stride = source_fps / rate
    if abs(stride - round(stride)) > 1e-6 or round(stride) < 1:
        raise ValueError(f"{field}={rate:g} Hz does not divide the source rate {source_fps:g} Hz; expected fps/k")
    return int(round(stride))


class TimeAlignedWindows(Dataset):
    """All windows of a set of episodes, one per (episode, start step).

    Args:
        source: :class:`EpisodeArrays`, or a path to a LeRobot dataset or a zarr store.
        spec: window shape and rates.
        camera: image key; None picks the only camera (error if there are several).
        extra_frame_keys: other per-frame arrays of the source to return at the frame times.

    Each item is a dict of tensors:

    ==================  ==================  ============================================
    key                 shape               meaning
    ==================  ==================  ============================================
    frames              (T, H, W, 3) uint8  camera frames; padded frames repeat the last
    frame_time          (T,) float32        seconds since episode start
    frame_is_pad        (T,) bool           past the episode end
    states              (T, S) float32      ``observation.state`` at the frame times
    actions             (K, A) float32      K = (T - 1) * frame_stride / action_stride
    action_time         (K,) float32        time of the frame each action leads into
    action_is_pad       (K,) bool           past the episode end (action zeroed)
    rewards, successes  (K,)                ``next.reward`` / ``next.success`` per action
    env_states          (T, E) float32      only when the source has them
    episode_index       () int64
    start_step          () int64            source step of the first frame
    task                str                 the episode's task string
    ==================  ==================  ============================================
    """

    def __init__(
        self,
        source: EpisodeArrays | str | os.PathLike,
        spec: WindowSpec | None = None,
        camera: str | None = None,
        extra_frame_keys: tuple[str, ...] = (),
    ) -> None:
        self.episodes = source if isinstance(source, EpisodeArrays) else open_episodes(source)
        self.spec = spec or WindowSpec()
        self.frame_stride, self.action_stride = self.spec.strides(self.episodes.fps)
        self.actions_per_window = (self.spec.num_frames - 1) * self.frame_stride // self.action_stride
        cameras = self.episodes.image_keys
        if camera is None:
            if len(cameras) != 1:
                raise ValueError(f"camera=None but the source has cameras {cameras}; expected exactly one or a name")
            camera = cameras[0]
        if camera not in cameras:
            raise ValueError(f"camera={camera!r} is not in the source; expected one of {cameras}")
        self.camera = camera
        self.extra_frame_keys = tuple(extra_frame_keys)
        for key in (OBS_STATE, ACTION, *self.extra_frame_keys):
            if key not in self.episodes.data:
                raise ValueError(f"the source has no {key!r}; windows need states and actions")
        self._index = self._build_index()

    def _build_index(self) -> np.ndarray:
        """(num_windows, 2) rows of (episode, start step within the episode)."""
        reach = (self.spec.min_real_frames - 1) * self.frame_stride
        rows = [
            (ep, start)
            for ep, length in enumerate(self.episodes.episode_lengths())
            for start in range(max(int(length) - reach, 0))
        ]
        return np.asarray(rows, dtype=np.int64).reshape(-1, 2)

    def __len__(self) -> int:
        return len(self._index)

    @property
    def window_episodes(self) -> np.ndarray:
        """(num_windows,) the episode of each window."""
        return self._index[:, 0]

    def __getitem__(self, item: int) -> dict[str, Any]:
        episode, start = (int(v) for v in self._index[item])
        first, stop = self.episodes.episode_bounds(episode)
        length = stop - first
        fps = self.episodes.fps
        data = self.episodes.data

        frame_steps = start + self.frame_stride * np.arange(self.spec.num_frames)
        frame_is_pad = frame_steps >= length
        frame_rows = first + np.minimum(frame_steps, length - 1)

        # Action k covers source steps [s_k, s_k + action_stride) and leads into the frame at s_k + action_stride.
        action_steps = start + self.action_stride * np.arange(self.actions_per_window)
        action_is_pad = action_steps >= length
        span = action_steps[:, None] + np.arange(self.action_stride)[None, :]  # (K, stride)
        span_valid = span < length
        span_rows = first + np.minimum(span, length - 1)

        lo, hi = int(min(frame_rows.min(), span_rows.min())), int(max(frame_rows.max(), span_rows.max())) + 1
        block = {key: np.asarray(data[key][lo:hi]) for key in self._keys()}  # one contiguous read per key

        def rows(key: str, idx: np.ndarray) -> np.ndarray:
            return block[key][idx - lo]

        actions = _masked_mean(rows(ACTION, span_rows).astype(np.float32), span_valid)
        out: dict[str, Any] = {
            "frames": torch.from_numpy(rows(self.camera, frame_rows)),
            "frame_time": torch.from_numpy((frame_steps / fps).astype(np.float32)),
            "frame_is_pad": torch.from_numpy(frame_is_pad),
            "states": torch.from_numpy(rows(OBS_STATE, frame_rows).astype(np.float32)),
            "actions": torch.from_numpy(np.where(action_is_pad[:, None], 0.0, actions).astype(np.float32)),
            "action_time": torch.from_numpy(((action_steps + self.action_stride) / fps).astype(np.float32)),
            "action_is_pad": torch.from_numpy(action_is_pad),
            "episode_index": torch.tensor(episode),
            "start_step": torch.tensor(start),
        }
        if "task_index" in data:
            out["task"] = self.episodes.tasks[int(np.asarray(data["task_index"][first + start]))]
        last_rows = first + np.minimum(action_steps + self.action_stride - 1, length - 1)
        if REWARD in block:
            reward = _masked_sum(rows(REWARD, span_rows).reshape(*span.shape).astype(np.float32), span_valid)
            out["rewards"] = torch.from_numpy(np.where(action_is_pad, 0.0, reward).astype(np.float32))
        if SUCCESS in block:
            out["successes"] = torch.from_numpy(rows(SUCCESS, last_rows).reshape(-1).astype(bool) & ~action_is_pad)
        if DONE in block:
            out["dones"] = torch.from_numpy(rows(DONE, last_rows).reshape(-1).astype(bool) & ~action_is_pad)
        if OBS_ENV_STATE in block:
            out["env_states"] = torch.from_numpy(rows(OBS_ENV_STATE, frame_rows).astype(np.float32))
        for key in self.extra_frame_keys:  # e.g. precomputed frame latents, at the frame times
            out[key] = torch.from_numpy(np.ascontiguousarray(rows(key, frame_rows)))
        return out

    def _keys(self) -> list[str]:
        optional = [k for k in (REWARD, SUCCESS, DONE, OBS_ENV_STATE) if k in self.episodes.data]
        return [self.camera, OBS_STATE, ACTION, *optional, *self.extra_frame_keys]


def _masked_mean(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Mean over axis 1 of (K, stride, A) values where ``valid`` (K, stride); zeros where none is valid."""
    weights = valid[..., None].astype(np.float32)
    return (values * weights).sum(1) / np.maximum(weights.sum(1), 1.0)


def _masked_sum(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Sum over axis 1 of (K, stride) values where ``valid``: rewards add up over a longer step."""
    return (values * valid).sum(1)


def open_episodes(path: str | os.PathLike) -> EpisodeArrays:
    """Open a LeRobot dataset (read into memory) or a zarr store (read lazily) by looking at ``path``."""
    path = Path(path)
    if (path / "meta" / "info.json").is_file():
        from cosmos_robot.datasets.lerobot_io import read_lerobot

        return read_lerobot(path)
    if (path / "zarr.json").is_file():
        from cosmos_robot.datasets.zarr_store import read_zarr

        return read_zarr(path)
    raise FileNotFoundError(f"dataset={str(path)!r} is neither a LeRobot dataset (meta/info.json) nor a zarr store")
