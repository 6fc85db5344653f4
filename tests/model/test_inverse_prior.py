"""The inverse-dynamics prior reads motion between two latent grids and learns it."""

from __future__ import annotations

import torch

from cosmos_robot.model.inverse_prior import InversePrior, inverse_loss


def test_it_learns_where_a_blob_moved():
    torch.manual_seed(0)
    prior = InversePrior(latent_channels=2, grid=8, action_width=4, num_domains=2, width=16, hidden=32)
    optimizer = torch.optim.Adam(prior.parameters(), lr=3e-3)

    def batch(n: int = 64) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        start = torch.randint(1, 6, (n, 2))
        move = torch.randint(-1, 2, (n, 2))
        before, after = torch.zeros(n, 2, 8, 8), torch.zeros(n, 2, 8, 8)
        rows = torch.arange(n)
        before[rows, 0, start[:, 0], start[:, 1]] = 1.0
        after[rows, 0, start[:, 0] + move[:, 0], start[:, 1] + move[:, 1]] = 1.0
        return before, after, torch.cat([move.float(), torch.zeros(n, 2)], 1)

    channels = torch.tensor([[True, True, False, False]]).expand(64, -1)
    domain = torch.zeros(64, dtype=torch.long)
    for _ in range(150):
        before, after, target = batch()
        loss = inverse_loss(prior(before, after, domain), target, channels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    before, after, target = batch()
    with torch.no_grad():
        final = inverse_loss(prior(before, after, domain), target, channels)
    assert final < 0.1 * target[:, :2].var()  # well below predicting the mean move
