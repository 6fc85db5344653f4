"""One processor builds the model's inputs for training and for serving: the same window gives the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cosmos_robot.checkpoint import Checkpoint
from cosmos_robot.datasets.training_set import LATENTS, TrainingSet
from cosmos_robot.model.config import preset
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.processor import Processor
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def training_set(point_images_dataset):
    torch.manual_seed(0)
    data = TrainingSet([point_images_dataset], preset("tiny"), num_frames=5, val_fraction=0.25)
    data.prepare(FrameAutoencoder().eval())
    return data


def test_a_window_gives_the_same_inputs_through_training_and_serving(training_set):
    data = training_set
    name, index = "point", 3
    batch = data.collate([(name, index)], context_frames=1)
    window = data.data[name].train[index]
    checkpoint = Checkpoint(
        WorldActionNetwork(data.config),
        FrameAutoencoder(),
        dict(data.processor.entries),
        {"num_frames": 5, "context_frames": 1, "fps": 10.0},
    )
    model = WorldActionModel(checkpoint)
    entry = model.processor.entry(name)
    start = np.asarray([float(window["frame_time"][0])])
    states = window["states"].numpy()[None]
    actions = window["actions"].numpy()[None]
    served_reasoner = model._reasoner(entry, window["frames"].numpy()[None, :1], states[:, 0], window["task"], start)
    served = model._template(
        entry,
        1,
        window[LATENTS][None],
        entry.action_norm.normalize(actions),
        entry.state_norm.normalize(states),
        start,
    )
    for field in ("domain", "text_ids", "text_valid", "state", "observed_frames", "observed_time"):
        torch.testing.assert_close(getattr(served_reasoner, field), getattr(batch.reasoner, field), msg=field)
    for field in ("domain", "frames", "frame_t", "frame_time", "actions", "action_t", "action_time", "states"):
        torch.testing.assert_close(getattr(served, field), getattr(batch.clean, field), msg=field)
    assert torch.equal(served.action_channels, batch.clean.action_channels)
    assert torch.equal(served.state_channels, batch.clean.state_channels)


def test_raw_values_round_trip_through_the_processor(training_set):
    processor: Processor = training_set.processor
    raw = np.array([[0.1, -0.2], [0.25, 0.0]], np.float32)
    padded = processor.actions_in("point", raw)
    assert padded.shape == (2, processor.config.action_width) and not padded[:, 2:].any()
    np.testing.assert_allclose(processor.actions_out("point", padded), raw, atol=1e-6)


def test_an_unknown_embodiment_names_the_known_ones(training_set):
    with pytest.raises(ValueError, match=r"embodiment='octopus'.*\['point'\]"):
        training_set.processor.actions_in("octopus", np.zeros((1, 2)))
