"""plain(): numpy, tuples, dataclasses and nested containers become JSON; fields marked json=False stay out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from cosmos_robot.json_values import plain


@dataclass
class Point:
    xy: tuple[float, float]
    note: str = field(default="hidden", metadata={"json": False})


def test_everything_becomes_plain_json():
    value = {1: np.float32(0.5), "a": (np.arange(2), [np.int64(3)]), "p": Point((0.0, 1.0))}
    data = plain(value)
    assert data == {"1": 0.5, "a": [[0, 1], [3]], "p": {"xy": [0.0, 1.0]}}
    assert json.loads(json.dumps(data)) == data
