"""Autoencoder training: it learns PushBlock frames; it refuses an empty frame set."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.autoencoder_training import reconstruction_psnr, train_autoencoder
from cosmos_robot.model.tokenizers import FrameAutoencoder


@pytest.mark.slow
def test_autoencoder_learns_push_block_frames(push_block_frames):
    torch.manual_seed(0)
    ae = FrameAutoencoder(latent_channels=8)
    before = reconstruction_psnr(ae, push_block_frames)
    losses = train_autoencoder(ae, push_block_frames, steps=200, batch_size=32, progress=False)
    after = reconstruction_psnr(ae, push_block_frames)
    assert losses[-1] < 0.2 * losses[0]
    assert after > before + 7 and after > 19, f"PSNR {before:.1f} -> {after:.1f} dB"


def test_training_needs_frames():
    with pytest.raises(ValueError, match="frames_nhwc is empty"):
        train_autoencoder(FrameAutoencoder(), torch.zeros(0, 64, 64, 3, dtype=torch.uint8), steps=1)
