"""Training the forward prior: the second phase of ``train``, after the autoencoder, before the MoT.

The prior is trained alone on the frozen latents and then frozen, so the MoT learns its correction
against the rollout it will be given at inference, not against a target that moves while it trains.
"""

from __future__ import annotations

import time
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


# Rows per batch of the state head's fit: its inputs are computed once, so a step is a small MLP's.
STATE_HEAD_BATCH = 1024


@dataclass
class StateHeadExamples:
    """The state head's inputs and targets for every row of a transition table (one step each).

    Attributes:
        inputs: (N, F) what the head reads (:meth:`ForwardPrior.trunk_step`), computed by the trained trunk.
        actions: (N, W) normalised actions.
        domain: (N,) embodiment ids.
        targets: (N, S) the recorded normalised state change, zero on padded channels.
        channels: (N, S) the real state channels (float mask).
    """

    inputs: torch.Tensor
    actions: torch.Tensor
    domain: torch.Tensor
    targets: torch.Tensor
    channels: torch.Tensor

    def loss(self, network: WorldActionNetwork, rows: torch.Tensor | slice = slice(None)) -> torch.Tensor:
        """Masked MSE of the prior's state change on ``rows``."""
        predicted = network.forward_prior.state_head(self.inputs[rows], self.actions[rows], self.domain[rows])
        mask = self.channels[rows]
        return ((predicted - self.targets[rows]).pow(2) * mask).sum() / mask.sum().clamp_min(1.0)


@torch.no_grad()
def state_head_examples(network: WorldActionNetwork, table: TransitionTable, batch: int = 1024) -> StateHeadExamples:
    """The state head's examples of every one-step run of ``table`` (``TrainingSet.transitions(steps=1)``),
    the trunk run once per row as in the env (no autograd)."""
    if table.steps != 1:
        raise ValueError(f"table.steps={table.steps}; expected a table of one-step runs (transitions(steps=1))")
    prior = network.forward_prior
    inputs, targets = [], []
    for start in range(0, len(table), batch):
        rows = table.first[start : start + batch]
        grid = latent_grids(table.latents[rows][:, None], network.config)[:, 0].float()
        channels = table.state_channels[rows]
        state, action = table.states[rows].float() * channels, table.actions[rows].float() * table.action_channels[rows]
        inputs.append(prior.trunk_step(grid, state, action, table.domain[rows])[1].float())
        targets.append((table.states[rows + 1] - table.states[rows]).float() * channels)
    rows = table.first
    return StateHeadExamples(
        torch.cat(inputs),
        table.actions[rows].float() * table.action_channels[rows],
        table.domain[rows],
        torch.cat(targets),
        table.state_channels[rows].float(),
    )


class _StateHead(torch.nn.Module):
    """The prior's state head as one module (its own parameters, shared): what :func:`fit_state_head` trains."""

    def __init__(self, prior: torch.nn.Module) -> None:
        super().__init__()
        self.mlp = prior.state_mlp
        self.weight, self.bias, self.action = prior.state_weight, prior.state_bias, prior.state_action


def fit_state_head(
    network: WorldActionNetwork,
    train: TransitionTable,
    val: TransitionTable,
    steps: int,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, float]:
    """Fit the forward prior's state head (its MLP and its linear action term) to one-step state changes,
    the trunk frozen; returns the held-out state MSE before and after and the seconds it took.

    The prior's rollout loss weighs the frames, and its state came out at 3x the error of integrating
    arm2's joint-velocity commands; a head fitted on its own, with the action's linear term, learns the
    integration (docs/results.md). The trunk reads the state too, so the grid rollout follows the better
    state; the trunk itself is not changed.

    Args:
        network: a network whose forward prior has ``state_action`` (``ModelConfig.forward_state_action``).
        train: one-step runs to fit on (``TrainingSet.transitions("train", 1)``).
        val: one-step runs to measure on.
        steps: optimiser steps (batches of :data:`STATE_HEAD_BATCH` rows).
        seed: seeds the batches.
        progress: show a progress bar.
    """
    prior = network.forward_prior
    if prior is None or prior.state_action is None:
        raise ValueError(
            "the network's forward prior has no linear action term; expected ModelConfig.forward_prior=True "
            "and forward_state_action=True"
        )
    if steps < 1:
        raise ValueError(f"steps={steps!r}; expected a positive integer")
    started = time.perf_counter()
    examples, held_out = state_head_examples(network, train), state_head_examples(network, val)
    with torch.no_grad():
        before = float(held_out.loss(network))
    head = _StateHead(prior)
    was = [p.requires_grad for p in head.parameters()]
    head.requires_grad_(True)

    def step_loss(rng: torch.Generator) -> torch.Tensor:
        return examples.loss(network, torch.randint(len(examples.inputs), (STATE_HEAD_BATCH,), generator=rng))

    try:
        train_part(head, step_loss, steps, 1e-3, seed, "forward prior's state head", progress)
    finally:
        for parameter, flag in zip(head.parameters(), was, strict=True):
            parameter.requires_grad_(flag)
        network.eval()
    with torch.no_grad():
        after = float(held_out.loss(network))
    return {"state_mse_before": before, "state_mse_after": after, "seconds": time.perf_counter() - started}
