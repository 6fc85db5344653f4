"""Episodes as flat per-key arrays plus ``episode_ends``: the one in-memory layout every source reads into."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cosmos_robot.keys import OBS_IMAGES_PREFIX


@dataclass
class EpisodeArrays:
    """A set of episodes stored end to end, as in diffusion_policy's replay buffer.

    Attributes:
        data: feature key -> array of shape (N, ...) over all frames of all episodes. Arrays may
            be numpy arrays or lazily read zarr arrays; both slice the same way.
        episode_ends: (E,) exclusive end index of each episode in ``data``.
        fps: frames (and control steps) per second of the source.
        features: LeRobot feature specs of the keys in ``data`` (dtype, shape, names).
        tasks: task strings; ``data["task_index"]`` indexes into them.
        robot_type: LeRobot's robot_type, which for our datasets is the embodiment name.
        meta: free-form provenance (env id, embodiment, policy, seeds, ...).
    """

    data: dict[str, Any]
    episode_ends: np.ndarray
    fps: float
    features: dict[str, dict[str, Any]]
    tasks: list[str]
    robot_type: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.episode_ends = np.asarray(self.episode_ends, dtype=np.int64)
        if (
            self.episode_ends.ndim != 1
            or np.any(np.diff(self.episode_ends) <= 0)
            or (len(self.episode_ends) and self.episode_ends[0] <= 0)
        ):
            raise ValueError(f"episode_ends={self.episode_ends.tolist()[:10]} must be strictly increasing and positive")
        total = int(self.episode_ends[-1]) if len(self.episode_ends) else 0
        for key, array in self.data.items():
            if array.shape[0] != total:
                raise ValueError(f"data[{key!r}] has {array.shape[0]} rows; expected {total} (episode_ends[-1])")
        if self.fps <= 0:
            raise ValueError(f"fps={self.fps!r}; expected a positive number")

    @property
    def num_episodes(self) -> int:
        """Number of episodes."""
        return len(self.episode_ends)

    @property
    def num_frames(self) -> int:
        """Number of frames over all episodes."""
        return int(self.episode_ends[-1]) if len(self.episode_ends) else 0

    @property
    def image_keys(self) -> list[str]:
        """Keys of camera streams (``observation.images.<camera>``)."""
        return [k for k in self.data if k.startswith(OBS_IMAGES_PREFIX)]

    def episode_bounds(self, episode: int) -> tuple[int, int]:
        """(start, stop) row range of ``episode``."""
        if not 0 <= episode < self.num_episodes:
            raise IndexError(f"episode={episode} out of range; expected 0 <= episode < {self.num_episodes}")
        start = int(self.episode_ends[episode - 1]) if episode > 0 else 0
        return start, int(self.episode_ends[episode])

    def episode_lengths(self) -> np.ndarray:
        """(E,) number of frames in each episode."""
        return np.diff(np.concatenate([[0], self.episode_ends]))

    def to_memory(self) -> EpisodeArrays:
        """A copy whose arrays are all numpy arrays in memory."""
        data = {k: np.asarray(v[:]) for k, v in self.data.items()}
        return EpisodeArrays(
            data, self.episode_ends.copy(), self.fps, self.features, list(self.tasks), self.robot_type, dict(self.meta)
        )
