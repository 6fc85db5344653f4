"""MuJoCo as its own world model: the oracle every learned-env harness must score perfectly.

A metric is only as good as its harness. :class:`MuJoCoOracle` implements the forward dynamics of
:class:`~cosmos_robot.interface.WorldModel` by continuing the true simulation: every frame it has
seen (a registered start, or a frame it predicted) is remembered with the simulator state behind it,
so a request from that frame restores the state and steps MuJoCo with the given actions. Run through
``eval fd`` or ``eval rank`` it must find every object at 0 mm, lose PSNR with shuffled actions, and
rank policies exactly as MuJoCo does; a harness that does not say so is broken.

It predicts forward dynamics only: inverse dynamics and the policy are errors. Its sibling
:class:`TrueActionLabels` is the labeling oracle (the recorded actions as labels), and
:class:`MeanActionLabels` a labeler broken on purpose.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import gymnasium as gym
import mujoco
import numpy as np

from cosmos_robot.envs import push_block_embodiment
from cosmos_robot.envs.start_sources import EnvStarts, Start
from cosmos_robot.interface import ActionChunk, Prediction
from cosmos_robot.keys import AGENT_POS, PIXELS

_STATE = mujoco.mjtState.mjSTATE_INTEGRATION


def _key(frame: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(frame).tobytes()).hexdigest()


class MuJoCoOracle:
    """The true simulator behind the ``WorldModel`` forward-dynamics call, for one PushBlock env.

    Args:
        env_id: a PushBlock id.
        seeds: reset seeds whose first frames are starts the oracle may be asked to continue.
    """

    fps = 10.0
    num_frames = 5
    context_frames = 1

    def __init__(self, env_id: str, seeds: Iterable[int] = ()) -> None:
        self.embodiment = push_block_embodiment(env_id)
        self.env = gym.make(env_id).unwrapped
        self._states: dict[str, np.ndarray] = {}
        self.register(seeds)

    @property
    def embodiments(self) -> list[str]:
        """The one embodiment of its env."""
        return [self.embodiment]

    @property
    def image_size(self) -> int:
        """Side of the env's frames."""
        return int(self.env.observation_space[PIXELS].shape[0])

    @property
    def future_frames(self) -> int:
        """Frames per call of a learned model's window (the oracle takes any horizon)."""
        return self.num_frames - self.context_frames

    def action_names(self, embodiment: str) -> list[str]:
        """The env's action dimensions."""
        return [f"a{i}" for i in range(self.env.action_space.shape[0])]

    def register(self, seeds: Iterable[int]) -> None:
        """Remember the first frame of each seeded reset, with its simulator state."""
        for seed in seeds:
            obs, _ = self.env.reset(seed=int(seed))
            self._remember(obs[PIXELS])

    def starts(self) -> OracleStarts:
        """A start source (for the learned env) drawing seeded resets of the oracle's env, each
        remembered as it is drawn: any start the env hands out can be continued."""
        return OracleStarts(self)

    def _remember(self, frame: np.ndarray) -> None:
        state = np.empty(mujoco.mj_stateSize(self.env.model, _STATE))
        mujoco.mj_getState(self.env.model, self.env.data, state, _STATE)
        self._states[_key(frame)] = state

    def _restore(self, frame: np.ndarray) -> None:
        key = _key(frame)
        if key not in self._states:
            raise ValueError(
                "frame is neither a registered start nor a frame the oracle predicted; expected "
                "MuJoCoOracle(seeds=...) to include the start's seed"
            )
        mujoco.mj_setState(self.env.model, self.env.data, self._states[key], _STATE)
        mujoco.mj_forward(self.env.model, self.env.data)

    def forward_dynamics(
        self,
        frames: np.ndarray,
        actions: np.ndarray,
        embodiment: str,
        states: np.ndarray | None = None,
        steps: int | None = None,
        seed: int = 0,
        pixel_residual: bool | None = None,
        latents: np.ndarray | None = None,
        decode: bool = True,
        rewards: bool = True,
    ) -> Prediction:
        """MuJoCo's own frames, agent states, rewards and success for ``actions`` from the last frame.

        The oracle finds its MuJoCo state from the frame, so frames always come back (``decode`` and
        ``rewards`` change nothing)."""
        if latents is not None:
            raise ValueError(
                "latents were given; this backend returns none (Prediction.latents is None), expected latents=None"
            )
        if embodiment != self.embodiment:
            raise ValueError(f"embodiment={embodiment!r}; this oracle simulates {self.embodiment!r}")
        frames = np.asarray(frames)
        frames = frames[None] if frames.ndim == 4 else frames
        actions = np.asarray(actions, np.float32)
        actions = actions[None] if actions.ndim == 2 else actions
        out_frames, out_states, rewards, success = [], [], [], []
        for row, row_actions in zip(frames, actions, strict=True):
            self._restore(row[-1])
            episode = {"frames": [], "states": [], "rewards": [], "success": []}
            for action in row_actions:
                obs, reward, terminated, _, _ = self.env.step(action)
                self._remember(obs[PIXELS])
                episode["frames"].append(obs[PIXELS].copy())
                episode["states"].append(obs[AGENT_POS].copy())
                episode["rewards"].append(reward)
                episode["success"].append(float(terminated))
            out_frames.append(episode["frames"])
            out_states.append(episode["states"])
            rewards.append(episode["rewards"])
            success.append(episode["success"])
        return Prediction(
            np.asarray(out_frames, np.uint8),
            np.asarray(out_states, np.float32),
            np.asarray(rewards, np.float32),
            np.asarray(success, np.float32),
        )

    def inverse_dynamics(
        self,
        frames: np.ndarray,
        embodiment: str,
        fps: float | None = None,
        steps: int | None = None,
        seed: int = 0,
        return_spread: bool = False,
        stride: int | None = None,
        normalized: bool = False,
        batch_windows: int = 256,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Not simulated: the oracle is for forward-dynamics harnesses."""
        raise ValueError("the MuJoCo oracle predicts forward dynamics only; expected a learned model for labeling")

    def policy(
        self,
        frame: np.ndarray,
        embodiment: str,
        instruction: str | None = None,
        state: np.ndarray | None = None,
        history: np.ndarray | None = None,
        steps: int | None = None,
        seed: int = 0,
        use_cache: bool = True,
        pixel_residual: bool | None = None,
        action_estimate: str | None = None,
        guidance_scale: float | None = None,
    ) -> ActionChunk:
        """Not simulated: the oracle is for forward-dynamics harnesses."""
        raise ValueError("the MuJoCo oracle predicts forward dynamics only; expected a learned model for a policy")

    def close(self) -> None:
        """Close its env."""
        self.env.close()


class TrueActionLabels(MuJoCoOracle):
    """The labeling oracle: it answers inverse dynamics with the actions that really produced the video.

    It records the same seeded episodes as ``eval label`` (``record_episodes(env_id, episodes, seed)``)
    and recognises a clip by its first frame (the nearest recorded one of the same length: the clip has
    been through mp4). ``eval label`` must score it R² 1 and replay ratio 1.
    """

    def __init__(self, env_id: str, episodes: int, seed: int) -> None:
        from cosmos_robot.eval.labeling import record_episodes

        super().__init__(env_id)
        self.recorded = record_episodes(env_id, episodes, seed)

    def _labels(self, clip: np.ndarray) -> np.ndarray:
        first = clip[0].astype(np.float32)
        errors = [
            float(np.mean((ep["frames"][0] - first) ** 2)) if len(ep["frames"]) == len(clip) else np.inf
            for ep in self.recorded
        ]
        best = int(np.argmin(errors))
        if not np.isfinite(errors[best]):
            raise ValueError(f"no recorded episode has {len(clip)} frames; expected a clip of a recorded episode")
        return self.recorded[best]["actions"].astype(np.float32)

    def inverse_dynamics(
        self,
        frames: np.ndarray,
        embodiment: str,
        fps: float | None = None,
        steps: int | None = None,
        seed: int = 0,
        return_spread: bool = False,
        stride: int | None = None,
        normalized: bool = False,
        batch_windows: int = 256,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """(B, T - 1, A) the recorded actions of each clip (and a zero spread)."""
        if normalized:
            raise ValueError("normalized=True: the oracle labels in raw units only; expected normalized=False")
        frames = np.asarray(frames)
        clips = frames[None] if frames.ndim == 4 else frames
        actions = np.stack([self._labels(clip) for clip in clips])
        return (actions, np.zeros_like(actions)) if return_spread else actions


class MeanActionLabels(TrueActionLabels):
    """A broken labeler for harness checks: every step gets the mean of the recorded actions."""

    def _labels(self, clip: np.ndarray) -> np.ndarray:
        mean = np.concatenate([ep["actions"] for ep in self.recorded]).mean(0)
        return np.repeat(mean[None].astype(np.float32), len(clip) - 1, 0)


class OracleStarts(EnvStarts):
    """Seeded resets of a :class:`MuJoCoOracle`'s env, registered with it as they are drawn."""

    def __init__(self, oracle: MuJoCoOracle) -> None:
        super().__init__(oracle.env)
        self.oracle = oracle

    def draw(self, rng: np.random.Generator) -> Start:
        """Reset the oracle's env with a seed from ``rng`` and remember the start."""
        start = super().draw(rng)
        self.oracle._remember(start.frame)
        return start

    def close(self) -> None:
        """Nothing to close: the env is the oracle's."""
