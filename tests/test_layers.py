"""Imports flow one way through the package's layers, and no module imports itself back.

Read from the package's own source with ``ast``: every ``import`` counts, at module level or inside a
function (a lazy import is still a dependency). The layers, lowest first, are
:data:`LAYERS`; a module may import its own layer or one below it, never one above.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cosmos_robot

PACKAGE = Path(cosmos_robot.__file__).parent

# Lowest first. A module is placed by the longest prefix of its dotted name listed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "keys",
        "atomic",
        "phase_checkpoint",
        "seeds",
        "metrics",
        "json_values",
        "forking",
        "actions",
        "interface",
        "temporal_ensemble",
        "pixel_residual",
    ),
    ("model",),
    ("processor",),
    ("checkpoint",),
    ("world_model", "backends"),
    ("datasets",),
    ("envs",),
    ("policies",),
    (
        "collect",
        "push_data",
        "labeler",
        "part_training",
        "autoencoder_training",
        "fast_decoder_training",
        "action_prior_training",
        "inverse_prior_training",
        "forward_prior_training",
        "rollout_decoder_training",
        "object_pose_training",
        "agent_dynamics_training",
        "object_reward_training",
        "painter_training",
        "train",
        "rollout",
    ),
    ("eval",),
    ("recipes",),
    ("demo", "cli"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str) -> int:
    for rank, prefixes in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"module cosmos_robot.{name} is in no layer; add it to LAYERS")


def imports_of(path: Path) -> set[str]:
    """Our modules imported by ``path``, as names relative to the package (``model.network``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cosmos_robot"):
            base = node.module.removeprefix("cosmos_robot").lstrip(".")
            for alias in node.names:
                # `from cosmos_robot.envs import push_block_scene` imports a submodule.
                candidate = f"{base}.{alias.name}" if base else alias.name
                found.add(candidate if (PACKAGE / candidate.replace(".", "/")).with_suffix(".py").exists() else base)
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("cosmos_robot.") for a in node.names if a.name.startswith("cosmos_robot.")}
    return {name for name in found if name}


MODULES = {
    module_name(path): imports_of(path)
    for path in sorted(PACKAGE.rglob("*.py"))
    if module_name(path)  # the package's own __init__ registers the envs: it sits above everything
}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module):
    upward = sorted(name for name in MODULES[module] if layer_of(name) > layer_of(module))
    assert not upward, f"cosmos_robot.{module} (layer {layer_of(module)}) imports higher layers: {upward}"


def test_no_import_cycle():
    def resolve(name: str) -> str:
        # An import of a package resolves to its __init__ module, which MODULES keys by the package name.
        return name if name in MODULES else name.rsplit(".", 1)[0]

    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(resolve(n) for n in MODULES[name]):
            if target == name or target not in MODULES:
                continue
            if state.get(target) == 1:
                cycle = path[path.index(target) :] + [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, path + [target])
        state[name] = 2

    for name in sorted(MODULES):
        if name not in state:
            visit(name, [name])


def test_the_rules_the_layers_encode():
    # Spelled out, because they are the ones that were broken before.
    assert layer_of("model.network") < layer_of("datasets.training_set") < layer_of("eval.offline")
    assert layer_of("datasets.windows") < layer_of("envs.push_block") < layer_of("policies.scripted")
    assert layer_of("eval.offline") < layer_of("recipes")
    assert layer_of("interface") < layer_of("world_model") == layer_of("backends.cosmos3")
