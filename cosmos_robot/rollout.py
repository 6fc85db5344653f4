"""One MuJoCo episode, run the same way by every tool and harness: the shared rollout runner.

Collecting demonstrations, scoring a policy closed loop, recording reference rollouts for the
forward-dynamics and labeling harnesses, replaying labels: each is :func:`run_episode` with a way of
choosing actions, and reads what it needs from the returned :class:`Episode`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from cosmos_robot.keys import AGENT_POS, PIXELS

# act(obs, info) -> action: a policy's ``act``, or anything with that shape.
Act = Callable[[dict[str, np.ndarray], dict[str, Any]], np.ndarray]


@dataclass
class Episode:
    """What happened in one episode.

    Attributes:
        observations: the T + 1 observations, the reset's first.
        infos: the T + 1 infos, the reset's first.
        actions: the T actions taken.
        rewards: the T rewards.
        extras: per step, what ``before_step`` returned before that step (empty dicts without it).
        terminated: the episode ended by the env's termination (success, failure).
        truncated: the episode ended by a time limit.
        act_seconds: time spent choosing actions.
    """

    observations: list[dict[str, np.ndarray]] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    extras: list[dict[str, Any]] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    act_seconds: float = 0.0

    @property
    def length(self) -> int:
        """Steps taken."""
        return len(self.actions)

    @property
    def total_return(self) -> float:
        """Sum of the rewards."""
        return float(sum(self.rewards))

    @property
    def success(self) -> bool:
        """The last info's ``is_success`` (False where the env does not say)."""
        return bool(self.infos[-1].get("is_success", False))

    def frames(self) -> np.ndarray:
        """(T + 1, H, W, 3) the observed pixels."""
        return np.stack([obs[PIXELS] for obs in self.observations])

    def states(self) -> np.ndarray:
        """(T + 1, S) the observed agent states."""
        return np.stack([obs[AGENT_POS] for obs in self.observations])


def run_episode(
    env: gym.Env,
    act: Act,
    seed: int | None = None,
    max_steps: int | None = None,
    ignore_episode_end: bool = False,
    before_step: Callable[[], dict[str, Any]] | None = None,
) -> Episode:
    """Reset ``env`` with ``seed`` and step it with ``act`` until the episode ends or ``max_steps``.

    Args:
        env: the env (made with ``gymnasium.make`` or not).
        act: chooses each action from the current observation and info.
        seed: the reset's seed.
        max_steps: stop after this many steps even if the episode goes on (None: run to its end).
        ignore_episode_end: step the unwrapped env and run on through termination and time limits,
            for exactly ``max_steps`` steps (a reference rollout of a fixed horizon).
        before_step: called before every step; what it returns is kept in :attr:`Episode.extras`
            (the env's state at the observation, say).
    """
    if ignore_episode_end and max_steps is None:
        raise ValueError("ignore_episode_end=True needs max_steps; expected a fixed horizon")
    obs, info = env.reset(seed=seed)
    stepper = env.unwrapped if ignore_episode_end else env
    episode = Episode(observations=[obs], infos=[info])
    while max_steps is None or episode.length < max_steps:
        episode.extras.append(before_step() if before_step is not None else {})
        started = time.perf_counter()
        action = act(obs, info)
        episode.act_seconds += time.perf_counter() - started
        obs, reward, terminated, truncated, info = stepper.step(action)
        episode.actions.append(action)
        episode.rewards.append(float(reward))
        episode.observations.append(obs)
        episode.infos.append(info)
        if not ignore_episode_end and (terminated or truncated):
            episode.terminated, episode.truncated = bool(terminated), bool(truncated)
            break
    return episode


def replay_actions(actions: np.ndarray) -> Act:
    """An ``act`` that plays back ``actions`` in order, ignoring what it observes."""
    queue = iter(actions)
    return lambda obs, info: next(queue)
