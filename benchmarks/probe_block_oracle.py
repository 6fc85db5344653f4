"""How close to MuJoCo's block the recipe's data allow a learned env to get, with perception taken out.

Per embodiment, fits a small MLP to the block's displacement per step from the true block pose, the
true agent state and the action (``cosmos_robot.eval.block_oracle``), on the datasets' transitions,
and rolls the block open loop for ``--horizon`` steps on held-out windows (the agent's true states and
actions given), and on the expert episodes `eval fd` scores (``--fd-episodes`` from ``--fd-seed``: the
learned env's block error there is the number to set beside it). Side by side: a block that never
moves, and the oracle trained on half the episodes (how much more data would help). No pixels: the
learned env also has to draw and detect the block. ``--simulated-episodes N`` also trains on N state-only
episodes per robot simulated without the camera (``cosmos_robot.push_data``), as the default recipe's push
MLPs do; the held-out windows stay the datasets'.

    .venv/bin/python benchmarks/probe_block_oracle.py --data data/point_* data/arm2_* --json out/oracle.json
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from dataclasses import asdict

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402

from cosmos_robot.atomic import write_file_atomic  # noqa: E402
from cosmos_robot.datasets.lerobot_io import load_lerobot  # noqa: E402
from cosmos_robot.envs import PUSH_BLOCK_IDS  # noqa: E402
from cosmos_robot.envs.push_block import effector_from_state  # noqa: E402
from cosmos_robot.eval.block_oracle import (  # noqa: E402
    BlockEpisode,
    evaluate_block_oracle,
    read_block_episodes,
    score_block_dynamics,
    simulated_block_episodes,
)
from cosmos_robot.eval.fd_fidelity import record_mujoco  # noqa: E402
from cosmos_robot.seeds import FD_SEED  # noqa: E402


def fd_expert_episodes(embodiment: str, episodes: int, seed: int, horizon: int) -> list[BlockEpisode]:
    """The expert episodes ``eval fd`` records (same env, seeds and horizon), as block episodes."""
    real = record_mujoco(PUSH_BLOCK_IDS[embodiment], 0.0, [seed + i for i in range(episodes)], horizon)
    actions = np.concatenate([real["actions"], np.zeros_like(real["actions"][:, :1])], 1)  # one per state
    # The effector by the same kinematics as the training episodes' (MuJoCo's geom positions after a step
    # are a physics substep old).
    effector = effector_from_state(embodiment, real["states"])
    return [BlockEpisode(*arrays) for arrays in zip(real["states"], actions, real["block_pose"], effector, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", required=True, help="PushBlock LeRobot datasets (the recipe's)")
    parser.add_argument("--steps", type=int, default=4000, help="optimiser steps of each fit")
    parser.add_argument("--fractions", type=float, nargs="+", default=[1.0, 0.5], help="shares of episodes")
    parser.add_argument("--horizon", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0, help="seeds the split and the fit")
    parser.add_argument("--fd-episodes", type=int, default=8, help="expert episodes as `eval fd` scores them")
    parser.add_argument("--fd-seed", type=int, default=FD_SEED, help="their first seed (`eval fd --seed`)")
    parser.add_argument(
        "--simulated-episodes",
        type=int,
        default=0,
        help="also train on this many state-only episodes per robot (cosmos_robot.push_data), as the recipe's pushes",
    )
    parser.add_argument("--json", default=None, help="write the numbers here")
    args = parser.parse_args()
    if args.simulated_episodes < 0:
        parser.error(f"--simulated-episodes {args.simulated_episodes}; expected an integer >= 0")
    if args.steps < 1 or args.horizon < 1 or args.fd_episodes < 1:
        parser.error(
            f"--steps {args.steps} --horizon {args.horizon} --fd-episodes {args.fd_episodes}; "
            "expected positive integers"
        )
    by_embodiment = defaultdict(list)
    for root in args.data:
        by_embodiment[load_lerobot(root).meta.robot_type].append(read_block_episodes(root))
    report = {}
    for embodiment, datasets in sorted(by_embodiment.items()):
        fd = fd_expert_episodes(embodiment, args.fd_episodes, args.fd_seed, args.horizon)
        extra = simulated_block_episodes(embodiment, args.simulated_episodes) if args.simulated_episodes else []
        for fraction in args.fractions:
            result, model = evaluate_block_oracle(
                datasets, fraction, steps=args.steps, horizon=args.horizon, seed=args.seed, extra_train=extra
            )
            on_fd = score_block_dynamics(model, fd, args.horizon, moved_mm=0.0)
            report[f"{embodiment}@{fraction:g}"] = asdict(result) | {"fd_expert": on_fd}
            print(
                f"{embodiment}, {result.train_episodes} training episodes: one step on pushed steps "
                f"{result.one_step_mm_pushed:.1f} mm (copy-last {result.copy_mm_pushed:.1f}, push fraction "
                f"{result.push_fraction_median:.2f}); h{args.horizon} over {result.windows} held-out windows "
                f"that move the block: {result.rollout_mm:.1f} mm (median {result.rollout_mm_median:.1f}; "
                f"never moves {result.rollout_copy_mm:.1f}); on the {args.fd_episodes} expert episodes of "
                f"`eval fd` h{args.horizon} {on_fd['rollout_mm']:.1f} mm (never moves {on_fd['rollout_copy_mm']:.1f})"
            )
    if args.json:
        write_file_atomic(args.json, json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
