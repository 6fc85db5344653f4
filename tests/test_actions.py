"""The shared action space: registry, quantile normaliser, padding masks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cosmos_robot.actions import (
    Embodiment,
    Gripper,
    JointVelocity,
    Pos,
    QuantileNormalizer,
    Rot6d,
    build_action_spec,
    get_embodiment,
    pad_to_shared,
    register_embodiment,
    registered_embodiments,
    unpad_from_shared,
)


def test_declared_specs_have_the_right_width_and_names():
    spec = build_action_spec(Pos(), Rot6d(), Gripper())
    assert spec.dim == 10
    assert spec.names()[:3] == ["pos_0", "pos_1", "pos_2"] and spec.names()[-1] == "gripper_0"


def test_builtin_embodiments_differ_in_layout_and_domain():
    point, arm2 = get_embodiment("point"), get_embodiment("arm2")
    assert point.action_dim == arm2.action_dim == 2
    assert point.spec != arm2.spec and point.domain_id != arm2.domain_id
    assert [e.name for e in registered_embodiments()][:2] == ["point", "arm2"]
    assert Embodiment.from_dict(arm2.to_dict()) == arm2


def test_unknown_embodiment_and_duplicate_domains_are_rejected():
    with pytest.raises(ValueError, match="embodiment='hexapod' is unknown"):
        get_embodiment("hexapod")
    with pytest.raises(ValueError, match="domain_id=0 is taken by 'point'"):
        register_embodiment(Embodiment("other", 0, build_action_spec(JointVelocity(3)), 10.0, 3))
    with pytest.raises(ValueError, match="already registered"):
        register_embodiment(get_embodiment("point"))


finite = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(5, 40), st.integers(1, 6)), elements=finite))
def test_normaliser_round_trip(actions):
    norm = QuantileNormalizer.fit(actions, "point")
    back = norm.denormalize(norm.normalize(actions))
    np.testing.assert_allclose(back, actions, rtol=1e-4, atol=1e-3 * (1 + np.abs(actions).max()))


def test_normaliser_maps_quantiles_to_plus_minus_one_and_clamps():
    rng = np.random.default_rng(0)
    actions = rng.uniform([-0.3, -2], [0.3, 2], size=(5000, 2))
    norm = QuantileNormalizer.fit(actions, "point")
    np.testing.assert_allclose(norm.normalize(norm.low), -1.0, atol=1e-6)
    np.testing.assert_allclose(norm.normalize(norm.high), 1.0, atol=1e-6)
    clamped = QuantileNormalizer(norm.embodiment, norm.low, norm.high, clamp=True)
    assert np.abs(clamped.normalize(actions * 10)).max() <= 1.0


def test_constant_dimension_does_not_blow_up():
    actions = np.stack([np.linspace(-1, 1, 50), np.full(50, 0.5)], 1)
    norm = QuantileNormalizer.fit(actions, "arm2")
    out = norm.normalize(actions)
    assert np.all(np.isfinite(out)) and np.allclose(out[:, 1], -1.0)
    np.testing.assert_allclose(norm.denormalize(out), actions, atol=1e-6)


def test_bad_actions_name_embodiment_field_and_expectation():
    norm = QuantileNormalizer.fit(np.random.default_rng(0).normal(size=(100, 2)), "point")
    with pytest.raises(ValueError, match=r"embodiment='point': actions has shape \(4, 3\); expected \(\.\.\., 2\)"):
        norm.normalize(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="embodiment='point': actions contains NaN"):
        norm.normalize(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="contains NaN or inf"):
        norm.denormalize(np.array([[np.inf, 0.0]]))


def test_statistics_save_and_load(tmp_path):
    norm = QuantileNormalizer.fit(np.random.default_rng(1).normal(size=(100, 2)), "arm2", clamp=True)
    norm.save(tmp_path / "stats.json")
    loaded = QuantileNormalizer.load(tmp_path / "stats.json")
    assert loaded.embodiment == "arm2" and loaded.clamp
    np.testing.assert_array_equal(loaded.low, norm.low)
    with pytest.raises(ValueError, match="unknown keys"):
        QuantileNormalizer.from_dict(norm.to_dict() | {"q50": [0, 0]})


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 32), st.integers(0, 3), st.data())
def test_padding_masks(raw_width, batch_dims, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=batch_dims, max_size=batch_dims))) + (raw_width,)
    actions = data.draw(arrays(np.float32, shape, elements=st.floats(-1, 1, width=32)))
    padded, mask = pad_to_shared(actions, 32)
    assert padded.shape == (*shape[:-1], 32) and mask.sum() == raw_width
    assert np.all(padded[..., ~mask] == 0)
    np.testing.assert_array_equal(unpad_from_shared(padded, mask), actions)


def test_too_wide_actions_are_rejected():
    with pytest.raises(ValueError, match="embodiment='big': action width 40 exceeds the shared width; expected <= 32"):
        pad_to_shared(np.zeros((2, 40)), 32, embodiment="big")
