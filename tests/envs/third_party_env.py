"""A MuJoCo env as a third-party package would write it: its own constructor (no ``render_mode``,
``width`` or ``height``), no rendering of its own, registered when its module is imported.

``make_env("tests.envs.third_party_env:ThirdPartySlider-v0")`` must work from this module alone.
"""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np

XML = """
<mujoco>
  <option gravity="0 0 0"/>
  <statistic extent="0.6" center="0 0 0"/>
  <worldbody>
    <light pos="0 0 2"/>
    <geom type="plane" size="0.5 0.5 0.01" rgba="0.9 0.9 0.9 1"/>
    <body name="puck" pos="0 0 0.06">
      <joint name="x" type="slide" axis="1 0 0" damping="0.5"/>
      <joint name="y" type="slide" axis="0 1 0" damping="0.5"/>
      <geom type="sphere" size="0.05" rgba="0.9 0.1 0.1 1"/>
    </body>
  </worldbody>
  <actuator>
    <motor joint="x" gear="5" ctrlrange="-1 1"/>
    <motor joint="y" gear="5" ctrlrange="-1 1"/>
  </actuator>
</mujoco>
"""


class ThirdPartySlider(gym.Env):
    """A red puck pushed on a plane by two motors; observes its position and velocity."""

    def __init__(self, gain: float = 1.0) -> None:
        self.model = mujoco.MjModel.from_xml_string(XML)
        self.data = mujoco.MjData(self.model)
        self.gain = gain
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float64)

    def _obs(self) -> np.ndarray:
        return np.concatenate([self.data.qpos, self.data.qvel])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[:] = self.np_random.uniform(-0.2, 0.2, 2)
        mujoco.mj_forward(self.model, self.data)
        return self._obs(), {}

    def step(self, action):
        self.data.ctrl[:] = self.gain * np.clip(action, -1.0, 1.0)
        for _ in range(10):
            mujoco.mj_step(self.model, self.data)
        distance = float(np.linalg.norm(self.data.qpos))
        return self._obs(), -distance, False, False, {"distance": distance}


def near_centre(info: dict) -> bool:
    """The package's own success test: the puck within 0.15 m of the centre (it sets no is_success)."""
    return info["distance"] < 0.15


if "ThirdPartySlider-v0" not in gym.registry:
    gym.register("ThirdPartySlider-v0", entry_point=ThirdPartySlider, max_episode_steps=20)
