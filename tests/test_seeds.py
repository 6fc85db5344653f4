"""Seed ranges: training data below tuning below evaluation, and every harness starts at EVAL_SEED or above."""

from __future__ import annotations

import inspect

from cosmos_robot.eval.closed_loop import evaluate_policy
from cosmos_robot.eval.fd_fidelity import evaluate_fd
from cosmos_robot.eval.imagination_rl import evaluate_imagination_rl
from cosmos_robot.eval.labeling import evaluate_labeling
from cosmos_robot.eval.ranking import evaluate_ranking
from cosmos_robot.recipes import RECIPES
from cosmos_robot.seeds import EVAL_SEED, TUNING_SEED


def test_recipe_data_seeds_stay_below_the_tuning_seeds():
    for name, recipe in RECIPES.items():
        for spec in recipe.datasets:
            assert spec.seed + spec.episodes <= TUNING_SEED < EVAL_SEED, (name, spec.name)


def test_every_harness_defaults_to_evaluation_seeds():
    for harness in (evaluate_policy, evaluate_fd, evaluate_labeling, evaluate_ranking):
        assert inspect.signature(harness).parameters["seed"].default >= EVAL_SEED, harness.__name__
    assert inspect.signature(evaluate_imagination_rl).parameters["eval_seed"].default >= EVAL_SEED
