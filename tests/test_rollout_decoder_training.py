"""Fitting the decoder to the forward prior's rollouts: on real PushBlock data it moves the decoder alone and
draws the rollouts closer to the real frames; the frames it reads line up with the table's rows; a model that
carries the block fits it to its drawer's rollouts instead; bad arguments are refused by name."""

from __future__ import annotations

import copy

import pytest
import torch

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.forward_prior_training import train_forward_prior
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.object_pose_training import attach_object_pose, fit_drawer, object_embodiments
from cosmos_robot.rollout_decoder_training import (
    drawer_roll,
    fit_decoder_to_rollouts,
    prior_roll,
    rollout_decode_psnr,
    train_decoder_on_rollouts,
)


@pytest.fixture(scope="module")
def prepared(smoke_data):
    config = ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": True})
    data = TrainingSet(smoke_data, config, num_frames=5, seed=0)
    torch.manual_seed(0)
    autoencoder = FrameAutoencoder(config.latent_channels, config.patch_merge).requires_grad_(False).eval()
    data.prepare(autoencoder)
    network = WorldActionNetwork(config)
    train_forward_prior(network, data.transitions(steps=3), steps=20, batch_size=16, progress=False)
    return data, autoencoder, network


def test_transition_frames_are_the_frames_of_the_table_rows(prepared):
    data, autoencoder, _ = prepared
    for split in ("train", "val"):
        frames, table = data.transition_frames(split), data.transitions(split, steps=3)
        assert frames.dtype == torch.uint8 and len(frames) == len(table.latents)
        rows = torch.linspace(0, len(frames) - 1, 7).long()
        torch.testing.assert_close(autoencoder.frames_to_tokens(frames[rows]), table.latents[rows], atol=1e-4, rtol=0)


def test_it_trains_the_decoder_alone_and_draws_rollouts_closer_to_the_real_frames(prepared):
    data, autoencoder, network = prepared
    table, frames = data.transitions(steps=3), data.transition_frames()
    network_before = {k: v.clone() for k, v in network.state_dict().items()}
    autoencoder_before = {k: v.clone() for k, v in autoencoder.state_dict().items()}
    untrained = rollout_decode_psnr(autoencoder, network, table, frames, sequences=32)
    losses = train_decoder_on_rollouts(autoencoder, network, table, frames, steps=40, sequences=4, progress=False)
    assert len(losses) == 40 and sum(losses[-5:]) < sum(losses[:5])
    assert rollout_decode_psnr(autoencoder, network, table, frames, sequences=32) > untrained + 1.0
    changed = {k for k, v in autoencoder.state_dict().items() if not torch.equal(v, autoencoder_before[k])}
    assert changed and all(k.startswith("decoder.") for k in changed)
    assert all(torch.equal(v, network_before[k]) for k, v in network.state_dict().items())
    assert not any(p.requires_grad for p in autoencoder.decoder.parameters())  # frozen again, as it came


@pytest.mark.slow  # it trains a drawer, then the decoder, and measures both held-out passes (~40 s)
def test_a_model_that_carries_the_block_fits_the_decoder_to_its_drawers_rollouts(prepared):
    data, _, trained = prepared
    network, config = copy.deepcopy(trained), trained.config
    torch.manual_seed(0)  # the fixture's autoencoder as it encoded the data, before another test fitted its decoder
    autoencoder = FrameAutoencoder(config.latent_channels, config.patch_merge).requires_grad_(False).eval()
    attach_object_pose(network, tuple(data.data[n].embodiment.domain_id for n in object_embodiments(data)))
    fit_drawer(network, data, steps=5, rollout=3, seed=0, progress=False)
    table, index = data.transitions(steps=3), torch.arange(6)
    drawn, rolled = drawer_roll(network, data, "train")(table, index), prior_roll(network)(table, index)
    assert drawn.shape == rolled.shape and not torch.allclose(drawn, rolled)  # the drawer's grids, not the prior's
    network_before = {k: v.clone() for k, v in network.state_dict().items()}
    report = fit_decoder_to_rollouts(
        autoencoder, network, data, rollout=3, steps=40, object_weight=10.0, seed=0, progress=False, drawer=True
    )
    assert report["psnr_after"] > report["psnr_before"] + 0.5  # measured on the drawer's held-out rollouts
    assert all(torch.equal(v, network_before[k]) for k, v in network.state_dict().items())
    with pytest.raises(ValueError, match="drawer=True but the network carries no object"):
        fit_decoder_to_rollouts(
            autoencoder, trained, data, rollout=3, steps=1, object_weight=10.0, seed=0, progress=False, drawer=True
        )


def test_bad_arguments_are_refused_by_name(prepared):
    data, autoencoder, network = prepared
    table, frames = data.transitions(steps=3), data.transition_frames()
    with pytest.raises(ValueError, match="frames_nhwc has 5 frames"):
        train_decoder_on_rollouts(autoencoder, network, table, frames[:5], steps=1, progress=False)
    with pytest.raises(ValueError, match=r"frames_per_sequence=4; expected 1..3"):
        train_decoder_on_rollouts(autoencoder, network, table, frames, steps=1, frames_per_sequence=4, progress=False)
    no_prior = WorldActionNetwork(ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": False}))
    with pytest.raises(ValueError, match="no forward prior"):
        train_decoder_on_rollouts(autoencoder, no_prior, table, frames, steps=1, progress=False)
