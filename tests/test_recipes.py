"""Recipes: named, disjoint seeds per dataset, noisy data says so in its instruction, unknown names are errors."""

from __future__ import annotations

import json

import pytest

from cosmos_robot.envs.push_block_scene import TASK
from cosmos_robot.recipes import RECIPES, get_recipe
from cosmos_robot.world_model import default_checkpoint_path


def test_datasets_of_a_recipe_use_disjoint_seeds():
    for name, recipe in RECIPES.items():
        ranges = sorted((spec.seed, spec.seed + spec.episodes) for spec in recipe.datasets)
        assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:], strict=False)), name


def test_the_default_recipe_records_experts_under_the_task_and_noisy_data_under_its_own():
    recipe = get_recipe("default")
    for spec in recipe.datasets:
        assert (spec.task == TASK) == (spec.noise == 0.0), spec.name
        assert spec.task.endswith(TASK)


def test_the_default_recipe_trains_the_forward_prior_the_mot_only_recipe_does_not():
    default, mot_only = get_recipe("default").train, get_recipe("mot_only").train
    assert default["model_overrides"]["forward_prior"] and default["forward_steps"] > 0
    assert "model_overrides" not in mot_only and not mot_only.get("forward_steps")
    assert {spec.noise for spec in get_recipe("default").datasets} == {0.0, 0.3, 0.6, 1.0}


def test_the_default_trains_its_priors_alone_and_a_fast_decoder_in_fewer_mot_steps_than_the_previous():
    default, previous = get_recipe("default"), get_recipe("previous_default")
    assert default.datasets == previous.datasets
    train = default.train
    assert train["model_overrides"] == {
        "forward_prior": True,
        "forward_width": 64,
        "forward_block": "relu",
        "forward_bfloat16": True,
        "forward_warp": True,
        "object_effector_maps": True,  # the block's drawer told where the effector is
    }
    # The prior trains on short rollouts alone; the drawer, which the env draws with, on 8-step ones.
    assert not train.get("forward_finetune_steps") and train["drawer_rollout"] == 8
    assert train["forward_state_steps"] > 0  # the state head refitted with its linear action term
    # The decoder is fitted to the drawer's rollouts only (the env never decodes the prior's).
    assert train["rollout_decoder_steps"] > 0 and train["rollout_decoder_drawer"] and not train["rollout_decoder_prior"]
    assert train["object_fit_steps"] > 0 and train["object_prior_steps"] > 0  # the env carries the block
    assert train["object_push_rollout_steps"] > 0  # its pushes trained on rollouts of their own poses
    assert train["object_reward_steps"] > 0  # reward and success read from the carried block
    assert train["object_agent_steps"] > 0 and train["object_agent_rollout_steps"] > 0  # state-only steps by MLPs
    assert train["fast_decoder_steps"] > 0 and train["steps"] < previous.train["steps"]
    assert train["prior_steps"] > train["steps"]  # the action prior trains alone, on its own schedule
    assert train["inverse_steps"] > 0  # and the inverse prior
    assert not previous.train.get("prior_steps") and not previous.train.get("fast_decoder_steps")


def test_the_smoke_recipe_switches_on_every_part_the_default_switches_on():
    # The tests train the smoke recipe end to end: a switch of the default's model that the smoke recipe
    # leaves off is a path that `train --recipe default` runs and no test does.
    default, smoke = get_recipe("default").train, get_recipe("smoke").train
    switched = {key for key, value in default["model_overrides"].items() if value is True}
    assert switched <= {key for key, value in smoke["model_overrides"].items() if value is True}
    steps = {key for key, value in default.items() if key.endswith("_steps") and value}
    assert steps <= {key for key, value in smoke.items() if key.endswith("_steps") and value}
    # The choices between paths too: which rollouts the decoder is fitted to, a drawer rollout of its own.
    for key in ("rollout_decoder_prior", "rollout_decoder_drawer"):
        assert smoke.get(key, True) == default.get(key, True), key
    assert bool(smoke.get("drawer_rollout")) == bool(default.get("drawer_rollout"))
    # A decoder block at full resolution: the smoke recipe builds one whether or not the default does.
    assert smoke.get("ae_full_resolution_width") or not default.get("ae_full_resolution_width")


def test_an_unknown_recipe_names_the_known_ones():
    with pytest.raises(ValueError, match="recipe='nope'.*'default'"):
        get_recipe("nope")


def test_the_shipped_default_was_trained_with_the_default_recipes_model():
    shipped = json.loads((default_checkpoint_path() / "config.json").read_text())["model"]
    for key, value in get_recipe("default").train["model_overrides"].items():
        assert shipped[key] == value, key


def test_the_shipped_default_carries_the_block_for_both_robots():
    config = json.loads((default_checkpoint_path() / "config.json").read_text())
    domains = {name: entry["embodiment"]["domain_id"] for name, entry in config["embodiments"].items()}
    assert sorted(config["model"]["object_pose_domains"]) == sorted([domains["point"], domains["arm2"]])
