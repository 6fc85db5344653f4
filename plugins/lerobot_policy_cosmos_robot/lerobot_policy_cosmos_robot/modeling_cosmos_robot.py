"""The cosmos_robot world-model policy behind LeRobot's ``PreTrainedPolicy`` interface.

Each LeRobot batch row is one environment; each gets its own :class:`WorldModelPolicy` (its own
action queue and history), created on the first call after :meth:`reset`. Images arrive as
LeRobot floats (B, 3, H, W) in [0, 1] and are handed to the model as uint8 frames.
"""

from __future__ import annotations

import numpy as np
import torch
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.utils.constants import OBS_STATE
from torch import Tensor

from cosmos_robot.policies.world_model_policy import WorldModelPolicy
from cosmos_robot.world_model import WorldActionModel
from lerobot_policy_cosmos_robot.configuration_cosmos_robot import CosmosRobotConfig


class CosmosRobotPolicy(PreTrainedPolicy):
    """LeRobot policy over a cosmos_robot :class:`WorldActionModel` (see :class:`CosmosRobotConfig`)."""

    config_class = CosmosRobotConfig
    name = "cosmos_robot"

    def __init__(self, config: CosmosRobotConfig, **kwargs) -> None:
        super().__init__(config)
        config.validate_features()
        self.config = config
        self.world_model = WorldActionModel.from_pretrained(config.checkpoint)
        if config.embodiment not in self.world_model.embodiments:
            raise ValueError(
                f"policy.embodiment={config.embodiment!r}; the checkpoint knows {self.world_model.embodiments}"
            )
        self._image_key = next(iter(config.image_features))
        self._policies: list[WorldModelPolicy] = []

    def get_optim_params(self) -> dict:
        return {}

    def reset(self) -> None:
        """Called by LeRobot at each episode start: new queues and histories for every environment."""
        self._policies = []

    def _observations(self, batch: dict[str, Tensor]) -> list[dict[str, np.ndarray]]:
        images = batch[self._image_key]
        if images.ndim != 4 or images.shape[1] != 3:
            raise ValueError(f"{self._image_key} has shape {tuple(images.shape)}; expected (B, 3, H, W)")
        pixels = (images.clamp(0, 1) * 255).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        states = batch.get(OBS_STATE)
        obs = []
        for i in range(len(pixels)):
            row = {"pixels": pixels[i]}
            if states is not None:
                row["agent_pos"] = states[i].float().cpu().numpy()
            obs.append(row)
        return obs

    def _policy(self, i: int) -> WorldModelPolicy:
        while len(self._policies) <= i:
            c = self.config
            self._policies.append(
                WorldModelPolicy(
                    self.world_model,
                    c.embodiment,
                    instruction=c.instruction,
                    execute_steps=c.execute_steps,
                    temporal_ensemble=c.temporal_ensemble,
                    steps=c.sampling_steps,
                    use_state=c.use_state,
                    seed=c.seed + len(self._policies),
                )
            )
        return self._policies[i]

    @torch.no_grad()
    def select_action(self, batch: dict[str, Tensor], **kwargs) -> Tensor:
        """(B, action_dim): each environment's next action, replanning receding-horizon."""
        actions = [self._policy(i).select_action(obs) for i, obs in enumerate(self._observations(batch))]
        return torch.from_numpy(np.stack(actions))

    @torch.no_grad()
    def predict_action_chunk(self, batch: dict[str, Tensor], **kwargs) -> Tensor:
        """(B, chunk, action_dim): one model call per environment, nothing queued."""
        chunks = [self._policy(i).predict_action_chunk(obs)[0] for i, obs in enumerate(self._observations(batch))]
        return torch.from_numpy(np.stack(chunks))

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict]:
        raise NotImplementedError(
            "cosmos_robot trains with `cosmos-robot train` (forward dynamics, inverse dynamics and policy at "
            "once); lerobot-train is not supported for this policy"
        )
