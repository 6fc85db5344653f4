"""The PushBlock tasks as a LeRobot env: ``lerobot-eval --env.type=pushblock --env.task=PushBlockPoint-v0``.

Observations are ``pixels`` (64x64 RGB, the task camera) and ``agent_pos``, mapped by LeRobot to
``observation.image`` and ``observation.state``; every step's ``info`` carries ``is_success`` (LeRobot
counts an episode without it as a success).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lerobot.configs import FeatureType, PolicyFeature
from lerobot.envs.configs import EnvConfig
from lerobot.utils.constants import ACTION, OBS_IMAGE, OBS_STATE

import cosmos_robot.envs  # noqa: F401  (registers cosmos_robot/PushBlock*-v0 with gymnasium)
from cosmos_robot.envs import MAX_EPISODE_STEPS

# task -> (action width, state width)
TASKS = {"PushBlockPoint-v0": (2, 2), "PushBlockArm2-v0": (2, 2)}


@EnvConfig.register_subclass("pushblock")
@dataclass
class PushBlockEnv(EnvConfig):
    """LeRobot config of a PushBlock task (``task``: PushBlockPoint-v0 or PushBlockArm2-v0)."""

    task: str | None = "PushBlockPoint-v0"
    fps: int = 10
    episode_length: int = MAX_EPISODE_STEPS
    image_size: int = 64
    features: dict[str, PolicyFeature] = field(default_factory=dict)
    features_map: dict[str, str] = field(
        default_factory=lambda: {ACTION: ACTION, "agent_pos": OBS_STATE, "pixels": OBS_IMAGE}
    )

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"env.task={self.task!r}; expected one of {sorted(TASKS)}")
        action_dim, state_dim = TASKS[self.task]
        self.features = {
            ACTION: PolicyFeature(type=FeatureType.ACTION, shape=(action_dim,)),
            "agent_pos": PolicyFeature(type=FeatureType.STATE, shape=(state_dim,)),
            "pixels": PolicyFeature(type=FeatureType.VISUAL, shape=(self.image_size, self.image_size, 3)),
        }

    @property
    def package_name(self) -> str:
        return "cosmos_robot.envs"

    @property
    def gym_id(self) -> str:
        return f"cosmos_robot/{self.task}"

    @property
    def gym_kwargs(self) -> dict:
        return {
            "render_mode": "rgb_array",
            "max_episode_steps": self.episode_length,
            "width": self.image_size,
            "height": self.image_size,
        }
