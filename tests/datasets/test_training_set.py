"""TrainingSet: the action prior's demonstration table (default-task episodes only, normalised, padded)
and the inverse prior's transition table (every consecutive pair inside an episode, any task); datasets
of other image sizes are cropped and resized to the model's."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from cosmos_robot.collect import collect
from cosmos_robot.datasets.lerobot_io import read_lerobot, write_lerobot
from cosmos_robot.datasets.training_set import TrainingSet, source_widths
from cosmos_robot.datasets.video_io import to_model_size
from cosmos_robot.model.config import preset
from cosmos_robot.model.tokenizers import FrameAutoencoder


@pytest.fixture(scope="module")
def expert_and_noisy(tmp_path_factory):
    root = tmp_path_factory.mktemp("prior_data")
    expert, noisy = root / "expert", root / "noisy"
    collect("cosmos_robot/PushBlockPoint-v0", 3, expert, seed=7, video=False, progress=False, task="push it")
    collect("cosmos_robot/PushBlockPoint-v0", 2, noisy, noise=0.5, seed=8, video=False, progress=False, task="noisy")
    return expert, noisy


def test_demonstrations_hold_the_default_task_windows_only(expert_and_noisy):
    config = preset("tiny")
    data = TrainingSet([str(p) for p in expert_and_noisy], config, num_frames=5, val_fraction=0.2, seed=0)
    torch.manual_seed(0)
    data.prepare(FrameAutoencoder(config.latent_channels, config.patch_merge))
    table = data.demonstrations(4)
    train = data.data["point"].train
    tasks = [train[i]["task"] for i in range(len(train))]
    assert data.tasks["point"] == "push it"
    assert len(table.domain) == tasks.count("push it") < len(tasks)
    assert table.frames.shape == (len(table.domain), config.tokens_per_frame, config.frame_token_dim)
    assert table.actions.shape == (len(table.domain), 4, config.action_width)
    assert table.action_valid.all() and table.action_channels[:, :2].all() and not table.action_channels[:, 2:].any()
    # The first entry is the first default-task window: its actions, normalised by the embodiment's statistics.
    first = tasks.index("push it")
    expected = data.data["point"].entry.action_norm.normalize(train[first]["actions"][:4].numpy())
    np.testing.assert_allclose(table.actions[0, :, :2].numpy(), expected, rtol=1e-6)
    assert np.abs(table.actions[..., 2:].numpy()).max() == 0
    assert data.demonstrations(4) is table  # built once
    with pytest.raises(ValueError, match="chunk=5"):
        data.demonstrations(5)


def test_transitions_pair_every_frame_with_the_next_one_inside_its_episode(expert_and_noisy):
    config = preset("tiny")
    data = TrainingSet([str(p) for p in expert_and_noisy], config, num_frames=5, val_fraction=0.2, seed=0)
    torch.manual_seed(0)
    data.prepare(FrameAutoencoder(config.latent_channels, config.patch_merge))
    table = data.transitions()
    episodes = data.data["point"].train.episodes
    lengths = np.diff(np.r_[0, episodes.episode_ends])
    assert len(table) == int((lengths - 1).sum())  # both tasks, no pair across an episode boundary
    assert not np.isin(table.first.numpy(), episodes.episode_ends - 1).any()
    batch = table.take(torch.arange(len(table)))
    latents = torch.from_numpy(np.asarray(episodes.data["latents"]))
    torch.testing.assert_close(batch.frames[:, 0], latents[table.first])
    torch.testing.assert_close(batch.frames[:, 1], latents[table.first + 1])
    raw = np.asarray(episodes.data["action"])[table.first.numpy()]
    expected = data.data["point"].entry.action_norm.normalize(raw)
    np.testing.assert_allclose(batch.actions[:, :2].numpy(), expected, rtol=1e-6)
    assert np.abs(batch.actions[:, 2:].numpy()).max() == 0 and batch.action_channels[:, :2].all()
    assert data.transitions() is table  # built once
    assert len(data.transitions("val")) > 0


def _resized_copy(source, out, height: int, width: int):
    """A copy of a LeRobot dataset with its frames upscaled and widened to height x width (camera-like)."""
    episodes = read_lerobot(source)
    keep = int(episodes.episode_ends[1])  # two episodes are enough, and 480x640 PNGs are slow to write
    episodes.data = {k: np.asarray(v[:keep]) for k, v in episodes.data.items()}
    episodes.episode_ends = episodes.episode_ends[:2]
    key = episodes.image_keys[0]
    frames = np.asarray(episodes.data[key])
    tall = np.stack([np.asarray(Image.fromarray(f).resize((height, height), Image.Resampling.NEAREST)) for f in frames])
    pad = (width - height) // 2
    episodes.data[key] = np.pad(tall, ((0, 0), (0, 0), (pad, width - tall.shape[2] - pad), (0, 0)), constant_values=90)
    episodes.features[key] = dict(episodes.features[key], shape=(height, width, 3))
    return write_lerobot(episodes, out)


@pytest.mark.parametrize(("height", "width"), [(96, 96), (480, 640)])
def test_datasets_of_other_image_sizes_are_cropped_and_resized_to_the_model(
    point_images_dataset, tmp_path, height, width
):
    source = _resized_copy(point_images_dataset, tmp_path / f"point_{height}x{width}", height, width)
    data = TrainingSet([source], preset("tiny"), num_frames=5, val_fraction=0.25)
    frames = data.frames().numpy()
    assert frames.shape[1:] == (64, 64, 3)
    raw = read_lerobot(source)
    expected = to_model_size(np.asarray(raw.data[raw.image_keys[0]]), 64)
    # Every training frame is a cropped, resized original: the centre crop removed the padding.
    flat = {frame.tobytes() for frame in expected}
    assert all(frame.tobytes() in flat for frame in frames)


def test_sequences_of_several_actions_stay_inside_their_episode(expert_and_noisy):
    config = preset("tiny")
    data = TrainingSet([str(p) for p in expert_and_noisy], config, num_frames=5, val_fraction=0.2, seed=0)
    torch.manual_seed(0)
    data.prepare(FrameAutoencoder(config.latent_channels, config.patch_merge))
    table = data.transitions(steps=3)
    episodes = data.data["point"].train.episodes
    lengths = np.diff(np.r_[0, episodes.episode_ends])
    assert len(table) == int(np.clip(lengths - 3, 0, None).sum())  # no run crosses an episode boundary
    batch = table.take_sequences(torch.arange(len(table)))
    rows = table.first.numpy()
    latents = np.asarray(episodes.data["latents"])
    for k in range(4):
        np.testing.assert_array_equal(batch.frames[:, k].numpy(), latents[rows + k])
    entry = data.data["point"].entry
    raw_states = np.asarray(episodes.data["observation.state"])
    np.testing.assert_allclose(
        batch.states[:, 2, :2].numpy(), entry.state_norm.normalize(raw_states[rows + 2]), rtol=1e-6
    )
    raw_actions = np.asarray(episodes.data["action"])
    np.testing.assert_allclose(
        batch.actions[:, 2, :2].numpy(), entry.action_norm.normalize(raw_actions[rows + 2]), rtol=1e-6
    )
    assert batch.state_channels[:, :2].all() and not batch.state_channels[:, 2:].any()
    assert data.transitions(steps=3) is table and data.transitions() is not table


def test_a_dataset_at_twice_the_model_rate_is_subsampled(tmp_path):
    source = tmp_path / "slider20"
    collect("tests.envs.third_party_env:ThirdPartySlider-v0", 2, source, policy="random", video=False,
            progress=False, fps=20)  # fmt: skip
    data = TrainingSet([source], preset("tiny"), num_frames=5, val_fraction=0.5)
    name = "thirdpartyslider-v0"
    train, val = data.parts[name]
    assert train.fps == val.fps == 10.0
    # 20 steps of 20 fps (21 frames) are 10 model steps; the embodiment keeps its own rate.
    assert train.episode_lengths().tolist() == val.episode_lengths().tolist() == [10]
    assert data.embodiments[name].rate_hz == 20.0
    with pytest.raises(ValueError, match="fps=20; the model runs at 15 fps.*train --fps 20"):
        TrainingSet([source], preset("tiny"), num_frames=5, fps=15.0)


def test_source_widths_read_the_metadata(expert_and_noisy):
    assert source_widths(expert_and_noisy[0]) == (2, 2)
    with pytest.raises(FileNotFoundError, match="neither a LeRobot dataset"):
        source_widths(expert_and_noisy[0].parent / "missing")
