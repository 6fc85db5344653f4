"""cosmos_robot: a Mixture-of-Transformers world-action model as a gym env, a video labeler and a policy.

Importing the package registers its gymnasium environments (``cosmos_robot/PushBlockPoint-v0``, ...).
"""

import os

# MuJoCo picks its OpenGL backend when it is first imported; headless machines need EGL.
# setdefault keeps a user's own choice (osmesa, glfw with a display).
os.environ.setdefault("MUJOCO_GL", "egl")

from cosmos_robot import envs as _envs  # noqa: E402,F401  (registers the gymnasium ids)

__version__ = "0.1.0"
