"""Fitting the decoder to the forward prior's rollouts: on real PushBlock data it moves the decoder alone and
draws the rollouts closer to the real frames; the frames it reads line up with the table's rows; bad
arguments are refused by name."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.forward_prior_training import train_forward_prior
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.rollout_decoder_training import rollout_decode_psnr, train_decoder_on_rollouts


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
