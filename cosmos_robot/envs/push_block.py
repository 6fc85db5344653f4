"""PushBlock: push a block onto a goal disc, seen from a top-down task camera."""

from __future__ import annotations

import gc
import math
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces

from cosmos_robot.envs import push_block_scene as scene
from cosmos_robot.envs.rendering import require_egl
from cosmos_robot.forking import note_use, refuse_forked_child
from cosmos_robot.keys import AGENT_POS, PIXELS

SUCCESS_DISTANCE = 0.03  # block centre within 3 cm of the goal centre
# Where resets put things: inside the region the arm can reach from every side of the block.
BLOCK_REGION = (-0.12, 0.12, -0.10, 0.10)  # x_min, x_max, y_min, y_max
GOAL_DISTANCE_RANGE = (0.08, 0.18)
MIN_EFFECTOR_CLEARANCE = 0.08


def validate_image_size(name: str, value: int) -> int:
    """Return ``value`` if it is a positive multiple of 8, else raise a ``ValueError`` naming ``name``."""
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value <= 0 or value % 8:
        raise ValueError(f"{name}={value!r} is not a valid image size; expected a positive multiple of 8")
    return int(value)


class PushBlockEnv(gym.Env):
    """Push a red block onto a green goal disc on a table, seen from above.

        Two embodiments share the scene and differ only in the agent and its action layout.

        ## Action Space
        Velocity commands, tracked by stiff MuJoCo velocity servos (kv=200 for the disc, kv=20 for the
        arm's light links), so the realised motion over a control step is the commanded one and actions
        can be read back from video (with force control and inertia a frame pair would show the velocity,
        not the command).

        | embodiment | index | action                       | min  | max | unit  |
        |------------|-------|------------------------------|------|-----|-------|
        | point      | 0     | pusher x velocity            | -0.3 | 0.3 | m/s   |
        | point      | 1     | pusher y velocity            | -0.3 | 0.3 | m/s   |
        | arm2       | 0     | shoulder joint velocity      | -1.5 | 1.5 | rad/s |
        | arm2       | 1     | elbow joint velocity         | -1.5 | 1.5 | rad/s |

        Actions outside the box are clipped by the actuators' control range.

        ## Observation Space
        ``Dict(pixels=Box(0, 255, (height, width, 3), uint8), agent_pos=Box(float32))``: the top-down
        camera image (64x64 by default; the camera sees the 0.44 m table, 6.9 mm per pixel) and the
        agent's own state: pusher (x, y) in metres for ``point``; (shoulder, elbow) angles in radians
        for ``arm2``. Block pose and goal are not observed directly; they are in the image and, for
        scripted experts and evaluation, in ``info``.

        ## Rewards
        ``reward = reward_dist + reward_reach + reward_success`` with
        ``reward_dist = -|block - goal|`` (m), ``reward_reach = -0.1 * |effector - block|`` (m) and
        ``reward_success = 1`` on a step that ends with the block on the goal. Each term is in ``info``.

        ## Starting State
        Block uniformly in x in [-0.12, 0.12], y in [-0.10, 0.10] m with a random yaw; goal 8-18 cm away
        from it in that region; the effector at least 8 cm from the block. Same seed, same start.

        ## Episode End
        Terminated when the block centre is within 3 cm of the goal centre (``info["is_success"]``, set on
        every step). Truncated by the registered ``max_episode_steps`` (80 steps = 8 s).

        ## Arguments
        ``embodiment`` ("point" or "arm2"), ``width``/``height`` (positive multiples of 8, default 64),
        ``render_mode`` (None or "rgb_array": ``render()`` returns the current camera image), ``pixels``
    (False: the camera is never rendered and observations carry a black frame, for state-only data such as
    the block's pushes that ``cosmos_robot.push_data`` simulates; stepping is then ~100x faster).

        Control runs at 10 Hz (20 physics steps of 5 ms).

        ## Version History
        * v0: initial version.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": scene.CONTROL_HZ}
    task = scene.TASK
    environment_state_names = ("block_x", "block_y", "block_yaw", "goal_x", "goal_y")

    def __init__(
        self,
        embodiment: str = "point",
        width: int = 64,
        height: int = 64,
        render_mode: str | None = None,
        pixels: bool = True,
    ) -> None:
        if embodiment not in scene.SCENES:
            raise ValueError(
                f"embodiment={embodiment!r} is not a PushBlock embodiment; expected one of {sorted(scene.SCENES)}"
            )
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r} is not supported; expected None or 'rgb_array'")
        self.embodiment = embodiment
        self.width = validate_image_size("width", width)
        self.height = validate_image_size("height", height)
        self.render_mode = render_mode
        if not isinstance(pixels, bool):
            raise ValueError(f"pixels={pixels!r}; expected True (render the camera) or False (a black frame)")
        self.pixels = pixels

        require_egl()
        refuse_forked_child("a PushBlock env", resources=("egl",))
        self.model = mujoco.MjModel.from_xml_string(scene.scene_xml(embodiment))
        self.data = mujoco.MjData(self.model)
        # Made at the first frame, not here: an env built only to read its spaces (gymnasium's
        # AsyncVectorEnv builds one in the parent before it forks) leaves no EGL context to inherit.
        self._renderer: mujoco.Renderer | None = None

        self._block_qadr = [self.model.jnt_qposadr[self.model.joint(n).id] for n in ("block_x", "block_y", "block_yaw")]
        self._goal_mocap = self.model.body("goal").mocapid[0]
        self._effector_geom = self.model.geom("effector").id
        self._agent_qadr = np.array(
            [
                self.model.jnt_qposadr[j]
                for j in range(self.model.njnt)
                if not self.model.joint(j).name.startswith("block")
            ]
        )

        ctrl = self.model.actuator_ctrlrange.astype(np.float32)
        self.action_space = spaces.Box(low=ctrl[:, 0], high=ctrl[:, 1], dtype=np.float32)
        jnt = self.model.jnt_range[[self.model.joint(n).id for n in self.agent_joint_names]].astype(np.float32)
        self.observation_space = spaces.Dict(
            {
                PIXELS: spaces.Box(0, 255, (self.height, self.width, 3), dtype=np.uint8),
                # joint limits are soft in MuJoCo: leave a margin so a hard push stays inside the space
                AGENT_POS: spaces.Box(low=jnt[:, 0] - 0.05, high=jnt[:, 1] + 0.05, dtype=np.float32),
            }
        )
        self._pixels: np.ndarray | None = None

    # -- state accessors -------------------------------------------------------------------------
    @property
    def agent_joint_names(self) -> list[str]:
        """Names of the agent's joints, in ``agent_pos`` order."""
        return [
            self.model.joint(j).name for j in range(self.model.njnt) if not self.model.joint(j).name.startswith("block")
        ]

    def block_pose(self) -> np.ndarray:
        """Block (x, y, yaw) in metres and radians."""
        return self.data.qpos[self._block_qadr].copy()

    def goal_pos(self) -> np.ndarray:
        """Goal centre (x, y) in metres."""
        return self.data.mocap_pos[self._goal_mocap, :2].copy()

    def effector_pos(self) -> np.ndarray:
        """Pusher disc or fingertip centre (x, y) in metres."""
        return self.data.geom_xpos[self._effector_geom, :2].copy()

    def environment_state(self) -> np.ndarray:
        """Block (x, y, yaw) and goal (x, y) as float32: LeRobot's ``observation.environment_state``."""
        return np.concatenate([self.block_pose(), self.goal_pos()]).astype(np.float32)

    def agent_pos(self) -> np.ndarray:
        """The agent's joint positions, as observed."""
        return self.data.qpos[self._agent_qadr].astype(np.float32)

    # -- gymnasium API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw a block, a goal and an agent pose from the seeded generator."""
        super().reset(seed=seed)
        mujoco.mj_resetData(self.model, self.data)
        rng = self.np_random
        x0, x1, y0, y1 = BLOCK_REGION
        block = rng.uniform([x0, y0], [x1, y1])
        while True:
            goal = rng.uniform([x0, y0], [x1, y1])
            if GOAL_DISTANCE_RANGE[0] <= np.linalg.norm(goal - block) <= GOAL_DISTANCE_RANGE[1]:
                break
        self.data.qpos[self._block_qadr] = [block[0], block[1], rng.uniform(-math.pi, math.pi)]
        self.data.mocap_pos[self._goal_mocap] = [goal[0], goal[1], 0.0005]
        self._place_agent(rng, block)
        mujoco.mj_forward(self.model, self.data)
        return self._observe(), self._info(success=False, terms=None)

    def _place_agent(self, rng: np.random.Generator, block: np.ndarray) -> None:
        lim = scene.LIMIT - 0.01
        for _ in range(1000):
            if self.embodiment == "point":
                q = rng.uniform(-lim, lim, size=2)
                tip = q
            else:
                q = rng.uniform([0.3, -2.2], [math.pi - 0.3, 2.2])
                tip = arm_fingertip(q)
            if np.all(np.abs(tip) < lim) and np.linalg.norm(tip - block) > MIN_EFFECTOR_CLEARANCE:
                self.data.qpos[self._agent_qadr] = q
                return
        raise RuntimeError("could not place the agent clear of the block in 1000 draws")  # pragma: no cover

    def step(self, action: np.ndarray):
        """Apply one 10 Hz velocity command for 0.1 s and observe."""
        action = np.asarray(action, dtype=np.float64).reshape(self.action_space.shape)
        if not np.all(np.isfinite(action)):
            raise ValueError(f"action={action.tolist()} contains NaN or inf; expected finite velocities")
        self.data.ctrl[:] = action
        mujoco.mj_step(self.model, self.data, nstep=scene.FRAME_SKIP)
        block, goal, effector = self.block_pose()[:2], self.goal_pos(), self.effector_pos()
        dist = float(np.linalg.norm(block - goal))
        success = dist < SUCCESS_DISTANCE
        terms = {
            "reward_dist": -dist,
            "reward_reach": -0.1 * float(np.linalg.norm(effector - block)),
            "reward_success": 1.0 if success else 0.0,
        }
        reward = float(sum(terms.values()))
        return self._observe(), reward, success, False, self._info(success, terms)

    def render(self) -> np.ndarray | None:
        """The current camera image (``render_mode="rgb_array"``), else None."""
        if self.render_mode != "rgb_array":
            return None
        return self._pixels.copy() if self._pixels is not None else self._render()

    def close(self) -> None:
        """Free the renderer now rather than at garbage collection (a late free blanks a newer env's frames)."""
        if getattr(self, "_renderer", None) is not None:
            self._renderer.close()
            self._renderer = None

    # -- helpers ---------------------------------------------------------------------------------
    def _render(self) -> np.ndarray:
        if self._renderer is None:
            # Renderers freed late by the garbage collector can wipe a newer EGL context: free them now.
            gc.collect()
            self._renderer = mujoco.Renderer(self.model, height=self.height, width=self.width)
            note_use("egl")
        self._renderer.update_scene(self.data, camera="top")
        return self._renderer.render()

    def _observe(self) -> dict[str, np.ndarray]:
        # Without pixels the frame stays black: the observation keeps its space, and no renderer is made.
        self._pixels = self._render() if self.pixels else np.zeros((self.height, self.width, 3), np.uint8)
        return {PIXELS: self._pixels, AGENT_POS: self.agent_pos()}

    def _info(self, success: bool, terms: dict[str, float] | None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "is_success": bool(success),
            "block_pose": self.block_pose(),
            "goal_pos": self.goal_pos(),
            "effector_pos": self.effector_pos(),
        }
        if terms is not None:
            info.update(terms)
        return info


def arm_fingertip(q: np.ndarray) -> np.ndarray:
    """Fingertip (..., x y) of the two-link arm at joint angles ``q`` (..., shoulder elbow)."""
    q = np.asarray(q, dtype=np.float64)
    l1, l2 = scene.ARM_LINKS
    a, b = q[..., 0], q[..., 0] + q[..., 1]
    tip = np.stack([l1 * np.cos(a) + l2 * np.cos(b), l1 * np.sin(a) + l2 * np.sin(b)], -1)
    return tip + np.asarray(scene.ARM_BASE)


def effector_from_state(embodiment: str, states: np.ndarray) -> np.ndarray:
    """Effector (x, y) in metres of agent states (..., 2) of ``embodiment`` (``agent_pos``), by kinematics."""
    states = np.asarray(states, dtype=np.float64)
    if embodiment == "point":
        return states[..., :2].copy()
    if embodiment == "arm2":
        return arm_fingertip(states)
    raise ValueError(f"embodiment={embodiment!r} is not a PushBlock robot; expected 'point' or 'arm2'")


def arm_jacobian(q: np.ndarray) -> np.ndarray:
    """d(fingertip)/d(q) of the two-link arm, shape (2, 2)."""
    l1, l2 = scene.ARM_LINKS
    a, b = q[0], q[0] + q[1]
    return np.array(
        [
            [-l1 * math.sin(a) - l2 * math.sin(b), -l2 * math.sin(b)],
            [l1 * math.cos(a) + l2 * math.cos(b), l2 * math.cos(b)],
        ]
    )
