"""A trained LeRobot policy (a ``pretrained_model`` folder of ``lerobot-train``) behind our policy protocol.

The adapter builds the LeRobot batch from a PushBlock observation exactly as ``lerobot-eval`` does
(image as float (1, 3, H, W) in [0, 1], ``observation.state``, a task string), runs the policy's own
saved pre-processor (normalisation), ``select_action`` and post-processor, and returns the action as
numpy - so LeRobot policies run in :func:`cosmos_robot.eval.closed_loop.evaluate_policy` next to ours.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cosmos_robot.keys import AGENT_POS, PIXELS


class LeRobotPolicyAdapter:
    """Wraps a LeRobot ``PreTrainedPolicy`` saved by ``lerobot-train``.

    Args:
        path: the ``pretrained_model`` folder (config.json, model.safetensors, processor files).
        image_key: which input feature receives the camera frame; None takes the policy's only image feature.
        task: the task string passed in the batch.
    """

    def __init__(self, path: str | os.PathLike, image_key: str | None = None, task: str = "") -> None:
        from lerobot.configs import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        path = Path(path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"LeRobot policy path={str(path)!r} has no config.json; expected a pretrained_model folder"
            )
        config = PreTrainedConfig.from_pretrained(path)
        config.pretrained_path = path
        config.device = "cpu"
        self.policy = get_policy_class(config.type).from_pretrained(path, config=config).eval()
        self.pre, self.post = make_pre_post_processors(
            config, pretrained_path=str(path), preprocessor_overrides={"device_processor": {"device": "cpu"}}
        )
        images = list(config.image_features)
        if image_key is None and len(images) != 1:
            raise ValueError(f"the policy has image features {images}; pass image_key to choose one")
        self.image_key = image_key or images[0]
        unknown = sorted(set(config.input_features) - {self.image_key, "observation.state"})
        if unknown:
            raise ValueError(
                f"the policy reads {unknown}, which a PushBlock observation does not have; expected only "
                f"{self.image_key!r} and 'observation.state' (train it on a dataset without those columns)"
            )
        self.task = task

    def reset(self, seed: int | None = None) -> None:
        """New episode: the policy's queues are emptied; ``seed`` seeds torch (diffusion noise)."""
        self.policy.reset()
        if seed is not None:
            torch.manual_seed(seed)

    @torch.no_grad()
    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any] | None = None) -> np.ndarray:
        """The policy's next action for one PushBlock observation."""
        image = torch.from_numpy(np.ascontiguousarray(obs[PIXELS])).permute(2, 0, 1).float()[None] / 255.0
        batch = {
            self.image_key: image,
            "observation.state": torch.from_numpy(np.asarray(obs[AGENT_POS], np.float32))[None],
        }
        batch["task"] = [self.task]
        action = self.post(self.policy.select_action(self.pre(batch)))
        return action[0].cpu().numpy().astype(np.float32)
