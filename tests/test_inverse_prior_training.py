"""The inverse prior trained alone, and its held-out R² checked on an oracle and on broken predictions."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.datasets.training_set import TransitionTable
from cosmos_robot.inverse_prior_training import inverse_r2, train_inverse_prior
from cosmos_robot.model.config import preset
from cosmos_robot.model.network import WorldActionNetwork


def _table(network: WorldActionNetwork, rows: int = 96, seed: int = 0) -> TransitionTable:
    """Random latent frames of two embodiments (action widths 2 and 3), actions unset."""
    config = network.config
    g = torch.Generator().manual_seed(seed)
    latents = torch.randn(rows, config.tokens_per_frame, config.frame_token_dim, generator=g)
    domain = (torch.arange(rows) >= rows // 2).long()
    channels = torch.zeros(rows, config.action_width, dtype=torch.bool)
    channels[:, :2] = True
    channels[domain == 1, 2] = True
    states = torch.zeros(rows, config.state_width)
    first = torch.cat([torch.arange(0, rows // 2 - 1), torch.arange(rows // 2, rows - 1)])  # pairs within a half
    actions = torch.zeros(rows, config.action_width)
    return TransitionTable(latents, states, actions, domain, channels, channels[:, :0].new_ones(rows, 1), first)


def _with_actions(table: TransitionTable, actions: torch.Tensor) -> TransitionTable:
    return TransitionTable(
        table.latents, table.states, actions, table.domain, table.action_channels, table.state_channels, table.first
    )


@pytest.fixture(scope="module")
def network():
    torch.manual_seed(0)
    return WorldActionNetwork(preset("tiny"))


def test_r2_is_one_for_an_oracle_and_not_for_broken_predictions(network):
    table = _table(network)
    with torch.no_grad():
        predicted = network.inverse(table.take(torch.arange(len(table))))
    actions = torch.zeros_like(table.actions)
    actions[table.first] = predicted * table.action_channels[table.first]
    oracle = inverse_r2(network, _with_actions(table, actions))
    assert set(oracle) == {0, 1} and all(abs(v - 1.0) < 1e-5 for v in oracle.values())
    # Targets the prior does not predict: its R² is at or below zero (it explains none of their variance).
    g = torch.Generator().manual_seed(1)
    unrelated = torch.randn(actions.shape, generator=g) * table.action_channels
    broken = inverse_r2(network, _with_actions(table, unrelated))
    assert all(v < 0.05 for v in broken.values())


def test_training_alone_fits_the_pairs_and_changes_nothing_else(network):
    table = _table(network, seed=2)
    g = torch.Generator().manual_seed(3)
    # Actions that the pair's latents determine: a fixed linear read of the change between the frames.
    read = torch.randn(network.config.frame_token_dim, network.config.action_width, generator=g)
    change = table.latents[table.first + 1] - table.latents[table.first]
    actions = torch.zeros_like(table.actions)
    actions[table.first] = torch.tanh(change.mean(1) @ read) * table.action_channels[table.first]
    table = _with_actions(table, actions)
    others = {k: v.clone() for k, v in network.state_dict().items() if not k.startswith("inverse_prior.")}
    before = inverse_r2(network, table)
    losses = train_inverse_prior(network, table, steps=150, batch_size=32, lr=3e-3, seed=0, progress=False)
    after = inverse_r2(network, table)
    assert len(losses) == 150 and losses[-1] < losses[0]
    assert all(after[d] > before[d] + 0.3 for d in before)
    for key, value in network.state_dict().items():
        if key in others:
            torch.testing.assert_close(value, others[key], atol=0, rtol=0)
    with pytest.raises(ValueError, match="steps=0"):
        train_inverse_prior(network, table, steps=0, progress=False)
