"""Time-aligned windows: timestamps, rates, padding, and reading from every source."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.datasets.episodes import EpisodeArrays
from cosmos_robot.datasets.windows import TimeAlignedWindows, WindowSpec
from cosmos_robot.datasets.zarr_store import lerobot_to_zarr

CAMERA = "observation.images.top"


def synthetic(lengths=(6, 9), fps=10.0) -> EpisodeArrays:
    """Episodes whose every value encodes its step, so alignment can be read off the window."""
    steps = np.concatenate([np.arange(n) for n in lengths])
    episode = np.concatenate([np.full(n, e) for e, n in enumerate(lengths)])
    n = len(steps)
    frames = np.zeros((n, 8, 8, 3), dtype=np.uint8)
    frames[..., 0] = steps[:, None, None]
    frames[..., 1] = episode[:, None, None]
    data = {
        CAMERA: frames,
        "observation.state": np.stack([steps, episode], 1).astype(np.float32),
        "action": np.stack([steps, -steps], 1).astype(np.float32),
        "next.reward": steps[:, None].astype(np.float32),
        "next.success": (steps == np.repeat(np.array(lengths) - 1, lengths))[:, None],
        "task_index": np.zeros(n, dtype=np.int64),
    }
    features = {k: {"dtype": str(v.dtype), "shape": v.shape[1:], "names": None} for k, v in data.items()}
    features[CAMERA]["dtype"] = "image"
    return EpisodeArrays(data, np.cumsum(lengths), fps, features, ["t"])


def test_equal_rates_stamp_each_action_at_the_frame_it_leads_into():
    windows = TimeAlignedWindows(synthetic(), WindowSpec(num_frames=4))
    item = windows[1]  # episode 0, start step 1
    np.testing.assert_allclose(item["frame_time"].numpy(), [0.1, 0.2, 0.3, 0.4], atol=1e-6)
    np.testing.assert_array_equal(item["frames"][:, 0, 0, 0].numpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(item["actions"][:, 0].numpy(), [1, 2, 3])
    # action i shares its timestamp with frame i + 1
    np.testing.assert_allclose(item["action_time"].numpy(), item["frame_time"][1:].numpy(), atol=1e-6)
    np.testing.assert_array_equal(item["states"][:, 0].numpy(), [1, 2, 3, 4])


def test_actions_faster_than_frames():
    windows = TimeAlignedWindows(synthetic(), WindowSpec(num_frames=3, frame_rate=5.0))
    assert windows.actions_per_window == 4
    item = windows[0]
    np.testing.assert_array_equal(item["frames"][:, 0, 0, 0].numpy(), [0, 2, 4])
    np.testing.assert_array_equal(item["actions"][:, 0].numpy(), [0, 1, 2, 3])
    np.testing.assert_allclose(item["action_time"].numpy(), [0.1, 0.2, 0.3, 0.4], atol=1e-6)
    # actions 1 and 3 lead into the frames at 0.2 s and 0.4 s: same timestamps
    np.testing.assert_allclose(item["action_time"][[1, 3]].numpy(), item["frame_time"][1:].numpy(), atol=1e-6)


def test_slower_action_rate_averages_the_commands_it_spans_and_sums_rewards():
    windows = TimeAlignedWindows(synthetic(), WindowSpec(num_frames=3, frame_rate=5.0, action_rate=5.0))
    item = windows[0]
    np.testing.assert_allclose(item["actions"][:, 0].numpy(), [0.5, 2.5])  # mean of steps (0,1), (2,3)
    np.testing.assert_allclose(item["rewards"].numpy(), [1.0, 5.0])  # sum of rewards 0+1, 2+3
    np.testing.assert_allclose(item["action_time"].numpy(), item["frame_time"][1:].numpy(), atol=1e-6)


def test_windows_past_the_episode_end_are_padded_and_flagged():
    windows = TimeAlignedWindows(synthetic(lengths=(6, 9)), WindowSpec(num_frames=4))
    assert len(windows) == 5 + 8  # every start with at least 2 real frames
    last = windows[4]  # episode 0, start 4: frames 4, 5 real; 6, 7 padded
    np.testing.assert_array_equal(last["frame_is_pad"].numpy(), [False, False, True, True])
    np.testing.assert_array_equal(last["frames"][:, 0, 0, 0].numpy(), [4, 5, 5, 5])  # edge padded
    np.testing.assert_array_equal(last["action_is_pad"].numpy(), [False, False, True])
    np.testing.assert_array_equal(last["actions"][:, 0].numpy(), [4, 5, 0])
    assert bool(last["successes"][1]) and not bool(last["successes"][2])
    # windows never mix episodes
    first_of_next = windows[5]
    assert int(first_of_next["episode_index"]) == 1 and int(first_of_next["start_step"]) == 0
    assert set(first_of_next["frames"][:, 0, 0, 1].tolist()) == {1}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (WindowSpec(num_frames=1), "num_frames=1"),
        (WindowSpec(frame_rate=3.0), "frame_rate=3"),
        (WindowSpec(frame_rate=10.0, action_rate=5.0), "not a multiple of frame_rate"),
        (WindowSpec(action_rate=-1.0), "action_rate=-1"),
        (WindowSpec(num_frames=4, min_real_frames=5), "min_real_frames=5"),
    ],
)
def test_rates_that_do_not_fit_are_rejected(spec, message):
    with pytest.raises(ValueError, match=message):
        TimeAlignedWindows(synthetic(), spec)


def test_real_dataset_from_lerobot_and_zarr_give_the_same_windows(point_images_dataset, tmp_path):
    store = lerobot_to_zarr(point_images_dataset, tmp_path / "s.zarr")
    from_lerobot = TimeAlignedWindows(point_images_dataset, WindowSpec(num_frames=4))
    from_zarr = TimeAlignedWindows(store, WindowSpec(num_frames=4))
    assert len(from_lerobot) == len(from_zarr) > 0
    for i in (0, len(from_zarr) // 2, len(from_zarr) - 1):
        a, b = from_lerobot[i], from_zarr[i]
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]), err_msg=key)
    item = from_zarr[0]
    assert item["frames"].shape == (4, 64, 64, 3) and item["env_states"].shape == (4, 5)


def test_windows_batch_with_a_torch_dataloader(point_images_dataset):
    import torch

    loader = torch.utils.data.DataLoader(TimeAlignedWindows(point_images_dataset), batch_size=8, shuffle=True)
    batch = next(iter(loader))
    assert batch["frames"].shape == (8, 4, 64, 64, 3) and batch["actions"].shape == (8, 3, 2)


def test_bad_camera_is_rejected():
    with pytest.raises(ValueError, match="camera='side'"):
        TimeAlignedWindows(synthetic(), camera="side")
