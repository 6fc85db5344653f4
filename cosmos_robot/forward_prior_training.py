"""Training the forward prior: the second phase of ``train``, after the autoencoder, before the MoT.

The prior is trained alone on the frozen latents and then frozen, so the MoT learns its correction
against the rollout it will be given at inference, not against a target that moves while it trains.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cosmos_robot.datasets.training_set import TransitionTable
from cosmos_robot.model.forward_prior import rollout_loss
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.stems import latent_grids
from cosmos_robot.part_training import train_part
from cosmos_robot.phase_checkpoint import PhaseSaver


@dataclass
class RolloutError:
    """Held-out error of the prior's rollout at its last step, against copying the first frame.

    Attributes:
        latent_mse: latent MSE of the rollout's last grid.
        copy_mse: latent MSE of the first grid at that step (what "nothing moves" scores).
        state_rmse: RMS error of the last state, normalised units, real channels.
    """

    latent_mse: float
    copy_mse: float
    state_rmse: float


@torch.no_grad()
def rollout_error(
    network: WorldActionNetwork, table: TransitionTable, samples: int = 2048, seed: int = 0
) -> RolloutError:
    """The prior's rollout error on (up to) ``samples`` sequences of ``table`` (a held-out split)."""
    rng = torch.Generator().manual_seed(seed)
    index = torch.randperm(len(table), generator=rng)[:samples]
    batch = table.take_sequences(index)
    grids, states = network.forward_sequence(batch)
    targets = latent_grids(batch.frames, network.config)
    mask = batch.state_channels.to(states.dtype)
    return RolloutError(
        latent_mse=float((grids[:, -1] - targets[:, -1]).pow(2).mean()),
        copy_mse=float((targets[:, 0] - targets[:, -1]).pow(2).mean()),
        state_rmse=float((((states[:, -1] - batch.states[:, -1]) * mask).pow(2).sum() / mask.sum()).sqrt()),
    )


def train_forward_prior(
    network: WorldActionNetwork,
    table: TransitionTable,
    steps: int = 3000,
    batch_size: int = 128,
    lr: float = 2e-3,
    seed: int = 0,
    progress: bool = True,
    saver: PhaseSaver | None = None,
) -> list[float]:
    """Train ``network.forward_prior`` on rollouts of ``table``'s sequences; returns the loss per step.

    Args:
        network: the world-action network whose forward prior is trained (nothing else changes).
        table: sequences of ``table.steps`` actions (``TrainingSet.transitions(steps=...)``).
        steps: optimiser steps.
        batch_size: sequences per step.
        lr: peak learning rate (one-cycle schedule).
        seed: seeds the batches.
        progress: show a progress bar.
        saver: checkpoints the loop (and resumes it from ``saver.resume_from``).
    """

    def step_loss(rng: torch.Generator) -> torch.Tensor:
        batch = table.take_sequences(torch.randint(len(table), (batch_size,), generator=rng))
        grids, states = network.forward_sequence(batch)
        targets = latent_grids(batch.frames, network.config)
        return rollout_loss(grids, states, targets, batch.states, batch.state_channels)

    return train_part(network.forward_prior, step_loss, steps, lr, seed, "forward prior", progress, saver)
