"""require_egl: a clear error instead of an obscure GLFW failure when MuJoCo has no headless backend."""

from __future__ import annotations

import pytest

from cosmos_robot.envs.rendering import require_egl


def test_a_headless_backend_passes(monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "egl")
    require_egl()


def test_no_backend_and_no_display_after_mujoco_was_imported_is_an_error(monkeypatch):
    import mujoco  # noqa: F401  (the situation being tested: mujoco already imported)

    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(RuntimeError, match="set MUJOCO_GL=egl"):
        require_egl()
