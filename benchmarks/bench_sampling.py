"""Policy sampling with the reasoner cache vs recomputing the reasoner at every denoising step.

Same network (the `small` preset), same inputs, same noise, one run. Cached: the reasoner runs once
per request and each Euler step costs the generator alone; uncached: every step runs both towers.
Both include the final clean pass that reads the reward/success heads.

    .venv/bin/python benchmarks/bench_sampling.py --quick --json out/bench_sampling.json

Last line: ``cache_speedup=<uncached ms / cached ms at 10 steps>`` for the policy window
(2 observed frames + 4 predicted frames and actions).
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import torch

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.model.config import preset
from cosmos_robot.model.example_inputs import example_inputs
from cosmos_robot.model.flops import describe_network
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.plan import Mode, make_plan
from cosmos_robot.model.sampler import sample_plan

WINDOWS = {
    # name: (frames, actions, observed frames)
    "policy_1obs_3ahead": (4, 3, 1),
    "policy_2obs_4ahead": (6, 5, 2),
}
HEADLINE = "policy_2obs_4ahead"


def _sample(network, reasoner, template, plan, steps: int, use_cache: bool, seed: int = 0) -> None:
    sample_plan(
        network,
        reasoner,
        template,
        plan,
        steps=steps,
        use_cache=use_cache,
        generator=torch.Generator().manual_seed(seed),
    )


def time_pair_ms(first, second, repeats: int) -> tuple[float, float]:
    """Median wall times (ms) of two callables timed alternately, so drift of a shared machine hits both."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for fn, bucket in ((first, times[0]), (second, times[1])):
            started = time.perf_counter()
            fn()
            bucket.append((time.perf_counter() - started) * 1000)
    return tuple(sorted(t)[len(t) // 2] for t in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (under a minute)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights and the sampling noise")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--preset", default="small", help="model preset")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    network = WorldActionNetwork(preset(args.preset)).eval()
    repeats = 5 if args.quick else 20
    results: dict[str, dict[str, float]] = {}
    print(f"{'window':<22}{'steps':>6}{'cached ms':>11}{'recompute ms':>14}{'speed-up':>10}   (preset {args.preset})")
    for name, (frames, actions, observed) in WINDOWS.items():
        reasoner, template = example_inputs(
            network.config, batch=1, num_frames=frames, num_actions=actions, context_frames=observed
        )
        plan = make_plan(Mode.POLICY, frames, actions, context_frames=observed)
        for steps in (4, 10):
            run = functools.partial(_sample, network, reasoner, template, plan, steps)
            cached, uncached = time_pair_ms(
                functools.partial(run, True, args.seed), functools.partial(run, False, args.seed), repeats
            )
            results[f"{name}/{steps}"] = {"cached_ms": cached, "recompute_ms": uncached, "speedup": uncached / cached}
            print(f"{name:<22}{steps:>6}{cached:>11.1f}{uncached:>14.1f}{uncached / cached:>9.2f}x")
    describe = describe_network(network, *WINDOWS[HEADLINE])
    headline = results[f"{HEADLINE}/10"]["speedup"]
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(
            args.json, json.dumps({"results": results, "describe": describe, "cache_speedup": headline}, indent=2)
        )
    print(f"reasoner tokens {describe['reasoner_tokens']:.0f}, generator tokens {describe['generator_tokens']:.0f}")
    print(f"cache_speedup={headline:.2f}")


if __name__ == "__main__":
    main()
