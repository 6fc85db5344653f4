"""Typed harness results: to_json() is plain JSON, example arrays stay out of it."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from cosmos_robot.eval.result import EvalResult, example_field


@dataclass
class Toy(EvalResult):
    score: float
    per_step: list[float]
    table: dict[str, np.ndarray]
    example: np.ndarray | None = example_field()


def test_to_json_is_plain_and_leaves_examples_out():
    toy = Toy(np.float32(0.5), [1.0, 2.0], {"a": np.arange(3)}, example=np.zeros((64, 64, 3), np.uint8))
    data = toy.to_json()
    assert data == {"score": 0.5, "per_step": [1.0, 2.0], "table": {"a": [0, 1, 2]}}
    assert json.loads(json.dumps(data)) == data
