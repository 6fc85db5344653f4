"""Simulated pushes: the recipe's demonstrators on seeds of their own, the same episodes a dataset records at
the same seed, deterministic, and bad arguments refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.collect import collect
from cosmos_robot.datasets.lerobot_io import load_lerobot
from cosmos_robot.keys import OBS_ENV_STATE, OBS_STATE
from cosmos_robot.push_data import MIX, NOISE_OFFSET, PUSH_DATA_SEED, simulate_pushes
from cosmos_robot.recipes import RECIPES
from cosmos_robot.seeds import TUNING_SEED


@pytest.mark.parametrize("embodiment", ["point", "arm2"])
def test_an_expert_episode_is_the_one_collect_records_at_its_seed(tmp_path, embodiment):
    simulated = simulate_pushes(embodiment, 2, seed=7, progress=False)
    assert len(simulated.bounds) == 2 and simulated.bounds[0][0] == 0
    assert simulated.bounds[-1][1] == len(simulated.states) == len(simulated.actions) == len(simulated.poses)
    offset = {"point": 0, "arm2": 50_000}[embodiment]
    collect(f"cosmos_robot/PushBlock{embodiment.capitalize()}-v0", 1, tmp_path / "d", seed=7 + offset, progress=False)
    table = load_lerobot(tmp_path / "d").hf_dataset.with_format(None)
    states = np.asarray(table[OBS_STATE], np.float64)
    poses = np.asarray(table[OBS_ENV_STATE], np.float64)[:, :3]
    start, end = simulated.bounds[0]
    # The dataset keeps the observations steps were taken from; the simulation the last one too.
    assert end - start == len(states) + 1
    np.testing.assert_allclose(simulated.states[start : end - 1], states, atol=1e-6)
    np.testing.assert_allclose(simulated.poses[start : end - 1], poses, atol=1e-6)
    assert not np.allclose(simulated.poses[start], simulated.poses[end - 1])  # the expert pushed the block
    assert (simulated.actions[end - 1] == 0).all()  # no step from an episode's last state


def test_the_mix_is_the_recipes_and_the_seeds_stay_below_tuning():
    episodes = simulate_pushes("point", 20, progress=False)
    assert len(episodes.bounds) == 20
    again = simulate_pushes("point", 20, progress=False)
    np.testing.assert_array_equal(episodes.states, again.states)
    recipe = {spec.noise: spec.episodes for spec in RECIPES["default"].datasets if spec.name.startswith("point")}
    total = sum(recipe.values())
    assert [round(share, 6) for _, share in MIX] == [round(recipe[noise] / total, 6) for noise, _ in MIX]
    highest = PUSH_DATA_SEED + 50_000 + len(MIX) * NOISE_OFFSET
    assert highest <= TUNING_SEED
    for spec in RECIPES["default"].datasets:  # the recipe's own seeds lie below them
        assert spec.seed + spec.episodes <= PUSH_DATA_SEED


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"embodiment": "hexapod", "episodes": 1}, "embodiment='hexapod'"),
        ({"embodiment": "point", "episodes": 0}, "episodes=0"),
        ({"embodiment": "point", "episodes": 2.0}, "episodes=2.0"),
        ({"embodiment": "point", "episodes": 30_000}, "episodes=30000"),
        ({"embodiment": "point", "episodes": 1, "seed": 290_000}, "seed=290000"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate_pushes(**kwargs, progress=False)
