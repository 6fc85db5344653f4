"""zarr episode store: LeRobot -> zarr -> LeRobot round trips."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from cosmos_robot.datasets.lerobot_io import load_lerobot, read_lerobot
from cosmos_robot.datasets.zarr_store import lerobot_to_zarr, read_zarr, write_zarr, zarr_to_lerobot


def test_round_trip_is_exact_for_images_actions_and_states(point_images_dataset, tmp_path):
    original = read_lerobot(point_images_dataset)
    store = lerobot_to_zarr(point_images_dataset, tmp_path / "s.zarr")
    back_path = zarr_to_lerobot(store, tmp_path / "back")
    back = read_lerobot(back_path)

    np.testing.assert_array_equal(back.episode_ends, original.episode_ends)
    assert back.fps == original.fps and back.tasks == original.tasks and back.robot_type == original.robot_type
    assert set(back.data) == set(original.data)
    for key, array in original.data.items():
        assert back.data[key].dtype == array.dtype, key
        np.testing.assert_array_equal(back.data[key], array, err_msg=key)  # bit-exact, images included
    assert back.meta == original.meta
    assert load_lerobot(back_path).meta.total_episodes == original.num_episodes


def test_store_layout_has_arrays_and_episode_ends(point_images_dataset, tmp_path):
    store = lerobot_to_zarr(point_images_dataset, tmp_path / "s.zarr")
    root = zarr.open_group(str(store), mode="r")
    assert root["data/action"].shape[0] == int(root["meta/episode_ends"][-1])
    assert root["data/observation.images.top"].dtype == np.uint8
    assert root.attrs["fps"] == 10


def test_read_is_lazy_until_asked(point_images_dataset, tmp_path):
    store = lerobot_to_zarr(point_images_dataset, tmp_path / "s.zarr")
    lazy = read_zarr(store)
    assert not isinstance(lazy.data["action"], np.ndarray)
    eager = read_zarr(store, in_memory=True)
    assert isinstance(eager.data["action"], np.ndarray)
    np.testing.assert_array_equal(np.asarray(lazy.data["action"][:]), eager.data["action"])


def test_video_dataset_converts_to_zarr(point_video_dataset, tmp_path):
    store = lerobot_to_zarr(point_video_dataset, tmp_path / "v.zarr")
    episodes = read_zarr(store, in_memory=True)
    assert episodes.data["observation.images.top"].max() > 0
    np.testing.assert_array_equal(episodes.data["action"], read_lerobot(point_video_dataset).data["action"])


def test_refuses_existing_destination_and_non_stores(point_images_dataset, tmp_path):
    store = lerobot_to_zarr(point_images_dataset, tmp_path / "s.zarr")
    with pytest.raises(FileExistsError):
        lerobot_to_zarr(point_images_dataset, store)
    with pytest.raises(FileNotFoundError, match="not a zarr store"):
        read_zarr(tmp_path)


def test_mismatched_lengths_are_rejected(point_images_dataset, tmp_path):
    episodes = read_lerobot(point_images_dataset)
    episodes.data["action"] = episodes.data["action"][:-1]
    with pytest.raises(ValueError, match=r"data\['action'\] has"):
        write_zarr(type(episodes)(**vars(episodes)), tmp_path / "bad.zarr")
    assert not (tmp_path / "bad.zarr").exists()
