"""``WorldModelPolicy``: the world-action model's policy mode, served receding-horizon in a control loop.

Each model call returns an action chunk (one action per future frame of the window) and the frames
those actions should produce. ``select_action`` executes ``execute_steps`` of a chunk, then replans;
with ``temporal_ensemble`` it replans every step and averages all chunks' predictions for the current
step, weighted ``exp(-m * age)`` (ACT's temporal ensembling). The policy follows the evaluation
protocol of :class:`cosmos_robot.policies.protocol.Policy` (``reset``, ``act``), so the same harness
runs it, the scripted experts and LeRobot policies.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import AGENT_POS, PIXELS
from cosmos_robot.world_model import load_world_model


@dataclass
class ChunkPrediction:
    """One model call: what the policy planned at ``step`` (the control step it was made at).

    ``actions[i]`` is executed at step ``step + i`` and ``frames[i]`` is the frame it should lead to,
    observed at step ``step + i + 1``.
    """

    step: int
    actions: np.ndarray  # (F, action_dim) raw units
    frames: np.ndarray  # (F, H, W, 3) uint8


class WorldModelPolicy:
    """Closed-loop policy from any :class:`~cosmos_robot.interface.WorldModel` backend.

    Args:
        model: a loaded model, a checkpoint folder, or ``"default"``.
        embodiment: which embodiment acts (a name in ``model.embodiments``).
        instruction: task text; None uses the task the embodiment was trained on.
        execute_steps: actions executed from each chunk before replanning (1..chunk length); None
            executes the whole chunk. Ignored with ``temporal_ensemble``.
        temporal_ensemble: None, or the ensembling coefficient m >= 0 (replan every step).
        steps: Euler steps per chunk; None uses the model's own default.
        use_state: pass the observation's ``agent_pos`` to the model as the current proprio state.
        seed: seeds the sampling noise (each chunk draws its own seed from it).
        guidance_scale: classifier-free guidance of the actions on the instruction (see
            :meth:`WorldModel.policy`); None uses the model's own default.
        action_estimate: where the actions come from (see :meth:`WorldModel.policy`: ``"mean"``,
            ``"sample"``, or ``"prior"`` for the action prior alone, the ablation); None uses the
            model's own default.
    """

    def __init__(
        self,
        model: WorldModel | str | os.PathLike,
        embodiment: str,
        instruction: str | None = None,
        execute_steps: int | None = None,
        temporal_ensemble: float | None = None,
        steps: int | None = None,
        use_state: bool = True,
        seed: int = 0,
        guidance_scale: float | None = None,
        action_estimate: str | None = None,
    ) -> None:
        self.model = load_world_model(model)
        if embodiment not in self.model.embodiments:
            raise ValueError(
                f"embodiment={embodiment!r} is unknown to the model; expected one of {self.model.embodiments}"
            )
        chunk = self.model.future_frames
        if execute_steps is not None and not 1 <= execute_steps <= chunk:
            raise ValueError(f"execute_steps={execute_steps!r}; expected 1..{chunk} (the model's chunk length) or None")
        if temporal_ensemble is not None and not temporal_ensemble >= 0:
            raise ValueError(f"temporal_ensemble={temporal_ensemble!r}; expected None or a coefficient >= 0")
        if steps is not None and (not isinstance(steps, int) or steps < 1):
            raise ValueError(f"steps={steps!r}; expected None or a positive number of Euler steps")
        if guidance_scale is not None and not (np.isfinite(guidance_scale) and guidance_scale >= 0):
            raise ValueError(f"guidance_scale={guidance_scale!r}; expected None or a finite number >= 0")
        self.embodiment = embodiment
        self.instruction = instruction
        self.chunk_length = chunk
        self.execute_steps = chunk if execute_steps is None else execute_steps
        self.temporal_ensemble = temporal_ensemble
        self.steps = steps
        self.use_state = use_state
        self.seed = seed
        self.guidance_scale = None if guidance_scale is None else float(guidance_scale)
        self.action_estimate = action_estimate
        self.chunks: list[ChunkPrediction] = []
        self.reset(seed)

    # -- the protocol -----------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> None:
        """Forget the episode: history, queued actions and the chunks planned so far."""
        if seed is not None:
            self.seed = seed
        self._rng = np.random.default_rng(self.seed)
        self._history: deque[np.ndarray] = deque(maxlen=max(self.model.context_frames - 1, 0))
        self._queue: deque[np.ndarray] = deque()
        self._step = 0
        self.chunks = []

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any] | None = None) -> np.ndarray:
        """The evaluation protocol's call: :meth:`select_action`."""
        return self.select_action(obs)

    def select_action(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        """The action to execute now (raw units), replanning when the current chunk is used up."""
        if self.temporal_ensemble is not None:
            self.predict_action_chunk(obs)
            action = self._ensembled_action()
        else:
            if not self._queue:
                actions, _ = self.predict_action_chunk(obs)
                self._queue.extend(actions[: self.execute_steps])
            action = self._queue.popleft()
        self._remember(obs)
        self._step += 1
        return action.astype(np.float32)

    def predict_action_chunk(self, obs: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """One model call from the current observation: (actions (F, A), predicted frames (F, H, W, 3)).

        The chunk is also appended to :attr:`chunks` (stamped with the current control step), which
        is what recordings place on the timeline.
        """
        pixels = self._pixels(obs)
        history = None
        if self.model.context_frames > 1:
            # Before enough frames were seen, repeat the current one (the episode was standing still).
            past = list(self._history)
            history = np.stack([pixels] * (self.model.context_frames - 1 - len(past)) + past)
        state = obs.get(AGENT_POS) if self.use_state else None
        chunk = self.model.policy(
            pixels,
            embodiment=self.embodiment,
            instruction=self.instruction,
            state=None if state is None else np.asarray(state, np.float32),
            history=history,
            steps=self.steps,
            seed=int(self._rng.integers(2**31)),
            guidance_scale=self.guidance_scale,
            action_estimate=self.action_estimate,
        )
        actions, frames = chunk.actions[0], chunk.frames[0]
        self.chunks.append(ChunkPrediction(self._step, actions, frames))
        return actions, frames

    # -- helpers ----------------------------------------------------------------------------------------
    def _pixels(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        if not isinstance(obs, dict) or PIXELS not in obs:
            keys = sorted(obs) if isinstance(obs, dict) else type(obs).__name__
            raise ValueError(f"obs={keys}; expected a dict with 'pixels' (H, W, 3) uint8 and optionally 'agent_pos'")
        return np.asarray(obs[PIXELS])

    def _remember(self, obs: dict[str, np.ndarray]) -> None:
        if self._history.maxlen:
            self._history.append(self._pixels(obs))

    def _ensembled_action(self) -> np.ndarray:
        """ACT's temporal ensemble: every live chunk's action for this step, oldest weighted most."""
        live = [(c, self._step - c.step) for c in self.chunks if 0 <= self._step - c.step < len(c.actions)]
        # Oldest first, as in ACT: weight exp(-m * i) with i = 0 for the oldest prediction.
        live.sort(key=lambda pair: -pair[1])
        weights = np.exp(-self.temporal_ensemble * np.arange(len(live)))
        actions = np.stack([c.actions[age] for c, age in live])
        return (weights[:, None] * actions).sum(0) / weights.sum()
