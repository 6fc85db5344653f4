"""RL in imagination: PPO trained only inside the learned env, evaluated in MuJoCo.

Task (``point``): a reach task defined on the agent state, so that its reward is the same function
in both worlds: drive the pusher to ``TARGET``; reward ``max(0, 1 - distance / 0.2 m)`` per step,
success within 2 cm, 40-step episodes, observation ``agent_pos``. The learned env supplies the
dynamics (imagined frames and states from the world model); the reward is computed from the
imagined state by the same function. PPO (stable-baselines3) trains for the same number of steps
(200k by default) in the learned env and in MuJoCo; both policies are then evaluated in MuJoCo from
the same seeded starts. ``ratio_real_return`` is the imagination-trained policy's real return over the
MuJoCo-trained one's. The learned env observes state only (``observation="state"``): with the reward
and success given, each imagined step is the forward prior alone, no frame decoded, which is what
makes 200k PPO steps fit in minutes on a CPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.forward_dynamics import ForwardDynamicsVectorEnv
from cosmos_robot.envs.start_sources import StartSource
from cosmos_robot.eval.result import EvalResult
from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import AGENT_POS
from cosmos_robot.rollout import run_episode
from cosmos_robot.seeds import IMAGINATION_RL_SEED

TARGET = np.array([0.1, -0.08], np.float32)
REACH_SCALE = 0.2  # m: reward falls to 0 at this distance
SUCCESS_RADIUS = 0.02
EPISODE_STEPS = 40


@dataclass
class ImaginationRLResult(EvalResult):
    """PPO trained in the learned env and in MuJoCo on the reach task, both scored in MuJoCo.

    Attributes:
        task: the reach task's definition.
        real_return_*, real_success_*: MuJoCo return and success rate of PPO trained in imagination,
            of PPO trained in MuJoCo, and of a random policy.
        ratio_real_return: imagination-trained return / MuJoCo-trained return (NaN where the latter is 0).
        train_steps, num_envs, sampling_steps, ppo_seed, eval_episodes, eval_seeds: the settings.
        train_seconds_imagination, train_seconds_mujoco: wall time of each PPO run.
    """

    task: dict[str, Any]
    train_steps: int
    num_envs: int
    sampling_steps: int
    ppo_seed: int
    real_return_imagination_ppo: float
    real_success_imagination_ppo: float
    real_return_mujoco_ppo: float
    real_success_mujoco_ppo: float
    real_return_random: float
    ratio_real_return: float
    eval_episodes: int
    eval_seeds: list[int]
    train_seconds_imagination: float
    train_seconds_mujoco: float


def reach_reward(agent_pos: np.ndarray) -> float | np.ndarray:
    """Per-step reward of the reach task from the agent state (S,), or (B,) rewards of states (B, S)."""
    distance = np.linalg.norm(np.asarray(agent_pos)[..., :2] - TARGET, axis=-1)
    reward = np.maximum(0.0, 1.0 - distance / REACH_SCALE)
    return float(reward) if reward.ndim == 0 else reward


def reach_success(agent_pos: np.ndarray) -> bool | np.ndarray:
    """Within ``SUCCESS_RADIUS`` of the target: for one state (S,), or (B,) flags of states (B, S)."""
    inside = np.linalg.norm(np.asarray(agent_pos)[..., :2] - TARGET, axis=-1) < SUCCESS_RADIUS
    return bool(inside) if inside.ndim == 0 else inside


class ReachInMuJoCo(gym.Wrapper):
    """The real ``point`` env as the reach task: observes ``agent_pos``, the reach reward, 40 steps."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = env.observation_space[AGENT_POS]
        self._steps = 0

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._steps = 0
        return obs[AGENT_POS], info

    def step(self, action: np.ndarray):
        # The block task's own termination is ignored: this task only ends by time.
        obs, _, _, _, info = self.env.unwrapped.step(action)
        self._steps += 1
        info = dict(info, is_success=reach_success(obs[AGENT_POS]))
        return obs[AGENT_POS], reach_reward(obs[AGENT_POS]), False, self._steps >= EPISODE_STEPS, info


def sb3_vector_env(envs: ForwardDynamicsVectorEnv, key: str = AGENT_POS):
    """A stable-baselines3 ``VecEnv`` view of a ``ForwardDynamicsVectorEnv`` observing ``obs[key]``."""
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv

    class ImaginedVecEnv(VecEnv):
        def __init__(self) -> None:
            super().__init__(envs.num_envs, envs.single_observation_space[key], envs.single_action_space)
            self._actions: np.ndarray | None = None

        def reset(self) -> np.ndarray:
            seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
            obs, _ = envs.reset(seed=seed)
            self._reset_seeds()
            return obs[key]

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = actions

        def step_wait(self):
            obs, rewards, terminated, truncated, info = envs.step(self._actions)  # the env clips and counts
            dones = terminated | truncated
            infos: list[dict[str, Any]] = [{"is_success": bool(info["is_success"][i])} for i in range(self.num_envs)]
            for i in np.flatnonzero(dones):
                infos[i]["terminal_observation"] = info["final_obs"][i][key]
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            return obs[key], rewards.astype(np.float32), dones, infos

        def close(self) -> None:
            envs.close()

        # The sub-envs share one set of settings: an attribute of the vector env, else of its Imagination.
        def _owner(self, name: str) -> Any:
            return envs if hasattr(envs, name) else envs.imagination

        def get_attr(self, attr_name: str, indices=None) -> list[Any]:
            return [getattr(self._owner(attr_name), attr_name)] * len(self._get_indices(indices))

        def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
            setattr(self._owner(attr_name), attr_name, value)

        def env_method(self, method_name: str, *args: Any, indices=None, **kwargs: Any) -> list[Any]:
            method = getattr(self._owner(method_name), method_name)
            return [method(*args, **kwargs)] * len(self._get_indices(indices))

        def env_is_wrapped(self, wrapper_class: type, indices=None) -> list[bool]:
            return [False] * len(self._get_indices(indices))

    return ImaginedVecEnv()


def evaluate_in_mujoco(policy: Any, episodes: int, seed: int) -> tuple[float, float]:
    """(mean real return, success rate) of a policy (``predict(obs, deterministic)``) on the reach task."""
    env = ReachInMuJoCo(gym.make(PUSH_BLOCK_IDS["point"]))
    returns, successes = [], []
    for i in range(episodes):
        episode = run_episode(env, lambda obs, info: policy(obs), seed + i)
        returns.append(episode.total_return)
        successes.append(episode.success)
    env.close()
    return float(np.mean(returns)), float(np.mean(successes))


def evaluate_imagination_rl(
    model: WorldModel,
    steps: int = 200_000,
    num_envs: int = 16,
    eval_episodes: int = 16,
    sampling_steps: int = 2,
    seed: int = 0,
    progress: bool = True,
    eval_seed: int = IMAGINATION_RL_SEED,
    start: StartSource | str | None = None,
) -> ImaginationRLResult:
    """Train PPO for ``steps`` in the learned env and in MuJoCo; evaluate both in MuJoCo.

    ``seed`` seeds PPO and the learned env's starts; ``eval_seed`` is the first MuJoCo evaluation episode's seed;
    ``start`` is where the learned env's episodes start (None: PushBlockPoint's resets; the MuJoCo
    oracle passes its own :meth:`~cosmos_robot.eval.oracle.MuJoCoOracle.starts`).
    """
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    if steps < num_envs * 32:
        raise ValueError(f"steps={steps}; expected at least num_envs * 32 = {num_envs * 32}")
    ppo = {"n_steps": 64, "batch_size": min(256, 64 * num_envs), "n_epochs": 5, "gamma": 0.95, "seed": seed}
    ppo["device"] = "cpu"

    imagined_envs = ForwardDynamicsVectorEnv(
        num_envs,
        model,
        "point",
        start=start,
        sampling_steps=sampling_steps,
        max_episode_steps=EPISODE_STEPS,
        reward_fn=lambda obs, action, next_obs: reach_reward(next_obs[AGENT_POS]),
        success_fn=lambda obs: reach_success(obs[AGENT_POS]),
        terminate_on_success=False,
        observation="state",
        batched_fns=True,
    )
    vec = sb3_vector_env(imagined_envs)
    vec.seed(seed)
    imagined = PPO("MlpPolicy", vec, **ppo)
    started = time.perf_counter()
    imagined.learn(total_timesteps=steps, progress_bar=progress)
    seconds_imagination = time.perf_counter() - started
    vec.close()

    real_vec = make_vec_env(lambda: ReachInMuJoCo(gym.make(PUSH_BLOCK_IDS["point"])), n_envs=num_envs, seed=seed)
    real = PPO("MlpPolicy", real_vec, **ppo)
    started = time.perf_counter()
    real.learn(total_timesteps=steps, progress_bar=progress)
    seconds_mujoco = time.perf_counter() - started
    real_vec.close()

    rng = np.random.default_rng(seed)
    low, high = np.array([-0.3, -0.3], np.float32), np.array([0.3, 0.3], np.float32)
    results = {
        name: evaluate_in_mujoco(fn, eval_episodes, eval_seed)
        for name, fn in {
            "imagination": lambda obs: imagined.predict(obs, deterministic=True)[0],
            "mujoco": lambda obs: real.predict(obs, deterministic=True)[0],
            "random": lambda obs: rng.uniform(low, high).astype(np.float32),
        }.items()
    }
    ratio = results["imagination"][0] / results["mujoco"][0] if results["mujoco"][0] > 0 else float("nan")
    return ImaginationRLResult(
        task={
            "embodiment": "point",
            "target": TARGET.tolist(),
            "reward": "max(0, 1 - |agent_pos - target| / 0.2 m) per step",
            "episode_steps": EPISODE_STEPS,
            "success_radius_m": SUCCESS_RADIUS,
        },
        train_steps=steps,
        num_envs=num_envs,
        sampling_steps=sampling_steps,
        ppo_seed=seed,
        real_return_imagination_ppo=results["imagination"][0],
        real_success_imagination_ppo=results["imagination"][1],
        real_return_mujoco_ppo=results["mujoco"][0],
        real_success_mujoco_ppo=results["mujoco"][1],
        real_return_random=results["random"][0],
        ratio_real_return=ratio,
        eval_episodes=eval_episodes,
        eval_seeds=[eval_seed, eval_seed + eval_episodes - 1],
        train_seconds_imagination=seconds_imagination,
        train_seconds_mujoco=seconds_mujoco,
    )
