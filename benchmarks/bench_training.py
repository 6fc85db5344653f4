"""Training throughput: one process (2 threads) vs two DDP processes (1 thread each, gloo), one run.

Both train the same model preset on the smoke recipe's data (collected into a temporary folder)
with the same global batch, through the real CLI (``torch.distributed.run`` for DDP), and report the
training loop's samples per second (autoencoder and data loading excluded).

    .venv/bin/python benchmarks/bench_training.py --quick --json out/bench_training.json

Last line: ``ddp2_vs_single=<DDP samples/s / single-process samples/s>``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.recipes import get_recipe, prepare_data


def samples_per_s(command: list[str], env: dict[str, str]) -> float:
    """Run a training command and read its samples/s line."""
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:6])} ... failed:\n{done.stderr[-2000:]}")
    match = re.search(r"\(([\d.]+) samples/s", done.stdout)
    if match is None:
        raise RuntimeError(f"no samples/s in the output:\n{done.stdout[-1000:]}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20 steps instead of 60")
    parser.add_argument("--preset", default="small", help="model preset")
    parser.add_argument("--batch-size", type=int, default=16, help="global batch")
    parser.add_argument("--seed", type=int, default=0, help="seeds both training runs")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    steps = 20 if args.quick else 60
    env = os.environ | {"OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1"}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        prepare_data(get_recipe("smoke"), data_dir, progress=False)
        common = ["train", "--recipe", "smoke", "--data-dir", str(data_dir), "--preset", args.preset,
                  "--train-steps", str(steps), "--batch-size", str(args.batch_size),
                  "--seed", str(args.seed)]  # fmt: skip
        single = samples_per_s(
            [sys.executable, "-m", "cosmos_robot.cli", *common, "--threads", "2", "--out", f"{tmp}/one"], env
        )
        print(f"single process, 2 threads: {single:.1f} samples/s")
        ddp = samples_per_s(
            [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_port=29531",
             "-m", "cosmos_robot.cli", *common, "--threads", "1", "--out", f"{tmp}/two"],
            env,
        )  # fmt: skip
        print(f"2 DDP processes, 1 thread each (gloo): {ddp:.1f} samples/s")
    results = {"preset": args.preset, "batch_size": args.batch_size, "steps": steps, "single_samples_per_s": single,
               "ddp2_samples_per_s": ddp, "ddp2_vs_single": ddp / single}  # fmt: skip
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps(results, indent=2))
    print(f"ddp2_vs_single={ddp / single:.3f}")


if __name__ == "__main__":
    main()
