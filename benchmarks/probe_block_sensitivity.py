"""How much MuJoCo's own block at h16 moves when the start is a little off: what perception error costs.

Replays the expert actions of the episodes ``eval fd`` records (same seeds and horizon) from starts whose
block is moved by a few millimetres (a random direction), turned by a few degrees, or whose effector is
moved by a few millimetres (for arm2, the shoulder turned by that arc at the fingertip's reach), and reports
the mean distance (mm) between the block at the horizon and the unperturbed one. A learned env that reads
the start to within d mm cannot be asked to beat MuJoCo's own spread at d; where that spread is far below
a bar, physics does not rule the bar out.

    .venv/bin/python benchmarks/probe_block_sensitivity.py --embodiment arm2 --json out/block_sensitivity_arm2.json
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import cosmos_robot  # noqa: E402, F401  (registers the PushBlock envs)
from cosmos_robot.atomic import write_file_atomic  # noqa: E402
from cosmos_robot.envs import PUSH_BLOCK_IDS  # noqa: E402
from cosmos_robot.envs.push_block import effector_from_state  # noqa: E402
from cosmos_robot.envs.push_block_scene import ARM_BASE  # noqa: E402
from cosmos_robot.eval.fd_fidelity import record_mujoco  # noqa: E402
from cosmos_robot.seeds import FD_SEED  # noqa: E402

# Size 0 replays the recording unchanged: the harness must find no spread there.
PERTURBATIONS = {
    "block_mm": (0.0, 0.5, 1.0, 2.0, 4.0),
    "block_yaw_deg": (1.0, 3.0, 5.0),
    "effector_mm": (1.0, 2.0, 4.0),
}


def _perturb(env, kind: str, size: float, rng: np.random.Generator) -> None:
    """Move the freshly reset start of ``env`` (unwrapped PushBlock) by ``size`` of ``kind``."""
    qpos, block, agent = env.data.qpos, env._block_qadr, env._agent_qadr
    direction = rng.uniform(0.0, 2 * np.pi)
    if kind == "block_mm":
        qpos[block[0]] += size / 1000.0 * np.cos(direction)
        qpos[block[1]] += size / 1000.0 * np.sin(direction)
    elif kind == "block_yaw_deg":
        qpos[block[2]] += np.deg2rad(size) * rng.choice([-1.0, 1.0])
    elif env.embodiment == "point":
        qpos[agent[0]] += size / 1000.0 * np.cos(direction)
        qpos[agent[1]] += size / 1000.0 * np.sin(direction)
    else:  # the shoulder turned so that the fingertip moves ``size`` mm along its arc
        reach = np.linalg.norm(effector_from_state("arm2", qpos[agent]) - np.asarray(ARM_BASE))
        qpos[agent[0]] += size / 1000.0 / reach * rng.choice([-1.0, 1.0])
    mujoco.mj_forward(env.model, env.data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embodiment", default="point", choices=sorted(PUSH_BLOCK_IDS))
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=4, help="random perturbations per episode and size")
    parser.add_argument("--horizon", type=int, default=16)
    parser.add_argument("--seed", type=int, default=FD_SEED, help="first episode seed (`eval fd --seed`)")
    parser.add_argument("--json", default=None, help="write the numbers here")
    args = parser.parse_args()
    if min(args.episodes, args.repeats, args.horizon) < 1:
        parser.error(
            f"--episodes {args.episodes} --repeats {args.repeats} --horizon {args.horizon}; expected positive integers"
        )
    env_id = PUSH_BLOCK_IDS[args.embodiment]
    seeds = [args.seed + i for i in range(args.episodes)]
    real = record_mujoco(env_id, 0.0, seeds, args.horizon)
    moved = np.linalg.norm(real["block"][:, -1] - real["block"][:, 0], axis=-1) * 1000.0
    env = gym.make(env_id).unwrapped
    rng = np.random.default_rng(0)
    report = {"block_moved_mm": float(moved.mean()), "episodes": args.episodes, "horizon": args.horizon}
    print(f"{args.embodiment}: MuJoCo's expert block moves {moved.mean():.1f} mm by h{args.horizon}")
    try:
        for kind, sizes in PERTURBATIONS.items():
            for size in sizes:
                spread = []
                for episode, seed in enumerate(seeds):
                    for _ in range(args.repeats):
                        env.reset(seed=seed)
                        _perturb(env, kind, size, rng)
                        for action in real["actions"][episode]:
                            env.step(action)
                        spread.append(np.linalg.norm(env.block_pose()[:2] - real["block"][episode, -1]) * 1000.0)
                mean, median = float(np.mean(spread)), float(np.median(spread))
                report[f"{kind}={size:g}"] = {"mean_mm": mean, "median_mm": median}
                print(f"start {kind} {size:g}: h{args.horizon} block {mean:.1f} mm (median {median:.1f})")
    finally:
        env.close()
    if args.json:
        write_file_atomic(args.json, json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
