"""Imagined steps per second of ForwardDynamicsVectorEnv against MuJoCo step + render, one run.

MuJoCo steps PushBlockPoint (64x64 render every step) in one process. The learned env (the shipped
default, or ``--checkpoint``) steps ``batch`` episodes with one model call per step, at batch 1, 16
and 64, in the configurations RL uses: the reach task's reward and success given as functions of the
imagined state, called once per step on the batch (``batched_fns``, as ``eval imagination-rl``), with
pixel observations (frames decoded every step) and with state-only observations (no frame decoded: the
block's agent heads step the state where the model has them, else the forward prior alone; with pixels the
heads and the block's drawer, else the prior and the drawer; the largest batch is also timed with the
prior, ``model.agent_heads = False``, the ablation). Where the checkpoint
has a fast decoder, pixels are also timed with it
(``model.fast_decoding``: off by default, it loses arm2's fingertip). Batch 64 is also timed with the
learned reward and success, with pixel and with state-only observations: from the block's reward head
where the model has one (the block's drawer runs, no MoT), else from the MoT (every step, with a decode).
Steps per second counts environment steps (a batch of 64 is 64 steps).

    .venv/bin/python benchmarks/bench_fd_env.py --quick --json out/bench_fd_env.json
    python benchmarks/bench_fd_env.py --quick --device cuda --dtype bfloat16 --batches 64,1024   # a GPU

On a GPU the model runs there under bf16 autocast (``--dtype bfloat16``), as a user would run it;
MuJoCo still steps on the CPU. In bf16 the benchmark also reports how far the bf16 rollout drifts
from the float32 one over 16 steps (same starts, same actions): agent_pos in mm and the mean
absolute pixel difference, since speed bought with a different simulation is no speed-up.

This machine's speed swings by up to 3x within a minute (MuJoCo's software rendering more than our
convolutions), so one MuJoCo timing at the start and ours a minute later can land anywhere from half
to twice the true ratio. The headline batch (64, else the largest) is therefore timed in ``--rounds``
paired rounds: MuJoCo, then state-only, then pixels, back to back, and each round's ratio is taken
against the MuJoCo rate of its own round. Every round is printed; the headline is the median round.
The other settings are timed once, against the median MuJoCo rate of the rounds.

Last two lines: ``fd_env_state_vs_mujoco_b64=`` and ``fd_env_vs_mujoco_b64=`` (the median over the
paired rounds of imagined steps/s at batch 64, state-only and pixels, over MuJoCo's steps/s of the same
round; at the largest batch when 64 is not timed).
"""

from __future__ import annotations

import argparse
import contextlib
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


def paired_ratios(ours: list[float], mujoco: list[float]) -> dict[str, float]:
    """Median, min and max over rounds of ``ours[i] / mujoco[i]`` (the rates of one round each)."""
    if len(ours) != len(mujoco) or not ours:
        raise ValueError(f"{len(ours)} and {len(mujoco)} rates; expected the same positive number of rounds")
    ratios = np.array(ours) / np.array(mujoco)
    return {"median": float(np.median(ratios)), "min": float(ratios.min()), "max": float(ratios.max())}


def precision(model: WorldActionModel, dtype: str) -> contextlib.AbstractContextManager:
    """The autocast context that runs ``model`` in ``dtype`` (float32: no autocast)."""
    if dtype == "float32":
        return contextlib.nullcontext()
    return torch.autocast(model.device.type, dtype=getattr(torch, dtype))


def vector_env(
    model: WorldActionModel, batch: int, observation: str, task_reward: bool, sampling_steps: int
) -> ForwardDynamicsVectorEnv:
    """The learned PushBlockPoint env at ``batch``, with the reach task's reward when ``task_reward``."""
    task = {}
    if task_reward:
        task = {
            "reward_fn": lambda obs, action, next_obs: reach_reward(next_obs[AGENT_POS]),
            "success_fn": lambda obs: reach_success(obs[AGENT_POS]),
            "batched_fns": True,
        }
    return ForwardDynamicsVectorEnv(
        batch, model, "point", sampling_steps=sampling_steps, observation=observation, **task
    )


def imagined_steps_per_s(
    model: WorldActionModel,
    batch: int,
    observation: str,
    task_reward: bool,
    sampling_steps: int,
    seconds: float,
    fast_decoding: bool = False,
    seed: int = 0,
    dtype: str = "float32",
    agent_heads: bool = True,
) -> float:
    """Imagined environment steps per second of the vector env at ``batch`` (at least 3 timed calls)."""
    envs = vector_env(model, batch, observation, task_reward, sampling_steps)
    model.fast_decoding = fast_decoding
    model.agent_heads = agent_heads
    rng = np.random.default_rng(seed)
    with precision(model, dtype):
        envs.reset(seed=seed)
        envs.step(rng.uniform(-0.3, 0.3, (batch, 2)).astype(np.float32))  # warm-up
        calls, started = 0, time.perf_counter()
        # The observations come back as numpy arrays, so each step waits for the device.
        while calls < 3 or time.perf_counter() - started < seconds:
            envs.step(rng.uniform(-0.3, 0.3, (batch, 2)).astype(np.float32))
            calls += 1
        rate = batch * calls / (time.perf_counter() - started)
    envs.close()
    model.fast_decoding, model.agent_heads = False, True
    return rate


def precision_drift(
    model: WorldActionModel, dtype: str, batch: int = 64, steps: int = 16, seed: int = 0
) -> dict[str, float]:
    """How far a ``dtype`` rollout strays from the float32 one: the same starts and actions, pixel
    observations with the task reward; agent_pos error (mm, mean and max at the last step) and the
    mean absolute pixel difference (0-255) at the last step."""
    actions = np.random.default_rng(seed).uniform(-0.3, 0.3, (steps, batch, 2)).astype(np.float32)
    last = {}
    for name in ("float32", dtype):
        envs = vector_env(model, batch, "pixels", True, 4)
        with precision(model, name):
            envs.reset(seed=seed)
            for action in actions:
                obs, *_ = envs.step(action)
        envs.close()
        last[name] = obs
    error_mm = 1000 * np.linalg.norm(last[dtype][AGENT_POS] - last["float32"][AGENT_POS], axis=-1)
    pixels = np.abs(last[dtype]["pixels"].astype(np.float32) - last["float32"]["pixels"].astype(np.float32))
    return {
        f"{dtype}_agent_pos_drift_mm_mean_h{steps}": float(error_mm.mean()),
        f"{dtype}_agent_pos_drift_mm_max_h{steps}": float(error_mm.max()),
        f"{dtype}_pixel_mae_h{steps}": float(pixels.mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter timings (about a minute)")
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--sampling-steps", type=int, default=4, help="denoising steps where the MoT runs")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--seed", type=int, default=0, help="seeds the starts and the random actions")
    parser.add_argument("--device", default="cpu", help="where the model runs: cpu, cuda, cuda:1, ...")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"), help="autocast precision")
    parser.add_argument("--batches", default="1,16,64", help="comma-separated batch sizes")
    parser.add_argument("--rounds", type=int, default=5, help="paired MuJoCo / learned-env rounds (headline batch)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds={args.rounds}: expected a positive integer")
    try:
        batches = tuple(int(b) for b in args.batches.split(","))
        if not batches or min(batches) < 1:
            raise ValueError
    except ValueError:
        parser.error(f"--batches={args.batches!r}: expected comma-separated positive integers, e.g. 1,16,64")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"--device={args.device!r}: torch sees no CUDA device here")
    torch.set_num_threads(args.threads)
    model = WorldActionModel.from_pretrained(args.checkpoint, device=args.device)
    seconds = 2.0 if args.quick else 8.0
    shown = 64 if 64 in batches else batches[-1]
    rates: dict[str, list[float]] = {"mujoco": [], "state": [], "pixels": []}
    print(f"paired rounds at batch {shown} (MuJoCo step + render of PushBlockPoint 64x64 on the CPU, then ours):")
    for r in range(args.rounds):
        rates["mujoco"].append(mujoco_steps_per_s(seconds, args.seed + r))
        for observation in ("state", "pixels"):
            rates[observation].append(
                imagined_steps_per_s(
                    model, shown, observation, True, args.sampling_steps, seconds, seed=args.seed + r, dtype=args.dtype
                )
            )
        mj, st, px = rates["mujoco"][r], rates["state"][r], rates["pixels"][r]
        print(
            f"  round {r + 1}: MuJoCo {mj:.0f}, state-only {st:.0f} ({st / mj:.2f}x), pixels {px:.0f} ({px / mj:.2f}x)"
        )
    mujoco = float(np.median(rates["mujoco"]))
    results = {
        "mujoco_steps_per_s": mujoco,
        "rounds": args.rounds,
        "round_rates": rates,
        "sampling_steps": args.sampling_steps,
        "threads": args.threads,
        "device": args.device,
        "dtype": args.dtype,
    }
    for observation, key in (("state", "fd_env_state"), ("pixels", "fd_env")):
        spread = paired_ratios(rates[observation], rates["mujoco"])
        results[f"{key}_steps_per_s_b{shown}"] = float(np.median(rates[observation]))
        results[f"{key}_vs_mujoco_b{shown}"] = spread["median"]
        results[f"{key}_vs_mujoco_b{shown}_range"] = [spread["min"], spread["max"]]
    print(f"MuJoCo median {mujoco:.0f} steps/s; the other settings once each, against it:")
    print(f"learned env on {args.device}, {args.dtype}:")
    configurations = [
        ("state", "state-only, task reward", "fd_env_state", True, batches),
        ("state", "state-only, forward prior", "fd_env_state_prior", True, batches[-1:]),
        ("pixels", "pixels, forward prior", "fd_env_prior", True, batches[-1:]),
        ("pixels", "pixels, task reward", "fd_env", True, batches),
        ("pixels", "pixels, learned reward", "fd_env_learned_reward", False, batches[-1:]),
        ("state", "state-only, learned reward", "fd_env_state_learned_reward", False, batches[-1:]),
    ]
    if model.autoencoder.fast_decoder is not None:
        fast_batches = tuple(b for b in batches if b >= 16) or batches[-1:]
        configurations.insert(2, ("pixels", "pixels, fast decoder", "fd_env_fast_decoder", True, fast_batches))
    for observation, label, key, task_reward, config_batches in configurations:
        fast = key == "fd_env_fast_decoder"
        heads = not key.endswith("_prior")
        for batch in config_batches:
            if f"{key}_steps_per_s_b{batch}" in results:  # timed in the paired rounds
                rate, ratio = results[f"{key}_steps_per_s_b{batch}"], results[f"{key}_vs_mujoco_b{batch}"]
                low, high = results[f"{key}_vs_mujoco_b{batch}_range"]
                print(
                    f"  {label:<28} batch {batch:>4}: {rate:9.1f} steps/s  ({ratio:.3f}x MuJoCo, median of the "
                    f"rounds; {low:.2f}-{high:.2f}x)"
                )
                continue
            rate = imagined_steps_per_s(
                model, batch, observation, task_reward, args.sampling_steps, seconds, fast, args.seed, args.dtype, heads
            )
            results[f"{key}_steps_per_s_b{batch}"] = rate
            results[f"{key}_vs_mujoco_b{batch}"] = rate / mujoco
            print(f"  {label:<28} batch {batch:>4}: {rate:9.1f} steps/s  ({rate / mujoco:.3f}x MuJoCo)")
    if args.dtype != "float32":
        drift = precision_drift(model, args.dtype, seed=args.seed)
        results.update(drift)
        for key, value in drift.items():
            print(f"{key}={value:.3f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps(results, indent=2))
    print(f"fd_env_state_vs_mujoco_b{shown}={results[f'fd_env_state_vs_mujoco_b{shown}']:.4f}")
    print(f"fd_env_vs_mujoco_b{shown}={results[f'fd_env_vs_mujoco_b{shown}']:.4f}")


if __name__ == "__main__":
    main()
