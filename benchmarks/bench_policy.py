"""Policy latency: milliseconds per action chunk, ours vs LeRobot's Diffusion Policy, one run, same CPU.

Ours: ``WorldActionModel.policy`` on a 64x64 PushBlockPoint frame (one chunk = one action and one
predicted frame per future step of the window), with and without the reasoner cache, at 4 and 10
Euler steps. LeRobot's Diffusion Policy (``DiffusionPolicy``, randomly initialised: latency does not
depend on the weights) on the same observation (64x64 image, 2-D state, n_obs_steps 2), with the
PushT-sized action head (horizon 16) LeRobot uses for a 2-D pusher, at its default sampler (DDPM, 100
steps) and with DDIM at 10 steps. Each setting: 2 warm-up calls, then the median of ``--repeats``.

    .venv/bin/python benchmarks/bench_policy.py --quick --json out/bench_policy.json

Last line: ``policy_latency_vs_lerobot_dp=<ours (cache, 10 steps) / DP (its default sampler)>``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import torch

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.world_model import WorldActionModel


def median_ms(call: Callable[[], object], repeats: int) -> float:
    for _ in range(2):
        call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def diffusion_policy(
    scheduler: str, steps: int | None, down_dims: tuple[int, ...] = (512, 1024, 2048)
) -> tuple[Callable[[], object], int]:
    """A LeRobot Diffusion Policy for PushBlock's observation; returns (one chunk call, chunk length)."""
    from lerobot.configs import FeatureType, PolicyFeature
    from lerobot.policies.diffusion.configuration_diffusion import DiffusionConfig
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

    config = DiffusionConfig(
        input_features={
            "observation.image": PolicyFeature(type=FeatureType.VISUAL, shape=(3, 64, 64)),
            "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(2,)),
        },
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(2,))},
        horizon=16,
        n_action_steps=8,
        n_obs_steps=2,
        pretrained_backbone_weights=None,  # nothing is downloaded; latency does not depend on the weights
        noise_scheduler_type=scheduler,
        num_inference_steps=steps,
        down_dims=down_dims,
        device="cpu",
    )
    policy = DiffusionPolicy(config).eval()
    batch = {"observation.image": torch.rand(1, 2, 3, 64, 64), "observation.state": torch.rand(1, 2, 2)}

    def call() -> object:
        with torch.no_grad():
            return policy.predict_action_chunk(dict(batch))

    return call, config.n_action_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--repeats", type=int, help="timed calls per setting (default 5 quick, 20 full)")
    parser.add_argument("--seed", type=int, default=900_000, help="seed of the observation's reset")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    repeats = args.repeats or (5 if args.quick else 20)

    env = gym.make("cosmos_robot/PushBlockPoint-v0")
    obs, _ = env.reset(seed=args.seed)
    env.close()
    model = WorldActionModel.from_pretrained(args.checkpoint)
    results: dict[str, float] = {"ours_chunk_length": float(model.future_frames)}
    for steps in (4, 10):
        for cache in (True, False):
            ms = median_ms(
                lambda s=steps, c=cache: model.policy(
                    obs["pixels"], "point", state=obs["agent_pos"], steps=s, use_cache=c
                ),
                repeats,
            )
            key = f"ours_{'cache' if cache else 'nocache'}_{steps}steps_ms"
            results[key] = ms
            print(f"ours, {'with' if cache else 'without'} reasoner cache, {steps:>2} steps: {ms:8.1f} ms per chunk")
    # LeRobot's default UNet at its default sampler and at DDIM 10, then the CPU-sized UNet that
    # benchmarks/compare_policy_dp.py trains.
    for scheduler, steps, dims, key in (
        ("DDPM", None, (512, 1024, 2048), "lerobot_dp_ddpm100_ms"),
        ("DDIM", 10, (512, 1024, 2048), "lerobot_dp_ddim10_ms"),
        ("DDIM", 10, (64, 128, 256), "lerobot_dp_small_ddim10_ms"),
    ):
        call, chunk = diffusion_policy(scheduler, steps, dims)
        results[key] = median_ms(call, repeats)
        results["lerobot_dp_chunk_length"] = float(chunk)
        print(
            f"LeRobot Diffusion Policy, UNet {dims}, {scheduler} {steps or 100} steps: {results[key]:8.1f} ms per chunk"
        )
    ratio = results["ours_cache_10steps_ms"] / results["lerobot_dp_ddpm100_ms"]
    results["policy_latency_vs_lerobot_dp"] = ratio
    for key in ("ddim10", "small_ddim10"):
        results[f"policy_latency_vs_lerobot_dp_{key}"] = (
            results["ours_cache_10steps_ms"] / results[f"lerobot_dp_{key}_ms"]
        )
    print(
        f"chunks: ours {model.future_frames} actions (+ {model.future_frames} frames), "
        f"DP {int(results['lerobot_dp_chunk_length'])} "
        f"executed actions of a 16-step horizon; per executed action: ours "
        f"{results['ours_cache_10steps_ms'] / model.future_frames:.1f} ms, DP "
        f"{results['lerobot_dp_ddpm100_ms'] / results['lerobot_dp_chunk_length']:.1f} ms"
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps(results, indent=2))
    print(f"policy_latency_vs_lerobot_dp={ratio:.3f}")


if __name__ == "__main__":
    main()
