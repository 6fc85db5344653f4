"""Named training recipes: the data to collect and the training configuration, in one place.

``cosmos-robot train --recipe default --export <folder>`` trains a model like the shipped default (52
minutes on 2 cores from collected data; the shipped one was assembled by refits of its parts, and the two
are compared in docs/results.md): it collects the demonstrations below into ``--data-dir`` (skipping
datasets already there), trains, writes the checkpoint and its float16 export. Seeds of recipe data stay
below 100000; evaluation uses seeds from 500000 on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cosmos_robot.collect import collect
from cosmos_robot.envs.push_block_scene import TASK


@dataclass(frozen=True)
class DatasetSpec:
    """One collected dataset of a recipe."""

    name: str
    env_id: str
    episodes: int
    noise: float
    seed: int
    task: str | None = None


@dataclass(frozen=True)
class Recipe:
    """Data plus training settings (fields of :class:`cosmos_robot.train.TrainConfig`)."""

    datasets: tuple[DatasetSpec, ...]
    train: dict[str, Any] = field(default_factory=dict)


PUSH_TASK = TASK


def _noisy_task(noise: float) -> str:
    # Noisy demonstrations say so in their instruction: the policy, conditioned on the plain task,
    # then imitates the expert, while dynamics still learn from every action seen.
    return f"noisy {noise:.1f}: {PUSH_TASK}"


def _push_block(embodiment: str, env_id: str, seed0: int) -> tuple[DatasetSpec, ...]:
    # Expert and noisy experts: the model must see good and bad actions (and their consequences).
    # 400 expert episodes rather than 200: the action prior's held-out error was set by the number of
    # demonstrations, not by steps (it overfits 180 episodes; see model/action_prior.py).
    return (
        DatasetSpec(f"{embodiment}_expert", env_id, 400, 0.0, seed0, PUSH_TASK),
        DatasetSpec(f"{embodiment}_noise0.3", env_id, 300, 0.3, seed0 + 10_000, _noisy_task(0.3)),
        DatasetSpec(f"{embodiment}_noise0.6", env_id, 150, 0.6, seed0 + 20_000, _noisy_task(0.6)),
    )


def _random_actions(embodiment: str, env_id: str, seed0: int) -> DatasetSpec:
    # Random actions (held 3 steps) cover the action box, which forward dynamics must follow whatever
    # it is given.
    return DatasetSpec(f"{embodiment}_random", env_id, 100, 1.0, seed0 + 30_000, _noisy_task(1.0))


# The default's data: experts, noisy experts and random actions on both robots.
DEFAULT_DATASETS: tuple[DatasetSpec, ...] = (
    _push_block("point", "cosmos_robot/PushBlockPoint-v0", 0)
    + (_random_actions("point", "cosmos_robot/PushBlockPoint-v0", 0),)
    + _push_block("arm2", "cosmos_robot/PushBlockArm2-v0", 50_000)
    + (_random_actions("arm2", "cosmos_robot/PushBlockArm2-v0", 50_000),)
)


# The default before the forward prior: the MoT alone (the ablation "MoT without the prior").
MOT_ONLY_TRAIN: dict[str, Any] = {
    "preset": "small",
    "steps": 6000,
    "batch_size": 16,
    "lr": 1e-3,
    "warmup": 200,
    "mode_mix": (0.3, 0.3, 0.4),
    "ae_steps": 4000,
    "ae_batch": 32,
    "num_frames": 5,
    "context_frames": 1,
    "val_every": 500,
    "checkpoint_every": 250,
}

# The previous default (98 minutes on 2 cores, then scripts/refit_fast_parts.py): the forward prior
# (trained alone, then frozen), an object-weighted autoencoder (without the weight it dropped arm2's
# fingertip) and random-action data (forward dynamics must follow any action in the box, not only the
# demonstrators'). 5000 MoT steps instead of 6000 paid for the prior.
PREVIOUS_DEFAULT_TRAIN: dict[str, Any] = MOT_ONLY_TRAIN | {
    "steps": 5000,
    "ae_object_weight": 10.0,
    "forward_steps": 800,
    "forward_batch": 128,
    "model_overrides": {"forward_prior": True},
}

# The shipped default's recipe: the previous default's parts, each trained where it learns most per minute.
# The forward prior (width 64 for the pushes, paid for by a bfloat16 trunk of ReLU blocks; with the warp)
# trains alone on 4-step rollouts: with the block carried the env draws with the drawer, which starts as a
# copy of the prior and trains on 8-step rollouts of itself (``drawer_rollout``), so the prior's own 8-step
# stage (18 of the recipe's minutes) no longer shows in the env (docs/results.md, "The 8-step stage"). A fast
# decoder; the action prior alone, 5000 steps of 64 windows (beside 2500 MoT steps it saw too few and arm2's
# policy fell to 0.50, docs/results.md); the inverse prior alone, 2800 steps; 800 MoT steps (at 250 its
# correction was noise to the policy, by 1000 it no longer hurt; 2800 took ~16 minutes more for the same
# tools: docs/results.md, "The recipe run end to end"). The block's pose is carried beside the grid (readout,
# effector maps, push MLPs, the drawer told the effector's places too; docs/model.md). The push MLPs learn
# from 7600 more state-only episodes per robot, simulated without the camera (8x the datasets'; ~3 minutes
# more in all with the 12000 one-step steps): the expert block at h16 11 -> 8-9 mm on point, 19-21 -> 14-15
# on arm2 (docs/results.md, "More pushes"). The decoder is fitted to the drawer's 8-step rollouts (the grids
# the env decodes; ~3 minutes): effector and block 0.3-0.8 mm closer (docs/results.md); a first fit to the
# prior's rollouts, which the env never decodes, is left out (``rollout_decoder_prior``). A block at full
# resolution in the autoencoder's decoder (``ae_full_resolution_width``) drew sharper frames but, in the one
# run made with it, left the policy worse (docs/results.md, "A sharper autoencoder"): not in the default.
DEFAULT_TRAIN: dict[str, Any] = PREVIOUS_DEFAULT_TRAIN | {
    "steps": 800,
    "warmup": 80,
    "inverse_steps": 2800,
    "fast_decoder_steps": 1500,
    "forward_steps": 1600,
    "forward_state_steps": 3000,
    "rollout_decoder_steps": 700,
    "rollout_decoder_prior": False,
    "rollout_decoder_drawer": True,
    "drawer_rollout": 8,
    "object_fit_steps": 3000,
    "object_prior_steps": 800,
    "object_push_rollout_steps": 2000,
    "object_push_steps": 12000,
    "object_simulated_episodes": 7600,
    "object_reward_steps": 1500,
    "object_agent_steps": 4000,
    "object_agent_rollout_steps": 800,
    # ~2 minutes: the effector redrawn round its place at full resolution (docs/results.md, "The effector
    # painted").
    "object_painter_steps": 2000,
    "prior_steps": 5000,
    "model_overrides": {
        "forward_prior": True,
        "forward_width": 64,
        "forward_block": "relu",
        "forward_bfloat16": True,
        "forward_warp": True,
        "object_effector_maps": True,
    },
}

RECIPES: dict[str, Recipe] = {
    "default": Recipe(datasets=DEFAULT_DATASETS, train=DEFAULT_TRAIN),
    # The previous default's MoT and forward prior (its rows in docs/results.md are marked so).
    "previous_default": Recipe(datasets=DEFAULT_DATASETS, train=PREVIOUS_DEFAULT_TRAIN),
    # The default before the forward prior, for the ablation (docs/results.md).
    "mot_only": Recipe(
        datasets=_push_block("point", "cosmos_robot/PushBlockPoint-v0", 0)
        + _push_block("arm2", "cosmos_robot/PushBlockArm2-v0", 50_000),
        train=MOT_ONLY_TRAIN,
    ),
    # Seconds on CPU: what the tests run.
    "smoke": Recipe(
        datasets=(
            DatasetSpec("point", "cosmos_robot/PushBlockPoint-v0", 4, 0.3, 0),
            DatasetSpec("arm2", "cosmos_robot/PushBlockArm2-v0", 4, 0.3, 50_000),
        ),
        train={
            "preset": "tiny",
            "steps": 10,
            "batch_size": 4,
            "ae_steps": 10,
            "ae_batch": 8,
            # Not the default's: so the tests train, save and reload an autoencoder of that shape too.
            "ae_full_resolution_width": 16,
            "forward_steps": 5,
            "forward_state_steps": 2,
            "forward_batch": 8,
            "fast_decoder_steps": 5,
            "rollout_decoder_steps": 3,
            "rollout_decoder_prior": False,
            "rollout_decoder_drawer": True,
            "drawer_rollout": 3,
            "object_fit_steps": 3,
            "object_prior_steps": 2,
            "object_push_rollout_steps": 2,
            "object_reward_steps": 2,
            "object_agent_steps": 2,
            "object_agent_rollout_steps": 1,
            "object_push_steps": 3,
            "object_painter_steps": 3,
            "prior_steps": 2,
            "inverse_steps": 2,
            # The default's kind of forward prior (warp, ReLU blocks, bfloat16 trunk) and of drawer (told the
            # effector), so the tests train, save and serve that path end to end.
            "model_overrides": {
                "forward_prior": True,
                "forward_warp": True,
                "forward_block": "relu",
                "forward_bfloat16": True,
                "object_effector_maps": True,
            },
            "val_every": 5,
            "checkpoint_every": 5,
        },
    ),
}


def get_recipe(name: str) -> Recipe:
    """A named recipe."""
    if name not in RECIPES:
        raise ValueError(f"recipe={name!r} is unknown; expected one of {sorted(RECIPES)}")
    return RECIPES[name]


def prepare_data(recipe: Recipe, data_dir: str | Path, progress: bool = True) -> list[str]:
    """Collect the recipe's datasets into ``data_dir`` (those already present are kept); returns their paths."""
    data_dir = Path(data_dir)
    paths = []
    for spec in recipe.datasets:
        path = data_dir / spec.name
        if not (path / "meta" / "info.json").is_file():
            collect(
                spec.env_id,
                spec.episodes,
                path,
                noise=spec.noise,
                seed=spec.seed,
                video=False,
                overwrite=path.exists(),
                progress=progress,
                task=spec.task,
                resume=True,  # a killed run's complete episodes are kept
            )
        paths.append(str(path))
    return paths
