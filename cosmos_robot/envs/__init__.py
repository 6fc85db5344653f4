"""MuJoCo tasks, the gymnasium-env adapter and the learned ForwardDynamicsEnv (registered here)."""

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

FORWARD_DYNAMICS_ID = "cosmos_robot/ForwardDynamics-v0"
if FORWARD_DYNAMICS_ID not in gym.registry:
    # No max_episode_steps here: the env truncates itself (its own ``max_episode_steps`` kwarg).
    gym.register(
        id=FORWARD_DYNAMICS_ID,
        entry_point="cosmos_robot.envs.forward_dynamics:ForwardDynamicsEnv",
        vector_entry_point="cosmos_robot.envs.forward_dynamics:ForwardDynamicsVectorEnv",
        kwargs={"checkpoint": "default", "embodiment": "point"},
    )
