"""Scripted PushBlock experts with a noise knob, for demonstrations and for ranking policies.

The expert reads the block and goal from ``info`` (privileged state), plans a planar effector
velocity with a get-behind-then-push rule, and maps it to the embodiment's action: directly for
the ``point`` pusher, through the arm's damped-least-squares inverse Jacobian for ``arm2``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cosmos_robot.envs import push_block_scene as scene
from cosmos_robot.envs.push_block import arm_jacobian
from cosmos_robot.keys import AGENT_POS

# Distance from the block centre at which the effector pushes: block half-width + pusher radius + slack.
PUSH_OFFSET = scene.BLOCK_HALF + scene.PUSHER_RADIUS + 0.006
LATERAL_TOLERANCE = 0.012
POSITION_GAIN = 6.0  # 1/s: how hard the effector is pulled to its waypoint
PUSH_SPEED = 0.22  # m/s


def plan_effector_velocity(effector: np.ndarray, block: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """Planar velocity (m/s) that gets the effector behind the block, then pushes it to the goal."""
    to_goal = goal - block
    dist = float(np.linalg.norm(to_goal))
    if dist < 1e-6:
        return np.zeros(2)
    u = to_goal / dist
    rel = effector - block
    along = float(rel @ u)  # negative: behind the block, on the far side from the goal
    lateral = rel - along * u
    if along < -0.7 * PUSH_OFFSET and np.linalg.norm(lateral) < LATERAL_TOLERANCE:
        # Push: drive through the block towards the goal, correcting drift off the push line.
        speed = min(PUSH_SPEED, 2.5 * dist + 0.05)
        return speed * u - POSITION_GAIN * lateral
    behind = block - PUSH_OFFSET * u
    if along > -0.5 * PUSH_OFFSET:
        # In front of or beside the block: go round it on the side the effector is already on.
        n = lateral / np.linalg.norm(lateral) if np.linalg.norm(lateral) > 1e-6 else np.array([-u[1], u[0]])
        target = block + 1.6 * PUSH_OFFSET * n - 0.6 * PUSH_OFFSET * u
    else:
        target = behind
    return POSITION_GAIN * (target - effector)


Planner = Callable[[dict[str, np.ndarray], dict[str, Any]], np.ndarray]


def push_block_point_planner(obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
    """PushBlock ``point``: the planned velocity is the action."""
    return plan_effector_velocity(info["effector_pos"], info["block_pose"][:2], info["goal_pos"])


def push_block_arm2_planner(obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
    """PushBlock ``arm2``: joint velocities through the damped-least-squares inverse Jacobian."""
    velocity = push_block_point_planner(obs, info)
    jac = arm_jacobian(np.asarray(obs[AGENT_POS], dtype=np.float64))
    damping = 0.03**2  # stays bounded near the arm's singularities
    return jac.T @ np.linalg.solve(jac @ jac.T + damping * np.eye(2), velocity)


def reacher_planner(obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
    """Gymnasium ``Reacher-v5``: analytic two-link inverse kinematics, then joint-space PD torques.

    Reacher-v5's observation is (cos q, sin q, target xy, qvel, fingertip - target xy). A Jacobian-
    transpose law stalls when the target is across the base, so solve for the joint angles instead.
    """
    state = np.asarray(obs[AGENT_POS], dtype=np.float64)
    q = np.arctan2(state[2:4], state[0:2])
    qvel, target = state[6:8], state[4:6]
    l1, l2 = 0.1, 0.11  # reacher.xml: second body at 0.1, fingertip 0.11 further
    cos_elbow = np.clip((target @ target - l1 * l1 - l2 * l2) / (2 * l1 * l2), -1.0, 1.0)
    best = None
    for elbow in (np.arccos(cos_elbow), -np.arccos(cos_elbow)):
        shoulder = np.arctan2(target[1], target[0]) - np.arctan2(l2 * np.sin(elbow), l1 + l2 * np.cos(elbow))
        error = (np.array([shoulder, elbow]) - q + np.pi) % (2 * np.pi) - np.pi
        if best is None or np.abs(error).sum() < np.abs(best).sum():
            best = error
    return 2.0 * best - 0.1 * qvel


PLANNERS: dict[str, Planner] = {
    "cosmos_robot/PushBlockPoint-v0": push_block_point_planner,
    "cosmos_robot/PushBlockArm2-v0": push_block_arm2_planner,
    "Reacher-v5": reacher_planner,
}


class ScriptedExpert:
    """A scripted expert with a ``noise`` knob from 0 (expert) to 1 (random).

    With probability ``noise`` a step's action is replaced by one drawn uniformly from the action
    box and held for 3 steps (random motion that is visible, not jitter). Success falls off
    smoothly with ``noise``, which ranking experiments need.

    Args:
        planner: maps (obs, info) to an action before scaling into the box; None for a random policy.
        action_low: lower bound of the action box.
        action_high: upper bound of the action box.
        noise: probability of a random action, in [0, 1].
        seed: seed of the noise generator (``reset(seed)`` reseeds it).
    """

    def __init__(
        self,
        planner: Planner | None,
        action_low: np.ndarray,
        action_high: np.ndarray,
        noise: float = 0.0,
        seed: int | None = None,
    ) -> None:
        if not isinstance(noise, int | float) or not 0.0 <= float(noise) <= 1.0:
            raise ValueError(f"noise={noise!r} is out of range; expected a number in [0, 1]")
        if planner is None and noise != 1.0:
            raise ValueError(f"noise={noise!r} needs a planner; without one only noise=1 (random) is possible")
        self.planner = planner
        self.low = np.asarray(action_low, dtype=np.float32)
        self.high = np.asarray(action_high, dtype=np.float32)
        self.noise = float(noise)
        self.reset(seed)

    @classmethod
    def for_env(cls, env: Any, noise: float = 0.0, seed: int | None = None) -> ScriptedExpert:
        """The expert for a (possibly wrapped) env made with ``gymnasium.make``; ``noise=1`` works for any env."""
        env_id = env.spec.id if env.spec is not None else None
        if noise == 1.0:
            planner = None
        elif env_id in PLANNERS:
            planner = PLANNERS[env_id]
        else:
            raise ValueError(f"env={env_id!r} has no scripted expert; expected one of {sorted(PLANNERS)} (or noise=1)")
        return cls(planner, env.action_space.low, env.action_space.high, noise=noise, seed=seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the noise generator and forget any held random action."""
        self._rng = np.random.default_rng(seed)
        self._held: np.ndarray | None = None
        self._held_steps = 0

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        """Action for the current step (privileged state comes from ``info``)."""
        if self._held_steps > 0:
            self._held_steps -= 1
            return self._held.copy()
        if self.noise > 0 and self._rng.random() < self.noise:
            self._held = self._rng.uniform(self.low, self.high).astype(np.float32)
            self._held_steps = 2
            return self._held.copy()
        action = np.asarray(self.planner(obs, info), dtype=np.float64)
        # Scale the whole vector into the box rather than clipping each axis: keeps the direction.
        over = np.max(np.maximum(action / self.high, action / self.low))
        if over > 1.0:
            action = action / over
        return np.clip(action, self.low, self.high).astype(np.float32)
