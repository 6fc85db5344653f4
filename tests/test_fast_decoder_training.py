"""The fast decoder: trained alone on the frozen autoencoder's latents, a fraction of the decoder's cost."""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from cosmos_robot.fast_decoder_training import fast_reconstruction_psnr, train_fast_decoder
from cosmos_robot.model.tokenizers import FrameAutoencoder


def test_training_moves_only_the_fast_decoder_and_lowers_its_loss(push_block_frames):
    torch.manual_seed(0)
    autoencoder = FrameAutoencoder(fast_decoder=True)
    frozen = {k: v.clone() for k, v in autoencoder.state_dict().items() if not k.startswith("fast_decoder.")}
    before = fast_reconstruction_psnr(autoencoder, push_block_frames[:64])
    losses = train_fast_decoder(autoencoder, push_block_frames, steps=60, batch_size=32, progress=False)
    assert sum(losses[-10:]) < 0.7 * sum(losses[:10])
    assert fast_reconstruction_psnr(autoencoder, push_block_frames[:64]) > before + 3.0
    for name, value in autoencoder.state_dict().items():
        if name in frozen:
            torch.testing.assert_close(value, frozen[name], rtol=0, atol=0)


def flops(module: torch.nn.Module, x: torch.Tensor) -> int:
    with FlopCounterMode(display=False) as counter:
        module(x)
    return counter.get_total_flops()


def test_it_costs_a_fraction_of_the_decoder():
    autoencoder = FrameAutoencoder(fast_decoder=True)
    latent = torch.zeros(1, 8, 8, 8)
    full = flops(autoencoder.decoder, latent)
    fast = flops(autoencoder.fast_decoder, latent)
    assert autoencoder.fast_decoder(latent).shape == autoencoder.decode(latent).shape == (1, 3, 64, 64)
    assert fast < full / 5


def test_an_autoencoder_without_one_says_so():
    autoencoder = FrameAutoencoder()
    with pytest.raises(ValueError, match="no fast decoder"):
        train_fast_decoder(autoencoder, torch.zeros(4, 64, 64, 3, dtype=torch.uint8), steps=1)
    with pytest.raises(ValueError, match="fast=True but this autoencoder has no fast decoder"):
        autoencoder.tokens_to_frames(torch.zeros(1, 16, 32), 4, fast=True)
