"""The shared latent action space: declared action layouts, an embodiment registry, quantile normalisation, padding.

Each embodiment declares its raw action layout (an :class:`ActionSpec` built from components such
as :class:`PlanarVelocity` or :class:`JointVelocity`) and its rate. Raw actions are quantile-
normalised per dimension (q01/q99 -> [-1, 1]) and zero-padded to the shared width; the model's
domain-aware projection takes it from there (``model/network.py``). Decoding is the inverse.
Users never normalise by hand: the facade does it from saved statistics (the Cosmos 3 DROID bug).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_SHARED_WIDTH = 32  # 64 for Cosmos 3 parity

# Component kinds and their units: the declarations below, plus "other" for a layout nobody declared.
COMPONENT_UNITS = {
    "pos": "m",
    "rot6d": "",
    "gripper": "",
    "joint": "rad",
    "joint_vel": "rad/s",
    "joint_torque": "",
    "planar_vel": "m/s",
    "other": "",
}


@dataclass(frozen=True)
class ActionComponent:
    """One named block of an action vector."""

    kind: str
    dim: int
    unit: str = ""

    def names(self, prefix: str) -> list[str]:
        """Per-dimension names, e.g. ``['vel_0', 'vel_1']``."""
        return [f"{prefix}{self.kind}_{i}" for i in range(self.dim)]


def Pos(dim: int = 3) -> ActionComponent:  # noqa: N802  (reads as a declaration, like cosmos-framework's)
    """Cartesian translation (delta), metres."""
    return ActionComponent("pos", dim, COMPONENT_UNITS["pos"])


def Rot6d() -> ActionComponent:  # noqa: N802
    """Rotation as the 6-D continuous representation (two columns of the rotation matrix)."""
    return ActionComponent("rot6d", 6, COMPONENT_UNITS["rot6d"])


def Gripper() -> ActionComponent:  # noqa: N802
    """Gripper opening, one dimension."""
    return ActionComponent("gripper", 1, COMPONENT_UNITS["gripper"])


def Joint(dim: int) -> ActionComponent:  # noqa: N802
    """Joint positions, radians."""
    return ActionComponent("joint", dim, COMPONENT_UNITS["joint"])


def JointVelocity(dim: int) -> ActionComponent:  # noqa: N802
    """Joint velocities, rad/s."""
    return ActionComponent("joint_vel", dim, COMPONENT_UNITS["joint_vel"])


def JointTorque(dim: int) -> ActionComponent:  # noqa: N802
    """Joint torques (normalised actuator commands)."""
    return ActionComponent("joint_torque", dim, COMPONENT_UNITS["joint_torque"])


def PlanarVelocity() -> ActionComponent:  # noqa: N802
    """Planar (x, y) velocity, m/s."""
    return ActionComponent("planar_vel", 2, COMPONENT_UNITS["planar_vel"])


@dataclass(frozen=True)
class ActionSpec:
    """A declared action layout: an ordered tuple of components."""

    components: tuple[ActionComponent, ...]

    @property
    def dim(self) -> int:
        """Raw action width."""
        return sum(c.dim for c in self.components)

    def names(self) -> list[str]:
        """Per-dimension names in order."""
        return [n for c in self.components for n in c.names("")]


def build_action_spec(*components: ActionComponent) -> ActionSpec:
    """``build_action_spec(Pos(), Rot6d(), Gripper())`` -> an :class:`ActionSpec` of width 10."""
    if not components:
        raise ValueError("components=() is empty; expected at least one action component")
    return ActionSpec(tuple(components))


@dataclass(frozen=True)
class Embodiment:
    """A robot the model knows: its domain id selects its input/output projections."""

    name: str
    domain_id: int
    spec: ActionSpec
    rate_hz: float
    state_dim: int

    @property
    def action_dim(self) -> int:
        """Raw action width."""
        return self.spec.dim

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (saved with checkpoints)."""
        return {
            "name": self.name,
            "domain_id": self.domain_id,
            "rate_hz": self.rate_hz,
            "state_dim": self.state_dim,
            "components": [{"kind": c.kind, "dim": c.dim, "unit": c.unit} for c in self.spec.components],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Embodiment:
        """Inverse of :meth:`to_dict`."""
        spec = ActionSpec(tuple(ActionComponent(**c) for c in data["components"]))
        return cls(data["name"], int(data["domain_id"]), spec, float(data["rate_hz"]), int(data["state_dim"]))


_REGISTRY: dict[str, Embodiment] = {}


def register_embodiment(embodiment: Embodiment, *, replace: bool = False) -> Embodiment:
    """Add an embodiment; names and domain ids must be unique."""
    if embodiment.name in _REGISTRY and not replace:
        raise ValueError(f"embodiment={embodiment.name!r} is already registered; pass replace=True to redefine it")
    for other in _REGISTRY.values():
        if other.domain_id == embodiment.domain_id and other.name != embodiment.name:
            raise ValueError(
                f"embodiment={embodiment.name!r}: domain_id={embodiment.domain_id} is taken by {other.name!r}"
            )
    _REGISTRY[embodiment.name] = embodiment
    return embodiment


def get_embodiment(name: str) -> Embodiment:
    """The registered embodiment called ``name``."""
    if name not in _REGISTRY:
        raise ValueError(f"embodiment={name!r} is unknown; expected one of {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def registered_embodiments() -> list[Embodiment]:
    """All registered embodiments, by domain id."""
    return sorted(_REGISTRY.values(), key=lambda e: e.domain_id)


register_embodiment(Embodiment("point", 0, build_action_spec(PlanarVelocity()), 10.0, 2))
register_embodiment(Embodiment("arm2", 1, build_action_spec(JointVelocity(2)), 10.0, 2))
register_embodiment(Embodiment("reacher", 2, build_action_spec(JointTorque(2)), 50.0, 10))


def _check_actions(actions: np.ndarray, embodiment: str, field_name: str, width: int) -> np.ndarray:
    actions = np.asarray(actions, dtype=np.float64)
    if actions.ndim == 0 or actions.shape[-1] != width:
        raise ValueError(f"embodiment={embodiment!r}: {field_name} has shape {actions.shape}; expected (..., {width})")
    if not np.all(np.isfinite(actions)):
        raise ValueError(f"embodiment={embodiment!r}: {field_name} contains NaN or inf; expected finite values")
    return actions


@dataclass
class QuantileNormalizer:
    """Per-dimension affine map taking [q01, q99] of the training actions to [-1, 1].

    Attributes:
        embodiment: name, used in error messages and saved files.
        low: (A,) the 1st percentile of each dimension.
        high: (A,) the 99th percentile of each dimension.
        clamp: clip normalised values to [-1, 1] (outliers beyond the quantiles).
    """

    embodiment: str
    low: np.ndarray
    high: np.ndarray
    clamp: bool = False
    _scale: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.low = np.asarray(self.low, dtype=np.float64)
        self.high = np.asarray(self.high, dtype=np.float64)
        if self.low.shape != self.high.shape or self.low.ndim != 1:
            raise ValueError(
                f"embodiment={self.embodiment!r}: low {self.low.shape} and high {self.high.shape}; "
                "expected two (A,) vectors"
            )
        if not (np.all(np.isfinite(self.low)) and np.all(np.isfinite(self.high))):
            raise ValueError(f"embodiment={self.embodiment!r}: quantiles contain NaN or inf")
        # A constant dimension has q01 == q99: keep a unit span so it maps to a constant, not to inf.
        span = self.high - self.low
        self._scale = np.where(span > 1e-8, span, 1.0) / 2.0

    @property
    def dim(self) -> int:
        """Raw action width."""
        return len(self.low)

    @classmethod
    def fit(cls, actions: np.ndarray, embodiment: str, clamp: bool = False) -> QuantileNormalizer:
        """Fit q01/q99 from (N, A) raw actions."""
        actions = np.asarray(actions, dtype=np.float64)
        if actions.ndim != 2 or len(actions) == 0:
            raise ValueError(f"embodiment={embodiment!r}: actions has shape {actions.shape}; expected (N > 0, A)")
        _check_actions(actions, embodiment, "actions", actions.shape[1])
        low, high = np.quantile(actions, [0.01, 0.99], axis=0)
        return cls(embodiment, low, high, clamp)

    def normalize(self, actions: np.ndarray) -> np.ndarray:
        """Raw (..., A) -> normalised (..., A), float32."""
        actions = _check_actions(actions, self.embodiment, "actions", self.dim)
        out = (actions - self.low) / self._scale - 1.0
        return (np.clip(out, -1.0, 1.0) if self.clamp else out).astype(np.float32)

    def denormalize(self, normalized: np.ndarray) -> np.ndarray:
        """Normalised (..., A) -> raw (..., A), float32."""
        normalized = _check_actions(normalized, self.embodiment, "normalized actions", self.dim)
        return ((normalized + 1.0) * self._scale + self.low).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready statistics."""
        return {"embodiment": self.embodiment, "q01": self.low.tolist(), "q99": self.high.tolist(), "clamp": self.clamp}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuantileNormalizer:
        """Inverse of :meth:`to_dict`; unknown keys are rejected."""
        unknown = set(data) - {"embodiment", "q01", "q99", "clamp"}
        if unknown:
            raise ValueError(
                f"normaliser statistics have unknown keys {sorted(unknown)}; expected embodiment, q01, q99, clamp"
            )
        return cls(data["embodiment"], np.asarray(data["q01"]), np.asarray(data["q99"]), bool(data.get("clamp", False)))

    def save(self, path: str | os.PathLike) -> None:
        """Write the statistics as JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=2))

    @classmethod
    def load(cls, path: str | os.PathLike) -> QuantileNormalizer:
        """Read statistics written by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text()))


def pad_to_shared(
    actions: np.ndarray, width: int = DEFAULT_SHARED_WIDTH, embodiment: str = "?"
) -> tuple[np.ndarray, np.ndarray]:
    """Zero-pad normalised (..., A) actions to (..., width); also return the (width,) validity mask."""
    actions = np.asarray(actions, dtype=np.float32)
    if actions.ndim == 0:
        raise ValueError(f"embodiment={embodiment!r}: actions is a scalar; expected (..., A)")
    raw = actions.shape[-1]
    if raw > width:
        raise ValueError(f"embodiment={embodiment!r}: action width {raw} exceeds the shared width; expected <= {width}")
    padded = np.zeros((*actions.shape[:-1], width), dtype=np.float32)
    padded[..., :raw] = actions
    mask = np.zeros(width, dtype=bool)
    mask[:raw] = True
    return padded, mask


def unpad_from_shared(padded: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pad_to_shared`: keep the valid channels."""
    padded = np.asarray(padded)
    mask = np.asarray(mask, dtype=bool)
    if padded.shape[-1] != mask.shape[-1]:
        raise ValueError(f"padded width {padded.shape[-1]} and mask width {mask.shape[-1]}; expected equal")
    return padded[..., mask]
