"""Model configuration: validated presets, JSON round trip that rejects unknown keys."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The forward prior's residual blocks (ForwardPrior's ``block``).
FORWARD_BLOCKS = ("norm_gelu", "relu")


# The carried object's switches among ModelConfig's fields: each needs ``object_pose_domains`` (refused
# without), so a model configured before the object is known, or stripped of it, leaves them off.
OBJECT_SWITCHES = ("object_effector_maps", "object_push_path")


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the world-action model.

    Attributes:
        d_model: width of both towers.
        num_layers: MoT blocks.
        num_heads: attention heads (head_dim = d_model / num_heads, even).
        mlp_ratio: MLP hidden width / d_model.
        rope_sections: frequency pairs per (t, h, w) axis; must sum to head_dim / 2.
        rope_theta: rotary base.
        units_per_second: temporal rotary units per second of real time (Cosmos 3: 6).
        text_margin: temporal offset after the text positions (Cosmos 3: 15000).
        image_size: square frame size in pixels.
        latent_channels: frame-autoencoder channels at 1/8 resolution.
        patch_merge: latent patches merged into one generator token (2 -> 16 tokens per 64x64 frame).
        understanding_patch: pixel patch of the reasoner's patch stem.
        action_width: shared action width (32 on CPU, 64 for Cosmos 3 parity).
        state_width: shared proprio-state width.
        num_domains: embodiments the projections can address.
        max_text_len: instruction bytes kept.
        action_loss_weight: weight of action tokens in the flow loss (Cosmos 3: 10).
        forward_prior: the network has a forward prior whose rollout forward-dynamics frames and states
            start from (:mod:`cosmos_robot.model.forward_prior`); False for checkpoints made before it.
        forward_width: the forward prior's conv width (its cost per env step grows with its square).
        forward_blocks: the forward prior's FiLM residual blocks.
        forward_warp: the forward prior also moves each latent cell's content by a displacement it
            predicts (:class:`cosmos_robot.model.forward_prior.ForwardPrior`); False for checkpoints made
            before it.
        forward_block: the forward prior's residual block: ``"norm_gelu"`` (group norm, GELU) or
            ``"relu"`` (no norm, ReLU: a third of the elementwise work per block, which is most of a
            wide prior's step once its convolutions run in bfloat16); ``"norm_gelu"`` for checkpoints
            made before it.
        forward_bfloat16: the forward prior's convolutions run in bfloat16, in training and in the env
            (its state and condition paths stay float32); fast on CPUs with AMX or AVX512-BF16 and on
            GPUs, slow elsewhere. False for checkpoints made before it.
        forward_state_action: the forward prior's state change has a term linear in the action, one matrix
            per embodiment, beside its MLP (a velocity command integrates into the next state; the MLP
            learns the rest); False for checkpoints made before it.
        object_pose_domains: embodiment ids whose learned env carries an object's planar pose beside the
            grid (:mod:`cosmos_robot.model.object_pose`; needs ``forward_prior``); empty: none.
        object_half_extent: half the side, in metres, of the square the camera sees, where that pose lives.
        object_reward: the object also holds a goal readout and a reward head per embodiment, and the learned
            env's reward and success for those embodiments come from them instead of the MoT's heads.
        object_agent: the object also holds an agent head per embodiment (the agent state's change from the
            state, the action and the carried pose), which a state-only learned env steps instead of the
            forward prior's convolutions; False for checkpoints made before it.
        object_effector_maps: the object's drawer is also told where the effector is, before and after each
            step (maps on the latent grid from the effector map of the agent states), as it is told the
            object's pose; False for checkpoints made before it.
        object_push_path: the object's push MLPs also read the effector's path inside each step (where the
            action commanded it, and its place half way), from the effector map of the agent states; False for
            checkpoints made before it.
        object_painter: the object also holds an effector painter (:mod:`cosmos_robot.model.painter`): decoded
            frames are corrected at full resolution in a window round the effector's place, from the effector
            map of the agent states; False for checkpoints made before it.
    """

    d_model: int = 128
    num_layers: int = 4
    num_heads: int = 4
    mlp_ratio: float = 4.0
    rope_sections: tuple[int, int, int] = (6, 5, 5)
    rope_theta: float = 10000.0
    units_per_second: float = 6.0
    text_margin: float = 15000.0
    image_size: int = 64
    latent_channels: int = 8
    patch_merge: int = 2
    understanding_patch: int = 8
    action_width: int = 32
    state_width: int = 16
    num_domains: int = 8
    max_text_len: int = 64
    action_loss_weight: float = 10.0
    forward_prior: bool = False
    forward_width: int = 64
    forward_blocks: int = 4
    forward_warp: bool = False
    forward_block: str = "norm_gelu"
    forward_bfloat16: bool = False
    forward_state_action: bool = False
    object_pose_domains: tuple[int, ...] = ()
    object_half_extent: float = 0.22
    object_reward: bool = False
    object_agent: bool = False
    object_effector_maps: bool = False
    object_push_path: bool = False
    object_painter: bool = False

    def __post_init__(self) -> None:
        if self.forward_block not in FORWARD_BLOCKS:
            raise ValueError(f"forward_block={self.forward_block!r}; expected one of {', '.join(FORWARD_BLOCKS)}")
        for name in (
            "forward_prior",
            "forward_warp",
            "forward_bfloat16",
            "forward_state_action",
            "object_reward",
            "object_agent",
            "object_effector_maps",
            "object_push_path",
            "object_painter",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r}; expected true or false")
        positive = (
            "d_model",
            "num_layers",
            "num_heads",
            "image_size",
            "latent_channels",
            "patch_merge",
            "understanding_patch",
            "action_width",
            "state_width",
            "num_domains",
            "max_text_len",
            "forward_width",
            "forward_blocks",
        )
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name}={value!r}; expected a positive integer")
        if self.forward_width % 8:
            raise ValueError(f"forward_width={self.forward_width}; expected a multiple of 8 (its GroupNorm groups)")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim={self.head_dim} (d_model / num_heads); expected an even number")
        if len(self.rope_sections) != 3 or sum(self.rope_sections) != self.head_dim // 2:
            raise ValueError(
                f"rope_sections={tuple(self.rope_sections)}; expected three numbers summing to head_dim/2 = "
                f"{self.head_dim // 2}"
            )
        if self.image_size % 8 or (self.image_size // 8) % self.patch_merge:
            raise ValueError(
                f"image_size={self.image_size}; expected a multiple of 8 * patch_merge ({8 * self.patch_merge})"
            )
        if self.image_size % self.understanding_patch:
            raise ValueError(
                f"understanding_patch={self.understanding_patch} does not divide image_size={self.image_size}"
            )
        bad = [d for d in self.object_pose_domains if isinstance(d, bool) or not isinstance(d, int)]
        if bad or any(not 0 <= d < self.num_domains for d in self.object_pose_domains):
            raise ValueError(
                f"object_pose_domains={list(self.object_pose_domains)}; expected embodiment ids in "
                f"0..{self.num_domains - 1}"
            )
        if self.object_pose_domains and self.frame_token_dim < 11:
            raise ValueError(
                f"object_pose_domains needs frame tokens of at least 11 channels (the object's memory); "
                f"latent_channels * patch_merge**2 = {self.frame_token_dim}"
            )
        if self.object_reward and not self.object_pose_domains:
            raise ValueError("object_reward=True needs object_pose_domains (the reward reads the object's pose)")
        if self.object_agent and not self.object_pose_domains:
            raise ValueError("object_agent=True needs object_pose_domains (the agent head reads the object's pose)")
        if self.object_effector_maps and not self.object_pose_domains:
            raise ValueError(
                "object_effector_maps=True needs object_pose_domains (the object's drawer is told the effector)"
            )
        if self.object_push_path and not self.object_pose_domains:
            raise ValueError("object_push_path=True needs object_pose_domains (the push MLPs carry the object)")
        if self.object_painter and not self.object_pose_domains:
            raise ValueError("object_painter=True needs object_pose_domains (the painter reads the effector's place)")
        if self.object_pose_domains and not self.forward_prior:
            raise ValueError("object_pose_domains needs forward_prior=True (the prior draws the object)")
        for name in ("mlp_ratio", "rope_theta", "units_per_second", "action_loss_weight", "object_half_extent"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a positive number")

    @property
    def head_dim(self) -> int:
        """Per-head width."""
        return self.d_model // self.num_heads

    @property
    def latent_grid(self) -> int:
        """Generator tokens per frame side (image / 8 / patch_merge)."""
        return self.image_size // 8 // self.patch_merge

    @property
    def tokens_per_frame(self) -> int:
        """Generator tokens per frame."""
        return self.latent_grid**2

    @property
    def frame_token_dim(self) -> int:
        """Channels of one generator frame token (latent channels x merged patch)."""
        return self.latent_channels * self.patch_merge**2

    @property
    def understanding_grid(self) -> int:
        """Reasoner patches per frame side."""
        return self.image_size // self.understanding_patch

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build from a dict; unknown keys are rejected (a misspelt key must not pass silently)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown model config keys {unknown}; expected a subset of {sorted(known)}")
        data = dict(data)
        for name in ("rope_sections", "object_pose_domains"):
            if name in data:
                data[name] = tuple(data[name])
        return cls(**data)

    def save(self, path: str | os.PathLike) -> None:
        """Write as JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=2))

    @classmethod
    def load(cls, path: str | os.PathLike) -> ModelConfig:
        """Read JSON written by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text()))


PRESETS: dict[str, ModelConfig] = {
    # Seconds on CPU: the test preset.
    "tiny": ModelConfig(
        d_model=64,
        num_layers=2,
        num_heads=4,
        rope_sections=(3, 3, 2),
        mlp_ratio=2.0,
    ),
    # The shipped default: trainable on 2 CPU cores within an hour.
    "small": ModelConfig(
        d_model=192,
        num_layers=6,
        num_heads=6,
        rope_sections=(6, 5, 5),
        understanding_patch=16,
    ),
    # GPU.
    "base": ModelConfig(
        d_model=768,
        num_layers=12,
        num_heads=12,
        rope_sections=(12, 10, 10),
        action_width=64,
        num_domains=32,
    ),
}


def preset(name: str) -> ModelConfig:
    """A named preset: tiny, small or base."""
    if name not in PRESETS:
        raise ValueError(f"preset={name!r} is unknown; expected one of {sorted(PRESETS)}")
    return PRESETS[name]
