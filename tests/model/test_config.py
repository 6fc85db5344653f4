"""Model presets: valid, JSON round trip, unknown keys and bad values rejected."""

from __future__ import annotations

import pytest

from cosmos_robot.model.config import PRESETS, ModelConfig, preset


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_are_valid_and_round_trip(name, tmp_path):
    config = preset(name)
    config.save(tmp_path / "c.json")
    assert ModelConfig.load(tmp_path / "c.json") == config
    assert config.tokens_per_frame == 16 and config.frame_token_dim == config.latent_channels * 4


def test_unknown_keys_are_rejected():
    with pytest.raises(ValueError, match=r"unknown model config keys \['d_modle'\]"):
        ModelConfig.from_dict({"d_modle": 128})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"d_model": 130}, "not divisible by num_heads"),
        ({"num_layers": 0}, "num_layers=0"),
        ({"rope_sections": (5, 5, 5)}, "rope_sections"),
        ({"image_size": 60}, "image_size=60"),
        ({"mlp_ratio": -1.0}, "mlp_ratio=-1.0"),
        ({"action_width": 0}, "action_width=0"),
        ({"forward_warp": 1}, "forward_warp=1; expected true or false"),
        ({"forward_bfloat16": "yes"}, "forward_bfloat16='yes'; expected true or false"),
        ({"forward_block": "gelu"}, "forward_block='gelu'; expected one of norm_gelu, relu"),
        ({"object_effector_maps": 1}, "object_effector_maps=1; expected true or false"),
        ({"object_effector_maps": True}, "object_effector_maps=True needs object_pose_domains"),
        ({"object_push_path": "yes"}, "object_push_path='yes'; expected true or false"),
        ({"object_push_path": True}, "object_push_path=True needs object_pose_domains"),
        ({"object_painter": 1}, "object_painter=1; expected true or false"),
        ({"object_painter": True}, "object_painter=True needs object_pose_domains"),
    ],
)
def test_bad_values_name_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**changes)


def test_unknown_preset():
    with pytest.raises(ValueError, match="preset='huge'"):
        preset("huge")
