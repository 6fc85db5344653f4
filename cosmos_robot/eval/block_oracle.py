"""What the training data teach about the block with perception taken out: a bound for any forward model.

A small MLP learns the block's displacement per control step from inputs the learned env never gets:
the true block pose (``observation.environment_state``) and the true effector trajectory (from the
agent state by the robot's kinematics), on the datasets' own transitions. It then rolls the block open
loop over held-out windows, given the agent's true states and actions at every step. Nothing is drawn or
detected, so its error at h16 is what these datasets leave even with perfect perception: a bar below it
needs more or different data, not a better network on pixels. Trained on a fraction of the episodes, it
also says how fast more data helps.

Its inputs are the physics of a push, in the block's own frame (a push is the same push anywhere on the
table and at any yaw): where the effector is relative to the block, how far it moves this step and moved
the step before, how far the block moved the step before (it slides on), the block's place on the table
(the walls) and the action. Given joint angles, block pose and action in table coordinates instead, the
same MLP had to learn the arm's kinematics and every push at every place and yaw from the same data: its
h16 error was 1.5-2x higher (docs/results.md), which says the network, not the data, was the bound.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from cosmos_robot.datasets.lerobot_io import grouped_episode_ends, load_lerobot
from cosmos_robot.envs.push_block import effector_from_state
from cosmos_robot.model.object_pose import three_layer_mlp
from cosmos_robot.push_data import simulate_pushes

ENVIRONMENT_STATE = "observation.environment_state"
POSE_NAMES = ("block_x", "block_y", "block_yaw")
# A square block looks the same every quarter turn: its frame is its yaw folded into (-45, 45] degrees.
QUARTER_TURN = np.pi / 2
PUSHED_MM = 2.0  # a step that moves the block more than this is a push (also probe_block_steps.py's)
MOVED_MM = 10.0  # a window moves the block (its copy-last error at the horizon)
# Targets in centimetres and deci-radians: the network's outputs of order one.
TARGET_SCALE = (100.0, 100.0, 10.0)


@dataclass
class BlockEpisode:
    """One episode's agent states (T, S), actions (T, A), block poses (T, 3: x, y, yaw) and effector
    positions (T, 2, metres)."""

    states: np.ndarray
    actions: np.ndarray
    poses: np.ndarray
    effector: np.ndarray


@dataclass
class BlockOracleResult:
    """The oracle's errors on held-out episodes (mm).

    Attributes:
        train_episodes: episodes it learned from.
        one_step_mm_pushed: one-step block error on the held-out steps that move the block.
        copy_mm_pushed: the same for a block that stays (how far those steps move it).
        push_fraction_median: median share of the real displacement the predicted step covers.
        windows: held-out windows of ``horizon`` steps whose block moves more than ``MOVED_MM``.
        rollout_mm: mean block error at the horizon over those windows.
        rollout_mm_median: its median.
        rollout_copy_mm: the same for a block that never moves.
    """

    train_episodes: int
    one_step_mm_pushed: float
    copy_mm_pushed: float
    push_fraction_median: float
    windows: int
    rollout_mm: float
    rollout_mm_median: float
    rollout_copy_mm: float


def read_block_episodes(root: str | os.PathLike) -> list[BlockEpisode]:
    """Agent states, actions and block poses of every episode of a LeRobot dataset (no frames read)."""
    dataset = load_lerobot(root)
    spec = dataset.meta.features.get(ENVIRONMENT_STATE)
    names = (spec or {}).get("names") or []
    if isinstance(names, dict):  # LeRobot's {"axes": [...]} form
        names = next(iter(names.values()), [])
    names = list(names)
    if any(n not in names for n in POSE_NAMES):
        raise ValueError(
            f"dataset={str(root)!r}: {ENVIRONMENT_STATE} names {names}; expected the channels {list(POSE_NAMES)} "
            "(a PushBlock dataset made by `cosmos-robot collect`)"
        )
    table = dataset.hf_dataset.with_format(None).select_columns(
        ["observation.state", "action", ENVIRONMENT_STATE, "episode_index"]
    )
    states = np.asarray(table["observation.state"], dtype=np.float32)
    actions = np.asarray(table["action"], dtype=np.float32)
    poses = np.asarray(table[ENVIRONMENT_STATE], dtype=np.float64)[:, [names.index(n) for n in POSE_NAMES]]
    effector = effector_from_state(dataset.meta.robot_type, states)
    ends = grouped_episode_ends(np.asarray(table["episode_index"]), root)
    starts = np.concatenate([[0], ends[:-1]])
    return [
        BlockEpisode(states[a:b], actions[a:b], poses[a:b], effector[a:b]) for a, b in zip(starts, ends, strict=True)
    ]


def simulated_block_episodes(embodiment: str, episodes: int, progress: bool = True) -> list[BlockEpisode]:
    """State-only episodes simulated by :func:`cosmos_robot.push_data.simulate_pushes` (the recipe's mix of
    demonstrators, seeds of their own), as block episodes: what the learned env's push MLPs learn from
    beside the datasets' (``TrainConfig.object_simulated_episodes``)."""
    simulated = simulate_pushes(embodiment, episodes, progress=progress)
    effector = effector_from_state(embodiment, simulated.states)
    return [
        BlockEpisode(
            simulated.states[a:b].astype(np.float32),
            simulated.actions[a:b].astype(np.float32),
            simulated.poses[a:b],
            effector[a:b],
        )
        for a, b in simulated.bounds
    ]


def _block_frame(vectors: np.ndarray, yaw: np.ndarray) -> np.ndarray:
    """Table-frame vectors (..., 2) in the frame of a block at ``yaw`` (..., folded to a quarter turn)."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.stack([c * vectors[..., 0] + s * vectors[..., 1], c * vectors[..., 1] - s * vectors[..., 0]], -1)


def _fold(yaw: np.ndarray) -> np.ndarray:
    return (yaw + QUARTER_TURN / 2) % QUARTER_TURN - QUARTER_TURN / 2


def _features(episode: BlockEpisode, t: np.ndarray, poses: np.ndarray, poses_before: np.ndarray) -> np.ndarray:
    """Inputs of the step from ``t`` (N,) of ``episode``, the block at ``poses`` (N, 3) having been at
    ``poses_before`` (N, 3) a step earlier."""
    effector, yaw = episode.effector, _fold(poses[:, 2])
    before = effector[np.maximum(t - 1, 0)]
    parts = [
        _block_frame(effector[t] - poses[:, :2], yaw),
        _block_frame(effector[t + 1] - effector[t], yaw),
        _block_frame(effector[t] - before, yaw),
        _block_frame(poses[:, :2] - poses_before[:, :2], yaw),
        poses[:, :2],
        episode.actions[t],
    ]
    return np.concatenate(parts, -1).astype(np.float32)


def _targets(episode: BlockEpisode) -> np.ndarray:
    """Each step's block change (T-1, 3) in the block's frame, scaled by ``TARGET_SCALE``."""
    poses = episode.poses
    moved = _block_frame(np.diff(poses[:, :2], axis=0), _fold(poses[:-1, 2]))
    turned = _fold(np.diff(poses[:, 2]))[:, None]
    return np.concatenate([moved, turned], -1) * np.asarray(TARGET_SCALE)


def _poses_before(episode: BlockEpisode, t: np.ndarray) -> np.ndarray:
    """The recorded block pose a step before ``t`` (an episode starts at rest: its own at t = 0)."""
    return episode.poses[np.maximum(t - 1, 0)]


class BlockDynamics(nn.Module):
    """(effector and block motion in the block's frame, action) -> the block's pose change in one step."""

    def __init__(self, inputs: int, mean: torch.Tensor, std: torch.Tensor, hidden: int = 256) -> None:
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.register_buffer("scale", torch.tensor(TARGET_SCALE))
        self.net = three_layer_mlp(inputs, 3, hidden)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Scaled pose change (B, 3), in the block's frame, of features (B, F) from :func:`_features`."""
        return self.net((features - self.mean) / self.std)

    @torch.no_grad()
    def step(self, episode: BlockEpisode, t: np.ndarray, poses: np.ndarray, poses_before: np.ndarray) -> np.ndarray:
        """Block poses (N, 3) after the steps from ``t`` (N,) of ``episode`` (its true effector and actions),
        from the block at ``poses`` (N, 3), at ``poses_before`` a step earlier."""
        change = (self(torch.from_numpy(_features(episode, t, poses, poses_before))) / self.scale).double().numpy()
        moved = _block_frame(change[:, :2], -_fold(poses[:, 2]))
        return poses + np.concatenate([moved, change[:, 2:]], -1)


def fit_block_dynamics(episodes: Sequence[BlockEpisode], steps: int = 4000, seed: int = 0) -> BlockDynamics:
    """Fit :class:`BlockDynamics` to every transition of ``episodes`` (MSE, AdamW, one-cycle schedule)."""
    if steps < 1:
        raise ValueError(f"steps={steps}; expected a positive integer")
    usable = [e for e in episodes if len(e.poses) > 1]
    if not usable:
        raise ValueError("no episode has two steps; expected training episodes")
    steps_of = [np.arange(len(e.poses) - 1) for e in usable]
    x = [_features(e, t, e.poses[t], _poses_before(e, t)) for e, t in zip(usable, steps_of, strict=True)]
    x = torch.from_numpy(np.concatenate(x))
    y = torch.from_numpy(np.concatenate([_targets(e) for e in usable]).astype(np.float32))
    torch.manual_seed(seed)
    model = BlockDynamics(x.shape[1], x.mean(0), x.std(0) + 1e-6)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, 2e-3, total_steps=steps)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        index = torch.randint(len(x), (512,), generator=generator)
        loss = (model(x[index]) - y[index]).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    return model.eval()


def score_block_dynamics(
    model: BlockDynamics,
    episodes: Sequence[BlockEpisode],
    horizon: int = 16,
    stride: int = 4,
    moved_mm: float = MOVED_MM,
) -> dict[str, float]:
    """One-step and open-loop errors (mm) of ``model`` on ``episodes`` (see :class:`BlockOracleResult`);
    the open-loop ones over the windows whose block moves more than ``moved_mm``."""
    predicted, real = [], []
    for e in episodes:
        if len(e.poses) > 1:
            t = np.arange(len(e.poses) - 1)
            predicted.append(model.step(e, t, e.poses[t], _poses_before(e, t))[:, :2] - e.poses[t, :2])
            real.append(np.diff(e.poses[:, :2], axis=0))
    predicted_step, real_step = np.concatenate(predicted), np.concatenate(real)
    pushed = np.linalg.norm(real_step, axis=1) * 1000.0 > PUSHED_MM
    along = (predicted_step * real_step).sum(1)[pushed] / (real_step**2).sum(1)[pushed]
    rolled, copied = [], []
    for e in episodes:
        starts = np.arange(0, len(e.poses) - horizon, stride)
        if not len(starts):
            continue
        poses, before = e.poses[starts].copy(), _poses_before(e, starts)
        for k in range(horizon):
            poses, before = model.step(e, starts + k, poses, before), poses
        rolled.append(np.linalg.norm(poses[:, :2] - e.poses[starts + horizon, :2], axis=1) * 1000.0)
        copied.append(np.linalg.norm(e.poses[starts, :2] - e.poses[starts + horizon, :2], axis=1) * 1000.0)
    rolled_mm, copy_mm = np.concatenate(rolled or [np.zeros(0)]), np.concatenate(copied or [np.zeros(0)])
    moved = copy_mm > moved_mm if moved_mm > 0 else np.ones(len(copy_mm), dtype=bool)
    nan = float("nan")
    return {
        "one_step_mm_pushed": float(np.linalg.norm(predicted_step - real_step, axis=1)[pushed].mean() * 1000.0)
        if pushed.any()
        else nan,
        "copy_mm_pushed": float(np.linalg.norm(real_step, axis=1)[pushed].mean() * 1000.0) if pushed.any() else nan,
        "push_fraction_median": float(np.median(along)) if pushed.any() else nan,
        "windows": int(moved.sum()),
        "rollout_mm": float(rolled_mm[moved].mean()) if moved.any() else nan,
        "rollout_mm_median": float(np.median(rolled_mm[moved])) if moved.any() else nan,
        "rollout_copy_mm": float(copy_mm[moved].mean()) if moved.any() else nan,
    }


def evaluate_block_oracle(
    datasets: Sequence[Sequence[BlockEpisode]],
    train_fraction: float = 1.0,
    held_out: float = 0.1,
    steps: int = 4000,
    horizon: int = 16,
    seed: int = 0,
    extra_train: Sequence[BlockEpisode] = (),
) -> tuple[BlockOracleResult, BlockDynamics]:
    """Fit on a ``train_fraction`` of the training episodes of ``datasets`` (one embodiment's) and on
    ``extra_train`` (e.g. :func:`simulated_block_episodes`), score on the ``held_out`` share of each dataset's
    episodes (the same split whatever ``train_fraction`` and ``extra_train``); returns the scores and the
    fitted model."""
    if not 0.0 < train_fraction <= 1.0:
        raise ValueError(f"train_fraction={train_fraction!r}; expected a number in (0, 1]")
    if not 0.0 < held_out < 1.0:
        raise ValueError(f"held_out={held_out!r}; expected a number in (0, 1)")
    rng = np.random.default_rng(seed)
    train, test = [], []
    for episodes in datasets:
        order = rng.permutation(len(episodes))
        cut = max(1, round(held_out * len(episodes)))
        test += [episodes[i] for i in order[:cut]]
        kept = order[cut:][: max(1, round(train_fraction * (len(episodes) - cut)))]
        train += [episodes[i] for i in kept]
    model = fit_block_dynamics(train + list(extra_train), steps=steps, seed=seed)
    return BlockOracleResult(
        train_episodes=len(train) + len(extra_train), **score_block_dynamics(model, test, horizon)
    ), model
