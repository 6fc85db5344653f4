"""Our policy vs LeRobot's Diffusion Policy on PushBlockPoint: same demonstrations, same CPU budget, same harness.

1. Data: the default recipe's ``point_expert`` demonstrations (400 expert episodes, seeds < 100000),
   collected into ``--data-dir`` if missing (the folder is named by its episode count, so a recipe
   change never reuses stale data). Diffusion Policy trains on a copy without
   ``observation.environment_state`` (block and goal poses: privileged), so both policies see the
   64x64 frame and ``agent_pos`` only. Our world model trained on these plus the noisy-expert
   datasets (its policy is conditioned on the plain task, which only the expert data carries).
2. Training: ``lerobot-train --policy.type=diffusion`` on CPU for ``--budget-minutes`` of wall clock
   (default 20 = the policy share, 0.4, of the default recipe's ~50-minute MoT training). A 20-step
   calibration run sets ``--steps`` so that the cosine schedule ends inside the budget. Settings that
   a 64x64, 10 Hz, 80-step task forces: horizon 16, 8 executed actions, no ImageNet weights (nothing
   can be downloaded), and a UNet sized for CPU (down_dims 64/128/256; LeRobot's default
   512/1024/2048 runs ~15 s per chunk here, see bench_policy.py). DDIM, 10 inference steps.
3. Evaluation: :func:`cosmos_robot.eval.closed_loop.evaluate_policy`, the same seeded starts
   (500000+) for both, plus the pixel-driven scripted expert as the ceiling.

    .venv/bin/python benchmarks/compare_policy_dp.py --data-dir out/dp_compare --json out/compare_policy_dp.json

Last line: ``success_ours=<rate> success_lerobot_dp=<rate>``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.eval.closed_loop import evaluate_policy, make_policy
from cosmos_robot.recipes import Recipe, get_recipe, prepare_data

ENV_ID = "cosmos_robot/PushBlockPoint-v0"
DP_SETTINGS = [
    "--policy.type=diffusion",
    "--policy.device=cpu",
    "--policy.push_to_hub=false",
    "--policy.pretrained_backbone_weights=null",
    "--policy.horizon=16",
    "--policy.n_action_steps=8",
    "--policy.down_dims=[64,128,256]",
    "--policy.noise_scheduler_type=DDIM",
    "--policy.num_inference_steps=10",
    "--batch_size=32",
    "--num_workers=0",
    "--wandb.enable=false",
]


def pixel_only_copy(source: Path, out: Path) -> Path:
    """A copy of the dataset without the privileged ``observation.environment_state`` column."""
    from lerobot.datasets.dataset_tools import remove_feature
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    if not (out / "meta" / "info.json").is_file():
        dataset = LeRobotDataset("local/" + source.name, root=source, video_backend="pyav")
        remove_feature(dataset, "observation.environment_state", output_dir=out, repo_id="local/" + out.name)
    return out


def lerobot_train(data: Path, out: Path, steps: int, save_freq: int, timeout: float) -> float:
    """Run lerobot-train; returns its wall-clock seconds."""
    cli = Path(sys.executable).with_name("lerobot-train")
    command = [str(cli), *DP_SETTINGS, f"--dataset.repo_id=local/{data.name}", f"--dataset.root={data}"]
    command += [f"--steps={steps}", f"--save_freq={save_freq}", "--log_freq=100", f"--output_dir={out}"]
    started = time.perf_counter()
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=os.environ | {"HF_HUB_OFFLINE": "1"}
    )
    if run.returncode != 0:
        raise RuntimeError(f"lerobot-train failed (exit {run.returncode}):\n{run.stderr[-3000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="out/dp_compare", help="where data and the DP run are written")
    parser.add_argument("--checkpoint", default="default", help="our world model: checkpoint folder or 'default'")
    parser.add_argument("--budget-minutes", type=float, default=20.0, help="wall clock for Diffusion Policy training")
    parser.add_argument("--episodes", type=int, default=20, help="evaluation episodes per policy")
    parser.add_argument("--quick", action="store_true", help="a 2-minute budget and 4 episodes (a smoke run)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    budget_s = 120.0 if args.quick else args.budget_minutes * 60
    episodes = 4 if args.quick else args.episodes
    root = Path(args.data_dir)

    spec = next(s for s in get_recipe("default").datasets if s.name == "point_expert")
    spec = dataclasses.replace(spec, name=f"point_expert_{spec.episodes}ep")
    (source,) = prepare_data(Recipe(datasets=(spec,)), root / "data")
    data = pixel_only_copy(Path(source), root / "data" / f"{spec.name}_pixels")

    # Calibrate: seconds per step (with start-up) from a 20-step run, then size the real run to the budget.
    # A killed earlier run restarts cleanly: its training folders go first (lerobot-train refuses an
    # existing output folder), and the JSON is written only at the end, atomically.
    calib, calib5, run_dir = root / "dp_calibration", root / "dp_calibration5", root / "dp_run"
    for folder in (calib, calib5, run_dir):
        shutil.rmtree(folder, ignore_errors=True)
    t20 = lerobot_train(data, calib, 20, 20, timeout=600)
    t5 = lerobot_train(data, calib5, 5, 5, timeout=600)
    per_step = max((t20 - t5) / 15, 1e-3)
    startup = max(t5 - 5 * per_step, 0.0)
    steps = max(int((budget_s - startup) / per_step), 10)
    for folder in (calib, calib5):
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"Diffusion Policy: {per_step:.3f} s/step, start-up {startup:.0f} s -> {steps} steps in {budget_s / 60:.1f} min"
    )
    dp_seconds = lerobot_train(data, run_dir, steps, steps, timeout=budget_s * 2 + 600)
    dp_path = run_dir / "checkpoints" / "last" / "pretrained_model"

    results: dict = {"budget_minutes": budget_s / 60, "dp_steps": steps, "dp_train_seconds": dp_seconds}
    for name, kind, checkpoint in (
        ("ours", "model", args.checkpoint),
        ("lerobot_dp", "lerobot", str(dp_path)),
        ("pixel_expert", "pixel-expert", ""),
    ):
        policy = make_policy(kind, ENV_ID, checkpoint)
        result = evaluate_policy(policy, ENV_ID, episodes)
        results[name] = {k: v for k, v in result.to_json().items() if k != "per_episode"}
        results[f"success_{name}"] = result.success_rate
        print(
            f"{name:<14} success {result.success_rate:.2f}  mean return {result.mean_return:7.2f}  "
            f"mean length {result.mean_length:5.1f}  {1000 * result.seconds_per_step:6.1f} ms/step"
        )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps(results, indent=2))
    print(f"success_ours={results['success_ours']:.3f} success_lerobot_dp={results['success_lerobot_dp']:.3f}")


if __name__ == "__main__":
    main()
