"""Training the inverse prior alone, before the MoT (recipes with ``inverse_steps > 0``).

Beside the MoT the inverse prior gets ``inverse_batch`` frame pairs per MoT step, on the MoT's schedule:
a recipe with few MoT steps leaves it short of samples (a 250-step MoT took arm2's labels from R² 0.96
to 0.82; docs/results.md, "A recipe within the budget"). Alone it runs its own one-cycle schedule at a
fraction of a MoT step's cost and is then frozen, as the action prior is. Its only inputs are two frozen
latent grids, so where it is trained changes nothing else.
"""

from __future__ import annotations

import torch

from cosmos_robot.datasets.training_set import TransitionTable
from cosmos_robot.model.inverse_prior import inverse_loss
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.part_training import train_part
from cosmos_robot.phase_checkpoint import PhaseSaver

# Held-out pairs scored per forward pass (memory, not results, depends on it).
_CHUNK = 4096


@torch.no_grad()
def inverse_r2(network: WorldActionNetwork, table: TransitionTable) -> dict[int, float]:
    """R² of the inverse prior's actions on every pair of ``table`` (a held-out split), over the real action
    channels, per embodiment's domain id: 1 - residual / variance, each pooled over the channels."""
    predicted = torch.cat(
        [
            network.inverse(table.take(torch.arange(i, min(i + _CHUNK, len(table)))))
            for i in range(0, len(table), _CHUNK)
        ]
    )
    rows = table.first  # the frame each pair's action is taken at
    domains, actions, valid = table.domain[rows], table.actions[rows], table.action_channels[rows]
    scores = {}
    for domain in domains.unique().tolist():
        picked = domains == domain
        channels = valid[picked][0]
        truth = actions[picked][:, channels]
        guess = predicted[picked][:, channels].float()
        residual = ((guess - truth) ** 2).sum()
        variance = ((truth - truth.mean(0)) ** 2).sum()
        scores[int(domain)] = float(1.0 - residual / variance.clamp_min(1e-12))
    return scores


def train_inverse_prior(
    network: WorldActionNetwork,
    table: TransitionTable,
    steps: int,
    batch_size: int = 256,
    lr: float = 1e-3,
    seed: int = 0,
    progress: bool = True,
    saver: PhaseSaver | None = None,
) -> list[float]:
    """Train ``network.inverse_prior`` on consecutive-frame pairs of ``table``; returns the loss per step.

    Args:
        network: the world-action network whose inverse prior is trained (nothing else changes).
        table: consecutive-frame pairs (``TrainingSet.transitions()``).
        steps: optimiser steps.
        batch_size: pairs per step.
        lr: peak learning rate (one-cycle schedule).
        seed: seeds the batches.
        progress: show a progress bar.
        saver: checkpoints the loop (and resumes it from ``saver.resume_from``).
    """
    if len(table) == 0:
        raise ValueError("table has no frame pairs; expected the training split's transitions")

    def step_loss(rng: torch.Generator) -> torch.Tensor:
        batch = table.take(torch.randint(len(table), (batch_size,), generator=rng))
        return inverse_loss(network.inverse(batch), batch.actions, batch.action_channels)

    return train_part(network.inverse_prior, step_loss, steps, lr, seed, "inverse prior", progress, saver)
