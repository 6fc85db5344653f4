"""Policy ranking: do policies score in the same order inside the learned env as in MuJoCo?

K scripted policies of graded quality (the pixel-driven expert with noise 0 ... 1) run closed loop
from the same seeded starts, in MuJoCo (true reward and success) and in
:class:`ForwardDynamicsVectorEnv` (learned reward and success heads; all episodes of a policy in one
batch). The policies read only the frame, so they run unchanged in both worlds. Spearman and
Pearson correlations of the per-policy mean returns (``spearman``, ``pearson``) and success rates
(``spearman_success``, ``pearson_success``) say whether the learned env can rank policies. The order
alone is a weak test: a model whose block never moves still orders the expert's returns by how far its
effector strays from the block (the reward's reach term), and scored 0.943 here with no imagined success
at all. So the mean absolute gaps between the two worlds' returns and success rates, per policy, are
reported beside the correlations (``return_gap``, ``success_rate_gap``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from cosmos_robot.envs import MAX_EPISODE_STEPS, PUSH_BLOCK_IDS
from cosmos_robot.envs.forward_dynamics import ForwardDynamicsVectorEnv
from cosmos_robot.envs.start_sources import FixedStarts, Start
from cosmos_robot.eval.result import EvalResult
from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import AGENT_POS, PIXELS
from cosmos_robot.metrics import pearson, spearman
from cosmos_robot.policies.pixel_expert import PixelExpert
from cosmos_robot.rollout import run_episode
from cosmos_robot.seeds import RANK_SEED

NOISES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass
class RankingResult(EvalResult):
    """Graded policies scored in MuJoCo and in the learned env from the same starts.

    Attributes:
        embodiment: the embodiment evaluated.
        policies: per policy, its noise and mean return / success rate in each world.
        spearman, pearson: rank and linear correlation of the per-policy mean returns.
        spearman_success, pearson_success: the same for the success rates.
        return_gap, success_rate_gap: the mean over policies of |imagined - MuJoCo| mean return and
            success rate.
        episodes_per_policy, sampling_steps, seeds: the settings.
    """

    embodiment: str
    policies: list[dict[str, float]]
    spearman: float
    pearson: float
    spearman_success: float
    pearson_success: float
    return_gap: float
    success_rate_gap: float
    episodes_per_policy: int
    sampling_steps: int
    seeds: list[int]


def run_mujoco(env_id: str, noise: float, seeds: list[int]) -> tuple[list[Start], np.ndarray, np.ndarray]:
    """(starts, returns (E,), successes (E,)) of the pixel expert at ``noise`` in MuJoCo."""
    env = gym.make(env_id)
    starts, returns, successes = [], [], []
    try:
        for seed in seeds:
            policy = PixelExpert(env_id, env.action_space.low, env.action_space.high, noise=noise, seed=seed)
            episode = run_episode(env, policy.act, seed)
            first = episode.observations[0]
            starts.append(Start(first[PIXELS].copy(), first[AGENT_POS].copy(), {"start_seed": seed}))
            returns.append(episode.total_return)
            successes.append(episode.success)
    finally:
        env.close()
    return starts, np.array(returns), np.array(successes)


def run_imagined(
    model: WorldModel,
    embodiment: str,
    noise: float,
    starts: list[Start],
    seeds: list[int],
    max_steps: int,
    sampling_steps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(returns (E,), successes (E,)) of the same policies from the same starts in the learned env."""
    env_id = PUSH_BLOCK_IDS[embodiment]
    envs = ForwardDynamicsVectorEnv(
        len(starts),
        model,
        embodiment,
        start=FixedStarts(starts),
        sampling_steps=sampling_steps,
        max_episode_steps=max_steps,
    )
    low, high = envs.single_action_space.low, envs.single_action_space.high
    policies = [PixelExpert(env_id, low, high, noise=noise, seed=seed) for seed in seeds]
    obs, _ = envs.reset(seed=seeds[0])
    returns = np.zeros(len(starts))
    successes = np.zeros(len(starts), bool)
    running = np.ones(len(starts), bool)
    while running.any():
        actions = np.stack(
            [
                policies[i].act({k: v[i] for k, v in obs.items()}, {}) if running[i] else np.zeros_like(low)
                for i in range(len(starts))
            ]
        )
        obs, rewards, terminated, truncated, info = envs.step(actions)
        returns += rewards * running
        successes |= info["is_success"] & running
        running &= ~(terminated | truncated)  # finished episodes were reset in place; stop counting them
    envs.close()
    return returns, successes


def evaluate_ranking(
    model: WorldModel,
    embodiment: str = "point",
    episodes: int = 8,
    noises: tuple[float, ...] = NOISES,
    sampling_steps: int = 4,
    seed: int = RANK_SEED,
    progress: bool = True,
) -> RankingResult:
    """Score each policy in MuJoCo and in the learned env; correlations of the two rankings."""
    if embodiment not in PUSH_BLOCK_IDS:
        raise ValueError(f"embodiment={embodiment!r}; expected one of {sorted(PUSH_BLOCK_IDS)}")
    if len(noises) < 3:
        raise ValueError(f"noises={noises}; expected at least 3 policies to rank")
    seeds = [seed + i for i in range(episodes)]
    policies = []
    for noise in tqdm(noises, desc=f"eval rank {embodiment}", disable=not progress):
        starts, real_returns, real_success = run_mujoco(PUSH_BLOCK_IDS[embodiment], noise, seeds)
        imag_returns, imag_success = run_imagined(
            model, embodiment, noise, starts, seeds, MAX_EPISODE_STEPS, sampling_steps
        )
        policies.append(
            {
                "noise": noise,
                "mujoco_return": float(real_returns.mean()),
                "mujoco_success_rate": float(real_success.mean()),
                "imagined_return": float(imag_returns.mean()),
                "imagined_success_rate": float(imag_success.mean()),
            }
        )

    def column(key: str) -> np.ndarray:
        return np.array([p[key] for p in policies])

    return RankingResult(
        embodiment=embodiment,
        policies=policies,
        spearman=spearman(column("mujoco_return"), column("imagined_return")),
        pearson=pearson(column("mujoco_return"), column("imagined_return")),
        spearman_success=spearman(column("mujoco_success_rate"), column("imagined_success_rate")),
        pearson_success=pearson(column("mujoco_success_rate"), column("imagined_success_rate")),
        return_gap=float(np.abs(column("imagined_return") - column("mujoco_return")).mean()),
        success_rate_gap=float(np.abs(column("imagined_success_rate") - column("mujoco_success_rate")).mean()),
        episodes_per_policy=episodes,
        sampling_steps=sampling_steps,
        seeds=[seeds[0], seeds[-1]],
    )


def plot_ranking(result: RankingResult, path: str | Path) -> Path:
    """Imagined vs MuJoCo return and success rate per policy, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key, label in ((axes[0], "return", "mean return"), (axes[1], "success_rate", "success rate")):
        x = [p[f"mujoco_{key}"] for p in result.policies]
        y = [p[f"imagined_{key}"] for p in result.policies]
        ax.scatter(x, y)
        for p, xi, yi in zip(result.policies, x, y, strict=True):
            ax.annotate(f"noise {p['noise']:.1f}", (xi, yi), fontsize=7)
        ax.set_xlabel(f"MuJoCo {label}")
        ax.set_ylabel(f"learned env {label}")
    axes[0].set_title(f"spearman {result.spearman:.2f}, pearson {result.pearson:.2f}")
    axes[1].set_title(f"spearman {result.spearman_success:.2f}")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
