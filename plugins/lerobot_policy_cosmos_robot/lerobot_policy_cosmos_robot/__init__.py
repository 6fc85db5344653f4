"""cosmos_robot's world-model policy as a LeRobot policy: ``lerobot-eval --policy.type=cosmos_robot``.

LeRobot imports this package at start-up (its distribution name starts with ``lerobot_policy_``),
which registers :class:`CosmosRobotConfig` under the type ``cosmos_robot``; LeRobot then finds
``CosmosRobotPolicy`` in ``modeling_cosmos_robot`` and ``make_cosmos_robot_pre_post_processors`` in
``processor_cosmos_robot`` by naming convention.
"""

from lerobot_policy_cosmos_robot.configuration_cosmos_robot import CosmosRobotConfig
from lerobot_policy_cosmos_robot.modeling_cosmos_robot import CosmosRobotPolicy
from lerobot_policy_cosmos_robot.processor_cosmos_robot import make_cosmos_robot_pre_post_processors

__all__ = ["CosmosRobotConfig", "CosmosRobotPolicy", "make_cosmos_robot_pre_post_processors"]
