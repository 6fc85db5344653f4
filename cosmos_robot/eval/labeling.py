"""Labeling accuracy against MuJoCo, UWM's protocol, with a supervised (VPT-style) baseline.

Seeded MuJoCo episodes (half expert, half noisy expert at 0.3) are rendered to mp4, labeled by
:func:`cosmos_robot.labeler.label`, and compared with the true actions: per-dimension MSE and R^2, and
``r2`` over all dimensions. Replay: the labeled actions run open loop in MuJoCo from the same seeded
start; ``replay_success_ratio`` is the replays' success rate over the original episodes', and the
final block positions are compared (replaying the true actions is reported too: it must succeed).
The baseline (``r2_baseline``) is a small conv net regressing the action from a frame pair,
trained on the given datasets for a fixed CPU time.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from cosmos_robot.datasets.lerobot_io import read_lerobot
from cosmos_robot.datasets.video_io import write_video
from cosmos_robot.eval.offline import r2_per_dim
from cosmos_robot.eval.result import EvalResult, example_field
from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import ACTION
from cosmos_robot.labeler import label
from cosmos_robot.policies.scripted import ScriptedExpert
from cosmos_robot.rollout import replay_actions, run_episode
from cosmos_robot.seeds import LABELING_SEED


@dataclass
class LabelingResult(EvalResult):
    """Labels of rendered MuJoCo episodes against the true actions, and their replay in MuJoCo.

    Attributes:
        embodiment, env, episodes: what was labeled.
        frames_labeled, label_seconds: how much, how fast.
        r2, r2_per_dim, mse_per_dim: labels against the true actions.
        original_success_rate: of the recorded episodes.
        replay_success_rate: of the labels replayed open loop from the same starts.
        replay_success_ratio: the two divided (None where no original succeeded).
        true_action_replay_success_rate: the true actions replayed (the simulator's determinism check).
        final_block_error_m: mean distance of the replayed block's final position from the original's.
        per_episode: the replay of each episode.
        r2_baseline: the frame-pair conv net's R² (None without baseline data).
        baseline: how the baseline was trained (None without baseline data).
        steps, stride, seeds: the settings.
        example: the first episode's true and labeled actions, for the plot (not in the JSON).
    """

    embodiment: str
    env: str
    episodes: int
    frames_labeled: int
    label_seconds: float
    r2: float
    r2_per_dim: list[float]
    mse_per_dim: list[float]
    original_success_rate: float
    replay_success_rate: float
    replay_success_ratio: float | None
    true_action_replay_success_rate: float
    final_block_error_m: float
    per_episode: list[dict[str, Any]]
    r2_baseline: float | None
    baseline: dict[str, Any] | None
    steps: int
    stride: int
    seeds: list[int]
    example: dict[str, np.ndarray] | None = example_field()


def record_episodes(env_id: str, episodes: int, seed: int) -> list[dict[str, Any]]:
    """Seeded episodes (first half expert, second half noise 0.3): frames, actions, success, final block."""
    env = gym.make(env_id)
    out = []
    for i in range(episodes):
        noise = 0.0 if i < (episodes + 1) // 2 else 0.3
        policy = ScriptedExpert.for_env(env, noise=noise, seed=seed + i)
        episode = run_episode(env, policy.act, seed + i)
        out.append(
            {
                "seed": seed + i,
                "noise": noise,
                "frames": episode.frames(),
                "actions": np.stack(episode.actions),
                "success": episode.success,
                "final_block": episode.infos[-1]["block_pose"][:2].copy(),
            }
        )
    env.close()
    return out


def replay(env_id: str, seed: int, actions: np.ndarray) -> tuple[bool, np.ndarray]:
    """(success at any step, final block xy) of ``actions`` run open loop in MuJoCo from the seeded start."""
    env = gym.make(env_id)
    episode = run_episode(env, replay_actions(actions), seed, max_steps=len(actions))
    env.close()
    success = any(bool(info["is_success"]) for info in episode.infos[1:])
    return success, episode.infos[-1]["block_pose"][:2].copy()


class PairRegressor(nn.Module):
    """The VPT-style baseline: a small conv net from a frame pair (6 channels) to the action."""

    def __init__(self, action_dim: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(6, 32, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(32, 64, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(64, 64, 4, 2, 1), nn.ReLU(),
            nn.Conv2d(64, 64, 4, 2, 1), nn.ReLU(),
            nn.Flatten(), nn.Linear(64 * 4 * 4, 256), nn.ReLU(), nn.Linear(256, action_dim),
        )  # fmt: skip

    def forward(self, pair: torch.Tensor) -> torch.Tensor:
        """(B, 2, H, W, 3) uint8 -> (B, A) normalised actions."""
        x = pair.float().div(127.5).sub(1.0).permute(0, 1, 4, 2, 3).flatten(1, 2)
        return self.net(x)


def train_pair_regressor(datasets: list[str], seconds: float, seed: int = 0) -> tuple[PairRegressor, dict[str, Any]]:
    """Train the baseline on every consecutive frame pair of ``datasets`` for ``seconds`` of CPU time."""
    from cosmos_robot.datasets.windows import open_episodes

    frames, actions = [], []
    for path in datasets:
        data = open_episodes(path).to_memory()
        camera = data.image_keys[0]
        for ep in range(data.num_episodes):
            start, stop = data.episode_bounds(ep)
            f = np.asarray(data.data[camera][start:stop])
            frames.append(np.stack([f[:-1], f[1:]], 1))
            actions.append(np.asarray(data.data[ACTION][start : stop - 1], np.float32))
    pairs, targets = torch.from_numpy(np.concatenate(frames)), torch.from_numpy(np.concatenate(actions))
    mean, std = targets.mean(0), targets.std(0).clamp_min(1e-6)
    torch.manual_seed(seed)
    model = PairRegressor(targets.shape[1])
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    started, steps = time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        index = torch.randint(len(pairs), (64,), generator=g)
        loss = (model(pairs[index]) - (targets[index] - mean) / std).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        steps += 1
    model.eval()
    model.mean, model.std = mean, std  # type: ignore[attr-defined]
    return model, {"pairs": len(pairs), "steps": steps, "seconds": seconds}


@torch.no_grad()
def predict_pairs(model: PairRegressor, frames: np.ndarray) -> np.ndarray:
    """Raw actions between consecutive frames of one video."""
    pairs = torch.from_numpy(np.stack([frames[:-1], frames[1:]], 1))
    return (model(pairs) * model.std + model.mean).numpy()  # type: ignore[attr-defined]


def evaluate_labeling(
    model: WorldModel,
    embodiment: str,
    env_id: str,
    episodes: int = 10,
    steps: int = 10,
    stride: int = 1,
    baseline_data: list[str] | None = None,
    baseline_seconds: float = 120.0,
    baseline_seed: int = 0,
    seed: int = LABELING_SEED,
    progress: bool = True,
    keep_dir: str | Path | None = None,
) -> LabelingResult:
    """Label rendered MuJoCo episodes, compare with the true actions, replay them (see module docstring).

    ``keep_dir``: keep the rendered mp4s (``videos/``) and the labeled LeRobot dataset (``labeled/``)
    there instead of in a temporary folder.
    """
    if episodes < 2:
        raise ValueError(f"episodes={episodes}; expected at least 2")
    recorded = record_episodes(env_id, episodes, seed)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(keep_dir) if keep_dir is not None else Path(tmp)
        videos = where / "videos"
        for i, ep in enumerate(recorded):
            write_video(videos / f"episode_{i:03d}.mp4", ep["frames"], fps=model.fps)
        started = time.perf_counter()
        labeled = read_lerobot(label(videos, model, embodiment, where / "labeled", steps=steps, stride=stride,
                                     progress=progress, overwrite=keep_dir is not None))  # fmt: skip
        label_seconds = time.perf_counter() - started
    predicted, true, replays = [], [], []
    for i, ep in enumerate(tqdm(recorded, desc="replay", disable=not progress)):
        start, stop = labeled.episode_bounds(i)
        actions = labeled.data[ACTION][start : stop - 1]  # the last row repeats the last command
        predicted.append(actions)
        true.append(ep["actions"])
        success, block = replay(env_id, ep["seed"], actions)
        true_success, _ = replay(env_id, ep["seed"], ep["actions"])  # sanity: the simulator is deterministic
        replays.append({"seed": ep["seed"], "noise": ep["noise"], "original_success": ep["success"],
                        "replay_success": success, "true_action_replay_success": true_success,
                        "final_block_error_m": float(np.linalg.norm(block - ep["final_block"]))})  # fmt: skip
    pred_all, true_all = np.concatenate(predicted), np.concatenate(true)
    r2 = r2_per_dim(pred_all, true_all)
    original_rate = np.mean([r["original_success"] for r in replays])
    replay_rate = np.mean([r["replay_success"] for r in replays])
    r2_baseline, baseline = None, None
    if baseline_data:
        regressor, info = train_pair_regressor(baseline_data, baseline_seconds, seed=baseline_seed)
        base = np.concatenate([predict_pairs(regressor, ep["frames"]) for ep in recorded])
        r2_baseline = float(r2_per_dim(base, true_all).mean())
        baseline = {"kind": "conv net on frame pairs (VPT-style IDM)", **info, "datasets": baseline_data}
    return LabelingResult(
        embodiment=embodiment,
        env=env_id,
        episodes=episodes,
        frames_labeled=int(sum(len(ep["frames"]) for ep in recorded)),
        label_seconds=label_seconds,
        r2=float(r2.mean()),
        r2_per_dim=r2.tolist(),
        mse_per_dim=((pred_all - true_all) ** 2).mean(0).tolist(),
        original_success_rate=float(original_rate),
        replay_success_rate=float(replay_rate),
        replay_success_ratio=float(replay_rate / original_rate) if original_rate > 0 else None,
        true_action_replay_success_rate=float(np.mean([r["true_action_replay_success"] for r in replays])),
        final_block_error_m=float(np.mean([r["final_block_error_m"] for r in replays])),
        per_episode=replays,
        r2_baseline=r2_baseline,
        baseline=baseline,
        steps=steps,
        stride=stride,
        seeds=[seed, seed + episodes - 1],
        example={"true": true[0], "predicted": predicted[0]},
    )


def plot_labeling(result: LabelingResult, path: str | Path) -> Path:
    """Labeled vs true actions of the first episode, one panel per dimension, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    true, pred = np.asarray(result.example["true"]), np.asarray(result.example["predicted"])
    fig, axes = plt.subplots(1, true.shape[1], figsize=(5 * true.shape[1], 3.2), squeeze=False)
    for d, ax in enumerate(axes[0]):
        ax.plot(true[:, d], label="true (MuJoCo)")
        ax.plot(pred[:, d], "--", label="labeled (inverse dynamics)")
        ax.set_xlabel("step")
        ax.set_title(f"action {d}: R2 {result.r2_per_dim[d]:.2f}")
    axes[0][0].legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
