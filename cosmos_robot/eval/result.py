"""Typed harness results: every harness returns a dataclass, and ``to_json()`` is its report.

Fields that hold example arrays for plots (marked with :func:`example_field`) stay out of the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cosmos_robot.json_values import plain


def example_field() -> Any:
    """A field for plots and frame strips only: not part of :meth:`EvalResult.to_json`."""
    return field(default=None, repr=False, metadata={"json": False})


@dataclass
class EvalResult:
    """Base of the harnesses' results."""

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-ready dict (example arrays left out)."""
        return plain(self)
