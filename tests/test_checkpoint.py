"""Checkpoint folders: round trip, and one clear error for each way a folder can be broken."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from cosmos_robot.checkpoint import load_checkpoint, save_checkpoint


@pytest.fixture
def copy(smoke_checkpoint, tmp_path):
    target = tmp_path / "ckpt"
    shutil.copytree(smoke_checkpoint, target)
    return target


def test_round_trip_keeps_weights_and_statistics(smoke_checkpoint, tmp_path):
    a = load_checkpoint(smoke_checkpoint)
    save_checkpoint(a, tmp_path / "again")
    b = load_checkpoint(tmp_path / "again")
    for (k, va), vb in zip(a.network.state_dict().items(), b.network.state_dict().values(), strict=True):
        torch.testing.assert_close(va, vb, msg=k)
    assert b.embodiments["arm2"].action_norm.to_dict() == a.embodiments["arm2"].action_norm.to_dict()
    assert b.window == a.window


@pytest.mark.parametrize("name", ["config.json", "stats.json", "model.safetensors", "autoencoder.safetensors"])
def test_missing_files_are_named(copy, name):
    (copy / name).unlink()
    with pytest.raises(FileNotFoundError, match=f"is missing {name}"):
        load_checkpoint(copy)


def test_truncated_weights_are_a_clear_error(copy):
    data = (copy / "model.safetensors").read_bytes()
    (copy / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="model.safetensors is not a valid safetensors file"):
        load_checkpoint(copy)


def test_unknown_config_keys_are_rejected(copy):
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps(config | {"learning_rate": 1}))
    with pytest.raises(ValueError, match=r"unknown keys \['learning_rate'\]"):
        load_checkpoint(copy)
    config["model"]["d_modle"] = 3
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="d_modle"):
        load_checkpoint(copy)


def test_weights_of_another_shape_are_named(copy):
    config = json.loads((copy / "config.json").read_text())
    config["model"]["mlp_ratio"] = 3.0  # the stored MLP weights no longer fit
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"tensor 'blocks\.0\..*mlp.* has shape \(128,?.*expected"):
        load_checkpoint(copy)


def test_no_pickle_anywhere(smoke_checkpoint):
    for path in smoke_checkpoint.rglob("*"):
        if path.is_file():
            assert path.suffix in (".json", ".safetensors"), path
