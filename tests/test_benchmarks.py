"""Every benchmark takes ``--seed``: anyone can rerun a number on starts of their own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).parents[1] / "benchmarks").glob("*.py"))


def _options(path: Path) -> set[str]:
    """The option strings of every ``add_argument`` call in a script."""
    options = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            options |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return options


def test_there_are_benchmarks():
    assert len(BENCHMARKS) >= 10


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_every_benchmark_takes_a_seed(path):
    assert "--seed" in _options(path), f"{path.name} has no --seed option"
