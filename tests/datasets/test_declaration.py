"""Embodiments from data: a robot the toolkit does not know joins from its dataset (and a declaration)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from cosmos_robot.collect import collect
from cosmos_robot.datasets.declaration import EmbodimentDeclaration, load_declarations
from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.model.config import preset

SLIDER = "tests.envs.third_party_env:ThirdPartySlider-v0"
NAME = "thirdpartyslider-v0"  # the robot_type collect writes for that env


@pytest.fixture(scope="module")
def slider_and_point(tmp_path_factory):
    root = tmp_path_factory.mktemp("declared")
    slider, point = root / "slider", root / "point"
    collect(SLIDER, 3, slider, policy="random", video=False, progress=False, fps=10)
    collect("cosmos_robot/PushBlockPoint-v0", 2, point, video=False, progress=False)
    return str(slider), str(point)


def test_an_unknown_robot_joins_from_its_data_on_a_free_domain(slider_and_point):
    data = TrainingSet(list(slider_and_point), preset("tiny"), num_frames=5)
    new = data.embodiments[NAME]
    assert (new.action_dim, new.state_dim, new.rate_hz) == (2, 4, 10.0)
    assert new.domain_id == 3  # 0-2 belong to the registered point, arm2 and reacher
    assert [c.kind for c in new.spec.components] == ["other"]
    assert data.embodiments["point"].domain_id == 0


def test_a_declaration_names_the_layout_and_the_camera(slider_and_point, tmp_path):
    path = tmp_path / "robots.json"
    layout = [{"kind": "joint_torque", "dim": 2}]
    path.write_text(json.dumps({NAME: {"components": layout, "camera": "observation.images.top"}}))
    data = TrainingSet(list(slider_and_point), preset("tiny"), num_frames=5, declarations=load_declarations(path))
    assert [(c.kind, c.dim, c.unit) for c in data.embodiments[NAME].spec.components] == [("joint_torque", 2, "")]


@pytest.mark.parametrize(
    "declaration, message",
    [
        ({"components": [{"kind": "warp_drive", "dim": 2}]}, "kind='warp_drive' is unknown"),
        ({"components": [{"kind": "joint_vel", "dim": 0}]}, "dim=0"),
        ({"components": [{"kind": "joint_vel", "dim": 3}]}, "3 wide; expected the dataset's action width 2"),
        ({"camera": "observation.images.wrist"}, "camera='observation.images.wrist' is not in"),
        ({"gripper": True}, "has fields \\['gripper'\\]"),
    ],
)
def test_bad_declarations_are_one_line_errors(slider_and_point, tmp_path, declaration, message):
    path = tmp_path / "robots.json"
    path.write_text(json.dumps({NAME: declaration}))
    with pytest.raises(ValueError, match=message):
        TrainingSet(list(slider_and_point), preset("tiny"), num_frames=5, declarations=load_declarations(path))


def test_more_embodiments_than_domains_is_an_error(slider_and_point):
    config = dataclasses.replace(preset("tiny"), num_domains=3)  # all three taken by the registered robots
    with pytest.raises(ValueError, match="needs a domain, but all 3 are taken"):
        TrainingSet(list(slider_and_point), config, num_frames=5)


def test_a_declaration_for_no_dataset_or_a_registered_layout_is_an_error(slider_and_point):
    with pytest.raises(ValueError, match="match no dataset"):
        TrainingSet(list(slider_and_point), preset("tiny"), declarations={"ghost": EmbodimentDeclaration()})
    fixed = {"point": EmbodimentDeclaration(components=(("joint_vel", 2),))}
    with pytest.raises(ValueError, match="is registered: its action layout is fixed"):
        TrainingSet(list(slider_and_point), preset("tiny"), declarations=fixed)


def test_declaration_files_are_checked(tmp_path):
    assert load_declarations(None) == {}
    with pytest.raises(ValueError, match="is not a file"):
        load_declarations(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        load_declarations(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ValueError, match="holds a list"):
        load_declarations(tmp_path / "list.json")


@pytest.mark.slow
def test_a_model_trained_on_a_new_robot_knows_it_from_its_checkpoint(slider_and_point, tmp_path):
    from cosmos_robot.eval.offline import evaluate_offline
    from cosmos_robot.train import train
    from cosmos_robot.world_model import WorldActionModel
    from tests.conftest import smoke_config

    path = tmp_path / "robots.json"
    path.write_text(json.dumps({NAME: {"components": [{"kind": "joint_torque", "dim": 2}]}}))
    out = tmp_path / "ckpt"
    train(smoke_config(slider_and_point, out, declarations=str(path)), progress=False)
    model = WorldActionModel.from_pretrained(out)  # no registration in this process's code path
    assert set(model.embodiments) == {"point", NAME}
    assert model.action_names(NAME) == ["joint_torque_0", "joint_torque_1"]
    result = evaluate_offline(model, slider_and_point[0], episodes=1, steps=1, progress=False)
    assert result.embodiment == NAME and math.isfinite(result.id_r2)  # computed on the new robot's episodes
