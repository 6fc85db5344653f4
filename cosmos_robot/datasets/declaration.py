"""Embodiments from data: a robot the toolkit has never seen joins the shared action space from its dataset.

A LeRobot dataset already says most of what the model needs: the action and state widths, the rate,
``robot_type`` (the embodiment's name) and its cameras. What it cannot say - which action dimensions
are velocities, positions or a gripper, and which camera to learn from - comes from an optional
declaration, a JSON file keyed by ``robot_type``::

    {"my_arm": {"components": [{"kind": "joint_vel", "dim": 6}, {"kind": "gripper", "dim": 1}],
                "camera": "observation.images.wrist"}}

Without a declaration the whole action is one component of kind ``"other"`` and the first camera is
used. The embodiment takes the lowest domain id that no registered embodiment and no other dataset
uses; the checkpoint stores it, so ``WorldActionModel.from_pretrained`` knows it with no code change.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cosmos_robot.actions import COMPONENT_UNITS, ActionComponent, ActionSpec, Embodiment


@dataclass(frozen=True)
class EmbodimentDeclaration:
    """What a dataset cannot say about its robot.

    Attributes:
        components: the action layout, in order, as ``(kind, dim)`` pairs (None: one ``"other"`` block).
        camera: the image key to learn from (None: the dataset's first camera).
    """

    components: tuple[tuple[str, int], ...] | None = None
    camera: str | None = None

    @classmethod
    def from_dict(cls, name: str, data: Any) -> EmbodimentDeclaration:
        """A declaration from its JSON object, with one-line errors naming the field."""
        if not isinstance(data, dict):
            raise ValueError(f"declaration of {name!r} is {data!r}; expected an object with components and/or camera")
        unknown = set(data) - {"components", "camera"}
        if unknown:
            raise ValueError(f"declaration of {name!r} has fields {sorted(unknown)}; expected components, camera")
        components = data.get("components")
        if components is not None:
            if not isinstance(components, list) or not components:
                raise ValueError(f"declaration of {name!r}: components={components!r}; expected a non-empty list")
            parsed = []
            for c in components:
                kind, dim = (c.get("kind"), c.get("dim")) if isinstance(c, dict) else (None, None)
                if kind not in COMPONENT_UNITS:
                    raise ValueError(
                        f"declaration of {name!r}: component kind={kind!r} is unknown; "
                        f"expected one of {sorted(COMPONENT_UNITS)}"
                    )
                if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
                    raise ValueError(
                        f"declaration of {name!r}: component {kind!r} dim={dim!r}; expected an integer >= 1"
                    )
                parsed.append((kind, dim))
            components = tuple(parsed)
        camera = data.get("camera")
        if camera is not None and not isinstance(camera, str):
            raise ValueError(f"declaration of {name!r}: camera={camera!r}; expected an image key such as "
                             "'observation.images.top'")  # fmt: skip
        return cls(components, camera)


def load_declarations(path: str | os.PathLike | None) -> dict[str, EmbodimentDeclaration]:
    """Declarations keyed by ``robot_type`` from a JSON file (None: none)."""
    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"declarations={str(path)!r} is not a file; expected a JSON file keyed by robot_type")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"declarations={str(path)!r} is not valid JSON ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"declarations={str(path)!r} holds a {type(data).__name__}; expected an object keyed by robot_type"
        )
    return {name: EmbodimentDeclaration.from_dict(name, value) for name, value in data.items()}


def embodiment_from_data(
    name: str,
    action_dim: int,
    state_dim: int,
    rate_hz: float,
    domain_id: int,
    declaration: EmbodimentDeclaration | None = None,
) -> Embodiment:
    """The :class:`~cosmos_robot.actions.Embodiment` of a dataset's robot, from its widths and rate."""
    layout = (declaration.components if declaration else None) or (("other", action_dim),)
    declared = sum(dim for _, dim in layout)
    if declared != action_dim:
        raise ValueError(
            f"embodiment={name!r}: the declared components {[f'{k}:{d}' for k, d in layout]} are {declared} wide; "
            f"expected the dataset's action width {action_dim}"
        )
    spec = ActionSpec(tuple(ActionComponent(kind, dim, COMPONENT_UNITS[kind]) for kind, dim in layout))
    return Embodiment(name, domain_id, spec, float(rate_hz), int(state_dim))
