"""The PushBlock scene's geometry keeps actions visible: a full-speed step moves the pusher several pixels."""

from __future__ import annotations

import mujoco

from cosmos_robot.envs import push_block_scene as scene


def test_a_full_speed_step_moves_the_pusher_several_pixels_at_64px():
    metres_per_pixel = 2 * scene.TABLE_HALF / 64
    step = scene.POINT_MAX_SPEED / scene.CONTROL_HZ
    assert step / metres_per_pixel > 3  # inverse dynamics needs motion it can see


def test_the_workspace_is_seen_by_the_camera():
    # Centres stay in view; a block at the limit shows at least two thirds of itself (the camera sees the table).
    assert scene.LIMIT + scene.BLOCK_HALF / 3 <= scene.TABLE_HALF
    assert scene.GOAL_RADIUS > scene.BLOCK_HALF  # a centred block fits inside the goal disc


def test_both_scenes_compile():
    for embodiment in ("point", "arm2"):
        model = mujoco.MjModel.from_xml_string(scene.scene_xml(embodiment))
        assert model.nu == 2, embodiment
