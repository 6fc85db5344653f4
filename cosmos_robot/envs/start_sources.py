"""Where an imagined episode starts: a real env's reset, or the first frame of a recorded episode.

A start source hands :class:`~cosmos_robot.envs.forward_dynamics.ForwardDynamicsEnv` the observed
context of a new episode: a rendered frame and the agent's state. Starts from a real env carry the
seed they were reset with, so the same episode can be replayed in MuJoCo for comparison.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from cosmos_robot.keys import ACTION, AGENT_POS, OBS_STATE, PIXELS


@dataclass
class Start:
    """The observed context of a new episode.

    Attributes:
        frame: (H, W, 3) uint8 first frame.
        state: (S,) float32 agent state at that frame.
        info: where it came from (``start_seed`` for env starts, ``episode`` for dataset starts).
    """

    frame: np.ndarray
    state: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)


class StartSource(Protocol):
    """Anything that draws starts from a seeded generator."""

    def draw(self, rng: np.random.Generator) -> Start:
        """A new start."""
        ...


class EnvStarts:
    """Starts from a real env's ``reset``: its first observation (``pixels`` and ``agent_pos``).

    Args:
        env: a gymnasium id or an env observing ``{"pixels", "agent_pos"}`` (PushBlock, or
            ``cosmos_robot.envs.gym_adapter.make_env``).
        size: the side of the frames an id is made to render (None: 64).
    """

    def __init__(self, env: str | gym.Env, size: int | None = None) -> None:
        if isinstance(env, str):
            from cosmos_robot.envs.gym_adapter import make_env

            env = make_env(env, **({} if size is None else {"width": size, "height": size}))
        keys = set(getattr(env.observation_space, "spaces", {}))
        if not {PIXELS, AGENT_POS} <= keys:
            raise ValueError(
                f"env={env} observes {sorted(keys) or env.observation_space}; expected a Dict with 'pixels' and "
                "'agent_pos' (wrap gymnasium envs with cosmos_robot.envs.gym_adapter.make_env)"
            )
        self.env = env

    def draw(self, rng: np.random.Generator) -> Start:
        """Reset the env with a seed from ``rng``."""
        seed = int(rng.integers(2**31 - 1))
        obs, _ = self.env.reset(seed=seed)
        return Start(np.asarray(obs[PIXELS]).copy(), np.asarray(obs[AGENT_POS], np.float32), {"start_seed": seed})

    def close(self) -> None:
        """Close the env."""
        self.env.close()


class DatasetStarts:
    """Starts from the first frame of a random episode of a LeRobot dataset or zarr store.

    Args:
        path: the dataset folder.
        size: centre-crop and resize the frames to this square side (None: as recorded).
        camera: the image key to read where the dataset has several (None: the first).
    """

    def __init__(self, path: str | os.PathLike, size: int | None = None, camera: str | None = None) -> None:
        from cosmos_robot.datasets.windows import open_episodes

        self.path = Path(path)
        episodes = open_episodes(self.path)
        if not episodes.image_keys:
            raise ValueError(f"dataset={str(self.path)!r} has no image feature; expected recorded frames")
        if OBS_STATE not in episodes.data:
            raise ValueError(f"dataset={str(self.path)!r} has no {OBS_STATE!r}; expected the agent state")
        firsts = np.concatenate([[0], episodes.episode_ends[:-1]]).astype(int)
        from cosmos_robot.datasets.for_model import pick_camera

        key = pick_camera(episodes.image_keys, camera, f"dataset={str(self.path)!r}")
        self.frames = np.asarray(episodes.data[key][firsts])
        if size is not None and self.frames.shape[1:3] != (size, size):
            from cosmos_robot.datasets.video_io import to_model_size

            self.frames = to_model_size(self.frames, size)
        self.states = np.asarray(episodes.data[OBS_STATE][firsts], np.float32)
        self.embodiment = episodes.robot_type or episodes.meta.get("embodiment")
        actions = np.asarray(episodes.data[ACTION][:], np.float32) if ACTION in episodes.data else None
        self._action_range = None if actions is None else (actions.min(0), actions.max(0))

    def spaces(self) -> tuple[gym.spaces.Dict, gym.spaces.Box]:
        """(observation space, action space) of the recorded robot: its frames (as drawn) and state, and
        the range of the actions it was recorded taking (for an env built from the dataset alone)."""
        if self._action_range is None:
            raise ValueError(f"dataset={str(self.path)!r} has no {ACTION!r}; expected recorded actions")
        low, high = self._action_range
        observation = gym.spaces.Dict(
            {
                PIXELS: gym.spaces.Box(0, 255, self.frames.shape[1:], np.uint8),
                AGENT_POS: gym.spaces.Box(-np.inf, np.inf, self.states.shape[1:], np.float32),
            }
        )
        return observation, gym.spaces.Box(low, np.maximum(high, low + 1e-6), dtype=np.float32)

    def draw(self, rng: np.random.Generator) -> Start:
        """The first frame and state of a random episode."""
        episode = int(rng.integers(len(self.frames)))
        return Start(self.frames[episode].copy(), self.states[episode].copy(), {"episode": episode})

    def close(self) -> None:
        """Nothing to free."""


class FixedStarts:
    """Given starts, handed out in order (cycling): evaluation replays known MuJoCo starts with them.

    Args:
        starts: the starts, e.g. first frames and states of seeded MuJoCo episodes.
    """

    def __init__(self, starts: list[Start]) -> None:
        if not starts:
            raise ValueError("starts=[] is empty; expected at least one Start")
        self.starts = list(starts)
        self._next = 0

    def draw(self, rng: np.random.Generator) -> Start:
        """The next start in order (``rng`` is not used: the order is the point)."""
        start = self.starts[self._next % len(self.starts)]
        self._next += 1
        return Start(start.frame.copy(), start.state.copy(), dict(start.info))

    def rewind(self) -> None:
        """Hand out the first start next."""
        self._next = 0

    def close(self) -> None:
        """Nothing to free."""


def make_start_source(
    start: str | os.PathLike | gym.Env | StartSource, size: int | None = None, camera: str | None = None
) -> StartSource:
    """A start source from a gymnasium id, an env, a dataset folder (read from ``camera`` where it has
    several), or an object with ``draw``; ids and datasets give ``size`` x ``size`` frames (None: 64 and
    as recorded)."""
    if hasattr(start, "draw"):
        return start  # type: ignore[return-value]
    if isinstance(start, gym.Env):
        return EnvStarts(start)
    text = str(start)
    if Path(text).exists():
        return DatasetStarts(text, size, camera)
    from cosmos_robot.envs.gym_adapter import resolve_env_id

    try:
        resolve_env_id(text)
    except ValueError:
        raise ValueError(
            f"start={text!r} is neither a dataset folder nor a registered gymnasium id; expected e.g. "
            "'cosmos_robot/PushBlockPoint-v0' or a LeRobot dataset / zarr store path"
        ) from None
    return EnvStarts(text, size)
