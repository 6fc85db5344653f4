"""Headless rendering set-up shared by every MuJoCo env in the toolkit."""

from __future__ import annotations

import os
import sys


def require_egl() -> None:
    """Raise a clear error when MuJoCo was imported without a headless OpenGL backend.

    MuJoCo reads ``MUJOCO_GL`` once, at its first import; importing ``cosmos_robot`` first sets it
    to ``egl``. If ``mujoco`` was imported earlier with no backend and no display, rendering would
    fail later with an obscure GLFW error, so fail here instead.
    """
    backend = os.environ.get("MUJOCO_GL", "").lower()
    if backend in ("egl", "osmesa", "glfw", "cgl", "wgl"):
        return
    if not os.environ.get("DISPLAY") and "mujoco" in sys.modules:
        raise RuntimeError(
            f"MUJOCO_GL={backend!r} and no DISPLAY: set MUJOCO_GL=egl before importing mujoco "
            "(or import cosmos_robot first, which does it)"
        )
