"""Cosmos 3 backend latency on a GPU: a tiny and a mid-size random pipeline, the three modes.

Random weights (latency does not depend on them), built locally: nothing is downloaded. The tiny
config is the one the CPU tests use; the mid-size one has 12 layers, width 1024, 8 heads (about a
tenth of Cosmos3-Nano's transformer) and Wan's default autoencoder width. For each config and mode,
2 warm-up calls, then the median of ``--repeats`` calls of one 4-action chunk on a 64x64 (tier 256)
and a 480x640 (tier 480) frame, bf16 autocast.

    python benchmarks/bench_cosmos3_gpu.py --json out/bench_cosmos3_gpu.json     # needs CUDA

Last line: ``cosmos3_mid_policy_ms_256=<ms per policy chunk, mid-size, tier 256>``. Run it on a GPU
machine only; on a CPU-only machine it exits with a one-line message.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from cosmos_robot.atomic import write_file_atomic


def mid_size_pipeline(seed: int = 0):
    """A random pipeline of about a tenth of Cosmos3-Nano's transformer, Wan's default autoencoder width."""
    from cosmos_robot.backends.cosmos3 import random_pipeline

    return random_pipeline(
        seed,
        num_layers=12,
        hidden_size=1024,
        head_dim=128,
        num_heads=8,
        num_kv_heads=2,
        latent_channels=16,
        action_dim=64,
        rope_axes_dim=(24, 20, 20),
        vae_base_dim=96,
        vae_dim_mult=(1, 2, 4, 4),
        vae_res_blocks=2,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per setting")
    parser.add_argument("--steps", type=int, default=4, help="sampling steps per chunk")
    parser.add_argument("--seed", type=int, default=0, help="seeds the random weights and the frame")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_cosmos3_gpu: no CUDA device here; run it on a GPU machine")
        sys.exit(2)
    from cosmos_robot.backends.cosmos3 import Cosmos3Backend, tiny_random_pipeline

    stats = {"point": {"q01": [-0.3, -0.3], "q99": [0.3, 0.3]}}
    results: dict[str, float] = {}
    for name, build in (("tiny", tiny_random_pipeline), ("mid", mid_size_pipeline)):
        pipeline = (build(args.seed) if build is mid_size_pipeline else build()).to("cuda")
        params = sum(p.numel() for p in pipeline.transformer.parameters())
        results[f"{name}_transformer_params"] = float(params)
        for size in (64, 480):
            frame = np.random.default_rng(args.seed).integers(
                0, 255, (size, size * 4 // 3 if size > 64 else size, 3), np.uint8
            )
            backend = Cosmos3Backend(
                pipeline, stats, image_size=size, num_inference_steps=args.steps, instructions={"point": "push"}
            )
            calls = {
                "policy": lambda b=backend, f=frame: b.policy(f, "point"),
                "fd": lambda b=backend, f=frame: b.forward_dynamics(f[None], np.zeros((4, 2), np.float32), "point"),
                "id": lambda b=backend, f=frame: b.inverse_dynamics(np.stack([f] * 5), "point"),
            }
            tier = 256 if size == 64 else 480
            for mode, call in calls.items():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    for _ in range(2):
                        call()
                    times = []
                    for _ in range(args.repeats):
                        torch.cuda.synchronize()
                        started = time.perf_counter()
                        call()
                        torch.cuda.synchronize()
                        times.append((time.perf_counter() - started) * 1000)
                key = f"cosmos3_{name}_{mode}_ms_{tier}"
                results[key] = statistics.median(times)
                print(f"{name:<5} ({params / 1e6:7.1f} M) tier {tier}: {mode:<6} {results[key]:8.1f} ms per chunk")
        del pipeline
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps(results, indent=2))
    print(f"cosmos3_mid_policy_ms_256={results['cosmos3_mid_policy_ms_256']:.1f}")


if __name__ == "__main__":
    main()
