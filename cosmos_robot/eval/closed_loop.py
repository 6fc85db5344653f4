"""Closed-loop evaluation in MuJoCo: any policy of the small protocol, seeded starts, one harness.

A policy follows :class:`cosmos_robot.policies.protocol.Policy`: ``reset(seed)`` at each episode
start, ``act(obs, info) -> action`` each step. :class:`WorldModelPolicy`, the scripted experts
(``info``-driven and pixel-driven) and LeRobot policies (through
:class:`cosmos_robot.policies.lerobot_adapter.LeRobotPolicyAdapter`) all do, so they are compared on
the same starts. With a :class:`PolicyRecorder` the episodes are written to a rerun file, including
the frames the world-model policy predicted. On PushBlock the result also says how far those predicted
frames are from what MuJoCo then showed (:func:`predicted_frame_pairs`, read by the colour detector).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from cosmos_robot.envs import PUSH_BLOCK_IDS, embodiment_of, push_block_embodiment
from cosmos_robot.envs.action_repeat import ActionRepeat
from cosmos_robot.envs.gym_adapter import make_env, resolve_env_id
from cosmos_robot.eval.objects import object_metrics
from cosmos_robot.eval.recording import PolicyRecorder
from cosmos_robot.eval.result import EvalResult
from cosmos_robot.keys import PIXELS
from cosmos_robot.metrics import wilson_interval
from cosmos_robot.policies.protocol import Policy
from cosmos_robot.rollout import Episode, run_episode
from cosmos_robot.seeds import POLICY_SEED

POLICY_KINDS = ("model", "expert", "pixel-expert", "random", "lerobot")


class RandomPolicy:
    """Uniform random actions in the action box (the floor every policy should beat)."""

    def __init__(self, action_space: gym.spaces.Box, seed: int = 0) -> None:
        self.space = action_space
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray:
        return self.rng.uniform(self.space.low, self.space.high).astype(np.float32)


def make_policy(
    kind: str, env_id: str, checkpoint: str = "default", embodiment: str | None = None, **model_kwargs: Any
) -> Policy:
    """A policy by kind: ``model`` (the world model's policy at ``checkpoint``, acting as ``embodiment``:
    by default the one ``env_id``'s data is recorded under), ``expert``, ``pixel-expert`` (both PushBlock
    only), ``random``, or ``lerobot`` (a LeRobot ``pretrained_model`` folder at ``checkpoint``)."""
    from cosmos_robot.policies.pixel_expert import PixelExpert
    from cosmos_robot.policies.scripted import ScriptedExpert
    from cosmos_robot.policies.world_model_policy import WorldModelPolicy
    from cosmos_robot.world_model import load_world_model

    if kind not in POLICY_KINDS:
        raise ValueError(f"policy={kind!r}; expected one of {list(POLICY_KINDS)}")
    env_id = resolve_env_id(env_id)
    if kind == "model":
        model = load_world_model(checkpoint)
        name = embodiment or embodiment_of(env_id)
        if name not in model.embodiments:
            how = "" if embodiment else f" (the robot_type {env_id}'s data is recorded under; pass the embodiment)"
            raise ValueError(
                f"embodiment={name!r}{how} is unknown to the model; expected one of {sorted(model.embodiments)}"
            )
        return WorldModelPolicy(model, name, **model_kwargs)
    if kind == "lerobot":
        from cosmos_robot.policies.lerobot_adapter import LeRobotPolicyAdapter

        return LeRobotPolicyAdapter(checkpoint)
    if kind in ("expert", "pixel-expert"):
        push_block_embodiment(env_id)  # the scripted experts know PushBlock only
    env = gym.make(env_id)
    try:
        if kind == "expert":
            return ScriptedExpert.for_env(env)
        if kind == "pixel-expert":
            return PixelExpert(env_id, env.action_space.low, env.action_space.high)
        return RandomPolicy(env.action_space)
    finally:
        env.close()


def load_success_fn(spec: str) -> Callable[[dict[str, Any]], bool]:
    """The function named by ``'module:function'`` (a step's ``info`` -> success), imported."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"success={spec!r}; expected 'module:function'")
    try:
        function = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"success={spec!r} cannot be loaded ({error}); expected 'module:function'") from None
    if not callable(function):
        raise ValueError(f"success={spec!r} is a {type(function).__name__}; expected a function of info")
    return function


@dataclass
class ClosedLoopResult(EvalResult):
    """A policy's seeded episodes closed loop in MuJoCo.

    Attributes:
        env_id, episodes: where and how many.
        success_rate, mean_return, mean_length: over the episodes.
        success_ci95: the success rate's 95 % Wilson interval.
        seconds_per_step: time the policy took to choose an action, per step.
        per_episode: seed, return, length and success of each episode.
        predicted_frames: on PushBlock, for a policy that predicts frames: per horizon of its chunks, the
            effector's and the block's ``found`` share and ``error_mm`` in the predicted frames against
            MuJoCo's (:func:`cosmos_robot.eval.objects.object_metrics`), with ``chunks``, how many were
            compared; None otherwise.
        policy: the policy's kind, where the caller names it.
        rerun: the recording's path, where one was made.
    """

    env_id: str
    episodes: int
    success_rate: float
    success_ci95: tuple[float, float]
    mean_return: float
    mean_length: float
    seconds_per_step: float
    per_episode: list[dict[str, Any]]
    predicted_frames: dict[str, Any] | None = None
    policy: str | None = None
    rerun: str | None = None


def predicted_frame_pairs(episode: Episode, chunks: list[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(MuJoCo's frames, the predicted ones), each (N, F, H, W, 3), of the ``chunks`` (``ChunkPrediction`` objects)
    whose F actions were all executed as planned: only there is MuJoCo's frame the one the prediction is of
    (a temporal ensemble or a shorter execution acts otherwise). None where no chunk qualifies."""
    real, predicted = [], []
    for chunk in chunks:
        span = len(chunk.actions)
        if chunk.step + span > len(episode.actions):
            continue
        executed = np.asarray(episode.actions[chunk.step : chunk.step + span], np.float32)
        if not np.allclose(executed, np.asarray(chunk.actions, np.float32), atol=1e-5):
            continue
        real.append(np.stack([episode.observations[chunk.step + 1 + i][PIXELS] for i in range(span)]))
        predicted.append(np.asarray(chunk.frames))
    if not real:
        return None
    return np.stack(real), np.stack(predicted)


def record_episode(recorder: PolicyRecorder, index: int, seed: int, episode: Episode, chunks: list[Any]) -> None:
    """Log a finished episode, step by step, then the chunks the policy predicted on the way."""
    recorder.start_episode(index, seed)
    for obs, info, action in zip(episode.observations, episode.infos, episode.actions, strict=False):
        recorder.log_step(obs, action, bool(info.get("is_success", False)))
    recorder.log_predictions(chunks)
    recorder.end_episode(episode.observations[-1], index, episode.success, episode.total_return)


def evaluate_policy(
    policy: Policy,
    env_id: str,
    episodes: int,
    seed: int = POLICY_SEED,
    recorder: PolicyRecorder | None = None,
    progress: bool = True,
    image_size: int = 64,
    action_repeat: int = 1,
    success_fn: Callable[[dict[str, Any]], bool] | None = None,
    max_steps: int | None = None,
) -> ClosedLoopResult:
    """Run ``episodes`` seeded episodes (seeds ``seed``, ``seed + 1``, ...) closed loop in MuJoCo.

    PushBlock ids run as they are. Any other gymnasium MuJoCo id is made by
    :func:`cosmos_robot.envs.gym_adapter.make_env` (``image_size`` pixels + ``agent_pos``; success from
    the env's ``is_success`` or ``success`` info, else ``success_fn(info)``), each action held for
    ``action_repeat`` env steps (a model trained on data recorded faster than its own rate:
    :func:`cosmos_robot.envs.action_repeat.action_repeat`). ``max_steps`` caps an episode's steps.
    """
    if episodes <= 0:
        raise ValueError(f"episodes={episodes!r}; expected a positive integer")
    if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
        raise ValueError(f"max_steps={max_steps!r}; expected None or a positive integer")
    env_id = resolve_env_id(env_id)
    if env_id in PUSH_BLOCK_IDS.values():
        if action_repeat != 1 or success_fn is not None:
            raise ValueError(f"env={env_id!r} is a PushBlock env: it has its own rate and success; expected neither")
        env = gym.make(env_id)
    else:
        env = make_env(env_id, width=image_size, height=image_size, success_fn=success_fn)
        if action_repeat != 1:
            env = ActionRepeat(env, action_repeat)
    per_episode: list[dict[str, Any]] = []
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    steps_total, seconds = 0, 0.0
    try:
        for k in tqdm(range(episodes), desc=f"policy in {env_id.split('/')[-1]}", disable=not progress):
            episode_seed = seed + k
            policy.reset(seed=episode_seed)
            episode = run_episode(
                env, lambda obs, info: np.asarray(policy.act(obs, info), np.float32), episode_seed, max_steps=max_steps
            )
            chunks = getattr(policy, "chunks", [])
            if recorder is not None:
                record_episode(recorder, k, episode_seed, episode, chunks)
            if env_id in PUSH_BLOCK_IDS.values():  # the detector knows PushBlock's colours only
                found = predicted_frame_pairs(episode, chunks)
                if found is not None:
                    pairs.append(found)
            seconds += episode.act_seconds
            steps_total += episode.length
            per_episode.append(
                {
                    "seed": episode_seed,
                    "return": episode.total_return,
                    "length": episode.length,
                    "success": episode.success,
                }
            )
    finally:
        env.close()
    return ClosedLoopResult(
        env_id=env_id,
        episodes=episodes,
        success_rate=float(np.mean([e["success"] for e in per_episode])),
        success_ci95=wilson_interval(sum(e["success"] for e in per_episode), len(per_episode)),
        mean_return=float(np.mean([e["return"] for e in per_episode])),
        mean_length=float(np.mean([e["length"] for e in per_episode])),
        seconds_per_step=seconds / max(steps_total, 1),
        per_episode=per_episode,
        predicted_frames=_predicted_frame_metrics(pairs),
    )


def _predicted_frame_metrics(pairs: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, Any] | None:
    if not pairs:
        return None
    real = np.concatenate([r for r, _ in pairs])
    predicted = np.concatenate([p for _, p in pairs])
    metrics = object_metrics(real, predicted)
    keep = ("effector_found", "effector_error_mm", "block_found", "block_error_mm")
    return {"chunks": len(real)} | {k: metrics[k] for k in keep}
