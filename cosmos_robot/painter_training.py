"""Training the effector painter (:mod:`cosmos_robot.model.painter`): the last step of the object's parts.

The painter corrects what the decoder draws of the object's drawer's rollouts, so it trains on exactly
those frames: the drawer rolls the data's sequences teacher-forced with the recorded poses and effectors
(as the decoder's fit does), the decoder -- already fitted to those rollouts -- draws them, and the painter
learns to turn each drawn frame into the real frame of that step, told the effector's place by the object's
effector map of the recorded state (as the env tells it, from the state it carries). Both are frozen here;
the drawn frames are computed once, before the loop, so a step costs the painter's small windows alone.
Pixels that moved since the previous real frame weigh more, as in the decoder's fit: the effector moves every
step and is a few pixels of a frame.
"""

from __future__ import annotations

import time

import torch

from cosmos_robot.autoencoder_training import object_weights
from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.metrics import psnr
from cosmos_robot.model.batches import SequenceBatch
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.object_pose import ObjectPose
from cosmos_robot.model.painter import EffectorPainter
from cosmos_robot.model.stems import grid_tokens
from cosmos_robot.model.tokenizers import FrameAutoencoder, float_to_frames, frames_to_float
from cosmos_robot.object_pose_training import drawer_rollout, told_poses
from cosmos_robot.part_training import train_part
from cosmos_robot.rollout_decoder_training import MOVED_LEVEL

# Rollouts drawn for the painter's training frames (each gives ``rollout`` frames) and for its held-out ones.
TRAIN_SEQUENCES = 1500
HELD_OUT_SEQUENCES = 300


def _effector_places(objects: ObjectPose, batch: SequenceBatch, rollout: int) -> torch.Tensor:
    """The effector (B * rollout, 2, metres) after each step of a batch of sequences, by the object's effector map
    of the recorded states: the map the learned env paints with (measured, it halves the fingertips painted where
    MuJoCo's frame shows none against the robot's kinematics; docs/results.md)."""
    after = batch.states[:, 1:].flatten(0, 1) * batch.state_channels.repeat_interleave(rollout, 0)
    domains = batch.domain.repeat_interleave(rollout)
    places = torch.zeros(len(after), 2)
    for domain in domains.unique().tolist():
        if objects.carries(domain):
            rows = domains == domain
            places[rows] = objects.effector_of(after[rows].float(), domain)
    return places


class DrawnFrames:
    """Frames the decoder drew of the drawer's rollouts on one split, beside what the painter needs to fit
    them: ``drawn`` uint8 (N, H, W, 3), ``real`` and ``before`` (N, H, W, 3: the real frame of the step and of
    the step before), ``places`` (N, 2, metres: the effector by the object's map of the recorded state), ``rows``
    (N,: the split's table rows of the real frames)."""

    def __init__(
        self,
        network: WorldActionNetwork,
        autoencoder: FrameAutoencoder,
        data: TrainingSet,
        split: str,
        rollout: int,
        sequences: int,
        seed: int,
    ) -> None:
        objects, config = network.object_pose, network.config
        table = data.transitions(split, steps=rollout)
        told = told_poses(network, data, split)
        carried = torch.nonzero(told.known[table.first]).flatten()
        if not len(carried):
            raise ValueError(f"no sequence of the {split!r} split carries the object; nothing to paint")
        order = torch.randperm(len(carried), generator=torch.Generator().manual_seed(seed))
        index = carried[order[:sequences]]
        drawn, rows, places = [], [], []
        with torch.no_grad():
            for part in index.split(64):
                rolled, _, batch, _ = drawer_rollout(network, told, table, part)
                grids = rolled.flatten(0, 1).float()
                places.append(_effector_places(objects, batch, rollout))
                tokens = grid_tokens(grids[:, None], config)[:, 0]
                drawn.append(
                    float_to_frames(autoencoder.decoder(autoencoder.tokens_to_latents(tokens, config.latent_grid)))
                )
                rows.append((table.first[part][:, None] + 1 + torch.arange(rollout)).flatten())
        row = torch.cat(rows)
        frames = data.transition_frames(split)
        self.drawn, self.real, self.before = torch.cat(drawn), frames[row], frames[row - 1]
        self.places, self.rows = torch.cat(places), row

    def __len__(self) -> int:
        return len(self.drawn)


def painter_loss(
    painter: EffectorPainter, frames: DrawnFrames, index: torch.Tensor, object_weight: float
) -> torch.Tensor:
    """The decoder's fit's loss (L1 + MSE, objects and moved pixels weighted) of the painted frames ``index``."""
    drawn, real = frames_to_float(frames.drawn[index]), frames_to_float(frames.real[index])
    before = frames_to_float(frames.before[index])
    moved = ((real - before).abs().amax(1, keepdim=True) > MOVED_LEVEL).to(real.dtype)
    weight = object_weights(real, object_weight) * (1.0 + 4.0 * moved)
    error = painter(drawn, frames.places[index]) - real
    return ((error.abs() + error.pow(2)) * weight).mean() / weight.mean()


@torch.no_grad()
def painted_psnr(painter: EffectorPainter | None, frames: DrawnFrames) -> float:
    """PSNR (dB) of the drawn frames, painted by ``painter`` (None: as drawn), against the real ones."""
    if painter is None:
        return psnr(frames.real, frames.drawn)
    return psnr(frames.real, painter.paint(frames.drawn, frames.places))


def fit_painter(
    network: WorldActionNetwork,
    autoencoder: FrameAutoencoder,
    data: TrainingSet,
    rollout: int,
    steps: int,
    object_weight: float,
    seed: int,
    batch_size: int = 128,
    lr: float = 2e-3,
    progress: bool = True,
) -> dict[str, float]:
    """Train the object's painter ``steps`` steps on the decoded drawer rollouts (``rollout`` actions each) of
    ``data``'s train split; returns the held-out PSNR of the drawn frames before and after painting (dB) and
    the ``seconds`` it took.

    Args:
        network: its object holds the painter (``ModelConfig.object_painter``) and the drawer (frozen here).
        autoencoder: its decoder draws the rollouts (frozen here).
        data: the training set (prepared with ``autoencoder``).
        rollout: actions per drawn sequence.
        steps: optimiser steps.
        object_weight: the autoencoder's weight on pixels far from the background colour.
        seed: seeds the sequences drawn and the batches.
        batch_size: frames per step.
        lr: peak learning rate (one-cycle schedule).
        progress: show a progress bar.
    """
    started = time.perf_counter()
    objects = network.object_pose
    if objects is None or objects.painter is None:
        raise ValueError("the network's object holds no painter (ModelConfig.object_painter=False); nothing to fit")
    train = DrawnFrames(network, autoencoder, data, "train", rollout, TRAIN_SEQUENCES, seed)
    held_out = DrawnFrames(network, autoencoder, data, "val", rollout, HELD_OUT_SEQUENCES, seed + 1)
    painter = objects.painter.float()

    def step_loss(rng: torch.Generator) -> torch.Tensor:
        return painter_loss(painter, train, torch.randint(len(train), (batch_size,), generator=rng), object_weight)

    painter.requires_grad_(True)
    try:
        train_part(painter, step_loss, steps, lr, seed, "effector painter", progress)
    finally:
        painter.requires_grad_(False).eval()
    return {
        "psnr_drawn": painted_psnr(None, held_out),
        "psnr_painted": painted_psnr(painter, held_out),
        "seconds": time.perf_counter() - started,
    }
