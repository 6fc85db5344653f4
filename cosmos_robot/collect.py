"""Collect demonstrations from a MuJoCo env into a LeRobot v3 dataset."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from cosmos_robot.atomic import check_output_path
from cosmos_robot.datasets.episode_spool import EpisodeSpool
from cosmos_robot.datasets.lerobot_io import LeRobotWriter
from cosmos_robot.envs import STOCK_TASKS, embodiment_of
from cosmos_robot.envs.gym_adapter import make_env
from cosmos_robot.keys import (
    ACTION,
    AGENT_POS,
    DEFAULT_CAMERA,
    DONE,
    OBS_ENV_STATE,
    OBS_IMAGES_PREFIX,
    OBS_STATE,
    PIXELS,
    REWARD,
    SUCCESS,
)
from cosmos_robot.policies.scripted import ScriptedExpert
from cosmos_robot.rollout import run_episode

POLICIES = ("expert", "random")


@dataclass
class CollectSummary:
    """What ``collect`` did."""

    out: str
    env_id: str
    embodiment: str
    episodes: int
    frames: int
    success_rate: float
    seconds: float
    frames_per_second: float

    def line(self) -> str:
        """One human-readable summary line."""
        return (
            f"collected {self.episodes} episodes, {self.frames} frames of {self.env_id} ({self.embodiment}) "
            f"into {self.out}: success rate {self.success_rate:.2f}, {self.frames_per_second:.0f} frames/s"
        )


def task_of(env: gym.Env) -> str:
    """Natural-language task string of an env."""
    base = env.unwrapped
    return getattr(base, "task", None) or STOCK_TASKS.get(env.spec.id, env.spec.id)


def dataset_features(env: gym.Env, camera: str = DEFAULT_CAMERA) -> dict[str, dict[str, Any]]:
    """LeRobot features for an env with the toolkit's observation convention."""
    pixels = env.observation_space[PIXELS]
    state_dim = env.observation_space[AGENT_POS].shape[0]
    action_dim = env.action_space.shape[0]
    base = env.unwrapped
    state_names = list(base.agent_joint_names) if hasattr(base, "agent_joint_names") else None
    action_names = (
        [base.model.actuator(i).name or f"a{i}" for i in range(base.model.nu)] if hasattr(base, "model") else None
    )
    features: dict[str, dict[str, Any]] = {
        OBS_IMAGES_PREFIX + camera: {"dtype": "video", "shape": pixels.shape, "names": ["height", "width", "channels"]},
        OBS_STATE: {
            "dtype": "float32",
            "shape": (state_dim,),
            "names": state_names or [f"s{i}" for i in range(state_dim)],
        },
        ACTION: {
            "dtype": "float32",
            "shape": (action_dim,),
            "names": action_names or [f"a{i}" for i in range(action_dim)],
        },
        REWARD: {"dtype": "float32", "shape": (1,), "names": None},
        SUCCESS: {"dtype": "bool", "shape": (1,), "names": None},
        DONE: {"dtype": "bool", "shape": (1,), "names": None},
    }
    if hasattr(base, "environment_state"):
        names = list(base.environment_state_names)
        features[OBS_ENV_STATE] = {"dtype": "float32", "shape": (len(names),), "names": names}
    return features


def collect(
    env_id: str,
    episodes: int,
    out: str | os.PathLike,
    *,
    policy: str = "expert",
    noise: float = 0.0,
    seed: int = 0,
    width: int = 64,
    height: int = 64,
    video: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    task: str | None = None,
    resume: bool = False,
    fps: int | None = None,
) -> CollectSummary:
    """Roll out a scripted policy in ``env_id`` and write a LeRobot v3 dataset at ``out``.

    Episode ``k`` resets the env and the policy's noise with seed ``seed + k``, so a dataset is
    reproducible from its arguments and evaluation can pick disjoint seeds.

    Args:
        env_id: a PushBlock id or any gymnasium MuJoCo id with ``rgb_array`` rendering.
        episodes: number of episodes, at least 1.
        out: dataset root to create; refused if it exists unless ``overwrite``.
        policy: "expert" (scripted, with ``noise``) or "random".
        noise: probability of a random action per step for the expert, in [0, 1].
        seed: seed of the first episode.
        width: image width, a positive multiple of 8.
        height: image height, a positive multiple of 8.
        video: store the camera as mp4 (else lossless PNG frames).
        overwrite: replace an existing ``out``.
        progress: show a progress bar.
        task: the task string stored with every frame; None uses the env's own task.
        resume: continue a stopped run with the same arguments from its last complete episode
            (finished episodes wait in ``.<out>.episodes/`` until the dataset is written).
        fps: the env's control rate; None reads it from the env (``metadata["render_fps"]`` or ``dt``).
    """
    if not isinstance(episodes, int) or episodes <= 0:
        raise ValueError(f"episodes={episodes!r}; expected a positive integer")
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r}; expected one of {list(POLICIES)}")
    if fps is not None and (not isinstance(fps, int) or isinstance(fps, bool) or fps <= 0):
        raise ValueError(f"fps={fps!r}; expected None or a positive integer (steps per second)")
    check_output_path(out, overwrite)
    env = make_env(env_id, width=width, height=height)
    try:
        actor = ScriptedExpert.for_env(env, noise=1.0 if policy == "random" else noise)
        meta = {
            "env_id": env_id,
            "embodiment": embodiment_of(env.spec.id),
            "camera": DEFAULT_CAMERA,
            "policy": policy,
            "noise": 1.0 if policy == "random" else noise,
            "episode_seeds": [seed + k for k in range(episodes)],
            "width": width,
            "height": height,
            "created_by": "cosmos-robot collect",
        }
        fps = fps or env_rate(env)
        started = time.perf_counter()
        settings = meta | {"task": task or task_of(env), "video": video}
        spool = EpisodeSpool(out, settings, resume=resume, overwrite=overwrite)
        first = spool.count()
        rollouts = range(first, episodes)
        bar = tqdm(rollouts, initial=first, total=episodes, desc=f"collect {env_id}", unit="ep", disable=not progress)
        for k in bar:
            episode_frames, success = _rollout_episode(env, actor, seed + k, settings["task"])
            spool.add(k, episode_frames, {"success": success})
        # Written from the spool, resumed or not: an interrupted run's dataset is an uninterrupted one's.
        with LeRobotWriter(
            out,
            fps=fps,
            features=dataset_features(env),
            robot_type=meta["embodiment"],
            meta=meta,
            overwrite=overwrite,
            video=video,
        ) as writer:
            written = spool.write_to(writer, episodes, progress=progress)
        spool.remove()
        frames = sum(length for length, _ in written)
        successes = [bool(info["success"]) for _, info in written]
        seconds = time.perf_counter() - started
    finally:
        env.close()
    return CollectSummary(
        out=str(Path(out)),
        env_id=env_id,
        embodiment=meta["embodiment"],
        episodes=episodes,
        frames=frames,
        success_rate=float(np.mean(successes)),
        seconds=seconds,
        frames_per_second=frames / seconds,
    )


def _rollout_episode(env: gym.Env, actor: ScriptedExpert, seed: int, task: str) -> tuple[list[dict[str, Any]], bool]:
    """Run one episode; returns (its frames as the dataset stores them, success)."""
    actor.reset(seed=seed)
    base = env.unwrapped
    # The block and goal at each observation (PushBlock), for datasets that keep the environment state.
    env_state = (lambda: {OBS_ENV_STATE: base.environment_state()}) if hasattr(base, "environment_state") else None
    episode = run_episode(env, actor.act, seed, before_step=env_state)
    camera_key = OBS_IMAGES_PREFIX + DEFAULT_CAMERA
    frames = []
    for t in range(episode.length):
        obs, action, info = episode.observations[t], episode.actions[t], episode.infos[t + 1]
        frame = {camera_key: obs[PIXELS], OBS_STATE: obs[AGENT_POS], ACTION: action, "task": task}
        frame |= episode.extras[t]
        done = t == episode.length - 1 and (episode.terminated or episode.truncated)
        frame[REWARD] = np.array([episode.rewards[t]], dtype=np.float32)
        frame[SUCCESS] = np.array([bool(info["is_success"])])
        frame[DONE] = np.array([done])
        frames.append(frame)
    return frames, episode.success


def summary_dict(summary: CollectSummary) -> dict[str, Any]:
    """The summary as a JSON-ready dict."""
    return asdict(summary)


def env_rate(env: gym.Env) -> int:
    """An env's control rate in Hz: ``metadata["render_fps"]``, else ``1 / dt``; a clear error if it states neither."""
    rate = env.metadata.get("render_fps") or (1.0 / env.unwrapped.dt if hasattr(env.unwrapped, "dt") else None)
    if not rate:
        raise ValueError(
            f"env={env.spec.id if env.spec else env} states no rate (metadata['render_fps'] or dt); "
            "expected fps= (--fps) to say how many steps it takes per second"
        )
    return int(round(rate))
