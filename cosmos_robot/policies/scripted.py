"""Scripted PushBlock experts with a noise knob, for demonstrations and for ranking policies.

The expert reads the block and goal from ``info`` (privileged state), plans a planar effector
velocity with a get-behind-then-push rule, and maps it to the embodiment's action: directly for
the ``point`` pusher, through the arm's damped-least-squares inverse Jacobian for ``arm2``.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from cosmos_robot.envs import push_block_scene as scene
from cosmos_robot.envs.push_block import arm_jacobian

# Distance from the block centre at which the effector pushes: block half-width + pusher radius + slack.
PUSH_OFFSET = scene.BLOCK_HALF + scene.PUSHER_RADIUS + 0.006
LATERAL_TOLERANCE = 0.012
POSITION_GAIN = 6.0  # 1/s: how hard the effector is pulled to its waypoint
PUSH_SPEED = 0.22  # m/s


class Policy(Protocol):
    """The small protocol evaluation talks to: ``reset`` at episode start, ``act`` every step."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray: ...


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


class ScriptedExpert:
    """Expert for a PushBlock embodiment; ``noise`` in [0, 1] blends in random actions.

    With probability ``noise`` each step's action is replaced by one drawn uniformly from the
    action box (held for 3 steps so random motion is visible, not jitter): 0 is the expert,
    1 is a random policy, and success falls off in between, which ranking experiments need.

    Args:
        embodiment: "point" or "arm2".
        action_low: lower bound of the action box.
        action_high: upper bound of the action box.
        noise: probability of a random action, in [0, 1].
        seed: seed of the noise generator (``reset(seed)`` reseeds it).
    """

    def __init__(
        self,
        embodiment: str,
        action_low: np.ndarray,
        action_high: np.ndarray,
        noise: float = 0.0,
        seed: int | None = None,
    ) -> None:
        if embodiment not in scene.SCENES:
            raise ValueError(f"embodiment={embodiment!r} has no scripted expert; expected one of {sorted(scene.SCENES)}")
        if not 0.0 <= float(noise) <= 1.0:
            raise ValueError(f"noise={noise!r} is out of range; expected a number in [0, 1]")
        self.embodiment = embodiment
        self.low = np.asarray(action_low, dtype=np.float32)
        self.high = np.asarray(action_high, dtype=np.float32)
        self.noise = float(noise)
        self.reset(seed)

    @classmethod
    def for_env(cls, env: Any, noise: float = 0.0, seed: int | None = None) -> ScriptedExpert:
        """Build the expert matching a (possibly wrapped) PushBlock env."""
        base = env.unwrapped
        if not hasattr(base, "embodiment"):
            raise ValueError(f"env={env!r} is not a PushBlock env; scripted experts exist only for PushBlock")
        return cls(base.embodiment, env.action_space.low, env.action_space.high, noise=noise, seed=seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the noise generator and forget any held random action."""
        self._rng = np.random.default_rng(seed)
        self._held: np.ndarray | None = None
        self._held_steps = 0

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        """Action for the current step, from the agent state in ``obs`` and block/goal in ``info``."""
        if self._held_steps > 0:
            self._held_steps -= 1
            return self._held.copy()
        if self.noise > 0 and self._rng.random() < self.noise:
            self._held = self._rng.uniform(self.low, self.high).astype(np.float32)
            self._held_steps = 2
            return self._held.copy()
        velocity = plan_effector_velocity(info["effector_pos"], info["block_pose"][:2], info["goal_pos"])
        if self.embodiment == "point":
            action = velocity
        else:
            jac = arm_jacobian(np.asarray(obs["agent_pos"], dtype=np.float64))
            damping = 0.03**2  # damped least squares: stays bounded near the arm's singularities
            action = jac.T @ np.linalg.solve(jac @ jac.T + damping * np.eye(2), velocity)
        # Scale the whole vector into the box rather than clipping each axis: keeps the direction.
        over = np.max(np.maximum(action / self.high, action / self.low))
        if over > 1.0:
            action = action / over
        return np.clip(action, self.low, self.high).astype(np.float32)


class RandomPolicy(ScriptedExpert):
    """Uniform random actions in the box (the expert at ``noise=1``)."""

    def __init__(self, embodiment: str, action_low: np.ndarray, action_high: np.ndarray, seed: int | None = None):
        super().__init__(embodiment, action_low, action_high, noise=1.0, seed=seed)
