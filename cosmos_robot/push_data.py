"""State-only PushBlock episodes simulated for the block's push MLPs: more pushes than the recipe's videos hold.

The push MLP (:class:`cosmos_robot.model.object_pose.ObjectPose`) reads no pixels: it learns the block's
step from the recorded pose, the effector (by the robot's kinematics) and the action. The block oracle
(``cosmos_robot.eval.block_oracle``) measured that on arm2 its error at h16 falls as the episodes grow
(docs/results.md), and the recipe's videos are the costly part of its data: MuJoCo without the camera
steps ~100x faster than with it (950 arm2 episodes in ~10 s on 2 cores). So training may add episodes
simulated here, from the same scripted experts and noise levels as the recipe's datasets, on seeds of
their own (:data:`PUSH_DATA_SEED`, below the seeds that tune and evaluate: ``cosmos_robot.seeds``).
"""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.keys import AGENT_POS
from cosmos_robot.policies.scripted import ScriptedExpert
from cosmos_robot.rollout import run_episode
from cosmos_robot.seeds import TUNING_SEED

# Seeds of the simulated pushes: above the recipe's datasets (below 100_000), below the tuning seeds.
PUSH_DATA_SEED = 100_000
# Each embodiment's episodes start at their own offset (the recipe's datasets do the same).
EMBODIMENT_OFFSET = {"point": 0, "arm2": 50_000}
# The recipe's mix of demonstrators, as (noise, share of the episodes): experts, noisy experts, random
# actions held a few steps (``recipes._push_block`` and ``recipes._random_actions``: 400 / 300 / 150 / 100).
MIX = ((0.0, 400 / 950), (0.3, 300 / 950), (0.6, 150 / 950), (1.0, 100 / 950))
# Each noise level's seeds start this far apart, so that no two episodes share a seed.
NOISE_OFFSET = 10_000


@dataclass(frozen=True)
class PushEpisodes:
    """Simulated episodes of one embodiment, rows concatenated: raw agent states (N, S), raw actions (N, A; the
    action taken at each state, zero at an episode's last), block poses (N, 3: x, y, yaw) and each
    episode's [start, end) rows."""

    states: np.ndarray
    actions: np.ndarray
    poses: np.ndarray
    bounds: list[tuple[int, int]]


def _counts(episodes: int) -> list[int]:
    """Episodes per noise level of :data:`MIX`, summing to ``episodes``."""
    counts = [int(round(share * episodes)) for _, share in MIX]
    counts[0] += episodes - sum(counts)
    return counts


def mix_seeds(episodes: int, first: int) -> list[tuple[float, range]]:
    """The recipe's mix of demonstrators as (noise, seeds) per level of :data:`MIX`, ``episodes`` in all: the level
    at mix index ``i`` runs seeds ``first + i * NOISE_OFFSET + k`` (every level a block of its own)."""
    counts = _counts(episodes)
    if max(counts) > NOISE_OFFSET:
        raise ValueError(f"episodes={episodes}: more than {NOISE_OFFSET} at one noise level would reuse seeds")
    start = [first + level * NOISE_OFFSET for level in range(len(MIX))]
    return [(noise, range(s, s + count)) for (noise, _), s, count in zip(MIX, start, counts, strict=True)]


def simulate_pushes(embodiment: str, episodes: int, seed: int = PUSH_DATA_SEED, progress: bool = True) -> PushEpisodes:
    """``episodes`` state-only episodes of ``embodiment``'s PushBlock, the recipe's mix of demonstrators.

    Same ``embodiment``, ``episodes`` and ``seed``, same episodes: the noise level at mix index ``i`` runs
    seeds ``seed + offset(embodiment) + i * 10_000 + k``.
    """
    if embodiment not in PUSH_BLOCK_IDS:
        raise ValueError(f"embodiment={embodiment!r}; expected a PushBlock embodiment, one of {sorted(PUSH_BLOCK_IDS)}")
    if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes < 1:
        raise ValueError(f"episodes={episodes!r}; expected a positive integer")
    first = seed + EMBODIMENT_OFFSET[embodiment]
    levels = mix_seeds(episodes, first)
    if first + len(MIX) * NOISE_OFFSET > TUNING_SEED:
        raise ValueError(
            f"seed={seed}: its episodes would reach the tuning seeds ({TUNING_SEED}+); expected a lower seed"
        )
    env = gym.make(PUSH_BLOCK_IDS[embodiment], pixels=False)
    states, actions, poses, bounds = [], [], [], []
    bar = tqdm(total=episodes, desc=f"simulate {embodiment} pushes", unit="ep", disable=not progress)
    try:
        for noise, seeds in levels:
            actor = ScriptedExpert.for_env(env, noise=noise)
            for episode_seed in seeds:
                actor.reset(seed=episode_seed)
                unwrapped = env.unwrapped
                episode = run_episode(
                    env, actor.act, episode_seed, before_step=lambda u=unwrapped: {"pose": u.block_pose()}
                )
                # One row per observation, the last one too (the pose a step moved the block to).
                states.append(np.array([o[AGENT_POS] for o in episode.observations], np.float64))
                taken = np.asarray(episode.actions, np.float64)
                actions.append(np.concatenate([taken, np.zeros_like(taken[:1])]))
                poses.append(np.array([e["pose"] for e in episode.extras] + [unwrapped.block_pose()], np.float64))
                start = bounds[-1][1] if bounds else 0
                bounds.append((start, start + len(states[-1])))
                bar.update()
    finally:
        bar.close()
        env.close()
    return PushEpisodes(np.concatenate(states), np.concatenate(actions), np.concatenate(poses), bounds)
