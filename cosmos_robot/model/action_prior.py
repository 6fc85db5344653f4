"""A behaviour-cloning prior for the policy's action chunk: keypoints of the observed frame -> actions.

The policy must read where the block, the goal and the pusher are from one frame, and its share of
the main batch is too small for the MoT to learn that on 2 CPU cores (docs/model.md, "Priors"). A
spatial-softmax keypoint net (Levine et al. 2016; Diffusion Policy's vision encoder) is the right
bottleneck - the expert is a function of where three things are - and it is trained on its own
larger batch of demonstration windows each step. Its chunk enters the generator as a direct path:
the action tokens of a window whose first noisy frame follows a clean one receive it as an input,
and the x0 head adds it (detached), so the MoT learns a correction and a zero correction already
is behaviour cloning.

The state enters the MLP with sinusoidal features ``sin(2^j pi s), cos(2^j pi s)`` of each
normalised channel: arm2's expert maps joint angles to joint velocities through the arm's forward
kinematics, sines and cosines of the angles, which an MLP of the raw angles builds slowly.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

# Actions of the prior's chunk (the default window's future frames).
PRIOR_CHUNK = 4
# Pairs of sin/cos features per normalised state channel.
STATE_FREQUENCIES = 2


class SpatialSoftmax(nn.Module):
    """Feature maps (B, K, H, W) -> expected (row, col) of each map's softmax, in [-1, 1]: (B, 2K)."""

    def forward(self, maps: torch.Tensor) -> torch.Tensor:
        b, k, h, w = maps.shape
        weights = maps.flatten(2).softmax(-1).view(b, k, h, w)
        rows = torch.linspace(-1.0, 1.0, h, device=maps.device, dtype=maps.dtype)
        cols = torch.linspace(-1.0, 1.0, w, device=maps.device, dtype=maps.dtype)
        return torch.cat([(weights.sum(3) * rows).sum(-1), (weights.sum(2) * cols).sum(-1)], 1)


class ActionPrior(nn.Module):
    """Latent grid of the observed frame + proprio state -> a chunk of normalised actions, per embodiment.

    Args:
        latent_channels: channels of the autoencoder's latent grid.
        state_width: the shared (padded) state width.
        action_width: the shared (padded) action width.
        chunk: actions predicted.
        num_domains: embodiments (one output projection each).
        width: conv width.
        keypoints: feature maps, each reduced to one (row, col) keypoint.
        hidden: MLP width.
        state_frequencies: sinusoidal features per state channel (pairs).
    """

    def __init__(
        self,
        latent_channels: int,
        state_width: int,
        action_width: int,
        chunk: int,
        num_domains: int,
        width: int = 32,
        keypoints: int = 16,
        hidden: int = 256,
        state_frequencies: int = STATE_FREQUENCIES,
    ) -> None:
        super().__init__()
        self.chunk, self.action_width = chunk, action_width
        self.register_buffer(
            "state_scales", math.pi * 2.0 ** torch.arange(state_frequencies, dtype=torch.float32), persistent=False
        )
        # The latent grid is 8x8: keypoints need a finer lattice for sub-cell positions.
        self.conv = nn.Sequential(
            nn.Upsample(scale_factor=4, mode="bilinear", align_corners=False),
            nn.Conv2d(latent_channels, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Conv2d(width, keypoints, 1),
        )
        self.keypoints = SpatialSoftmax()
        self.mlp = nn.Sequential(
            nn.Linear(2 * keypoints + state_width * (1 + 2 * state_frequencies), hidden),
            nn.GELU(approximate="tanh"),
            nn.Linear(hidden, hidden),
            nn.GELU(approximate="tanh"),
        )
        self.out_weight = nn.Parameter(torch.randn(num_domains, hidden, chunk * action_width) / hidden**0.5)
        self.out_bias = nn.Parameter(torch.zeros(num_domains, chunk * action_width))

    def forward(self, grid: torch.Tensor, state: torch.Tensor, domain: torch.Tensor) -> torch.Tensor:
        """grid (B, C, h, w), state (B, state_width) normalised, domain (B,) -> (B, chunk, action_width)."""
        state = state.to(grid.dtype)
        angles = (state[:, :, None] * self.state_scales.to(grid.dtype)).flatten(1)
        # Channels-last: the convolutions on the upsampled grid and their GELUs train a third faster.
        maps = self.conv(grid.contiguous(memory_format=torch.channels_last))
        features = self.mlp(torch.cat([self.keypoints(maps), state, angles.sin(), angles.cos()], 1))
        out = torch.einsum("bh,bho->bo", features, self.out_weight[domain]) + self.out_bias[domain]
        return out.view(-1, self.chunk, self.action_width)


def prior_loss(
    predicted: torch.Tensor, actions: torch.Tensor, channels: torch.Tensor, valid: torch.Tensor
) -> torch.Tensor:
    """Mean squared error of the prior's chunk over real channels and valid actions.

    Args:
        predicted: (B, P, W) prior output.
        actions: (B, P, W) normalised true actions.
        channels: (B, W) the embodiment's real channels.
        valid: (B, P) actions inside their episode.
    """
    mask = (valid[..., None] & channels[:, None]).to(predicted.dtype)
    return F.mse_loss(predicted * mask, actions * mask, reduction="sum") / mask.sum().clamp_min(1.0)
