"""Imagined steps per second of ForwardDynamicsVectorEnv against MuJoCo step + render, one run.

MuJoCo steps PushBlockPoint (64x64 render every step) in one process. The learned env (the shipped
default, or ``--checkpoint``) steps ``batch`` episodes with one model call per step, at batch 1, 16
and 64, in the configurations RL uses: the reach task's reward and success given as functions of the
imagined state, called once per step on the batch (``batched_fns``, as ``eval imagination-rl``), with
pixel observations (frames decoded every step) and with state-only observations (no frame decoded: the
forward prior alone). Where the checkpoint has a fast decoder, pixels are also timed with it
(``model.fast_decoding``: off by default, it loses arm2's fingertip). For reference, batch 64 is also
timed with the learned reward and success (the MoT runs every step). Steps per second counts
environment steps (a batch of 64 is 64 steps).

    .venv/bin/python benchmarks/bench_fd_env.py --quick --json out/bench_fd_env.json

Last two lines: ``fd_env_state_vs_mujoco_b64=`` and ``fd_env_vs_mujoco_b64=`` (imagined steps/s at
batch 64, state-only and pixels, over MuJoCo's steps/s).
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
from cosmos_robot.eval.imagination_rl import reach_reward, reach_success
from cosmos_robot.keys import AGENT_POS
from cosmos_robot.world_model import WorldActionModel


def mujoco_steps_per_s(seconds: float, seed: int = 0) -> float:
    """Step + render rate of the real PushBlockPoint env (resets included)."""
    env = gym.make(PUSH_BLOCK_IDS["point"])
    env.reset(seed=seed)
    env.action_space.seed(seed)
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    rate = steps / (time.perf_counter() - started)
    env.close()
    return rate


def imagined_steps_per_s(
    model: WorldActionModel,
    batch: int,
    observation: str,
    task_reward: bool,
    sampling_steps: int,
    seconds: float,
    fast_decoding: bool = False,
    seed: int = 0,
) -> float:
    """Imagined environment steps per second of the vector env at ``batch`` (at least 3 timed calls)."""
    task = {}
    if task_reward:
        task = {
            "reward_fn": lambda obs, action, next_obs: reach_reward(next_obs[AGENT_POS]),
            "success_fn": lambda obs: reach_success(obs[AGENT_POS]),
            "batched_fns": True,
        }
    envs = ForwardDynamicsVectorEnv(
        batch, model, "point", sampling_steps=sampling_steps, observation=observation, **task
    )
    model.fast_decoding = fast_decoding
    envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    envs.step(rng.uniform(-0.3, 0.3, (batch, 2)).astype(np.float32))  # warm-up
    calls, started = 0, time.perf_counter()
    while calls < 3 or time.perf_counter() - started < seconds:
        envs.step(rng.uniform(-0.3, 0.3, (batch, 2)).astype(np.float32))
        calls += 1
    rate = batch * calls / (time.perf_counter() - started)
    envs.close()
    model.fast_decoding = False
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter timings (about a minute)")
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--sampling-steps", type=int, default=4, help="denoising steps where the MoT runs")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--seed", type=int, default=0, help="seeds the starts and the random actions")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = WorldActionModel.from_pretrained(args.checkpoint)
    seconds = 2.0 if args.quick else 8.0
    mujoco = mujoco_steps_per_s(2 * seconds, args.seed)
    results = {"mujoco_steps_per_s": mujoco, "sampling_steps": args.sampling_steps, "threads": args.threads}
    print(f"MuJoCo step + render (PushBlockPoint 64x64): {mujoco:.0f} steps/s")
    configurations = [
        ("state", "state-only, task reward", "fd_env_state", True, (1, 16, 64)),
        ("pixels", "pixels, task reward", "fd_env", True, (1, 16, 64)),
        ("pixels", "pixels, learned reward (MoT)", "fd_env_learned_reward", False, (64,)),
    ]
    if model.autoencoder.fast_decoder is not None:
        configurations.insert(2, ("pixels", "pixels, fast decoder", "fd_env_fast_decoder", True, (16, 64)))
    for observation, label, key, task_reward, batches in configurations:
        fast = key == "fd_env_fast_decoder"
        for batch in batches:
            rate = imagined_steps_per_s(
                model, batch, observation, task_reward, args.sampling_steps, seconds, fast, args.seed
            )
            results[f"{key}_steps_per_s_b{batch}"] = rate
            results[f"{key}_vs_mujoco_b{batch}"] = rate / mujoco
            print(f"learned env, {label:<28} batch {batch:>2}: {rate:8.1f} steps/s  ({rate / mujoco:.3f}x MuJoCo)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps(results, indent=2))
    print(f"fd_env_state_vs_mujoco_b64={results['fd_env_state_vs_mujoco_b64']:.4f}")
    print(f"fd_env_vs_mujoco_b64={results['fd_env_vs_mujoco_b64']:.4f}")


if __name__ == "__main__":
    main()
