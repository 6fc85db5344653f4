"""Fitting the decoder to the forward prior's rollouts: the last step of the forward prior's phase.

The decoder learns to draw the encoder's latents of real frames; a learned env decodes the prior's
predictions, which are not quite such latents. Where two objects share a latent cell (the pusher over
the goal disc, arm2's fingertip over the block) a prediction holds the smaller one more weakly than a
real frame's latent does, and the autoencoder's decoder drew the cell in the larger object's colour:
point's pusher vanished from 37 % of the imagined frames where it crossed the goal. Fine-tuned on pairs
of (rollout latent, the real frame of that step), beside the clean latent of each sequence's first
frame so that reconstructions stay as they were, it reads the effector there (docs/results.md).

The prior is frozen and its rollout never passes through the decoder (an env decodes for the
observation only), so this changes what the env shows, not what it simulates. Pixels that moved since
the previous real frame weigh more: the effector moves every step and is a few pixels of a frame.

A model that carries the block draws its frames with the object's drawer, not the prior
(:mod:`cosmos_robot.model.object_pose`): fitted to the drawer's rollouts instead (``drawer=True``, the
drawer told the recorded poses and effectors), the decoder reads the latents the env decodes; measured,
the effector and the block land 0.3-0.8 mm closer to MuJoCo's (docs/results.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from cosmos_robot.autoencoder_training import object_weights
from cosmos_robot.datasets.training_set import TrainingSet, TransitionTable
from cosmos_robot.metrics import psnr
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.stems import grid_tokens
from cosmos_robot.model.tokenizers import FrameAutoencoder, float_to_frames, frames_to_float
from cosmos_robot.object_pose_training import drawer_rollout, told_poses
from cosmos_robot.part_training import train_part
from cosmos_robot.phase_checkpoint import PhaseSaver

# A pixel has moved when a channel changed by more than this (in [-1, 1] units: ~13 grey levels),
# above the renderer's anti-aliasing flicker and below any object's contrast with the table.
MOVED_LEVEL = 0.1


def _check(table: TransitionTable, frames_nhwc: torch.Tensor, frames_per_sequence: int) -> None:
    if len(frames_nhwc) != len(table.latents):
        raise ValueError(
            f"frames_nhwc has {len(frames_nhwc)} frames but the table {len(table.latents)} rows; expected the "
            "frames in the table's row order (TrainingSet.transition_frames)"
        )
    if not 1 <= frames_per_sequence <= table.steps:
        raise ValueError(f"frames_per_sequence={frames_per_sequence}; expected 1..{table.steps} (the table's steps)")


# Rolls the sequences ``index`` of a table: their drawn grids (B, R, C, h, w).
Roll = Callable[[TransitionTable, torch.Tensor], torch.Tensor]


def prior_roll(network: WorldActionNetwork) -> Roll:
    """The forward prior's rollouts."""
    return lambda table, index: network.forward_sequence(table.take_sequences(index))[0]


def drawer_roll(network: WorldActionNetwork, data: TrainingSet, split: str) -> Roll:
    """The object's drawer's rollouts on ``data``'s ``split``, told the recorded poses and effectors
    (:func:`cosmos_robot.object_pose_training.drawer_rollout`)."""
    told = told_poses(network, data, split)
    return lambda table, index: drawer_rollout(network, told, table, index)[0]


def _pairs(
    autoencoder: FrameAutoencoder,
    network: WorldActionNetwork,
    table: TransitionTable,
    index: torch.Tensor,
    steps: torch.Tensor,
    roll: Roll | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(latents the decoder reads, the table rows of their real frames, the rows one step earlier): each
    sequence's clean first frame (its own row as the earlier one: nothing moved), then its rollout at
    ``steps`` (B, k) (0-based action index), rolled by ``roll`` (the forward prior's when None)."""
    config = network.config
    roll = roll or prior_roll(network)
    with torch.no_grad():
        grids = roll(table, index)  # (B, R, C, h, w)
        picked = grids[torch.arange(len(index))[:, None], steps].flatten(0, 1).float()
        first = table.first[index]
        latents = torch.cat(
            [
                autoencoder.tokens_to_latents(table.latents[first], config.latent_grid),
                autoencoder.tokens_to_latents(grid_tokens(picked[:, None], config)[:, 0], config.latent_grid),
            ]
        )
    stepped = (first[:, None] + 1 + steps).flatten()
    return latents, torch.cat([first, stepped]), torch.cat([first, stepped - 1])


def train_decoder_on_rollouts(
    autoencoder: FrameAutoencoder,
    network: WorldActionNetwork,
    table: TransitionTable,
    frames_nhwc: torch.Tensor,
    steps: int = 1000,
    sequences: int = 16,
    frames_per_sequence: int = 3,
    lr: float = 2e-3,
    object_weight: float = 10.0,
    motion_weight: float = 4.0,
    seed: int = 0,
    progress: bool = True,
    saver: PhaseSaver | None = None,
    roll: Roll | None = None,
) -> list[float]:
    """Fine-tune ``autoencoder.decoder`` on the frozen forward prior's rollouts (or ``roll``'s); returns the
    loss per step.

    Args:
        autoencoder: its decoder is trained (nothing else of it changes).
        network: its forward prior makes the rollouts (frozen here).
        table: sequences of ``table.steps`` actions (``TrainingSet.transitions(steps=...)``).
        frames_nhwc: uint8 (N, H, W, 3), the real frame of each of the table's rows.
        steps: optimiser steps.
        sequences: rollouts per step.
        frames_per_sequence: rollout steps drawn at random from each (beside its clean first frame).
        lr: peak learning rate (one-cycle schedule).
        object_weight: the autoencoder's weight on pixels far from the background colour.
        motion_weight: extra weight (times the object weight) on pixels that changed since the last frame.
        seed: seeds the batches.
        progress: show a progress bar.
        saver: checkpoints the loop (and resumes it from ``saver.resume_from``).
        roll: makes the rollouts (:func:`drawer_roll`; None: the forward prior's, :func:`prior_roll`).
    """
    _check(table, frames_nhwc, frames_per_sequence)
    if network.forward_prior is None:
        raise ValueError("the network has no forward prior (ModelConfig.forward_prior=False); nothing to roll out")

    def step_loss(rng: torch.Generator) -> torch.Tensor:
        index = torch.randint(len(table), (sequences,), generator=rng)
        picked = torch.rand(sequences, table.steps, generator=rng).argsort(1)[:, :frames_per_sequence]
        latents, rows, earlier = _pairs(autoencoder, network, table, index, picked, roll)
        real, before = frames_to_float(frames_nhwc[rows]), frames_to_float(frames_nhwc[earlier])
        moved = ((real - before).abs().amax(1, keepdim=True) > MOVED_LEVEL).to(real.dtype)
        weight = object_weights(real, object_weight) * (1.0 + motion_weight * moved)
        error = autoencoder.decoder(latents) - real
        return ((error.abs() + error.pow(2)) * weight).mean() / weight.mean()

    trainable = [p.requires_grad for p in autoencoder.decoder.parameters()]
    autoencoder.decoder.requires_grad_(True)
    try:
        return train_part(autoencoder.decoder, step_loss, steps, lr, seed, "decoder on rollouts", progress, saver, None)
    finally:
        for parameter, flag in zip(autoencoder.decoder.parameters(), trainable, strict=True):
            parameter.requires_grad_(flag)
        autoencoder.decoder.eval()


@torch.no_grad()
def rollout_decode_psnr(
    autoencoder: FrameAutoencoder,
    network: WorldActionNetwork,
    table: TransitionTable,
    frames_nhwc: torch.Tensor,
    sequences: int = 256,
    seed: int = 0,
    roll: Roll | None = None,
) -> float:
    """PSNR (dB) of the decoded rollouts (the forward prior's, or ``roll``'s) of (up to) ``sequences`` of
    ``table`` against the real frames, over every rollout step and the clean first frames (a held-out split
    measures the decoder)."""
    _check(table, frames_nhwc, table.steps)
    index = torch.randperm(len(table), generator=torch.Generator().manual_seed(seed))[:sequences]
    every = torch.arange(table.steps).expand(len(index), -1)
    decoded, rows = [], []
    for part in range(0, len(index), 64):
        latents, part_rows, _ = _pairs(
            autoencoder, network, table, index[part : part + 64], every[part : part + 64], roll
        )
        decoded.append(float_to_frames(autoencoder.decode(latents)))
        rows.append(part_rows)
    return psnr(frames_nhwc[torch.cat(rows)], torch.cat(decoded))


def fit_decoder_to_rollouts(
    autoencoder: FrameAutoencoder,
    network: WorldActionNetwork,
    data: TrainingSet,
    rollout: int,
    steps: int,
    object_weight: float,
    seed: int,
    progress: bool = True,
    drawer: bool = False,
) -> dict[str, float]:
    """:func:`train_decoder_on_rollouts` on ``data``'s train split (sequences of ``rollout`` actions), measured
    on its held-out split before and after (``psnr_before``, ``psnr_after``, dB) with the ``seconds`` it took:
    the step ``train`` runs after the forward prior (or, with ``drawer``, after the object), and
    ``scripts/refit_fast_parts.py`` on a checkpoint. With ``drawer``, on the object's drawer's rollouts
    (:func:`drawer_roll`), measured on them too."""
    started = time.perf_counter()
    if drawer and network.object_pose is None:
        raise ValueError("drawer=True but the network carries no object (nor its drawer); expected drawer=False")
    roll, held_roll = (
        (drawer_roll(network, data, "train"), drawer_roll(network, data, "val")) if drawer else (None, None)
    )
    held_out = (data.transitions("val", steps=rollout), data.transition_frames("val"))
    before = rollout_decode_psnr(autoencoder, network, *held_out, roll=held_roll)
    train_decoder_on_rollouts(
        autoencoder,
        network,
        data.transitions(steps=rollout),
        data.transition_frames(),
        steps=steps,
        object_weight=object_weight,
        seed=seed,
        progress=progress,
        roll=roll,
    )
    after = rollout_decode_psnr(autoencoder, network, *held_out, roll=held_roll)
    return {"psnr_before": before, "psnr_after": after, "seconds": time.perf_counter() - started}
