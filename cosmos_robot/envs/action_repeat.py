"""A real env at a model's rate: each action held for the env steps one model step spans.

A model trained on data recorded k times faster than its own rate (``cosmos_robot.datasets.rate``)
learned what k env steps under one held action do. Its policy therefore acts in the env through
:class:`ActionRepeat` with ``repeat=k``, and one step of its learned env stands for k steps of the
real one. k is the embodiment's recorded rate over the model's (:func:`action_repeat`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from cosmos_robot.datasets.for_model import model_entry
from cosmos_robot.datasets.rate import rate_ratio
from cosmos_robot.interface import WorldModel


def action_repeat(model: WorldModel, embodiment: str) -> int:
    """Env steps per model step for ``embodiment``: its recorded rate over the model's (1 where the model
    stores no rate)."""
    entry = model_entry(model, embodiment)
    if entry is None:
        return 1
    return rate_ratio(entry.embodiment.rate_hz, model.fps, f"embodiment={embodiment!r}")


class ActionRepeat(gym.Wrapper):
    """Holds each action for ``repeat`` steps of ``env``: the rewards are summed, ``is_success`` is true if
    any of the steps succeeded, and an episode that ends midway ends the step there.

    Args:
        env: the env.
        repeat: env steps per step (>= 1).
    """

    def __init__(self, env: gym.Env, repeat: int) -> None:
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise ValueError(f"repeat={repeat!r}; expected a positive integer (env steps per step)")
        super().__init__(env)
        self.repeat = repeat

    def step(self, action: np.ndarray) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``repeat`` steps of the env with ``action``."""
        total, succeeded = 0.0, False
        for _ in range(self.repeat):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            succeeded = succeeded or bool(info.get("is_success", False))
            if terminated or truncated:
                break
        if "is_success" in info:
            info = dict(info, is_success=succeeded)
        return obs, total, terminated, truncated, info
