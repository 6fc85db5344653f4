"""Imagined steps per second of ForwardDynamicsVectorEnv against MuJoCo step + render, one run.

The learned env (the shipped default, or ``--checkpoint``) steps ``batch`` episodes with one model
call per step, at batch 1, 16 and 64 and ``--sampling-steps`` denoising steps; MuJoCo steps the same
task (PushBlockPoint, 64x64 render every step) in one process. Steps per second counts environment
steps (a batch of 64 is 64 steps).

    .venv/bin/python benchmarks/bench_fd_env.py --quick --json out/bench_fd_env.json

Last line: ``fd_env_vs_mujoco_b64=<imagined steps/s at batch 64 / MuJoCo steps/s>``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.forward_dynamics import ForwardDynamicsVectorEnv
from cosmos_robot.world_model import WorldActionModel


def mujoco_steps_per_s(seconds: float) -> float:
    """Step + render rate of the real PushBlockPoint env (resets included)."""
    env = gym.make(PUSH_BLOCK_IDS["point"])
    env.reset(seed=0)
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    rate = steps / (time.perf_counter() - started)
    env.close()
    return rate


def imagined_steps_per_s(model: WorldActionModel, batch: int, sampling_steps: int, calls: int) -> float:
    """Imagined environment steps per second of the vector env at ``batch``."""
    envs = ForwardDynamicsVectorEnv(batch, model, "point", sampling_steps=sampling_steps)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    envs.step(rng.uniform(-0.3, 0.3, (batch, 2)).astype(np.float32))  # warm-up
    started = time.perf_counter()
    for _ in range(calls):
        envs.step(rng.uniform(-0.3, 0.3, (batch, 2)).astype(np.float32))
    rate = batch * calls / (time.perf_counter() - started)
    envs.close()
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer calls (about a minute)")
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--sampling-steps", type=int, default=4, help="denoising steps per imagined step")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = WorldActionModel.from_pretrained(args.checkpoint)
    mujoco = mujoco_steps_per_s(3.0 if args.quick else 10.0)
    results = {"mujoco_steps_per_s": mujoco, "sampling_steps": args.sampling_steps, "threads": args.threads}
    print(f"MuJoCo step + render (PushBlockPoint 64x64): {mujoco:.0f} steps/s")
    for batch in (1, 16, 64):
        calls = {1: 10, 16: 4, 64: 2}[batch] * (1 if args.quick else 3)
        rate = imagined_steps_per_s(model, batch, args.sampling_steps, calls)
        results[f"imagined_steps_per_s_b{batch}"] = rate
        results[f"fd_env_vs_mujoco_b{batch}"] = rate / mujoco
        print(f"learned env, batch {batch:>2}: {rate:8.1f} steps/s  ({rate / mujoco:.3f}x MuJoCo)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps(results, indent=2))
    print(f"fd_env_vs_mujoco_b64={results['fd_env_vs_mujoco_b64']:.4f}")


if __name__ == "__main__":
    main()
