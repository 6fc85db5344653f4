"""Both backends satisfy the one WorldModel protocol, with the protocol's exact signatures."""

from __future__ import annotations

import inspect

import pytest

from cosmos_robot.backends.cosmos3 import Cosmos3Backend
from cosmos_robot.eval.oracle import MuJoCoOracle
from cosmos_robot.interface import WorldModel
from cosmos_robot.world_model import WorldActionModel, load_world_model

CALLS = ("forward_dynamics", "inverse_dynamics", "policy", "action_names")


@pytest.mark.parametrize("backend", [WorldActionModel, Cosmos3Backend, MuJoCoOracle])
@pytest.mark.parametrize("call", CALLS)
def test_backend_signatures_equal_the_protocol(backend, call):
    expected = inspect.signature(getattr(WorldModel, call))
    actual = inspect.signature(getattr(backend, call))
    # Same names, order, kinds and defaults (annotations are strings under `from __future__ import annotations`).
    assert list(actual.parameters) == list(expected.parameters)
    for name, parameter in expected.parameters.items():
        assert actual.parameters[name].kind == parameter.kind, (call, name)
        assert actual.parameters[name].default == parameter.default, (call, name)
        assert actual.parameters[name].annotation == parameter.annotation, (call, name)
    assert actual.return_annotation == expected.return_annotation


def test_both_backends_are_world_models():
    native = WorldActionModel.from_pretrained("default")
    assert isinstance(native, WorldModel)
    assert isinstance(Cosmos3Backend.tiny_random(), WorldModel)
    assert isinstance(MuJoCoOracle("cosmos_robot/PushBlockPoint-v0"), WorldModel)


def test_load_world_model_names_the_protocol_for_other_objects():
    with pytest.raises(TypeError, match="WorldModel protocol"):
        load_world_model(object())
