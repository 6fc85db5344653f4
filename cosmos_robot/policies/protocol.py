"""The one protocol evaluation talks to a policy through (diffusion_policy's env-runner contract)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Policy(Protocol):
    """The small protocol evaluation talks to: ``reset`` at episode start, ``act`` every step."""

    def reset(self, seed: int | None = None) -> None: ...

    def act(self, obs: dict[str, np.ndarray], info: dict[str, Any]) -> np.ndarray: ...
