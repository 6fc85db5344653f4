"""The scripted PushBlock expert driven by what it sees: block, goal and effector found by colour.

Ranking policies inside the learned env needs policies that read only observations: the imagined
env has no privileged ``info``. ``perceive`` finds the red block, the green goal and the blue
effector in a top-down PushBlock frame and maps their pixel centroids to table metres; the goal is
read on the first frame of an episode (the block and effector can cover it later). The same
policy then runs in MuJoCo and in imagination, so the two scores are comparable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cosmos_robot.envs import push_block_scene as scene
from cosmos_robot.keys import PIXELS
from cosmos_robot.policies.scripted import PLANNERS, ScriptedExpert


def _mask(pixels: np.ndarray, colour: str) -> np.ndarray:
    p = pixels.astype(np.int16)
    r, g, b = p[..., 0], p[..., 1], p[..., 2]
    if colour == "red":
        return (r > 150) & (g < 90) & (b < 90)
    if colour == "green":
        return (g > 120) & (r < 110) & (b < 120) & (g - r > 50)
    if colour == "blue":
        return (b > 150) & (r < 90) & (b - g > 60)
    raise ValueError(f"colour={colour!r}; expected red, green or blue")


def pixel_to_table(rows: np.ndarray, cols: np.ndarray, height: int, width: int) -> np.ndarray:
    """Table (x, y) in metres of pixel centres: the top camera sees the table edge to edge, x right, y up."""
    x = ((cols + 0.5) / width * 2.0 - 1.0) * scene.TABLE_HALF
    y = (1.0 - (rows + 0.5) / height * 2.0) * scene.TABLE_HALF
    return np.stack([x, y], -1)


def perceive(pixels: np.ndarray) -> dict[str, np.ndarray | None]:
    """Centroids (table metres) of the block, goal and effector in a PushBlock frame; None if unseen."""
    pixels = np.asarray(pixels)
    if pixels.ndim != 3 or pixels.shape[-1] != 3 or pixels.dtype != np.uint8:
        raise ValueError(f"pixels has shape {pixels.shape} and dtype {pixels.dtype}; expected uint8 (H, W, 3)")
    h, w = pixels.shape[:2]
    found: dict[str, np.ndarray | None] = {}
    for name, colour in (("block", "red"), ("goal", "green"), ("effector", "blue")):
        rows, cols = np.nonzero(_mask(pixels, colour))
        found[name] = pixel_to_table(rows.mean(), cols.mean(), h, w) if len(rows) else None
    return found


class PixelExpert(ScriptedExpert):
    """:class:`ScriptedExpert` whose block, goal and effector come from the frame, not from ``info``.

    Args:
        env_id: a PushBlock id (selects the planner and its action box).
        action_low: lower bound of the action box.
        action_high: upper bound of the action box.
        noise: probability of a random action, in [0, 1].
        seed: seed of the noise generator.
    """

    def __init__(
        self, env_id: str, action_low: np.ndarray, action_high: np.ndarray, noise: float = 0.0, seed: int | None = None
    ) -> None:
        if env_id not in PLANNERS or "PushBlock" not in env_id:
            raise ValueError(f"env_id={env_id!r}; expected a PushBlock id")
        super().__init__(PLANNERS[env_id] if noise < 1.0 else None, action_low, action_high, noise=noise, seed=seed)
        self._goal: np.ndarray | None = None
        self._last: dict[str, np.ndarray] = {}

    def reset(self, seed: int | None = None) -> None:
        """New episode: reseed the noise and forget the goal and last sightings."""
        super().reset(seed)
        self._goal = None
        self._last = {}

    def seen_info(self, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        """``info`` as the planner expects it, from the frame (last sighting when something is hidden)."""
        seen = perceive(obs[PIXELS])
        if self._goal is None and seen["goal"] is not None:
            self._goal = seen["goal"]
        for name in ("block", "effector"):
            if seen[name] is not None:
                self._last[name] = seen[name]
        block = self._last.get("block", np.zeros(2))
        return {
            "block_pose": np.array([block[0], block[1], 0.0]),
            "goal_pos": self._goal if self._goal is not None else np.zeros(2),
            "effector_pos": self._last.get("effector", np.zeros(2)),
        }

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        """Action for the current step, from the observation alone (``info`` is ignored)."""
        return super().act(obs, self.seen_info(obs))
