"""An inverse-dynamics prior: the latent grids of two consecutive frames -> the action between them.

Inverse dynamics gets a fifth of the main batch, too few action pairs for the MoT to read arm2's
joint motions on 2 CPU cores (docs/model.md, "Priors"); this small conv net, trained on its own
batch of consecutive-frame pairs each step, sees enough. Its estimate enters the generator as a
direct path where an action is noisy and both frames around it are clean (inverse dynamics,
labeling): the action token receives it as an input and the x0 head adds it (detached), so the MoT
learns a correction on top of it.
"""

from __future__ import annotations

import torch
from torch import nn

from cosmos_robot.model.action_prior import prior_loss


class InversePrior(nn.Module):
    """Latent grids (before, after) -> the normalised action between them, per embodiment.

    Two 3x3 convolutions over (before, after, after - before) keep "where did something move"
    translation-equivariant; the flattened map then says where it happened, which sets how much an
    arm joint turned. One output projection per embodiment.

    Args:
        latent_channels: channels of the autoencoder's latent grid.
        grid: side of the latent grid.
        action_width: the shared (padded) action width.
        num_domains: embodiments (one output projection each).
        width: conv width.
        hidden: MLP width.
    """

    def __init__(
        self, latent_channels: int, grid: int, action_width: int, num_domains: int, width: int = 64, hidden: int = 256
    ) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3 * latent_channels, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Flatten(),
            nn.Linear(width * grid * grid, hidden),
            nn.GELU(approximate="tanh"),
        )
        self.out_weight = nn.Parameter(torch.randn(num_domains, hidden, action_width) / hidden**0.5)
        self.out_bias = nn.Parameter(torch.zeros(num_domains, action_width))

    def forward(self, before: torch.Tensor, after: torch.Tensor, domain: torch.Tensor) -> torch.Tensor:
        """before, after (N, C, h, w) latent grids, domain (N,) -> (N, action_width)."""
        features = self.net(torch.cat([before, after, after - before], 1))
        return torch.einsum("nh,nho->no", features, self.out_weight[domain]) + self.out_bias[domain]


def inverse_loss(predicted: torch.Tensor, actions: torch.Tensor, channels: torch.Tensor) -> torch.Tensor:
    """Mean squared error of the inverse prior over the embodiment's real channels; tensors (B, W).
    The action prior's loss on chunks of one action, all valid."""
    valid = torch.ones(predicted.shape[0], 1, dtype=torch.bool, device=predicted.device)
    return prior_loss(predicted[:, None], actions[:, None], channels, valid)
