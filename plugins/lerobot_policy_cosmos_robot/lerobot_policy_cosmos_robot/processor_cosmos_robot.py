"""LeRobot pre/post-processing for the cosmos_robot policy: batching and devices only (the model
normalises raw states and actions itself, from its checkpoint's statistics)."""

from __future__ import annotations

from typing import Any

import torch
from lerobot.processor import PolicyAction, PolicyProcessorPipeline
from lerobot.processor.factory import make_default_policy_processor_steps, make_policy_processor_pipelines

from lerobot_policy_cosmos_robot.configuration_cosmos_robot import CosmosRobotConfig


def make_cosmos_robot_pre_post_processors(
    config: CosmosRobotConfig, dataset_stats: dict[str, dict[str, torch.Tensor]] | None = None
) -> tuple[
    PolicyProcessorPipeline[dict[str, Any], dict[str, Any]], PolicyProcessorPipeline[PolicyAction, PolicyAction]
]:
    """Rename -> add batch -> device in; to CPU out (no normaliser: see the module docstring)."""
    s = make_default_policy_processor_steps(config, dataset_stats)
    return make_policy_processor_pipelines(
        input_steps=[s.rename_observations, s.add_batch_dim, s.to_device], output_steps=[s.to_cpu]
    )
