"""Training the object's reward head: the learned env's reward and success from the carried pose.

The MoT's reward and success heads read the frames, and in imagination they read drawn frames: on the
ranking episodes the expert's imagined block came within 4-5 cm of the goal (as the detector reads it;
MuJoCo's own frames read the same at success), yet the success head never fired and the reward stayed
near its average whatever the block did (docs/results.md). The model already carries the block's pose
and the agent state (hence the effector); with the goal read once from the first frame, the reward and
success of a step are a function of where the block, the goal and the effector end up. The head learns
that function from the recorded rewards and success flags (:class:`cosmos_robot.model.object_pose.ObjectPose`,
``rewards``); nothing of the task's formula is written into it.

Each recorded row is the state before its step, so a step's outcome is the next row; a dataset does not
record the state after an episode's last step (where success happens), so that one is extrapolated from
the last two rows (the block and effector move a few millimetres per step).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch
from torch import nn

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.keys import OBS_ENV_STATE, OBS_STATE, REWARD, SUCCESS
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.object_pose import REWARD_FEATURES, ObjectPose, PoseReadout, three_layer_mlp
from cosmos_robot.model.stems import latent_grids
from cosmos_robot.object_pose_training import _fit, fit_readout, push_record

# Weight of the reward's squared error (rewards are ~0.1 per step, a miss of 1 cm is 0.01) against the
# success flag's cross-entropy.
REWARD_WEIGHT = 100.0
BATCH = 512


def attach_object_reward(network: WorldActionNetwork) -> None:
    """Give ``network``'s object an untrained goal readout and reward heads, and record it in its config."""
    objects = network.object_pose
    if objects is None:
        raise ValueError("the network carries no object (ModelConfig.object_pose_domains is empty); nothing to score")
    if objects.has_reward:
        raise ValueError("the network's object already has a reward head (ModelConfig.object_reward=True)")
    device = objects.push_mean.device
    objects.goal_readout = PoseReadout(network.config.latent_channels, objects.half_extent).to(device)
    objects.reward = nn.ModuleDict({str(d): three_layer_mlp(REWARD_FEATURES, 2, 64) for d in objects.domains}).to(
        device
    )
    objects.requires_grad_(False)
    network.config = dataclasses.replace(network.config, object_reward=True)


@dataclasses.dataclass(frozen=True)
class RewardExamples:
    """Every recorded step of one embodiment: where the block (N, 3), the effector (N, 2) and the goal (N, 2)
    are after it, metres; its reward (N,) and success flag (N,)."""

    poses: torch.Tensor
    effector: torch.Tensor
    goals: torch.Tensor
    rewards: torch.Tensor
    success: torch.Tensor


def _after(values: torch.Tensor, bounds: list[tuple[int, int]]) -> torch.Tensor:
    """Each row's next row in its episode; after the last, the last two rows extrapolated."""
    after = torch.empty_like(values)
    for start, end in bounds:
        after[start : end - 1] = values[start + 1 : end]
        last = values[end - 1]
        after[end - 1] = 2 * last - values[end - 2] if end - start > 1 else last
    return after


def reward_examples(data: TrainingSet, name: str, split: str) -> RewardExamples:
    """The recorded steps of embodiment ``name`` in ``split`` (:class:`RewardExamples`)."""
    record = push_record(data, name, split)
    episodes = getattr(data.data[name], split).episodes
    missing = [k for k in (REWARD, SUCCESS, OBS_ENV_STATE) if k not in episodes.data]
    if missing:
        raise ValueError(f"dataset {name!r} has no {missing}; the reward head learns from recorded rewards")
    env_state = np.asarray(episodes.data[OBS_ENV_STATE], np.float32)
    if env_state.shape[1] < 5:
        raise ValueError(
            f"dataset {name!r} records {env_state.shape[1]} environment-state channels; expected block x, y, yaw, "
            "goal x, y"
        )
    return RewardExamples(
        poses=_after(record.poses, record.bounds),
        effector=_after(record.effector, record.bounds),
        goals=torch.from_numpy(env_state[:, 3:5]),
        rewards=torch.from_numpy(np.asarray(episodes.data[REWARD], np.float32).reshape(-1)),
        success=torch.from_numpy(np.asarray(episodes.data[SUCCESS]).reshape(-1).astype(np.float32)),
    )


def reward_loss(objects: ObjectPose, examples: RewardExamples, index: torch.Tensor, domain: int) -> torch.Tensor:
    """Weighted squared reward error plus success cross-entropy of ``examples``' rows ``index``."""
    out = objects.reward_logits(examples.poses[index], examples.effector[index], examples.goals[index], domain)
    reward_error = (out[:, 0] - examples.rewards[index]).pow(2).mean()
    return REWARD_WEIGHT * reward_error + nn.functional.binary_cross_entropy_with_logits(
        out[:, 1], examples.success[index]
    )


@torch.no_grad()
def score_rewards(objects: ObjectPose, examples: RewardExamples, domain: int) -> dict[str, float]:
    """Mean absolute reward error, and the success flag's recall and precision at probability 0.5."""
    out = objects.reward_logits(examples.poses, examples.effector, examples.goals, domain)
    said = torch.sigmoid(out[:, 1]) > 0.5
    true = examples.success > 0.5
    return {
        "reward_mae": float((out[:, 0] - examples.rewards).abs().mean()),
        "success_recall": float((said & true).sum() / true.sum().clamp_min(1)),
        "success_precision": float((said & true).sum() / said.sum().clamp_min(1)),
        "success_steps": float(true.sum()),
    }


def goal_frames(
    data: TrainingSet, names: list[str], split: str, config: ModelConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """The latent grids (N, C, h, w) of every frame of embodiments ``names`` in ``split``, and their goals as
    poses at yaw 0 (N, 3)."""
    table = data.transitions(split, 1)
    grids, goals, offset = [], [], 0
    for name in sorted(data.data):  # the transitions' order
        episodes = getattr(data.data[name], split).episodes
        rows = len(episodes.data[OBS_STATE])
        if name in names:
            grids.append(latent_grids(table.latents[offset : offset + rows][:, None], config)[:, 0].float())
            env_state = np.asarray(episodes.data[OBS_ENV_STATE], np.float32)
            at_rest = np.zeros_like(env_state[:, :1])
            goals.append(torch.from_numpy(np.concatenate([env_state[:, 3:5], at_rest], 1)))
        offset += rows
    return torch.cat(grids), torch.cat(goals)


@torch.no_grad()
def goal_readout_mm(objects: ObjectPose, grids: torch.Tensor, goals: torch.Tensor) -> float:
    """Mean distance (mm) from the goal readout's goals of ``grids`` to ``goals``."""
    read = torch.cat([objects.goal_readout.poses(grids[i : i + 1024])[:, :2] for i in range(0, len(grids), 1024)])
    return float((read - goals[:, :2]).norm(dim=-1).mean() * 1000.0)


def fit_object_reward(
    network: WorldActionNetwork, data: TrainingSet, steps: int, seed: int, progress: bool = True
) -> dict[str, float]:
    """Train the goal readout and each embodiment's reward head of ``network``'s object on ``data`` (whose
    latents are prepared); returns held-out errors and the seconds it took."""
    started = time.perf_counter()
    if steps < 1:
        raise ValueError(f"steps={steps}; expected at least 1")
    objects = network.object_pose
    if objects is None or not objects.has_reward:
        raise ValueError(
            "the network's object has no reward head (ModelConfig.object_reward=False); see attach_object_reward"
        )
    names = [
        n
        for n in sorted(data.data)
        if OBS_ENV_STATE in data.data[n].train.episodes.data and objects.carries(data.data[n].embodiment.domain_id)
    ]
    if not names:
        raise ValueError(f"no dataset of {sorted(data.data)} records the object of domains {objects.domains}")
    report: dict[str, float] = {}

    # The goal readout, on every training frame of those embodiments (the goal as a pose at yaw 0).
    grids, goals = goal_frames(data, names, "train", network.config)
    fit_readout(objects.goal_readout, grids, goals, steps, seed, progress)
    report["goal_readout_mm"] = goal_readout_mm(objects, *goal_frames(data, names, "val", network.config))

    for name in names:
        domain = data.data[name].embodiment.domain_id
        examples = reward_examples(data, name, "train")

        def loss(rng: torch.Generator, examples=examples, domain=domain) -> torch.Tensor:
            index = torch.randint(len(examples.rewards), (BATCH,), generator=rng)
            return reward_loss(objects, examples, index, domain)

        _fit(objects.reward[str(domain)], loss, steps, 2e-3, seed + 5, f"{name} reward head", progress)
        for key, value in score_rewards(objects, reward_examples(data, name, "val"), domain).items():
            report[f"{name}_{key}"] = value
    report["seconds"] = time.perf_counter() - started
    return report
