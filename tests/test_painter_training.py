"""Training the effector painter: on real PushBlock data it moves the painter alone and brings the decoded drawer
rollouts closer to the real frames on held-out sequences; the frames it fits are the real frames of their rows and
its places the object's effector map of their states; a network without a painter is refused by name."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.forward_prior_training import train_forward_prior
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.painter import EffectorPainter
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.object_pose_training import attach_object_pose, fit_drawer, object_embodiments
from cosmos_robot.painter_training import DrawnFrames, fit_painter

# Each test trains a forward prior and a drawer first; the fast suite trains a painter in the smoke checkpoint.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def carried(smoke_data):
    config = ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": True})
    data = TrainingSet(smoke_data, config, num_frames=5, seed=0)
    torch.manual_seed(0)
    autoencoder = FrameAutoencoder(config.latent_channels, config.patch_merge).requires_grad_(False).eval()
    data.prepare(autoencoder)
    network = WorldActionNetwork(config)
    train_forward_prior(network, data.transitions(steps=3), steps=10, batch_size=16, progress=False)
    attach_object_pose(network, tuple(data.data[n].embodiment.domain_id for n in object_embodiments(data)))
    fit_drawer(network, data, steps=3, rollout=3, seed=0, progress=False)
    return data, autoencoder, network


def test_the_frames_it_fits_are_the_real_frames_at_the_effector_places_the_env_would_paint(carried):
    data, autoencoder, network = carried
    frames = DrawnFrames(network, autoencoder, data, "train", rollout=3, sequences=8, seed=0)
    assert len(frames) == 24 and frames.drawn.shape == frames.real.shape == frames.before.shape == (24, 64, 64, 3)
    table, real = data.transitions("train", steps=3), data.transition_frames("train")
    objects = network.object_pose
    for k in range(0, 24, 5):
        row = frames.rows[k]
        assert torch.equal(frames.real[k], real[row]) and torch.equal(frames.before[k], real[row - 1])
        # The place is the object's effector map of the recorded state, as the env maps the state it carries.
        state = (table.states[row] * table.state_channels[row]).float()[None]
        torch.testing.assert_close(frames.places[k], objects.effector_of(state, int(table.domain[row]))[0])


def test_it_trains_the_painter_alone_and_paints_held_out_rollouts_closer_to_the_real_frames(carried):
    data, autoencoder, trained = carried
    objects = trained.object_pose
    objects.painter = EffectorPainter(objects.half_extent)
    trained.config = dataclasses.replace(trained.config, object_painter=True)
    before = {k: v.clone() for k, v in trained.state_dict().items()}
    decoder = {k: v.clone() for k, v in autoencoder.state_dict().items()}
    report = fit_painter(trained, autoencoder, data, rollout=3, steps=60, object_weight=10.0, seed=0, progress=False)
    assert report["psnr_painted"] > report["psnr_drawn"] + 0.1
    changed = {k for k, v in trained.state_dict().items() if not torch.equal(v, before[k])}
    assert changed and all(k.startswith("object_pose.painter.") for k in changed)
    assert all(torch.equal(v, decoder[k]) for k, v in autoencoder.state_dict().items())
    assert not any(p.requires_grad for p in objects.painter.parameters())


def test_a_network_without_a_painter_is_refused(carried):
    data, autoencoder, network = carried
    saved, network.object_pose.painter = network.object_pose.painter, None
    try:
        with pytest.raises(ValueError, match="holds no painter"):
            fit_painter(network, autoencoder, data, rollout=3, steps=1, object_weight=10.0, seed=0, progress=False)
    finally:
        network.object_pose.painter = saved
