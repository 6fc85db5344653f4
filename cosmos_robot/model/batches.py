"""The tensors that cross the network's boundary: what it reads, what it returns, the priors' own batches.

Every batch is a dataclass of tensors with a leading batch axis; :class:`TensorBatch` gives them
one ``to`` / ``select`` / ``replace``. Frame fields of the generator hold latent tokens; the
reasoner's ``observed_frames`` hold pixels (the reasoner sees the camera, the generator the latents).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Self

import torch


class TensorBatch:
    """``to``, ``select`` and ``replace`` for a dataclass whose fields are tensors with a batch axis
    (optional fields may be None; tuples of tensors are mapped element-wise)."""

    def _map(self, fn) -> Self:
        def apply(value):
            if value is None:
                return None
            if isinstance(value, tuple):
                return tuple(fn(v) for v in value)
            return fn(value)

        return type(self)(**{f.name: apply(getattr(self, f.name)) for f in fields(self)})  # type: ignore[arg-type]

    def to(self, device: torch.device | str) -> Self:
        """On ``device``."""
        return self._map(lambda t: t.to(device))

    def select(self, index: slice | torch.Tensor) -> Self:
        """A subset of the samples (along the batch axis)."""
        return self._map(lambda t: t[index])

    def replace(self, **changes: torch.Tensor) -> Self:
        """A copy with some fields replaced."""
        return replace(self, **changes)  # type: ignore[type-var]


@dataclass
class ReasonerInputs(TensorBatch):
    """What the reasoner reads (clean, once per request).

    Attributes:
        domain: (B,) long, the embodiment's domain id.
        text_ids: (B, Lt) long byte ids (0 = padding).
        text_valid: (B, Lt) bool.
        state: (B, state_width) current proprio state, normalised and zero-padded.
        observed_frames: (B, Tc, H, W, 3) uint8, the frames seen so far.
        observed_time: (B, Tc) seconds of the observed frames.
    """

    domain: torch.Tensor
    text_ids: torch.Tensor
    text_valid: torch.Tensor
    state: torch.Tensor
    observed_frames: torch.Tensor
    observed_time: torch.Tensor


@dataclass
class GeneratorInputs(TensorBatch):
    """The generator's tokens at flow time t (clean ones at t = 0).

    Attributes:
        domain: (B,) long.
        frames: (B, T, G*G, Cf) frame latent tokens x_t.
        frame_t: (B, T) flow time of each frame.
        frame_time: (B, T) seconds.
        actions: (B, K, W) normalised, padded actions x_t.
        action_t: (B, K) flow time of each action.
        action_time: (B, K) seconds (the time of the frame each action leads into).
        action_channels: (B, W) bool, the embodiment's real action channels.
        states: (B, T, Sw) normalised, padded states x_t at the frame times.
        state_t: (B, T) flow time of each state.
        state_channels: (B, Sw) bool, the embodiment's real state channels.
    """

    domain: torch.Tensor
    frames: torch.Tensor
    frame_t: torch.Tensor
    frame_time: torch.Tensor
    actions: torch.Tensor
    action_t: torch.Tensor
    action_time: torch.Tensor
    action_channels: torch.Tensor
    states: torch.Tensor
    state_t: torch.Tensor
    state_channels: torch.Tensor


@dataclass
class GeneratorOutputs(TensorBatch):
    """Velocities and heads. Shapes follow :class:`GeneratorInputs`; reward and success are (B, K).

    ``x0`` holds the predicted clean frames, actions and states; ``frames``, ``actions`` and
    ``states`` are the velocities derived from them, which the sampler integrates.
    """

    frames: torch.Tensor
    actions: torch.Tensor
    states: torch.Tensor
    reward: torch.Tensor
    success_logit: torch.Tensor
    x0: tuple[torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass
class PriorBatch(TensorBatch):
    """Demonstration windows the action prior is trained on (its own batch, beside the main one).

    Attributes:
        frames: (B, G*G, Cf) latent tokens of the observed frame.
        state: (B, state_width) normalised, padded proprio state at that frame.
        domain: (B,) long.
        actions: (B, P, W) the normalised, padded actions taken from that frame on (the targets).
        action_channels: (B, W) bool, the embodiment's real action channels.
        action_valid: (B, P) bool, actions inside the episode.
    """

    frames: torch.Tensor
    state: torch.Tensor
    domain: torch.Tensor
    actions: torch.Tensor
    action_channels: torch.Tensor
    action_valid: torch.Tensor


@dataclass
class TransitionBatch(TensorBatch):
    """Consecutive-frame pairs the inverse prior is trained on (its own batch, beside the main one).

    Attributes:
        frames: (B, 2, G*G, Cf) latent tokens of the frame an action is taken at and of the next one.
        domain: (B,) long.
        actions: (B, W) the normalised, padded action between them (the target).
        action_channels: (B, W) bool, the embodiment's real action channels.
    """

    frames: torch.Tensor
    domain: torch.Tensor
    actions: torch.Tensor
    action_channels: torch.Tensor


@dataclass
class SequenceBatch(TensorBatch):
    """Short recorded sequences the forward prior is trained on (its own batch, beside the main one).

    Attributes:
        frames: (B, R + 1, G*G, Cf) latent tokens of R + 1 consecutive frames.
        states: (B, R + 1, S) normalised, padded proprio states at those frames.
        actions: (B, R, W) the normalised, padded actions between them.
        domain: (B,) long.
        action_channels: (B, W) bool, the embodiment's real action channels.
        state_channels: (B, S) bool, the embodiment's real state channels.
    """

    frames: torch.Tensor
    states: torch.Tensor
    actions: torch.Tensor
    domain: torch.Tensor
    action_channels: torch.Tensor
    state_channels: torch.Tensor
