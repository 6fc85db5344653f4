"""Plain JSON values from what the toolkit writes: dataclasses, numpy arrays and scalars, nested containers."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np


def plain(value: Any) -> Any:
    """A JSON-ready copy of ``value``.

    Dataclasses become dicts of their fields, except fields whose metadata says ``{"json": False}``
    (example arrays kept for plots); tuples become lists; numpy arrays and scalars become lists and
    Python numbers; dict keys become strings.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.metadata.get("json", True)
        }
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value
