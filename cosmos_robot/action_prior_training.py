"""Training the action prior alone, before the MoT (recipes with ``prior_steps > 0``).

Beside the MoT the prior gets ``prior_batch`` windows per MoT step, on the MoT's schedule: a recipe
with few MoT steps leaves it short of samples (the 60-minute recipe's arm2 policy; docs/results.md).
Alone it costs a tenth of a MoT step per step, runs its own one-cycle schedule, and is then frozen
like the forward prior. Its only inputs are the frozen latents and the state, so where it is trained
changes nothing else.
"""

from __future__ import annotations

import torch

from cosmos_robot.model.action_prior import prior_loss
from cosmos_robot.model.batches import PriorBatch
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.part_training import train_part
from cosmos_robot.phase_checkpoint import PhaseSaver


@torch.no_grad()
def prior_error(network: WorldActionNetwork, table: PriorBatch) -> dict[int, float]:
    """The prior's loss (MSE of normalised actions) on every window of ``table`` (a held-out split),
    per embodiment's domain id. The prior has no dropout or batch statistics: its mode does not matter."""
    errors = {}
    for domain in table.domain.unique().tolist():
        part = table.select(table.domain == domain)
        predicted = network.prior(part)
        errors[int(domain)] = float(prior_loss(predicted, part.actions, part.action_channels, part.action_valid))
    return errors


def train_action_prior(
    network: WorldActionNetwork,
    table: PriorBatch,
    steps: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    seed: int = 0,
    progress: bool = True,
    saver: PhaseSaver | None = None,
) -> list[float]:
    """Train ``network.action_prior`` on demonstration windows of ``table``; returns the loss per step.

    Args:
        network: the world-action network whose action prior is trained (nothing else changes).
        table: demonstration windows (``TrainingSet.demonstrations(PRIOR_CHUNK)``).
        steps: optimiser steps.
        batch_size: windows per step.
        lr: peak learning rate (one-cycle schedule).
        seed: seeds the batches.
        progress: show a progress bar.
        saver: checkpoints the loop (and resumes it from ``saver.resume_from``).
    """

    def step_loss(rng: torch.Generator) -> torch.Tensor:
        batch = table.select(torch.randint(len(table.domain), (batch_size,), generator=rng))
        return prior_loss(network.prior(batch), batch.actions, batch.action_channels, batch.action_valid)

    return train_part(network.action_prior, step_loss, steps, lr, seed, "action prior", progress, saver)
