"""Tokenizers, all local: a frame autoencoder (generation latents), a patch stem (understanding), bytes (text).

The frame autoencoder plays the part of Cosmos 3's frozen VAE: it is trained first on the task's
frames, then frozen, and the world model generates in its latent space. A 64x64x3 frame becomes an
8x8xC latent; 2x2 patches are merged into 16 generator tokens of 4C channels.
"""

from __future__ import annotations

import torch
from torch import nn

from cosmos_robot.model.channels_last import decode_channels_last


def frames_to_float(frames_bthwc: torch.Tensor) -> torch.Tensor:
    """uint8 (..., H, W, 3) -> float (..., 3, H, W) in [-1, 1]."""
    x = frames_bthwc.to(torch.float32) / 127.5 - 1.0
    return x.movedim(-1, -3)


def float_to_frames(x: torch.Tensor) -> torch.Tensor:
    """float (..., 3, H, W) in [-1, 1] -> uint8 (..., H, W, 3)."""
    return ((x.clamp(-1, 1) + 1.0) * 127.5).round().to(torch.uint8).movedim(-3, -1)


def _conv_block(c_in: int, c_out: int, stride: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1), nn.GroupNorm(8, c_out), nn.SiLU())


class FastDecoder(nn.Module):
    """A decoder cheap enough to run every step of a batched learned env: about 1/8 of the decoder's
    multiply-adds. Two convolutions read each latent cell's neighbourhood; two sub-pixel steps draw
    its 8x8 pixels. No normalisation layers: their per-frame statistics cost more than the convolutions
    at this size. Trained after the autoencoder, on its frozen latents (``fast_decoder_training``).

    Args:
        latent_channels: C of the latent.
        width: convolution width at latent resolution.
    """

    def __init__(self, latent_channels: int = 8, width: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(latent_channels, width, 3, 1, 1),
            nn.SiLU(),
            nn.Conv2d(width, width, 3, 1, 1),
            nn.SiLU(),
            nn.PixelShuffle(2),
            nn.Conv2d(width // 4, 48, 3, 1, 1),
            nn.PixelShuffle(4),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Latent (N, C, h, w) -> (N, 3, 8h, 8w)."""
        return self.net(z)


class FrameAutoencoder(nn.Module):
    """Convolutional autoencoder, 8x spatial downsampling, with patch-merged tokens.

    Args:
        latent_channels: C of the 1/8-resolution latent.
        patch_merge: latent patch side merged into one token.
        width: base convolution width.
        fast_decoder: also hold a :class:`FastDecoder` (``tokens_to_frames(..., fast=True)``).
        full_resolution_width: width of one more convolution block at full resolution, before the decoder's
            last convolution (0: none, as in autoencoders made before it).
    """

    def __init__(
        self,
        latent_channels: int = 8,
        patch_merge: int = 2,
        width: int = 32,
        fast_decoder: bool = False,
        full_resolution_width: int = 0,
    ) -> None:
        super().__init__()
        if not isinstance(fast_decoder, bool):
            raise ValueError(f"fast_decoder={fast_decoder!r}; expected true or false")
        valid_width = isinstance(full_resolution_width, int) and not isinstance(full_resolution_width, bool)
        if not valid_width or full_resolution_width < 0 or full_resolution_width % 8:
            raise ValueError(
                f"full_resolution_width={full_resolution_width!r}; expected 0 or a positive multiple of 8 "
                "(the block's group norm has 8 groups)"
            )
        self.full_resolution_width = full_resolution_width
        self.latent_channels = latent_channels
        self.patch_merge = patch_merge
        # Token statistics (the role of a VAE's scaling factor): tanh latents of mostly flat frames have a
        # standard deviation near 0.16, far below the unit noise of the flow, which then swamps them.
        token_dim = latent_channels * patch_merge**2
        self.register_buffer("token_mean", torch.zeros(token_dim))
        self.register_buffer("token_std", torch.ones(token_dim))
        # Strided from the first layer: full-resolution convolutions would triple the cost on CPU.
        self.encoder = nn.Sequential(
            _conv_block(3, width, 2),
            _conv_block(width, 2 * width, 2),
            _conv_block(2 * width, 2 * width, 2),
            _conv_block(2 * width, 2 * width, 1),
            nn.Conv2d(2 * width, latent_channels, 3, 1, 1),
        )
        self.decoder = nn.Sequential(
            _conv_block(latent_channels, 2 * width, 1),
            _conv_block(2 * width, 2 * width, 1),
            nn.Upsample(scale_factor=2, mode="nearest"),
            _conv_block(2 * width, 2 * width, 1),
            nn.Upsample(scale_factor=2, mode="nearest"),
            _conv_block(2 * width, width, 1),
            nn.Upsample(scale_factor=2, mode="nearest"),
        )
        # Nearest upsampling leaves the last convolution a fixed interpolation of 32x32 features; a block at
        # full resolution draws single pixels: arm2's fingertip (a few pixels, less at the frame's edge) is
        # lost from 16 of 1359 reconstructed MuJoCo frames with it, 37 without (docs/model.md).
        if full_resolution_width:
            self.decoder.append(_conv_block(width, full_resolution_width, 1))
        self.decoder.append(nn.Conv2d(full_resolution_width or width, 3, 3, 1, 1))
        self.fast_decoder = FastDecoder(latent_channels) if fast_decoder else None

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 3, H, W) in [-1, 1] -> latent (N, C, H/8, W/8), squashed to [-1, 1] by tanh."""
        return torch.tanh(self.encoder(x))

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Latent (N, C, h, w) -> (N, 3, 8h, 8w) (without autograd, channels-last: 4x faster on CPU)."""
        return decode_channels_last(self.decoder, z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Reconstruction of (N, 3, H, W)."""
        return self.decode(self.encode(x))

    def to_tokens(self, z: torch.Tensor) -> torch.Tensor:
        """Latent (N, C, h, w) -> tokens (N, (h/p)*(w/p), C*p*p), row-major."""
        p = self.patch_merge
        n, c, h, w = z.shape
        z = z.view(n, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)  # (N, h/p, w/p, C, p, p)
        return z.reshape(n, (h // p) * (w // p), c * p * p)

    def from_tokens(self, tokens: torch.Tensor, grid: int) -> torch.Tensor:
        """Inverse of :meth:`to_tokens` for a grid x grid token layout."""
        p, c = self.patch_merge, self.latent_channels
        n = tokens.shape[0]
        z = tokens.view(n, grid, grid, c, p, p).permute(0, 3, 1, 4, 2, 5)  # (N, C, g, p, g, p)
        return z.reshape(n, c, grid * p, grid * p)

    @torch.no_grad()
    def fit_token_statistics(self, frames_nhwc: torch.Tensor, batch: int = 256) -> None:
        """Set the per-channel token mean and std from frames, so the model sees unit-variance tokens."""
        self.token_mean.zero_()
        self.token_std.fill_(1.0)
        tokens = torch.cat(
            [self.frames_to_tokens(frames_nhwc[i : i + batch]) for i in range(0, len(frames_nhwc), batch)]
        )
        flat = tokens.flatten(0, 1)  # (N * G*G, token_dim)
        self.token_mean.copy_(flat.mean(0))
        self.token_std.copy_(flat.std(0).clamp_min(1e-3))

    @torch.no_grad()
    def frames_to_tokens(self, frames_nhwc: torch.Tensor) -> torch.Tensor:
        """uint8 (N, H, W, 3) -> standardised tokens (N, tokens_per_frame, token_dim)."""
        return (self.to_tokens(self.encode(frames_to_float(frames_nhwc))) - self.token_mean) / self.token_std

    def tokens_to_latents(self, tokens: torch.Tensor, grid: int) -> torch.Tensor:
        """Standardised tokens (N, G*G, token_dim) -> the latent (N, C, h, w) the decoders read."""
        return self.from_tokens(tokens * self.token_std + self.token_mean, grid)

    @torch.no_grad()
    def tokens_to_frames(self, tokens: torch.Tensor, grid: int, fast: bool = False) -> torch.Tensor:
        """Standardised tokens (N, G*G, token_dim) -> uint8 (N, H, W, 3), by the fast decoder if ``fast``."""
        if fast and self.fast_decoder is None:
            raise ValueError("fast=True but this autoencoder has no fast decoder (autoencoder config fast_decoder)")
        latents = self.tokens_to_latents(tokens, grid)
        if fast:
            return float_to_frames(self.fast_decoder(latents))
        # Channels-last out: the (N, H, W, 3) frames are then contiguous without another copy.
        return float_to_frames(decode_channels_last(self.decoder, latents, torch.channels_last))


class PatchStem(nn.Module):
    """The reasoner's view of a frame: non-overlapping pixel patches projected to the model width."""

    def __init__(self, d_model: int, patch: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(3, d_model, patch, patch)

    def forward(self, frames_nhwc: torch.Tensor) -> torch.Tensor:
        """uint8 (N, H, W, 3) -> (N, (H/p)*(W/p), d_model), row-major."""
        return self.proj(frames_to_float(frames_nhwc)).flatten(2).transpose(1, 2)


class ByteTokenizer:
    """UTF-8 bytes as tokens: nothing to download, every string encodable.

    Ids: 0 is padding, byte b is b + 1 (vocabulary 257).
    """

    pad_id = 0
    vocab_size = 257

    def encode(self, texts: list[str], max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(ids (B, max_len) long, valid (B, max_len) bool); longer texts are truncated."""
        ids = torch.zeros(len(texts), max_len, dtype=torch.long)
        for i, text in enumerate(texts):
            data = list(text.encode("utf-8"))[:max_len]
            ids[i, : len(data)] = torch.tensor(data, dtype=torch.long) + 1
        return ids, ids != self.pad_id

    def decode(self, ids: torch.Tensor) -> list[str]:
        """Inverse of :meth:`encode` (padding dropped)."""
        return [
            bytes([int(t) - 1 for t in row if int(t) != self.pad_id]).decode("utf-8", errors="replace") for row in ids
        ]
