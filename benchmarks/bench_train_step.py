"""Training throughput of the `small` preset on this CPU: forward + backward + AdamW step, samples/s.

Utilisation is FLOPs-based: model FLOPs per sample (3x the forward FLOPs of ``describe()``: forward
plus a backward twice as costly) times samples/s, against the FLOP/s of a large fp32 matmul measured
in the same run (the practical peak of this CPU with torch).

    .venv/bin/python benchmarks/bench_train_step.py --quick --json out/bench_train_step.json

Last line: ``train_samples_per_s=...``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.model.config import preset
from cosmos_robot.model.example_inputs import example_inputs
from cosmos_robot.model.flops import describe_network
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.objective import BatchPlan, draw_noise, training_loss
from cosmos_robot.model.plan import Mode

MODE_CYCLE = [Mode.FORWARD_DYNAMICS, Mode.POLICY, Mode.INVERSE_DYNAMICS, Mode.FORWARD_DYNAMICS, Mode.POLICY]


def matmul_flops_per_s(size: int = 1024, repeats: int = 10) -> float:
    """FLOP/s of an fp32 (size x size) @ (size x size) matmul."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size**3 * repeats / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer steps (under a minute)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights and the inputs")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--preset", default="small", help="model preset")
    parser.add_argument("--batch", type=int, default=16, help="samples per step")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    network = WorldActionNetwork(preset(args.preset)).train()
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-4)
    frames, actions = 4, 3
    reasoner, clean = example_inputs(network.config, batch=args.batch, num_frames=frames, num_actions=actions)
    modes = [MODE_CYCLE[i % len(MODE_CYCLE)] for i in range(args.batch)]  # 0.4 FD / 0.4 policy / 0.2 ID
    plan = BatchPlan.from_modes(modes, frames, actions)
    rewards, successes = torch.randn(args.batch, actions), torch.zeros(args.batch, actions, dtype=torch.bool)

    def step() -> float:
        terms = training_loss(network, reasoner, clean, plan, draw_noise(clean), rewards, successes)
        optimizer.zero_grad(set_to_none=True)
        terms.total.backward()
        torch.nn.utils.clip_grad_norm_(network.parameters(), 1.0)
        optimizer.step()
        return float(terms.total)

    steps = 5 if args.quick else 20
    step()  # warm-up
    started = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = time.perf_counter() - started
    samples_per_s = steps * args.batch / seconds
    describe = describe_network(network, frames, actions)
    model_flops = 3 * describe["flops_forward"] * samples_per_s
    peak = matmul_flops_per_s()
    results = {
        "preset": args.preset,
        "batch": args.batch,
        "threads": args.threads,
        "train_samples_per_s": samples_per_s,
        "ms_per_step": seconds / steps * 1000,
        "model_gflops_per_s": model_flops / 1e9,
        "matmul_gflops_per_s": peak / 1e9,
        "utilisation_vs_matmul": model_flops / peak,
        "params": describe["params_total"],
        "flops_forward_per_sample": describe["flops_forward"],
    }
    print(
        f"preset {args.preset}: {describe['params_total'] / 1e6:.2f} M params, "
        f"{describe['flops_forward'] / 1e9:.2f} GFLOP forward per sample, batch {args.batch}, {args.threads} threads"
    )
    print(
        f"{results['ms_per_step']:.0f} ms/step, model {results['model_gflops_per_s']:.1f} GFLOP/s vs fp32 matmul "
        f"{results['matmul_gflops_per_s']:.1f} GFLOP/s: utilisation {results['utilisation_vs_matmul']:.2f}"
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps(results, indent=2))
    print(f"train_samples_per_s={samples_per_s:.1f}")


if __name__ == "__main__":
    main()
