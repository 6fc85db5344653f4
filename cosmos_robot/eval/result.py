"""Typed harness results: every harness returns a dataclass, and ``to_json()`` is its report.

Fields that hold example arrays for plots (marked with :func:`example_field`) stay out of the JSON.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def example_field() -> Any:
    """A field for plots and frame strips only: not part of :meth:`EvalResult.to_json`."""
    return field(default=None, repr=False, metadata={"json": False})


def _plain(value: Any) -> Any:
    """JSON-ready copy: dataclasses, numpy arrays and scalars, nested dicts and lists."""
    if isinstance(value, EvalResult):
        return value.to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass
class EvalResult:
    """Base of the harnesses' results."""

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (example arrays left out)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self) if f.metadata.get("json", True)}
