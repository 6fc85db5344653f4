"""Teaching a trained forward prior to carry a pushed object's pose (:mod:`cosmos_robot.model.object_pose`).

Runs after the forward prior's stages, on the embodiments whose datasets record the block's pose
(``observation.environment_state``, x, y, yaw first: the PushBlock robots, whose effector the kinematics
in ``envs.push_block`` give):

1. the pose readout, on the latents of every training frame and its recorded pose;
2. per embodiment, the effector map (normalised agent state -> effector, by the robot's kinematics)
   and the push MLP (the recorded push of every training step, in the block's frame), then optionally
   fine-tuned on 16-step rollouts of its own poses (the drift of a carried push adds up step by step);
3. the drawer, a copy of the trained prior given two maps per pose (``ForwardPrior.add_inputs``), on
   rollouts of the recorded sequences teacher-forced with the recorded poses (the sequences of an
   embodiment without the object get the maps at zero).

The forward prior and the MoT are not changed: agent states, reward and success stay as they were.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import time

import numpy as np
import torch
from torch import nn

from cosmos_robot.datasets.training_set import TrainingSet, TransitionTable
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.push_block import effector_from_state
from cosmos_robot.envs.push_block_scene import CONTROL_HZ, TABLE_HALF
from cosmos_robot.keys import ACTION, OBS_ENV_STATE, OBS_STATE
from cosmos_robot.model.batches import SequenceBatch
from cosmos_robot.model.forward_prior import ForwardPrior, rollout_loss
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.object_pose import (
    EFFECTOR_MAPS,
    POSE_MAPS,
    PUSH_SCALE,
    ObjectPose,
    PoseReadout,
    block_frame,
    fold,
    step_maps,
)
from cosmos_robot.model.stems import latent_grids
from cosmos_robot.part_training import train_part
from cosmos_robot.processor import Processor
from cosmos_robot.push_data import PushEpisodes, simulate_pushes

# A step that moves the block more than this (mm) counts as a push in the report.
PUSHED_MM = 2.0
# A rollout window that moves the block more than this (mm) counts as a push.
PUSHED_WINDOW_MM = 5.0
# Windows per step of the push MLP's rollout training, and the share of them that push the block (the
# rest are whatever the data hold: a block at rest must stay at rest).
PUSH_ROLLOUT_BATCH = 256
PUSHED_SHARE = 0.8
# Steps per rollout of that training: the horizon the fidelity bars read.
PUSH_ROLLOUT = 16


def object_embodiments(data: TrainingSet) -> list[str]:
    """The embodiments of ``data`` whose datasets record the block's pose and whose effector is known."""
    return sorted(
        name for name, part in data.data.items() if name in PUSH_BLOCK_IDS and OBS_ENV_STATE in part.train.episodes.data
    )


def carried_embodiments(objects: ObjectPose, data: TrainingSet) -> list[str]:
    """The embodiments of ``data`` whose block ``objects`` carries; refused when there is none."""
    names = [n for n in object_embodiments(data) if objects.carries(data.data[n].embodiment.domain_id)]
    if not names:
        raise ValueError(
            f"no dataset of {sorted(data.data)} records the pose of the object of domains {objects.domains}"
        )
    return names


def drawer_from_prior(prior: ForwardPrior, tell_effector: bool = False) -> ForwardPrior:
    """The object's drawer: a copy of the trained ``prior`` given the pose maps' inputs (and the effector's,
    ``tell_effector``), zero-weighted: it draws what the prior draws until it is trained to read them."""
    drawer = copy.deepcopy(prior)
    drawer.add_inputs(POSE_MAPS + EFFECTOR_MAPS * tell_effector)
    return drawer


def attach_object_pose(network: WorldActionNetwork, domains: tuple[int, ...], half_extent: float = TABLE_HALF) -> None:
    """Give ``network`` an untrained :class:`ObjectPose` for ``domains`` whose drawer is a copy of its prior
    given the maps' inputs (zero-weighted: it draws what the prior draws), and record it in its config."""
    if network.forward_prior is None:
        raise ValueError("the network has no forward prior (ModelConfig.forward_prior=False); nothing draws the object")
    if network.object_pose is not None:
        raise ValueError(f"the network already carries an object for domains {list(network.object_pose.domains)}")
    config = network.config
    drawer = drawer_from_prior(network.forward_prior, config.object_effector_maps)
    network.object_pose = ObjectPose(
        config.latent_channels,
        config.state_width,
        config.action_width,
        domains,
        half_extent,
        drawer,
        push_path=config.object_push_path,
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


@dataclasses.dataclass(frozen=True)
class PushRecord:
    """One embodiment's recorded pushes: poses (N, 3), effectors (N, 2, by the robot's kinematics),
    normalised actions (N, action_width), each episode's [start, end) rows, and the effector's path inside
    the step from each row (N, 4: its place half way and where the action commanded it, by the kinematics;
    :meth:`ObjectPose.path_of`)."""

    poses: torch.Tensor
    effector: torch.Tensor
    actions: torch.Tensor
    bounds: list[tuple[int, int]]
    path: torch.Tensor

    @functools.cached_property
    def _previous(self) -> torch.Tensor:
        """Each row's row a step before (its own at an episode's start), built once: rollouts ask every step."""
        previous = torch.arange(len(self.poses)) - 1
        previous[[start for start, _ in self.bounds]] += 1
        return previous

    def before(self, rows: torch.Tensor) -> torch.Tensor:
        """The row a step before each of ``rows`` (the row itself at an episode's start: at rest)."""
        return self._previous[rows]

    def windows(self, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every row that starts ``steps`` steps inside its episode, and how far (mm) the block moves over them."""
        rows = torch.cat([torch.arange(start, max(start, end - steps)) for start, end in self.bounds])
        return rows, (self.poses[rows + steps, :2] - self.poses[rows, :2]).norm(dim=-1) * 1000.0


def _effector_path(name: str, states: np.ndarray, actions: np.ndarray, bounds: list[tuple[int, int]]) -> np.ndarray:
    """The effector's place half way through each row's step and where its action (a velocity held one control
    period) commanded it (N, 4), by the robot's kinematics, from raw states (N, S) and actions (N, A)."""
    following = np.arange(len(states)) + 1
    following[[end - 1 for _, end in bounds]] -= 1  # an episode's last row has no step: its own state
    halfway = effector_from_state(name, (states + states[following]) / 2)
    commanded = effector_from_state(name, states + actions / CONTROL_HZ)
    return np.concatenate([halfway, commanded], 1)


def _record(
    processor: Processor, name: str, states: np.ndarray, actions: np.ndarray, poses: np.ndarray, bounds: list
) -> PushRecord:
    """A :class:`PushRecord` of raw states (N, S), raw actions (N, A), poses (N, >= 3) and episode bounds."""
    return PushRecord(
        poses=torch.from_numpy(np.asarray(poses, np.float64)[:, :3]).float(),
        effector=torch.from_numpy(effector_from_state(name, states)).float(),
        actions=torch.from_numpy(processor.actions_in(name, actions)).float(),
        bounds=list(bounds),
        path=torch.from_numpy(_effector_path(name, states, actions, bounds)).float(),
    )


def push_record(data: TrainingSet, name: str, split: str) -> PushRecord:
    """The recorded pushes of embodiment ``name`` in ``split``."""
    episodes = getattr(data.data[name], split).episodes
    states = np.asarray(episodes.data[OBS_STATE], np.float64)
    actions = np.asarray(episodes.data[ACTION], np.float64)
    ends = [int(end) for end in episodes.episode_ends]
    bounds = list(zip([0, *ends[:-1]], ends, strict=True))
    return _record(data.processor, name, states, actions, episodes.data[OBS_ENV_STATE], bounds)


def simulated_record(processor: Processor, name: str, episodes: PushEpisodes) -> PushRecord:
    """Simulated pushes (:func:`cosmos_robot.push_data.simulate_pushes`) as a :class:`PushRecord`."""
    return _record(processor, name, episodes.states, episodes.actions, episodes.poses, episodes.bounds)


def join_records(first: PushRecord, second: PushRecord) -> PushRecord:
    """One record of both records' episodes."""
    shift = len(first.poses)
    return PushRecord(
        poses=torch.cat([first.poses, second.poses]),
        effector=torch.cat([first.effector, second.effector]),
        actions=torch.cat([first.actions, second.actions]),
        bounds=first.bounds + [(start + shift, end + shift) for start, end in second.bounds],
        path=torch.cat([first.path, second.path]),
    )


def command_map(
    processor: Processor, name: str, state_width: int, action_width: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(gain (action_width, state_width), offset (state_width)) with which ``state + action @ gain + offset`` is
    the normalised state a normalised action commands: each action channel a velocity of the state channel of
    the same index, held one control period (a PushBlock robot's velocity actuators)."""
    entry = processor.entry(name)
    dims = entry.embodiment.action_dim, entry.embodiment.state_dim
    if dims[0] != dims[1]:
        raise ValueError(
            f"embodiment={name!r}: action_dim={dims[0]}, state_dim={dims[1]}; the commanded place needs one velocity "
            "per state channel"
        )
    # Normalisation is affine: the change of the normalised state is affine in the normalised action.
    origin = processor.states_out(name, np.zeros((1, state_width)))
    moved = lambda action: processor.states_in(name, origin + processor.actions_out(name, action) / CONTROL_HZ)  # noqa: E731
    base = processor.states_in(name, origin)
    offset = moved(np.zeros((1, action_width))) - base
    gain = np.zeros((action_width, state_width), np.float32)
    for k in range(dims[0]):
        unit = np.zeros((1, action_width))
        unit[0, k] = 1.0
        gain[k] = (moved(unit) - base - offset)[0]
    return torch.from_numpy(gain), torch.from_numpy(offset[0])


def _push_examples(record: PushRecord, objects: ObjectPose) -> tuple[torch.Tensor, torch.Tensor]:
    """The push MLP's inputs (N, F) and targets (N, 3) of every recorded step."""
    poses, effector = record.poses, record.effector
    t = torch.cat([torch.arange(start, end - 1) for start, end in record.bounds])
    before = record.before(t)
    path = record.path[t] if objects.push_path else None
    inputs = objects.push_features(
        poses[t], poses[before], effector[before], effector[t], effector[t + 1], record.actions[t], path
    )
    moved = block_frame(poses[t + 1, :2] - poses[t, :2], fold(poses[t, 2]))
    turned = fold(poses[t + 1, 2] - poses[t, 2])[:, None]
    return inputs, torch.cat([moved, turned], 1) * torch.tensor(PUSH_SCALE)


def roll_pushes(objects: ObjectPose, record: PushRecord, rows: torch.Tensor, steps: int, domain: int) -> torch.Tensor:
    """The poses (B, steps, 3) the push MLP carries for ``steps`` recorded steps from each of ``rows`` (B,),
    each push fed its own pose before (as the learned env does), the effector and actions the recorded ones."""
    before = record.before(rows)
    memory = torch.cat([record.poses[before], record.poses[rows], record.effector[before]], 1)
    poses = []
    for k in range(steps):
        path = record.path[rows + k] if objects.push_path else None
        memory = objects.step(
            memory, record.effector[rows + k], record.effector[rows + k + 1], record.actions[rows + k], domain, path
        )
        poses.append(memory[:, 3:6])
    return torch.stack(poses, 1)


def _pose_error(carried: torch.Tensor, recorded: torch.Tensor) -> torch.Tensor:
    """Per-step error of carried poses (..., 3) in the push MLP's units (cm, cm, deci-radians)."""
    error = carried - recorded
    return torch.cat([error[..., :2], fold(error[..., 2:])], -1) * torch.tensor(PUSH_SCALE)


def push_rollout_mm(objects: ObjectPose, record: PushRecord, steps: int, domain: int) -> float:
    """Mean error (mm) of the pose carried ``steps`` steps, over the windows that move the block more than
    :data:`PUSHED_WINDOW_MM` (the drift a learned env shows on a push)."""
    rows, moved = record.windows(steps)
    rows = rows[moved > PUSHED_WINDOW_MM]
    if not len(rows):
        return float("nan")
    with torch.no_grad():
        carried = roll_pushes(objects, record, rows, steps, domain)
    return float((carried[:, -1, :2] - record.poses[rows + steps, :2]).norm(dim=-1).mean() * 1000.0)


def fit_push_rollouts(
    objects: ObjectPose, record: PushRecord, domain: int, rollout: int, steps: int, seed: int, progress: bool = True
) -> float:
    """Fine-tune the push MLP of ``domain`` on ``rollout``-step rollouts of its own poses; returns the last loss.

    One-step fitting leaves each push a little off, and a learned env feeds the pose back, so the errors
    add up over a push (and the block's motion the step before is the MLP's own). Training through its
    rollouts teaches it the poses it will be fed.
    """
    rows, moved = record.windows(rollout)
    if not len(rows):
        raise ValueError(
            f"no episode is longer than rollout={rollout} steps; expected longer episodes or a shorter rollout"
        )
    pushed = rows[moved > PUSHED_WINDOW_MM]
    if not len(pushed):  # data without a push (a tiny set): the rollouts it has
        pushed = rows
    pushes = int(PUSH_ROLLOUT_BATCH * PUSHED_SHARE)

    def rollout_loss(rng: torch.Generator) -> torch.Tensor:
        index = torch.cat(
            [
                rows[torch.randint(len(rows), (PUSH_ROLLOUT_BATCH - pushes,), generator=rng)],
                pushed[torch.randint(len(pushed), (pushes,), generator=rng)],
            ]
        )
        carried = roll_pushes(objects, record, index, rollout, domain)
        recorded = record.poses[index[:, None] + torch.arange(1, rollout + 1)]
        return _pose_error(carried, recorded).pow(2).sum(-1).mean()

    return _fit(
        objects.push[str(domain)], rollout_loss, steps, 2e-3, seed, f"push rollouts (domain {domain})", progress
    )


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
    push_rollout_steps: int = 0,
    progress: bool = True,
    push_steps: int = 0,
    simulated_episodes: int = 0,
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
        push_rollout_steps: steps fine-tuning each push MLP on :data:`PUSH_ROLLOUT`-step rollouts of its
            own poses (:func:`fit_push_rollouts`; 0: one-step fitting only).
        progress: show progress bars.
        push_steps: one-step steps of each push MLP (0: ``fit_steps``).
        simulated_episodes: state-only episodes per embodiment simulated for the push MLPs beside the data's
            (:func:`fit_pushes`).
    """
    started = time.perf_counter()
    counts = {
        "prior_steps": prior_steps,
        "push_rollout_steps": push_rollout_steps,
        "push_steps": push_steps,
        "simulated_episodes": simulated_episodes,
    }
    if fit_steps < 1 or min(counts.values()) < 0:
        raise ValueError(
            f"fit_steps={fit_steps}, "
            + ", ".join(f"{k}={v}" for k, v in counts.items())
            + "; expected fit_steps >= 1 and the others >= 0"
        )
    objects = network.object_pose
    if objects is None:
        raise ValueError(
            "the network carries no object (ModelConfig.object_pose_domains is empty); see attach_object_pose"
        )
    names = carried_embodiments(objects, data)
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

    # 2. Per embodiment: the effector map, then the push MLP.
    for name, domain in zip(names, domains, strict=True):
        record = push_record(data, name, "train")
        raw = np.asarray(data.data[name].train.episodes.data[OBS_STATE], np.float64)
        states, effector = torch.from_numpy(data.processor.states_in(name, raw)), record.effector

        def effector_loss(rng: torch.Generator, states=states, effector=effector, domain=domain) -> torch.Tensor:
            index = torch.randint(len(states), (512,), generator=rng)
            return (objects.effector_of(states[index], domain) - effector[index]).pow(2).sum(-1).mean() * 1e4

        _fit(objects.effector[str(domain)], effector_loss, fit_steps, 2e-3, seed + 1, f"{name} effector map", progress)
        with torch.no_grad():
            report[f"{name}_effector_mm"] = float(
                (objects.effector_of(states, domain) - effector).norm(dim=-1).mean() * 1e3
            )

    report |= fit_pushes(
        network, data, push_steps or fit_steps, push_rollout_steps, seed, simulated_episodes, progress=progress
    )

    # 3. The drawer, told the recorded poses.
    if prior_steps:
        report["drawer_loss"] = fit_drawer(network, data, prior_steps, rollout, seed + 3, batch_size, lr, progress)
    network.eval()
    report["seconds"] = time.perf_counter() - started
    return report


def check_fit_counts(steps: int, rollout_steps: int, simulated_episodes: int) -> None:
    """Refuse, by name, a fit of fewer than one step, or negative rollout steps or simulated episodes."""
    if steps < 1 or rollout_steps < 0 or simulated_episodes < 0:
        raise ValueError(
            f"steps={steps}, rollout_steps={rollout_steps}, simulated_episodes={simulated_episodes}; "
            "expected steps >= 1, rollout_steps >= 0, simulated_episodes >= 0"
        )


def fit_pushes(
    network: WorldActionNetwork,
    data: TrainingSet,
    steps: int,
    rollout_steps: int,
    seed: int,
    simulated_episodes: int = 0,
    progress: bool = True,
) -> dict[str, float]:
    """Fit the push MLPs of ``network``'s object afresh, its readout and effector maps as they are; returns
    held-out errors (mm) and the seconds it took.

    Args:
        network: a network whose object has trained effector maps.
        data: the training set (its train split trains, its val split measures).
        steps: one-step optimiser steps of each push MLP.
        rollout_steps: steps fine-tuning each on :data:`PUSH_ROLLOUT`-step rollouts of its own poses
            (:func:`fit_push_rollouts`; 0: one-step fitting only).
        seed: seeds the fits (the one-step fit ``seed + 2``, the rollouts ``seed + 4``, as before this was
            split out of :func:`fit_object_pose`) and the simulated episodes' order.
        simulated_episodes: state-only episodes per embodiment, simulated by
            :func:`cosmos_robot.push_data.simulate_pushes` (the recipe's mix of demonstrators, seeds of their
            own), that the push MLPs learn from beside the data's: pushes cost no frames (0: none).
        progress: show progress bars.
    """
    started = time.perf_counter()
    check_fit_counts(steps, rollout_steps, simulated_episodes)
    objects = network.object_pose
    if objects is None:
        raise ValueError(
            "the network carries no object (ModelConfig.object_pose_domains is empty); see attach_object_pose"
        )
    config = network.config
    report: dict[str, float] = {}
    for name in carried_embodiments(objects, data):
        domain = data.data[name].embodiment.domain_id
        k = objects.domains.index(domain)
        record = push_record(data, name, "train")
        if simulated_episodes:
            simulated = simulate_pushes(name, simulated_episodes, progress=progress)
            record = join_records(record, simulated_record(data.processor, name, simulated))
        report[f"{name}_push_train_steps"] = float(sum(end - start - 1 for start, end in record.bounds))
        if objects.push_path:
            gain, offset = command_map(data.processor, name, config.state_width, config.action_width)
            objects.command_gain[k], objects.command_offset[k] = gain, offset
        x, y = _push_examples(record, objects)
        objects.push_mean[k] = x.mean(0)
        objects.push_std[k] = x.std(0) + 1e-6

        def push_loss(rng: torch.Generator, x=x, y=y, domain=domain) -> torch.Tensor:
            index = torch.randint(len(x), (512,), generator=rng)
            return (objects.push_change(x[index], domain) - y[index]).pow(2).mean()

        _fit(objects.push[str(domain)], push_loss, steps, 2e-3, seed + 2, f"{name} push", progress)
        with torch.no_grad():
            error = (objects.push_change(x, domain) - y)[:, :2].norm(dim=-1) / PUSH_SCALE[0] * 1000.0
            pushed = y[:, :2].norm(dim=-1) / PUSH_SCALE[0] * 1000.0 > PUSHED_MM
        report[f"{name}_push_mm_pushed"] = float(error[pushed].mean()) if pushed.any() else float("nan")
        held_out = push_record(data, name, "val")
        report[f"{name}_push_h{PUSH_ROLLOUT}_mm"] = push_rollout_mm(objects, held_out, PUSH_ROLLOUT, domain)
        if rollout_steps:
            fit_push_rollouts(objects, record, domain, PUSH_ROLLOUT, rollout_steps, seed + 4, progress)
            report[f"{name}_push_h{PUSH_ROLLOUT}_mm_rolled"] = push_rollout_mm(objects, held_out, PUSH_ROLLOUT, domain)
    report["push_seconds"] = time.perf_counter() - started
    return report


def _rows_effector(data: TrainingSet, split: str, names: list[str]) -> torch.Tensor:
    """Every row's effector (N, 2, metres, by the robot's kinematics) of ``data.transitions(split)``'s order;
    zero on the rows of embodiments not in ``names``."""
    places = []
    for name in sorted(data.data):
        states = np.asarray(getattr(data.data[name], split).episodes.data[OBS_STATE], np.float64)
        places.append(effector_from_state(name, states) if name in names else np.zeros((len(states), 2)))
    return torch.from_numpy(np.concatenate(places)).float()


@dataclasses.dataclass(frozen=True)
class ToldPoses:
    """What the drawer is told on one split's rows (``data.transitions(split)``'s order): each row's recorded
    pose (N, 3), whether it has one (N,; rows of embodiments without the object do not), and its effector
    (N, 2, metres; None for a drawer not told the effector)."""

    poses: torch.Tensor
    known: torch.Tensor
    places: torch.Tensor | None


def told_poses(network: WorldActionNetwork, data: TrainingSet, split: str) -> ToldPoses:
    """The recorded poses (and effectors, where the network's drawer reads them) of ``data``'s ``split``."""
    names = carried_embodiments(network.object_pose, data)
    poses, known = _rows_poses(data, split, names)
    places = _rows_effector(data, split, names) if network.config.object_effector_maps else None
    return ToldPoses(poses, known, places)


def drawer_rollout(
    network: WorldActionNetwork, told: ToldPoses, sequences: TransitionTable, index: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, SequenceBatch, torch.Tensor]:
    """The object's drawer rolled over the sequences ``index`` of ``sequences``, teacher-forced with the
    recorded poses (and effector places) of ``told``: (drawn grids (B, R, C, h, w), states (B, R, S), the
    batch, its recorded grids (B, R + 1, C, h, w)). Maps of sequences without the object are zero."""
    objects, config = network.object_pose, network.config
    drawer, rollout = objects.drawer, sequences.steps
    batch = sequences.take_sequences(index)
    rows = sequences.first[index][:, None] + torch.arange(rollout + 1)
    grids = latent_grids(batch.frames, config)
    side = grids.shape[-1]
    seq = told.poses[rows]
    now, after = seq[:, :-1].flatten(0, 1), seq[:, 1:].flatten(0, 1)
    where = (None, None)
    if told.places is not None:
        places = told.places[rows]
        where = (places[:, :-1].flatten(0, 1), places[:, 1:].flatten(0, 1))
    maps = step_maps(now, after, side, objects.half_extent, *where)
    maps = maps.view(len(index), rollout, drawer.extra_inputs, side, side)
    maps = maps * told.known[rows].all(1)[:, None, None, None, None]
    actions = batch.actions * batch.action_channels[:, None]
    state = batch.states[:, 0] * batch.state_channels
    rolled, states = drawer.rollout(grids[:, 0], state, actions, batch.domain, batch.state_channels, maps)
    return rolled, states, batch, grids


def fit_drawer(
    network: WorldActionNetwork,
    data: TrainingSet,
    steps: int,
    rollout: int,
    seed: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    progress: bool = True,
) -> float:
    """Make the object's drawer a fresh copy of the trained forward prior (:func:`drawer_from_prior`: a drawer
    built with the network starts untrained), told the effector where ``network.config.object_effector_maps``
    says, and train it ``steps`` steps on ``rollout``-action sequences
    teacher-forced with the recorded poses (and effector places, for a drawer told them); returns the last
    loss. The sequences of an embodiment without the object get its maps at zero."""
    objects = network.object_pose
    if objects is None or network.forward_prior is None:
        raise ValueError("the network carries no object or has no forward prior; nothing to draw with")
    told = told_poses(network, data, "train")
    objects.drawer = drawer_from_prior(network.forward_prior, network.config.object_effector_maps)
    sequences = data.transitions("train", rollout)

    def prior_loss(rng: torch.Generator) -> torch.Tensor:
        index = torch.randint(len(sequences), (batch_size,), generator=rng)
        rolled, states, batch, grids = drawer_rollout(network, told, sequences, index)
        return rollout_loss(rolled, states, grids, batch.states, batch.state_channels)

    loss = _fit(objects.drawer, prior_loss, steps, lr, seed, "drawer of the object", progress)
    network.eval()
    return loss
