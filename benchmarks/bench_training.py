"""Training throughput: one process (2 threads) vs 2-process DDP (gloo, 1 thread each) on this machine.

Same model (`small`), same global batch, same synthetic windows, forward + backward + AdamW; the DDP
side pays gradient all-reduce over gloo. On 2 cores this says whether torchrun helps at all here.

    .venv/bin/python benchmarks/bench_training.py --quick --json out/bench_training.json

Last line: ``ddp_vs_single=<DDP samples/s / single-process samples/s>``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from cosmos_robot.model.config import preset
from cosmos_robot.model.example_inputs import example_inputs
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.objective import BatchPlan, draw_noise, training_loss
from cosmos_robot.model.plan import Mode


def run(rank: int, world: int, preset_name: str, global_batch: int, steps: int, threads: int, queue) -> None:
    """Time ``steps`` training steps on this rank; rank 0 reports samples/s."""
    torch.set_num_threads(threads)
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29561")
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    network = WorldActionNetwork(preset(preset_name))
    model = torch.nn.parallel.DistributedDataParallel(network, find_unused_parameters=True) if world > 1 else network
    optimizer = torch.optim.AdamW(network.parameters(), lr=1e-4)
    local = global_batch // world
    reasoner, clean = example_inputs(network.config, batch=local, num_frames=5, num_actions=4, seed=rank)
    plan = BatchPlan.from_modes([Mode.FORWARD_DYNAMICS, Mode.POLICY, Mode.INVERSE_DYNAMICS] * local, 5, 4)
    plan = plan.select(slice(0, local))

    def step() -> None:
        terms = training_loss(model, reasoner, clean, plan, draw_noise(clean))
        optimizer.zero_grad(set_to_none=True)
        terms.total.backward()
        optimizer.step()

    step()
    if world > 1:
        dist.barrier()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    if world > 1:
        dist.barrier()
    seconds = time.perf_counter() - started
    if rank == 0:
        queue.put(global_batch * steps / seconds)
    if world > 1:
        dist.destroy_process_group()


def measure(world: int, preset_name: str, batch: int, steps: int, threads: int) -> float:
    """Samples/s with ``world`` processes."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=run, args=(r, world, preset_name, batch, steps, threads, queue)) for r in range(world)]
    for p in procs:
        p.start()
    result = queue.get()
    for p in procs:
        p.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer steps (under a minute)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch", type=int, default=16, help="global batch")
    args = parser.parse_args()
    steps = 4 if args.quick else 15
    single = measure(1, args.preset, args.batch, steps, threads=2)
    ddp = measure(2, args.preset, args.batch, steps, threads=1)
    print(
        f"preset {args.preset}, global batch {args.batch}: single process (2 threads) {single:.1f} samples/s, "
        f"2-process DDP (gloo, 1 thread each) {ddp:.1f} samples/s"
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {
                    "single_samples_per_s": single,
                    "ddp_samples_per_s": ddp,
                    "ddp_vs_single": ddp / single,
                    "preset": args.preset,
                    "batch": args.batch,
                    "steps": steps,
                },
                indent=2,
            )
        )
    print(f"ddp_vs_single={ddp / single:.2f}")


if __name__ == "__main__":
    main()
