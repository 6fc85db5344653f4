"""LeRobot configuration of the cosmos_robot world-model policy."""

from __future__ import annotations

from dataclasses import dataclass, field

from lerobot.configs import NormalizationMode, PreTrainedConfig
from lerobot.optim.optimizers import AdamWConfig


@PreTrainedConfig.register_subclass("cosmos_robot")
@dataclass
class CosmosRobotConfig(PreTrainedConfig):
    """Which world model acts, as which embodiment, and how its chunks are served.

    Normalisation is the model's own (quantile statistics saved with the checkpoint), so LeRobot's
    normaliser is the identity here. Training runs through ``cosmos-robot train``, not
    ``lerobot-train``: the world model learns forward dynamics, inverse dynamics and the policy at once.

    Attributes:
        checkpoint: a cosmos_robot checkpoint folder, or "default" (the model shipped in the package).
        embodiment: the embodiment that acts ("point" or "arm2" for the default model).
        instruction: task text; None uses the task the embodiment was trained on.
        sampling_steps: Euler steps per action chunk.
        execute_steps: actions executed per chunk before replanning; None executes the whole chunk.
        temporal_ensemble: None, or ACT's ensembling coefficient (replans every step).
        use_state: pass ``observation.state`` to the model as the proprio state.
        seed: seeds the sampling noise.
    """

    checkpoint: str = "default"
    embodiment: str = "point"
    instruction: str | None = None
    sampling_steps: int = 10
    execute_steps: int | None = None
    temporal_ensemble: float | None = None
    use_state: bool = True
    seed: int = 0
    device: str | None = "cpu"
    normalization_mapping: dict[str, NormalizationMode] = field(
        default_factory=lambda: {
            "VISUAL": NormalizationMode.IDENTITY,
            "STATE": NormalizationMode.IDENTITY,
            "ACTION": NormalizationMode.IDENTITY,
        }
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sampling_steps < 1:
            raise ValueError(f"policy.sampling_steps={self.sampling_steps!r}; expected a positive integer")

    @property
    def observation_delta_indices(self) -> None:
        return None

    @property
    def action_delta_indices(self) -> None:
        return None

    @property
    def reward_delta_indices(self) -> None:
        return None

    def get_optimizer_preset(self) -> AdamWConfig:
        return AdamWConfig(lr=1e-3)

    def get_scheduler_preset(self) -> None:
        return None

    def validate_features(self) -> None:
        if not self.image_features:
            raise ValueError("policy cosmos_robot needs one camera (a VISUAL input feature); found none")
