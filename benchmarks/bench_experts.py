"""Scripted-expert quality: success rate and episode length against the noise knob, in MuJoCo.

Seeds 1000.. are used here; demonstration datasets default to seeds 0.. (evaluation seeds must
differ from training-data seeds).

    .venv/bin/python benchmarks/bench_experts.py --quick --json out/bench_experts.json

Last line: ``expert_success_point=<rate at noise 0> expert_success_arm2=<rate at noise 0>``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import cosmos_robot  # noqa: F401
from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.gym_adapter import make_env
from cosmos_robot.policies.scripted import ScriptedExpert

SEED0 = 1000


def evaluate(env_id: str, noise: float, episodes: int, seed: int = SEED0) -> dict[str, float]:
    """Success rate, mean return and mean length of the expert at ``noise`` over seeded episodes."""
    env = make_env(env_id)
    expert = ScriptedExpert.for_env(env, noise=noise)
    successes, returns, lengths = [], [], []
    for k in range(episodes):
        obs, info = env.reset(seed=seed + k)
        expert.reset(seed=seed + k)
        total, steps = 0.0, 0
        while True:
            obs, reward, terminated, truncated, info = env.step(expert.act(obs, info))
            total, steps = total + reward, steps + 1
            if terminated or truncated:
                break
        successes.append(info["is_success"])
        returns.append(total)
        lengths.append(steps)
    env.close()
    return {
        "success_rate": float(np.mean(successes)),
        "mean_return": float(np.mean(returns)),
        "mean_length": float(np.mean(lengths)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20 episodes per point (under a minute)")
    parser.add_argument("--seed", type=int, default=SEED0, help="seed of the first episode")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    episodes = 20 if args.quick else 100
    noises = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    results: dict[str, dict[str, dict[str, float]]] = {}
    print(
        f"{'env':<34}{'noise':>6}{'success':>9}{'return':>9}{'length':>8}   ({episodes} episodes, seeds {args.seed}..)"
    )
    for embodiment, env_id in PUSH_BLOCK_IDS.items():
        results[embodiment] = {}
        for noise in noises:
            row = evaluate(env_id, noise, episodes, args.seed)
            results[embodiment][f"{noise:.1f}"] = row
            print(
                f"{env_id:<34}{noise:>6.1f}{row['success_rate']:>9.2f}{row['mean_return']:>9.2f}{row['mean_length']:>8.1f}"
            )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(
            args.json, json.dumps({"episodes": episodes, "seed0": args.seed, "results": results}, indent=2)
        )
    print(
        f"expert_success_point={results['point']['0.0']['success_rate']:.2f} "
        f"expert_success_arm2={results['arm2']['0.0']['success_rate']:.2f}"
    )


if __name__ == "__main__":
    main()
