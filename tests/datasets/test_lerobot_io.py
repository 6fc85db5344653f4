"""LeRobot v3 I/O: what our writer writes, LeRobot's own LeRobotDataset reads back, frame for frame."""

from __future__ import annotations

import numpy as np

from cosmos_robot.datasets.lerobot_io import load_lerobot, read_lerobot, read_sidecar, write_lerobot
from cosmos_robot.keys import ACTION, OBS_STATE


def test_a_written_dataset_reads_back_exactly_and_loads_in_lerobot(point_images_dataset, tmp_path):
    original = read_lerobot(point_images_dataset)
    copy = write_lerobot(original, tmp_path / "copy", video=False)
    again = read_lerobot(copy)
    assert again.robot_type == original.robot_type == "point"
    np.testing.assert_array_equal(again.episode_ends, original.episode_ends)
    for key in (ACTION, OBS_STATE, original.image_keys[0]):
        np.testing.assert_array_equal(np.asarray(again.data[key]), np.asarray(original.data[key]), err_msg=key)
    dataset = load_lerobot(copy)
    assert dataset.num_episodes == original.num_episodes and dataset.num_frames == original.num_frames
    assert read_sidecar(copy)["embodiment"] == "point"
