"""MuJoCo tasks, the gymnasium-env adapter and (later) the learned ForwardDynamicsEnv."""

import gymnasium as gym

PUSH_BLOCK_IDS = {
    "point": "cosmos_robot/PushBlockPoint-v0",
    "arm2": "cosmos_robot/PushBlockArm2-v0",
}
MAX_EPISODE_STEPS = 80

for _embodiment, _env_id in PUSH_BLOCK_IDS.items():
    if _env_id not in gym.registry:
        gym.register(
            id=_env_id,
            entry_point="cosmos_robot.envs.push_block:PushBlockEnv",
            kwargs={"embodiment": _embodiment},
            max_episode_steps=MAX_EPISODE_STEPS,
        )
