"""Tokenizers: the frame autoencoder learns PushBlock frames; tokens round trip; bytes round trip."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.autoencoder_training import train_autoencoder
from cosmos_robot.metrics import psnr
from cosmos_robot.model.tokenizers import ByteTokenizer, FrameAutoencoder, PatchStem, float_to_frames, frames_to_float


def test_token_layout_is_16_tokens_per_64px_frame_and_invertible():
    ae = FrameAutoencoder(latent_channels=8, patch_merge=2)
    z = torch.randn(3, 8, 8, 8)
    tokens = ae.to_tokens(z)
    assert tokens.shape == (3, 16, 32)
    torch.testing.assert_close(ae.from_tokens(tokens, grid=4), z)
    frames = torch.randint(0, 256, (2, 64, 64, 3), dtype=torch.uint8)
    assert ae.frames_to_tokens(frames).shape == (2, 16, 32)
    assert ae.tokens_to_frames(ae.frames_to_tokens(frames), grid=4).shape == (2, 64, 64, 3)


def test_decoded_frames_are_contiguous_and_those_of_the_plain_decoder():
    torch.manual_seed(0)
    ae = FrameAutoencoder(latent_channels=8, patch_merge=2)
    tokens = torch.randn(5, 16, 32)
    frames = ae.tokens_to_frames(tokens, grid=4)
    with torch.no_grad():
        plain = float_to_frames(ae.decoder(ae.tokens_to_latents(tokens, 4)))
    assert frames.shape == (5, 64, 64, 3) and frames.is_contiguous()
    # Equal to float rounding: at most one grey level where a value sits on a rounding boundary.
    assert (frames.int() - plain.int()).abs().max() <= 1


def test_a_full_resolution_block_draws_frames_of_the_same_shape_and_is_refused_when_it_cannot_be_built():
    plain, sharp = FrameAutoencoder(), FrameAutoencoder(full_resolution_width=16)
    frames = torch.randint(0, 256, (2, 64, 64, 3), dtype=torch.uint8)
    assert sharp.tokens_to_frames(sharp.frames_to_tokens(frames), grid=4).shape == (2, 64, 64, 3)
    # One convolution block more, after the last upsampling: its features are at the frame's resolution.
    assert len(sharp.decoder) == len(plain.decoder) + 1
    with torch.no_grad():
        features = sharp.decoder[:-1](torch.zeros(1, 8, 8, 8))
    assert features.shape == (1, 16, 64, 64)
    for width in (12, -8, True, 8.0):
        with pytest.raises(ValueError, match=f"full_resolution_width={width!r}; expected 0 or a positive multiple"):
            FrameAutoencoder(full_resolution_width=width)


def test_pixel_conversions_round_trip():
    frames = torch.randint(0, 256, (2, 8, 8, 3), dtype=torch.uint8)
    torch.testing.assert_close(float_to_frames(frames_to_float(frames)), frames)
    assert psnr(frames, frames) > 90


def test_patch_stem_shapes():
    stem = PatchStem(d_model=48, patch=8)
    assert stem(torch.zeros(5, 64, 64, 3, dtype=torch.uint8)).shape == (5, 64, 48)


def test_byte_tokenizer_round_trip_and_padding():
    tok = ByteTokenizer()
    ids, valid = tok.encode(["push", "déplace le bloc", ""], max_len=8)
    assert ids.shape == (3, 8) and valid[0].sum() == 4 and not valid[2].any()
    assert tok.decode(ids)[0] == "push"
    assert ids.max() < tok.vocab_size


def test_token_statistics_standardise_tokens_and_round_trip(push_block_frames):
    torch.manual_seed(0)
    ae = FrameAutoencoder(latent_channels=8)
    train_autoencoder(ae, push_block_frames, steps=20, batch_size=16, progress=False)
    plain = ae.tokens_to_frames(ae.frames_to_tokens(push_block_frames[:8]), grid=4)
    ae.fit_token_statistics(push_block_frames)
    tokens = ae.frames_to_tokens(push_block_frames).flatten(0, 1)
    torch.testing.assert_close(tokens.mean(0), torch.zeros(32), atol=1e-4, rtol=0)
    torch.testing.assert_close(tokens.std(0), torch.ones(32), atol=1e-3, rtol=0)
    # standardising is invisible in pixel space
    again = ae.tokens_to_frames(ae.frames_to_tokens(push_block_frames[:8]), grid=4)
    assert (again.int() - plain.int()).abs().max() <= 1
