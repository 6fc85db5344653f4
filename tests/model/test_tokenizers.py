"""Tokenizers: the frame autoencoder learns PushBlock frames; tokens round trip; bytes round trip."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cosmos_robot.envs.push_block import PushBlockEnv
from cosmos_robot.model.tokenizers import (
    ByteTokenizer,
    FrameAutoencoder,
    PatchStem,
    float_to_frames,
    frames_to_float,
    psnr,
    reconstruction_psnr,
    train_autoencoder,
)


@pytest.fixture(scope="module")
def push_block_frames() -> torch.Tensor:
    """256 frames of random PushBlock scenes (both embodiments)."""
    frames = []
    for embodiment in ("point", "arm2"):
        env = PushBlockEnv(embodiment)
        rng = np.random.default_rng(0)
        for seed in range(16):
            obs, _ = env.reset(seed=seed)
            for _ in range(8):
                frames.append(obs["pixels"])
                obs, *_ = env.step(rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32))
        env.close()
    return torch.from_numpy(np.stack(frames))


def test_token_layout_is_16_tokens_per_64px_frame_and_invertible():
    ae = FrameAutoencoder(latent_channels=8, patch_merge=2)
    z = torch.randn(3, 8, 8, 8)
    tokens = ae.to_tokens(z)
    assert tokens.shape == (3, 16, 32)
    torch.testing.assert_close(ae.from_tokens(tokens, grid=4), z)
    frames = torch.randint(0, 256, (2, 64, 64, 3), dtype=torch.uint8)
    assert ae.frames_to_tokens(frames).shape == (2, 16, 32)
    assert ae.tokens_to_frames(ae.frames_to_tokens(frames), grid=4).shape == (2, 64, 64, 3)


def test_pixel_conversions_round_trip():
    frames = torch.randint(0, 256, (2, 8, 8, 3), dtype=torch.uint8)
    torch.testing.assert_close(float_to_frames(frames_to_float(frames)), frames)
    assert psnr(frames, frames) > 90


def test_autoencoder_learns_push_block_frames(push_block_frames):
    torch.manual_seed(0)
    ae = FrameAutoencoder(latent_channels=8)
    before = reconstruction_psnr(ae, push_block_frames)
    losses = train_autoencoder(ae, push_block_frames, steps=200, batch_size=32, progress=False)
    after = reconstruction_psnr(ae, push_block_frames)
    assert losses[-1] < 0.2 * losses[0]
    assert after > before + 7 and after > 19, f"PSNR {before:.1f} -> {after:.1f} dB"


def test_patch_stem_shapes():
    stem = PatchStem(d_model=48, patch=8)
    assert stem(torch.zeros(5, 64, 64, 3, dtype=torch.uint8)).shape == (5, 64, 48)


def test_byte_tokenizer_round_trip_and_padding():
    tok = ByteTokenizer()
    ids, valid = tok.encode(["push", "déplace le bloc", ""], max_len=8)
    assert ids.shape == (3, 8) and valid[0].sum() == 4 and not valid[2].any()
    assert tok.decode(ids)[0] == "push"
    assert ids.max() < tok.vocab_size


def test_training_needs_frames():
    with pytest.raises(ValueError, match="frames_nhwc is empty"):
        train_autoencoder(FrameAutoencoder(), torch.zeros(0, 64, 64, 3, dtype=torch.uint8), steps=1)


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
