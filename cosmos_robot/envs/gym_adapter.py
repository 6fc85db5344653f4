"""Any gymnasium MuJoCo env as a data and evaluation source, with the toolkit's observation convention.

``make_env("Reacher-v5")`` returns an env whose observations are ``{"pixels", "agent_pos"}`` like
PushBlock's: ``pixels`` is the env's own ``rgb_array`` render at the requested size and camera,
``agent_pos`` its state vector (float32). Rendering is made cheap (no anti-aliasing, no shadows),
``info["is_success"]`` is always set, and the black-frame pitfall of recreating MuJoCo renderers in
one process is handled.
"""

from __future__ import annotations

import gc
import importlib
import pkgutil
import sys
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import cosmos_robot.envs  # noqa: F401  (registers the PushBlock ids)
from cosmos_robot.envs.push_block import validate_image_size
from cosmos_robot.envs.rendering import require_egl
from cosmos_robot.forking import note_use, refuse_forked_child
from cosmos_robot.keys import AGENT_POS, PIXELS

# Task cameras for gymnasium's own envs: their default cameras make small arms tiny at 64 px.
CAMERA_PRESETS: dict[str, dict[str, Any]] = {
    "Reacher-v5": {"trackbodyid": -1, "distance": 0.62, "elevation": -90.0, "azimuth": 90.0, "lookat": np.zeros(3)},
    "Pusher-v5": {
        "trackbodyid": -1,
        "distance": 1.6,
        "elevation": -90.0,
        "azimuth": 90.0,
        "lookat": np.array([0.2, -0.3, 0.0]),
    },
}

# Success where the env has no notion of it; lerobot-eval counts a missing is_success as success.
SUCCESS_FNS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "Reacher-v5": lambda info: -float(info.get("reward_dist", -1.0)) < 0.02,
    "Pusher-v5": lambda info: -float(info.get("reward_dist", -1.0)) < 0.05,
}


class ModelRenderer:
    """Renders a MuJoCo env's own ``model`` and ``data`` with ``mujoco.Renderer``: for envs whose
    constructor takes none of gymnasium MuJoCo's rendering arguments (``render_mode``, ``width``,
    ``height``, camera), or that render nothing at all.

    Args:
        base: the unwrapped env; it must expose ``model`` (``mujoco.MjModel``) and ``data``.
        width, height: image size.
        camera_config: a free-camera config (distance, elevation, azimuth, lookat); None frames the
            whole model (MuJoCo's default free camera).
        camera_name: a named camera of the model instead.
    """

    def __init__(
        self,
        base: Any,
        width: int,
        height: int,
        camera_config: dict[str, Any] | None = None,
        camera_name: str | None = None,
    ) -> None:
        import mujoco

        model, data = getattr(base, "model", None), getattr(base, "data", None)
        if not isinstance(model, mujoco.MjModel) or not isinstance(data, mujoco.MjData):
            raise ValueError(
                f"env={base} has no MuJoCo model and data (env.unwrapped.model / .data); expected a MuJoCo env"
            )
        self.width, self.height, self.data = width, height, data
        # The offscreen buffer must hold the image; models declare a small one by default.
        model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
        model.vis.global_.offheight = max(model.vis.global_.offheight, height)
        self.renderer = mujoco.Renderer(model, height, width)
        if camera_name is not None:
            if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera_name) < 0:
                raise ValueError(f"camera_name={camera_name!r} is not a camera of the env's model")
            self.camera: Any = camera_name
        else:
            self.camera = mujoco.MjvCamera()
            mujoco.mjv_defaultFreeCamera(model, self.camera)
            for key, value in (camera_config or {}).items():
                if key != "trackbodyid":
                    setattr(self.camera, key, value)

    def render(self) -> np.ndarray:
        """The current frame, uint8 (height, width, 3)."""
        self.renderer.update_scene(self.data, camera=self.camera)
        return self.renderer.render().copy()

    def close(self) -> None:
        """Free the renderer's context."""
        self.renderer.close()


class PixelsAgentPos(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Wraps a MuJoCo env so it observes ``{"pixels": uint8 (H, W, 3), "agent_pos": float32}``.

    Args:
        env: a gymnasium env made with ``render_mode="rgb_array"``, or any MuJoCo env when ``renderer``
            is given.
        success_fn: maps a step's ``info`` to success; the env's own ``is_success`` (or ``success``) wins
            if it sets one.
        renderer: draws the frames instead of ``env.render()`` (a :class:`ModelRenderer`).
    """

    def __init__(
        self,
        env: gym.Env,
        success_fn: Callable[[dict[str, Any]], bool] | None = None,
        renderer: ModelRenderer | None = None,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, success_fn=success_fn)  # lets gymnasium re-make it
        gym.Wrapper.__init__(self, env)
        if renderer is None and env.render_mode != "rgb_array":
            raise ValueError(
                f"render_mode={env.render_mode!r} for {env.spec.id if env.spec else env}; expected 'rgb_array'"
            )
        if not isinstance(env.observation_space, spaces.Box) or len(env.observation_space.shape) != 1:
            raise ValueError(
                f"observation_space={env.observation_space} of {env.spec.id if env.spec else env}; "
                "expected a flat Box state vector to use as agent_pos"
            )
        self._success_fn = success_fn
        self._renderer = renderer
        base = env.unwrapped
        _make_rendering_cheap(base)
        height, width = (renderer.height, renderer.width) if renderer else (base.height, base.width)
        state = env.observation_space
        self.observation_space = spaces.Dict(
            {
                PIXELS: spaces.Box(0, 255, (height, width, 3), dtype=np.uint8),
                AGENT_POS: spaces.Box(state.low.astype(np.float32), state.high.astype(np.float32), dtype=np.float32),
            }
        )

    def _observe(self, state: np.ndarray) -> dict[str, np.ndarray]:
        pixels = np.ascontiguousarray(self._renderer.render() if self._renderer else self.env.render())
        return {PIXELS: pixels, AGENT_POS: np.asarray(state, dtype=np.float32)}

    def _with_success(self, info: dict[str, Any]) -> dict[str, Any]:
        if "is_success" not in info:
            if "success" in info:
                info["is_success"] = bool(info["success"])
            else:
                info["is_success"] = bool(self._success_fn(info)) if self._success_fn else False
        return info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the wrapped env; fail loudly if its first frame is all black."""
        state, info = self.env.reset(seed=seed, options=options)
        obs = self._observe(state)
        if not obs[PIXELS].any():
            raise RuntimeError(
                f"{self.spec.id if self.spec else self.env}: the first rendered frame is all black; an old MuJoCo "
                "renderer was probably freed after this one was made. Close envs (env.close()) before making new ones."
            )
        info = dict(info)
        info.setdefault("is_success", False)
        return obs, info

    def step(self, action: np.ndarray):
        """Step the wrapped env and render."""
        state, reward, terminated, truncated, info = self.env.step(action)
        return self._observe(state), reward, terminated, truncated, self._with_success(dict(info))

    def close(self) -> None:
        """Close and collect now, so the renderer's EGL context is freed before another env is made."""
        if self._renderer is not None:
            self._renderer.close()
        super().close()
        gc.collect()


def _make_rendering_cheap(base: Any) -> None:
    """No anti-aliasing and no shadows: the two dominant CPU rendering costs."""
    model = getattr(base, "model", None)
    if model is None:
        return
    model.vis.quality.offsamples = 0
    model.vis.quality.shadowsize = 0
    model.light_castshadow[:] = 0


def make_env(
    env_id: str,
    width: int = 64,
    height: int = 64,
    camera_config: dict[str, Any] | None = None,
    camera_name: str | None = None,
    success_fn: Callable[[dict[str, Any]], bool] | None = None,
    **kwargs: Any,
) -> gym.Env:
    """Make ``env_id`` with the toolkit's observation convention (pixels + agent_pos).

    PushBlock ids are made directly (they already follow it); any other id must be a gymnasium
    MuJoCo env with ``rgb_array`` rendering, wrapped by :class:`PixelsAgentPos`.

    Args:
        env_id: a registered gymnasium id, e.g. ``"cosmos_robot/PushBlockPoint-v0"`` or ``"Reacher-v5"``.
        width: image width, a positive multiple of 8.
        height: image height, a positive multiple of 8.
        camera_config: a MuJoCo free-camera config (distance, elevation, azimuth, lookat, trackbodyid);
            defaults to :data:`CAMERA_PRESETS` for known envs.
        camera_name: a named camera of the model instead of the free camera.
        success_fn: maps a step's ``info`` to success where the env sets neither ``is_success`` nor
            ``success`` (default: :data:`SUCCESS_FNS` for known envs, else never a success).
        **kwargs: passed to ``gymnasium.make``.
    """
    validate_image_size("width", width)
    validate_image_size("height", height)
    env_id = resolve_env_id(env_id)
    require_egl()
    gc.collect()  # free renderers of envs dropped without close() before making a new context
    if env_id.startswith("cosmos_robot/"):
        return gym.make(env_id, width=width, height=height, **kwargs)
    camera = {} if camera_name else {"default_camera_config": camera_config or CAMERA_PRESETS.get(env_id)}
    if camera_name:
        camera["camera_name"] = camera_name
    camera = {k: v for k, v in camera.items() if v is not None}
    refuse_forked_child(f"env={env_id!r}", resources=("egl",))
    try:
        env = gym.make(env_id, render_mode="rgb_array", width=width, height=height, **camera, **kwargs)
        renderer = None
    except TypeError as error:
        if "unexpected keyword argument" not in str(error):
            raise
        # Its constructor takes none of gymnasium MuJoCo's rendering arguments: render its model ourselves.
        env = gym.make(env_id, **kwargs)
        renderer = ModelRenderer(env.unwrapped, width, height, camera.get("default_camera_config"), camera_name)
    note_use("egl")
    return PixelsAgentPos(env, success_fn=success_fn or SUCCESS_FNS.get(env_id), renderer=renderer)


# Installed packages whose names start with this register gymnasium envs on import (LeRobot's plugin
# convention for envs).
ENV_PLUGIN_PREFIX = "lerobot_env_"


def resolve_env_id(env_id: str) -> str:
    """The registered gymnasium id behind ``env_id``.

    ``module:EnvId`` (gymnasium's form) imports ``module`` first, so a package's own registration
    runs. An id that is still unknown is looked for in installed env plugins (top-level packages named
    ``lerobot_env_*``, imported once) before it is an error.
    """
    if not isinstance(env_id, str) or not env_id:
        raise ValueError(f"env={env_id!r}; expected a gymnasium id such as 'Reacher-v5' or 'package.module:EnvId-v0'")
    if ":" in env_id:
        module, _, name = env_id.partition(":")
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ValueError(
                f"env={env_id!r}: cannot import {module!r} ({error}); expected an installed module"
            ) from None
        env_id = name
    if env_id not in gym.registry:
        _import_env_plugins()
    if env_id not in gym.registry:
        raise ValueError(
            f"env={env_id!r} is not a registered gymnasium id; e.g. cosmos_robot/PushBlockPoint-v0, Reacher-v5, "
            "or 'package.module:EnvId-v0' to import the package that registers it"
        )
    return env_id


def _import_env_plugins() -> None:
    """Import every installed ``lerobot_env_*`` package (they register their envs on import)."""
    for module in pkgutil.iter_modules():
        if module.name.startswith(ENV_PLUGIN_PREFIX) and module.name not in sys.modules:
            try:
                importlib.import_module(module.name)
            except Exception as error:  # noqa: BLE001  (one broken plugin must not hide the others)
                warnings.warn(f"env plugin {module.name!r} failed to import: {error}", stacklevel=3)
