"""MJCF for the PushBlock scene: one table, one block, one goal, and the agent of an embodiment.

The scene is generated rather than shipped as XML because the two embodiments share everything
but the agent, and the camera's field of view is derived from the workspace size so that actions
stay visible at 64x64: a full-speed step must move the effector several pixels, or inverse dynamics
is ill-posed and forward dynamics can ignore its actions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The instruction of the task.
TASK = "push the red block onto the green disc"

# Workspace geometry, metres. The camera sees exactly the table (2 * TABLE_HALF across), so at
# 64 px one pixel is 2 * 0.22 / 64 = 6.9 mm and a full-speed pusher step (0.3 m/s * 0.1 s = 3 cm)
# moves ~4.4 px.
TABLE_HALF = 0.22
LIMIT = 0.2  # pusher and block centres are held inside +-LIMIT by joint limits (invisible walls)
PLANE_Z = 0.025  # height of the pushing plane
BLOCK_HALF = 0.03
PUSHER_RADIUS = 0.018
GOAL_RADIUS = 0.04
CAMERA_HEIGHT = 1.0

# Two-link arm: base below the bottom table edge, links long enough to reach the block region.
ARM_BASE = (0.0, -0.30)
ARM_LINKS = (0.25, 0.25)
ARM_Q1_RANGE = (-0.6, math.pi + 0.6)  # past horizontal: reaching below blocks near the bottom edge
ARM_Q2_RANGE = (-2.8, 2.8)  # folds far enough to push blocks close to the base

POINT_MAX_SPEED = 0.3  # m/s
ARM_MAX_JOINT_SPEED = 1.5  # rad/s

PHYSICS_DT = 0.005
CONTROL_HZ = 10
FRAME_SKIP = round(1.0 / (CONTROL_HZ * PHYSICS_DT))


@dataclass(frozen=True)
class SceneSpec:
    """What an embodiment contributes to the scene: its agent bodies and actuators."""

    agent_bodies: str
    actuators: str


_POINT = SceneSpec(
    agent_bodies=f"""
    <body name="pusher" pos="0 0 {PLANE_Z}">
      <joint name="pusher_x" type="slide" axis="1 0 0" range="{-LIMIT} {LIMIT}" limited="true" damping="1"/>
      <joint name="pusher_y" type="slide" axis="0 1 0" range="{-LIMIT} {LIMIT}" limited="true" damping="1"/>
      <geom name="effector" type="cylinder" size="{PUSHER_RADIUS} 0.02" mass="0.5" rgba="0.15 0.35 0.95 1"
            friction="0.1 0.005 0.0001"/>
    </body>""",
    actuators=f"""
    <velocity name="vx" joint="pusher_x" kv="200" ctrlrange="{-POINT_MAX_SPEED} {POINT_MAX_SPEED}"
              ctrllimited="true"/>
    <velocity name="vy" joint="pusher_y" kv="200" ctrlrange="{-POINT_MAX_SPEED} {POINT_MAX_SPEED}"
              ctrllimited="true"/>""",
)

_L1, _L2 = ARM_LINKS
_ARM2 = SceneSpec(
    agent_bodies=f"""
    <body name="arm_base" pos="{ARM_BASE[0]} {ARM_BASE[1]} {PLANE_Z}">
      <geom type="cylinder" size="0.025 0.03" contype="0" conaffinity="0" rgba="0.3 0.3 0.3 1"/>
      <joint name="shoulder" type="hinge" axis="0 0 1" range="{ARM_Q1_RANGE[0]} {ARM_Q1_RANGE[1]}"
             limited="true" damping="0.05"/>
      <geom type="capsule" fromto="0 0 0.03 {_L1} 0 0.03" size="0.008" mass="0.1" contype="0" conaffinity="0"
            rgba="0.95 0.85 0.2 1"/>
      <body name="forearm" pos="{_L1} 0 0">
        <joint name="elbow" type="hinge" axis="0 0 1" range="{ARM_Q2_RANGE[0]} {ARM_Q2_RANGE[1]}"
               limited="true" damping="0.05"/>
        <geom type="capsule" fromto="0 0 0.03 {_L2} 0 0.03" size="0.008" mass="0.1" contype="0"
              conaffinity="0" rgba="0.95 0.6 0.1 1"/>
        <body name="fingertip" pos="{_L2} 0 0">
          <geom name="effector" type="sphere" size="{PUSHER_RADIUS}" mass="0.05" rgba="0.15 0.35 0.95 1"
                friction="0.1 0.005 0.0001"/>
        </body>
      </body>
    </body>""",
    actuators=f"""
    <velocity name="shoulder_vel" joint="shoulder" kv="20" ctrlrange="{-ARM_MAX_JOINT_SPEED} {ARM_MAX_JOINT_SPEED}"
              ctrllimited="true"/>
    <velocity name="elbow_vel" joint="elbow" kv="20" ctrlrange="{-ARM_MAX_JOINT_SPEED} {ARM_MAX_JOINT_SPEED}"
              ctrllimited="true"/>""",
)

SCENES: dict[str, SceneSpec] = {"point": _POINT, "arm2": _ARM2}


def scene_xml(embodiment: str) -> str:
    """Return the MJCF of the PushBlock scene with the agent of ``embodiment``."""
    if embodiment not in SCENES:
        raise ValueError(f"embodiment={embodiment!r} is not a PushBlock embodiment; expected one of {sorted(SCENES)}")
    spec = SCENES[embodiment]
    fovy = 2.0 * math.degrees(math.atan(TABLE_HALF / (CAMERA_HEIGHT - 0.0)))
    return f"""
<mujoco model="push_block_{embodiment}">
  <compiler angle="radian"/>
  <option timestep="{PHYSICS_DT}" gravity="0 0 0" integrator="implicitfast"/>
  <visual>
    <!-- no anti-aliasing and no shadows: the two dominant rendering costs on CPU -->
    <quality shadowsize="0" offsamples="0"/>
    <headlight ambient="0.6 0.6 0.6" diffuse="0.4 0.4 0.4" specular="0 0 0"/>
    <global offwidth="512" offheight="512"/>
  </visual>
  <worldbody>
    <camera name="top" pos="0 0 {CAMERA_HEIGHT}" xyaxes="1 0 0 0 1 0" fovy="{fovy:.4f}"/>
    <geom name="table" type="box" pos="0 0 -0.01" size="{TABLE_HALF} {TABLE_HALF} 0.01" contype="0"
          conaffinity="0" rgba="0.82 0.82 0.78 1"/>
    <body name="goal" mocap="true" pos="0 0 0.0005">
      <geom type="cylinder" size="{GOAL_RADIUS} 0.0005" contype="0" conaffinity="0" rgba="0.2 0.75 0.3 1"/>
    </body>
    <body name="block" pos="0 0 {PLANE_Z}">
      <joint name="block_x" type="slide" axis="1 0 0" range="{-LIMIT} {LIMIT}" limited="true" damping="4"/>
      <joint name="block_y" type="slide" axis="0 1 0" range="{-LIMIT} {LIMIT}" limited="true" damping="4"/>
      <joint name="block_yaw" type="hinge" axis="0 0 1" damping="0.004"/>
      <geom name="block" type="box" size="{BLOCK_HALF} {BLOCK_HALF} 0.02" mass="0.2" rgba="0.85 0.15 0.15 1"
            friction="0.1 0.005 0.0001"/>
    </body>{spec.agent_bodies}
  </worldbody>
  <actuator>{spec.actuators}
  </actuator>
</mujoco>
"""
