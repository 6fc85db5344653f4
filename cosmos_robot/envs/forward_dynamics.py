"""The learned model as a gymnasium environment: imagined steps instead of MuJoCo steps.

``ForwardDynamicsEnv`` imitates a ground-truth env (the *reference*): the same observation space
(``pixels`` + ``agent_pos``) and action Box. ``reset`` draws an observed start from a real env's reset
or from a recorded episode; ``step`` asks the world model for the next frame and state given the
recent frames and the action. ``ForwardDynamicsVectorEnv`` steps many imagined episodes with ONE
batched model call per step, which is where the speed comes from.

Reward and termination come from the model's learned heads, or from a user ``reward_fn(obs, action,
next_obs)`` (and ``success_fn(next_obs)``). Actions outside the Box are clipped and counted in
``info``; NaN actions raise. Everything is deterministic under ``reset(seed=...)``.

What a step costs is what is read (docs/guide.md, "A fast learned env"): the imagined episode lives in
the model's latent space, frames are decoded only for ``observation="pixels"``, and the MoT runs only
for the learned reward or success. ``observation="state"`` with ``reward_fn`` and ``success_fn`` is the
forward prior alone: one small conv net per step.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from cosmos_robot.datasets.for_model import learned_camera
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.start_sources import DatasetStarts, StartSource, make_start_source
from cosmos_robot.forking import refuse_forked_child
from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import AGENT_POS, PIXELS
from cosmos_robot.world_model import load_world_model

RewardFn = Callable[[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray]], float]
SuccessFn = Callable[[dict[str, np.ndarray]], bool]
# What the env observes: the reference env's pixels and agent_pos, or agent_pos alone (no frame is
# decoded, the fast configuration for agents that train on state).
OBSERVATIONS = ("pixels", "state")


def reference_spaces(reference: str | gym.Env, size: int = 64) -> tuple[spaces.Dict, spaces.Box]:
    """(observation space, action space) of the ground-truth env the learned one imitates (an id is made
    rendering ``size`` x ``size`` frames)."""
    if isinstance(reference, gym.Env):
        return reference.observation_space, reference.action_space
    from cosmos_robot.envs.gym_adapter import make_env

    env = make_env(reference, width=size, height=size)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


class Imagination:
    """What the single and the vector env share: their validated settings and one batched imagined step.

    Arguments are those of :class:`ForwardDynamicsEnv` (see there).
    """

    def __init__(
        self,
        checkpoint: WorldModel | str | os.PathLike,
        embodiment: str,
        start: str | os.PathLike | gym.Env | StartSource | None,
        reference: str | gym.Env | None,
        max_episode_steps: int,
        sampling_steps: int,
        reward_fn: RewardFn | None,
        success_fn: SuccessFn | None,
        success_threshold: float,
        terminate_on_success: bool,
        observation: str,
        batched_fns: bool = False,
    ) -> None:
        refuse_forked_child("the learned env")
        if observation not in OBSERVATIONS:
            raise ValueError(f"observation={observation!r}; expected one of {list(OBSERVATIONS)}")
        if not isinstance(max_episode_steps, int) or max_episode_steps < 1:
            raise ValueError(f"max_episode_steps={max_episode_steps!r}; expected a positive integer")
        if not isinstance(sampling_steps, int) or sampling_steps < 1:
            raise ValueError(f"sampling_steps={sampling_steps!r}; expected a positive integer")
        if not 0.0 < success_threshold < 1.0:
            raise ValueError(f"success_threshold={success_threshold!r}; expected a probability in (0, 1)")
        model = load_world_model(checkpoint)
        if embodiment not in model.embodiments:
            raise ValueError(
                f"embodiment={embodiment!r} is not known to the model; expected one of {model.embodiments}"
            )
        if reward_fn is None and getattr(model, "forward_path", "full") == "prior":
            raise ValueError(
                "the model's forward_path='prior' predicts no reward (it would be 0 every step); "
                "pass reward_fn (and success_fn), or use forward_path='full'"
            )
        size = model.image_size
        camera = learned_camera(model, embodiment)
        if reference is None and embodiment in PUSH_BLOCK_IDS:
            reference = PUSH_BLOCK_IDS[embodiment]
        if reference is not None:
            pixel_space, self.action_space = reference_spaces(reference, size)
            self.start_source = make_start_source(start if start is not None else reference, size, camera)
        elif start is not None and not isinstance(start, gym.Env) and Path(str(start)).exists():
            # A robot known only from its recordings: the spaces are the dataset's.
            self.start_source = DatasetStarts(start, size, camera)
            pixel_space, self.action_space = self.start_source.spaces()
        else:
            raise ValueError(
                f"reference=None for embodiment={embodiment!r}; pass the gymnasium id of the env it imitates, "
                "or start= a dataset of it"
            )
        if pixel_space[PIXELS].shape != (size, size, 3):
            raise ValueError(
                f"reference observes pixels of shape {pixel_space[PIXELS].shape}; the model expects ({size}, {size}, 3)"
            )
        self.pixel_space = pixel_space
        self.observation = observation
        self.observation_space = (
            pixel_space if observation == "pixels" else spaces.Dict({AGENT_POS: pixel_space[AGENT_POS]})
        )
        self.model = model
        self.embodiment = embodiment
        self.max_episode_steps = max_episode_steps
        self.sampling_steps = sampling_steps
        self.reward_fn = reward_fn
        self.success_fn = success_fn
        self.success_threshold = success_threshold
        self.terminate_on_success = terminate_on_success
        self.batched_fns = bool(batched_fns)

    @property
    def context_frames(self) -> int:
        """Frames of history the model reads."""
        return self.model.context_frames

    def observe(self, frames: np.ndarray, states: np.ndarray) -> dict[str, np.ndarray]:
        """The observation (batched) of the frames and states, in the env's observation mode (copies)."""
        if self.observation == "state":
            return {AGENT_POS: states.copy()}
        return {PIXELS: frames.copy(), AGENT_POS: states.copy()}

    def step(
        self, history: np.ndarray, states: np.ndarray, actions: np.ndarray, seed: int, latents: np.ndarray | None
    ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """(next frames (B, H, W, 3) or None where the model decoded none, next states (B, S), rewards (B,)
        float64, success (B,) bool, the model's latents of the next frames (None if it has none)).

        Rewards and success come from ``reward_fn`` / ``success_fn`` where given, else from the model.
        Frames are decoded only where they are observed or the model needs them.

        Args:
            history: (B, Tc, H, W, 3) the last observed frames.
            states: (B, S) agent states at the last frame.
            actions: (B, A) one action per episode, already clipped.
            seed: seeds the sampling noise.
            latents: the model's latents of ``history`` from the previous step (all-NaN rows for episodes
                just reset), or None: the imagined episode continues in the model's latent space rather
                than re-encoding its own decoded frames.
        """
        # The observation before the step, copied only when a reward_fn reads it.
        before = self.observe(history[:, -1], states) if self.reward_fn else None
        learned = self.reward_fn is None or self.success_fn is None
        prediction = self.model.forward_dynamics(
            history,
            actions[:, None],
            self.embodiment,
            states=states,
            steps=self.sampling_steps,
            seed=seed,
            latents=latents,
            decode=self.observation == "pixels",
            rewards=learned,
        )
        frames = None if prediction.frames is None else prediction.frames[:, 0]
        next_states = prediction.states[:, 0].astype(np.float32)
        if learned:
            rewards = prediction.rewards[:, 0].astype(np.float64)
            success = prediction.success[:, 0] > self.success_threshold
        after = self.observe(history[:, -1] if frames is None else frames, next_states)
        if self.reward_fn is not None:
            rewards = self._task_values(self.reward_fn, "reward_fn", (before, actions, after), np.float64)
        if self.success_fn is not None:
            success = self._task_values(self.success_fn, "success_fn", (after,), bool)
        return frames, next_states, rewards, success.astype(bool), prediction.latents

    def _task_values(self, fn: Callable[..., Any], name: str, args: tuple[Any, ...], dtype: type) -> np.ndarray:
        """(B,) values of a task function: one call on the batch (``batched_fns``) or one per episode."""
        b = len(args[-1][AGENT_POS])
        if self.batched_fns:
            values = np.asarray(fn(*args))
            if values.shape != (b,):
                raise ValueError(
                    f"{name} returned shape {values.shape} with batched_fns=True; "
                    f"expected ({b},), one value per episode"
                )
            return values.astype(dtype)
        rows = [fn(*(_row(a, i) if isinstance(a, dict) else a[i] for a in args)) for i in range(b)]
        return np.array([dtype(v) for v in rows], dtype)

    def close(self) -> None:
        """Close the start source's env, if any."""
        close = getattr(self.start_source, "close", None)
        if close is not None:
            close()


def _check_and_clip(action: np.ndarray, space: spaces.Box) -> tuple[np.ndarray, np.ndarray]:
    """(clipped float32 actions, per-row flag of clipping); NaN/inf raise."""
    action = np.asarray(action, dtype=np.float64)
    if not np.all(np.isfinite(action)):
        raise ValueError(f"action={action.tolist()} contains NaN or inf; expected finite values in {space}")
    clipped = np.clip(action, space.low, space.high)
    changed = np.any(clipped != action, axis=-1)
    return clipped.astype(np.float32), changed


class ForwardDynamicsEnv(gym.Env):
    """A gymnasium env whose dynamics are the world model's forward dynamics.

    ## Action Space
    The reference env's Box (raw units, e.g. m/s for ``point``). Actions outside it are clipped;
    ``info["clipped_actions"]`` counts them over the episode. NaN or inf raise ``ValueError``.

    ## Observation Space
    ``observation="pixels"`` (default): the reference env's ``Dict(pixels=Box(uint8, (H, W, 3)),
    agent_pos=Box(float32))``, imagined frames and states. ``observation="state"``: ``Dict(agent_pos=...)``
    alone; no frame is decoded, and with ``reward_fn`` and ``success_fn`` no MoT runs either.

    ## Rewards
    The model's learned reward head, or ``reward_fn(obs, action, next_obs)`` when given.

    ## Starting State
    From ``start``: a real env's reset (a gymnasium id or env; ``info["start_seed"]`` replays it in
    MuJoCo) or the first frame of a random episode of a LeRobot dataset / zarr store (its camera the
    model learned from, cropped and resized to the model's frames). One step stands for as many steps
    of the real env as the model's rate divides the robot's recorded rate (docs/guide.md, "Rates").

    ## Episode End
    Terminated when the learned success probability exceeds ``success_threshold`` (or
    ``success_fn(next_obs)`` is true); ``info["is_success"]`` is always set. Truncated after
    ``max_episode_steps``.

    ## Arguments
    ``checkpoint`` (any :class:`~cosmos_robot.interface.WorldModel` backend, a checkpoint folder or
    ``"default"``), ``embodiment``, ``start`` (default: the reference env), ``reference`` (default:
    the PushBlock env of the embodiment; for a robot known only from recordings, None with ``start`` its
    dataset: the spaces are then the dataset's), ``max_episode_steps`` (80), ``sampling_steps`` (denoising
    steps per step, 4), ``reward_fn``, ``success_fn``, ``success_threshold`` (0.5), ``render_mode``
    (None or "rgb_array"; needs ``observation="pixels"``), ``terminate_on_success`` (True; False keeps
    open-loop comparisons running after a success), ``observation`` ("pixels" or "state"),
    ``batched_fns`` (False; True calls ``reward_fn`` / ``success_fn`` once per step on the whole batch:
    observations (B, ...) and actions (B, A) in, (B,) values out, instead of once per episode).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        checkpoint: WorldModel | str | os.PathLike = "default",
        embodiment: str = "point",
        start: str | os.PathLike | gym.Env | StartSource | None = None,
        reference: str | gym.Env | None = None,
        max_episode_steps: int = 80,
        sampling_steps: int = 4,
        reward_fn: RewardFn | None = None,
        success_fn: SuccessFn | None = None,
        success_threshold: float = 0.5,
        render_mode: str | None = None,
        terminate_on_success: bool = True,
        observation: str = "pixels",
        batched_fns: bool = False,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r} is not supported; expected None or 'rgb_array'")
        if render_mode is not None and observation != "pixels":
            raise ValueError(
                f"render_mode={render_mode!r} with observation={observation!r}: a state-only env decodes no "
                "frame to render; expected observation='pixels'"
            )
        settings = (max_episode_steps, sampling_steps, reward_fn, success_fn, success_threshold, terminate_on_success)
        self.imagination = Imagination(checkpoint, embodiment, start, reference, *settings, observation, batched_fns)
        self.metadata = dict(self.metadata, render_fps=self.imagination.model.fps)  # one step per model frame
        self.observation_space = self.imagination.observation_space
        self.action_space = self.imagination.action_space
        self.render_mode = render_mode
        self._history: np.ndarray | None = None
        self._state: np.ndarray | None = None
        self._latents: np.ndarray | None = None
        self._steps = 0
        self._clipped = 0

    def _observation(self) -> dict[str, np.ndarray]:
        return self.imagination.observe(self._history[-1], self._state)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw a start from the start source with the env's seeded generator."""
        super().reset(seed=seed)
        start = self.imagination.start_source.draw(self.np_random)
        self._history = np.repeat(start.frame[None], self.imagination.context_frames, axis=0)
        self._state = start.state.astype(np.float32)
        self._latents = None
        self._steps = 0
        self._clipped = 0
        return self._observation(), {"is_success": False, "clipped_actions": 0, **start.info}

    def step(self, action: np.ndarray):
        """One imagined control step."""
        if self._history is None:
            raise RuntimeError("step() called before reset()")
        clipped, changed = _check_and_clip(np.reshape(action, self.action_space.shape), self.action_space)
        self._clipped += int(changed)
        seed = int(self.np_random.integers(2**31 - 1))
        imagination = self.imagination
        frames, states, rewards, success, self._latents = imagination.step(
            self._history[None], self._state[None], clipped[None], seed, self._latents
        )
        if frames is not None:  # else the episode continues in the model's latents alone
            self._history = np.concatenate([self._history[1:], frames[:1]])
        self._state = states[0]
        self._steps += 1
        is_success = bool(success[0])
        truncated = self._steps >= imagination.max_episode_steps
        info = {"is_success": is_success, "clipped_actions": self._clipped, "action_clipped": bool(changed)}
        return self._observation(), float(rewards[0]), is_success and imagination.terminate_on_success, truncated, info

    def render(self) -> np.ndarray | None:
        """The current imagined frame (``render_mode="rgb_array"``), else None."""
        if self.render_mode != "rgb_array" or self._history is None:
            return None
        return self._history[-1].copy()

    def close(self) -> None:
        """Close the start source's env, if any."""
        self.imagination.close()


class ForwardDynamicsVectorEnv(VectorEnv):
    """``num_envs`` imagined episodes stepped with one batched model call per step.

    Same arguments as :class:`ForwardDynamicsEnv` plus ``num_envs``. Autoreset is ``SAME_STEP``:
    a sub-env that terminates or truncates is reset in place in the same ``step``; the returned
    observation is the new episode's first, and the last one is in ``info["final_obs"]`` (with
    ``info["final_info"]``).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10, "autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int,
        checkpoint: WorldModel | str | os.PathLike = "default",
        embodiment: str = "point",
        start: str | os.PathLike | gym.Env | StartSource | None = None,
        reference: str | gym.Env | None = None,
        max_episode_steps: int = 80,
        sampling_steps: int = 4,
        reward_fn: RewardFn | None = None,
        success_fn: SuccessFn | None = None,
        success_threshold: float = 0.5,
        terminate_on_success: bool = True,
        observation: str = "pixels",
        batched_fns: bool = False,
    ) -> None:
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs={num_envs!r}; expected a positive integer")
        settings = (max_episode_steps, sampling_steps, reward_fn, success_fn, success_threshold, terminate_on_success)
        self.imagination = Imagination(checkpoint, embodiment, start, reference, *settings, observation, batched_fns)
        self.metadata = dict(self.metadata, render_fps=self.imagination.model.fps)
        self.num_envs = num_envs
        self.single_observation_space = self.imagination.observation_space
        self.single_action_space = self.imagination.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        tc = self.imagination.context_frames
        pixels = self.imagination.pixel_space[PIXELS].shape
        self._history = np.zeros((num_envs, tc, *pixels), np.uint8)
        self._state = np.zeros((num_envs, *self.single_observation_space[AGENT_POS].shape), np.float32)
        self._steps = np.zeros(num_envs, np.int64)
        self._clipped = np.zeros(num_envs, np.int64)
        self._rngs: list[np.random.Generator] = []
        self._latents: np.ndarray | None = None
        self._started = False

    def _observations(self) -> dict[str, np.ndarray]:
        return self.imagination.observe(self._history[:, -1], self._state)

    def _start(self, index: int) -> None:
        start = self.imagination.start_source.draw(self._rngs[index])
        self._history[index] = start.frame[None]
        self._state[index] = start.state
        self._steps[index] = 0
        self._clipped[index] = 0
        if self._latents is not None:
            self._latents[index] = np.nan  # encoded from the start frame at the next step

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every sub-env; ``seed`` is one int (sub-env i gets seed + i) or one per sub-env."""
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"seed has {len(seeds)} entries; expected num_envs={self.num_envs}")
        self._rngs = [np.random.default_rng(s) for s in seeds]
        self._latents = None
        for i in range(self.num_envs):
            self._start(i)
        self._started = True
        info = {"is_success": np.zeros(self.num_envs, bool), "clipped_actions": np.zeros(self.num_envs, np.int64)}
        return self._observations(), info

    def step(self, actions: np.ndarray):
        """One batched imagined step for every sub-env; finished ones are reset in place."""
        if not self._started:
            raise RuntimeError("step() called before reset()")
        actions = np.asarray(actions)
        if actions.shape != self.action_space.shape:
            raise ValueError(f"actions has shape {actions.shape}; expected {self.action_space.shape}")
        clipped, changed = _check_and_clip(actions, self.single_action_space)
        self._clipped += changed
        imagination = self.imagination
        seed = int(self._rngs[0].integers(2**31 - 1))
        frames, states, rewards, success, self._latents = imagination.step(
            self._history, self._state, clipped, seed, self._latents
        )
        if frames is not None:  # else the episodes continue in the model's latents alone
            self._history = np.concatenate([self._history[:, 1:], frames[:, None]], 1)
        self._state = states
        self._steps += 1
        next_obs = self._observations()
        terminated = success & imagination.terminate_on_success
        truncated = (self._steps >= imagination.max_episode_steps) & ~terminated
        info: dict[str, Any] = {
            "is_success": success.copy(),
            "clipped_actions": self._clipped.copy(),
            "action_clipped": changed,
        }
        done = terminated | truncated
        if done.any():
            info["final_obs"] = np.array([_row(next_obs, i) if done[i] else None for i in range(self.num_envs)])
            info["final_info"] = {"is_success": success.copy(), "_is_success": done.copy()}
            info["_final_obs"] = done.copy()
            for i in np.flatnonzero(done):
                self._start(int(i))
            next_obs = self._observations()
        return next_obs, rewards, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        """Close the start source."""
        self.imagination.close()


def _row(obs: dict[str, np.ndarray], index: int) -> dict[str, np.ndarray]:
    return {k: v[index] for k, v in obs.items()}
