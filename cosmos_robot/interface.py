"""What every world-model backend offers the tools: the :class:`WorldModel` protocol and its outputs.

The native model (:class:`cosmos_robot.world_model.WorldActionModel`) and the Cosmos 3 backend
(:class:`cosmos_robot.backends.cosmos3.Cosmos3Backend`) both satisfy it with identical signatures,
so ``ForwardDynamicsEnv``, the labeler and ``WorldModelPolicy`` run on either. Arguments that default
to ``None`` take the backend's own default (its sampling steps, its guidance, its way of drawing
actions); a backend that cannot honour an explicit value raises ``ValueError`` naming it.
Everything is numpy and raw units: normalisation happens inside the backend.

This module imports nothing of ours; it is the bottom of the import graph beside ``keys``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass
class Prediction:
    """Forward dynamics: H predicted steps (raw units).

    ``latents`` is the backend's own representation of the last ``context_frames`` predicted frames
    (None for a backend without one): passed back as ``forward_dynamics(latents=...)``, the next call
    continues from it instead of re-encoding the decoded frames, which loses what the decode blurred.
    """

    frames: np.ndarray | None  # (B, H, height, width, 3) uint8; None only when asked for with decode=False
    states: np.ndarray  # (B, H, state_dim) float32
    rewards: np.ndarray | None  # (B, H) float32; None only when asked for with rewards=False
    success: np.ndarray | None  # (B, H) float32, probability; None with rewards
    latents: np.ndarray | None = None  # (B, context_frames, ...) float32, backend-specific


@dataclass
class ActionChunk:
    """Policy output: the actions to execute and the frames they should produce."""

    actions: np.ndarray  # (B, F, action_dim) float32, raw units
    frames: np.ndarray  # (B, F, height, width, 3) uint8


@runtime_checkable
class WorldModel(Protocol):
    """Forward dynamics, inverse dynamics and policy of one model, numpy in and out, raw units."""

    fps: float
    num_frames: int
    context_frames: int

    @property
    def embodiments(self) -> list[str]:
        """Embodiments the model knows."""
        ...

    @property
    def image_size(self) -> int:
        """Side of the square frames the model reads and writes."""
        ...

    @property
    def future_frames(self) -> int:
        """Frames generated per model call."""
        ...

    def action_names(self, embodiment: str) -> list[str]:
        """Names of an embodiment's raw action dimensions."""
        ...

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
        """The frames (and states, rewards, success) that ``actions`` produce from the observed ``frames``
        (or from ``latents`` of an earlier prediction, see :class:`Prediction`).

        ``decode=False`` and ``rewards=False`` say that the caller will not read the frames or the learned
        rewards and success: a backend may then skip the work and return None for them (it must still
        return frames where its next call needs them, e.g. when it has no ``latents``)."""
        ...

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
        """The actions between consecutive frames of a video (and their spread across windows)."""
        ...

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
        """An action chunk and the frames it should produce, from the current observation."""
        ...
