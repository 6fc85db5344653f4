"""cosmos_robot: a Mixture-of-Transformers world-action model as a gym env, a video labeler and a policy.

Importing the package registers its gymnasium environments (``cosmos_robot/PushBlockPoint-v0``, ...);
``from cosmos_robot import WorldActionModel, ForwardDynamicsEnv, WorldModelPolicy, label`` gives the main
classes and the labeling function.
"""

import os

# MuJoCo picks its OpenGL backend when it is first imported; headless machines need EGL.
# setdefault keeps a user's own choice (osmesa, glfw with a display).
os.environ.setdefault("MUJOCO_GL", "egl")

from cosmos_robot import envs as _envs  # noqa: E402,F401  (registers the gymnasium ids)

__version__ = "0.1.0"

# The main classes at the top level, imported on first use: `import cosmos_robot` stays light (no torch).
_EXPORTS = {
    "WorldActionModel": "cosmos_robot.world_model",
    "WorldModel": "cosmos_robot.interface",
    "ForwardDynamicsEnv": "cosmos_robot.envs.forward_dynamics",
    "ForwardDynamicsVectorEnv": "cosmos_robot.envs.forward_dynamics",
    "WorldModelPolicy": "cosmos_robot.policies.world_model_policy",
    "label": "cosmos_robot.labeler",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'cosmos_robot' has no attribute {name!r}")
