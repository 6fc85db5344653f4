"""MuJoCo tasks, the gymnasium-env adapter and the learned ForwardDynamicsEnv (registered here)."""

import gymnasium as gym

PUSH_BLOCK_IDS = {
    "point": "cosmos_robot/PushBlockPoint-v0",
    "arm2": "cosmos_robot/PushBlockArm2-v0",
}
MAX_EPISODE_STEPS = 80

# gymnasium's own MuJoCo envs we collect from: the embodiment and task their datasets are recorded under.
STOCK_EMBODIMENTS = {"Reacher-v5": "reacher", "Pusher-v5": "pusher7dof"}
STOCK_TASKS = {"Reacher-v5": "move the fingertip onto the red target", "Pusher-v5": "push the object onto the goal"}


def embodiment_of(env_id: str) -> str:
    """The embodiment an env id's data is recorded under (other gymnasium ids: their lower-cased name)."""
    for embodiment, known in PUSH_BLOCK_IDS.items():
        if known == env_id:
            return embodiment
    return STOCK_EMBODIMENTS.get(env_id, env_id.split("/")[-1].lower())


def push_block_embodiment(env_id: str) -> str:
    """The PushBlock embodiment of an env id; other ids are an error listing the PushBlock ones."""
    if env_id not in PUSH_BLOCK_IDS.values():
        raise ValueError(f"env={env_id!r} is not a PushBlock env; expected one of {sorted(PUSH_BLOCK_IDS.values())}")
    return embodiment_of(env_id)


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
