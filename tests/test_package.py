"""The package's top level: the main classes import from it, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import cosmos_robot


def test_the_main_classes_are_at_the_top_level():
    from cosmos_robot import ForwardDynamicsEnv, WorldActionModel, WorldModel, WorldModelPolicy
    from cosmos_robot.world_model import WorldActionModel as FromModule

    assert WorldActionModel is FromModule and ForwardDynamicsEnv.__name__ == "ForwardDynamicsEnv"
    assert isinstance(WorldActionModel.from_pretrained("default"), WorldModel) and WorldModelPolicy
    from cosmos_robot import label
    from cosmos_robot.labeler import label as label_function

    assert label is label_function and callable(label)  # the function, not a module of that name
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        cosmos_robot.Nope  # noqa: B018


def test_importing_the_package_does_not_import_torch():
    code = "import sys, cosmos_robot; print('torch' in sys.modules)"
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert printed.strip() == "False"
