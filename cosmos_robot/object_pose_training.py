"""Teaching a trained forward prior to carry a pushed object's pose (:mod:`cosmos_robot.model.object_pose`).

Runs after the forward prior's stages, on the embodiments whose datasets record the block's pose
(``observation.environment_state``, x, y, yaw first: the PushBlock robots, whose effector the kinematics
in ``envs.push_block`` give):

1. the pose readout, on the latents of every training frame and its recorded pose;
2. per embodiment, the effector map (normalised agent state -> effector, by the robot's kinematics)
   and the push MLP (the recorded push of every training step, in the block's frame);
3. the drawer, a copy of the trained prior given two maps per pose (``ForwardPrior.add_inputs``), on
   rollouts of the recorded sequences teacher-forced with the recorded poses (the sequences of an
   embodiment without the object get the maps at zero).

The forward prior and the MoT are not changed: agent states, reward and success stay as they were.
"""

from __future__ import annotations

import copy
import dataclasses
import time

import numpy as np
import torch
from torch import nn

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.push_block import effector_from_state
from cosmos_robot.envs.push_block_scene import TABLE_HALF
from cosmos_robot.keys import ACTION, OBS_ENV_STATE, OBS_STATE
from cosmos_robot.model.forward_prior import rollout_loss
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.object_pose import POSE_MAPS, PUSH_SCALE, ObjectPose, PoseReadout, block_frame, fold, step_maps
from cosmos_robot.model.stems import latent_grids
from cosmos_robot.part_training import train_part

# A step that moves the block more than this (mm) counts as a push in the report.
PUSHED_MM = 2.0


def object_embodiments(data: TrainingSet) -> list[str]:
    """The embodiments of ``data`` whose datasets record the block's pose and whose effector is known."""
    return sorted(
        name for name, part in data.data.items() if name in PUSH_BLOCK_IDS and OBS_ENV_STATE in part.train.episodes.data
    )


def attach_object_pose(network: WorldActionNetwork, domains: tuple[int, ...], half_extent: float = TABLE_HALF) -> None:
    """Give ``network`` an untrained :class:`ObjectPose` for ``domains`` whose drawer is a copy of its prior
    given the maps' inputs (zero-weighted: it draws what the prior draws), and record it in its config."""
    if network.forward_prior is None:
        raise ValueError("the network has no forward prior (ModelConfig.forward_prior=False); nothing draws the object")
    if network.object_pose is not None:
        raise ValueError(f"the network already carries an object for domains {list(network.object_pose.domains)}")
    config = network.config
    drawer = copy.deepcopy(network.forward_prior)
    drawer.add_inputs(POSE_MAPS)
    network.object_pose = ObjectPose(
        config.latent_channels, config.state_width, config.action_width, domains, half_extent, drawer
    ).to(next(network.forward_prior.parameters()).device)
    network.config = dataclasses.replace(config, object_pose_domains=tuple(domains), object_half_extent=half_extent)


def _rows_poses(data: TrainingSet, split: str, names: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Every row's recorded pose (N, 3) of ``data.transitions(split)``'s order, and which rows have one (the
    rows of embodiments ``names``)."""
    poses, known = [], []
    for name in sorted(data.data):
        episodes = getattr(data.data[name], split).episodes
        rows = len(episodes.data[OBS_STATE])
        if name in names:
            poses.append(np.asarray(episodes.data[OBS_ENV_STATE], np.float32)[:, :3])
            known.append(np.ones(rows, bool))
        else:
            poses.append(np.zeros((rows, 3), np.float32))
            known.append(np.zeros(rows, bool))
    return torch.from_numpy(np.concatenate(poses)), torch.from_numpy(np.concatenate(known))


def _push_examples(data: TrainingSet, name: str, objects: ObjectPose) -> tuple[torch.Tensor, torch.Tensor]:
    """The push MLP's inputs (N, F) and targets (N, 3) of every training step of embodiment ``name``."""
    episodes = data.data[name].train.episodes
    states = np.asarray(episodes.data[OBS_STATE], np.float64)
    actions = torch.from_numpy(data.processor.actions_in(name, np.asarray(episodes.data[ACTION])))
    poses = torch.from_numpy(np.asarray(episodes.data[OBS_ENV_STATE], np.float64)[:, :3]).float()
    effector = torch.from_numpy(effector_from_state(name, states)).float()
    inputs, targets = [], []
    start = 0
    for end in episodes.episode_ends:
        t = torch.arange(start, int(end) - 1)
        before = torch.clamp(t - 1, min=start)
        inputs.append(
            objects.push_features(poses[t], poses[before], effector[before], effector[t], effector[t + 1], actions[t])
        )
        yaw = fold(poses[t, 2])
        moved = block_frame(poses[t + 1, :2] - poses[t, :2], yaw)
        turned = fold(poses[t + 1, 2] - poses[t, 2])[:, None]
        targets.append(torch.cat([moved, turned], 1) * torch.tensor(PUSH_SCALE))
        start = int(end)
    return torch.cat(inputs), torch.cat(targets)


def _fit(module: nn.Module, loss: callable, steps: int, lr: float, seed: int, label: str, progress: bool) -> float:
    """Train ``module`` on ``loss(rng)`` and return the last loss."""
    module.requires_grad_(True).train()
    try:
        losses = train_part(module, loss, steps, lr, seed, label, progress, None)
    finally:
        module.requires_grad_(False).eval()
    return float(losses[-1]) if losses else float("nan")


def fit_readout(
    readout: PoseReadout, grids: torch.Tensor, poses: torch.Tensor, steps: int, seed: int, progress: bool = True
) -> float:
    """Fit ``readout`` to latent grids (N, C, h, w) and their recorded poses (N, 3); returns the last loss."""
    targets = PoseReadout.targets(poses)

    def readout_loss(rng: torch.Generator) -> torch.Tensor:
        index = torch.randint(len(grids), (256,), generator=rng)
        return nn.functional.smooth_l1_loss(readout(grids[index]), targets[index], beta=0.2)

    return _fit(readout, readout_loss, steps, 3e-3, seed, "object readout", progress)


def fit_object_pose(
    network: WorldActionNetwork,
    data: TrainingSet,
    fit_steps: int,
    prior_steps: int,
    rollout: int,
    seed: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    progress: bool = True,
) -> dict[str, float]:
    """Train the object's parts of ``network`` on ``data`` (whose latents are prepared); returns held-out
    errors and the seconds it took.

    Args:
        network: a network with a trained forward prior and an untrained object (built with
            ``ModelConfig.object_pose_domains``, or given one by :func:`attach_object_pose`).
        data: the training set (its train split trains, its val split measures).
        fit_steps: optimiser steps of the readout and of each embodiment's effector map and push MLP.
        prior_steps: steps of the prior's training with the maps (0: the prior is left as it is).
        rollout: actions per training sequence of the prior.
        seed: seeds every part.
        batch_size: sequences per prior step.
        lr: the prior's peak learning rate (one-cycle).
        progress: show progress bars.
    """
    started = time.perf_counter()
    if fit_steps < 1 or prior_steps < 0:
        raise ValueError(f"fit_steps={fit_steps}, prior_steps={prior_steps}; expected fit_steps >= 1, prior_steps >= 0")
    objects = network.object_pose
    if objects is None:
        raise ValueError(
            "the network carries no object (ModelConfig.object_pose_domains is empty); see attach_object_pose"
        )
    names = [n for n in object_embodiments(data) if objects.carries(data.data[n].embodiment.domain_id)]
    if not names:
        raise ValueError(
            f"no dataset of {sorted(data.data)} records the pose of the object of domains {objects.domains}"
        )
    config = network.config
    domains = tuple(data.data[n].embodiment.domain_id for n in names)
    report: dict[str, float] = {}

    # 1. The readout, on every training frame that has a pose.
    poses, known = _rows_poses(data, "train", names)
    table = data.transitions("train", 1)
    grids = latent_grids(table.latents[known][:, None], config)[:, 0].float()
    fit_readout(objects.readout, grids, poses[known], fit_steps, seed, progress)
    val_poses, val_known = _rows_poses(data, "val", names)
    val_grids = latent_grids(data.transitions("val", 1).latents[val_known][:, None], config)[:, 0].float()
    with torch.no_grad():
        read = torch.cat([objects.readout.poses(val_grids[i : i + 1024]) for i in range(0, len(val_grids), 1024)])
    report["readout_mm"] = float((read[:, :2] - val_poses[val_known][:, :2]).norm(dim=-1).mean() * 1000.0)

    # 2. Per embodiment: the effector map and the push MLP.
    for name, domain in zip(names, domains, strict=True):
        episodes = data.data[name].train.episodes
        raw = np.asarray(episodes.data[OBS_STATE], np.float64)
        states = torch.from_numpy(data.processor.states_in(name, raw))
        effector = torch.from_numpy(effector_from_state(name, raw)).float()

        def effector_loss(rng: torch.Generator, states=states, effector=effector, domain=domain) -> torch.Tensor:
            index = torch.randint(len(states), (512,), generator=rng)
            return (objects.effector_of(states[index], domain) - effector[index]).pow(2).sum(-1).mean() * 1e4

        _fit(objects.effector[str(domain)], effector_loss, fit_steps, 2e-3, seed + 1, f"{name} effector map", progress)
        with torch.no_grad():
            report[f"{name}_effector_mm"] = float(
                (objects.effector_of(states, domain) - effector).norm(dim=-1).mean() * 1e3
            )

        x, y = _push_examples(data, name, objects)
        k = objects.domains.index(domain)
        objects.push_mean[k] = x.mean(0)
        objects.push_std[k] = x.std(0) + 1e-6

        def push_loss(rng: torch.Generator, x=x, y=y, domain=domain) -> torch.Tensor:
            index = torch.randint(len(x), (512,), generator=rng)
            return (objects.push_change(x[index], domain) - y[index]).pow(2).mean()

        _fit(objects.push[str(domain)], push_loss, fit_steps, 2e-3, seed + 2, f"{name} push", progress)
        with torch.no_grad():
            error = (objects.push_change(x, domain) - y)[:, :2].norm(dim=-1) / PUSH_SCALE[0] * 1000.0
            pushed = y[:, :2].norm(dim=-1) / PUSH_SCALE[0] * 1000.0 > PUSHED_MM
        report[f"{name}_push_mm_pushed"] = float(error[pushed].mean()) if pushed.any() else float("nan")

    # 3. The drawer, told the recorded poses.
    if prior_steps:
        prior = objects.drawer
        sequences = data.transitions("train", rollout)

        def prior_loss(rng: torch.Generator) -> torch.Tensor:
            index = torch.randint(len(sequences), (batch_size,), generator=rng)
            batch = sequences.take_sequences(index)
            rows = sequences.first[index][:, None] + torch.arange(rollout + 1)
            grids = latent_grids(batch.frames, config)
            side = grids.shape[-1]
            seq = poses[rows]
            told = known[rows].all(1)
            maps = step_maps(seq[:, :-1].flatten(0, 1), seq[:, 1:].flatten(0, 1), side, objects.half_extent)
            maps = maps.view(batch_size, rollout, POSE_MAPS, side, side) * told[:, None, None, None, None]
            actions = batch.actions * batch.action_channels[:, None]
            state = batch.states[:, 0] * batch.state_channels
            rolled, states = prior.rollout(grids[:, 0], state, actions, batch.domain, batch.state_channels, maps)
            return rollout_loss(rolled, states, grids, batch.states, batch.state_channels)

        report["drawer_loss"] = _fit(prior, prior_loss, prior_steps, lr, seed + 3, "drawer of the object", progress)
    network.eval()
    report["seconds"] = time.perf_counter() - started
    return report
