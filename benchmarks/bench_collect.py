"""Collection speed: `collect` (MuJoCo + LeRobot writing + video encoding) against raw MuJoCo step+render.

Both sides run the same env, the same scripted expert and the same seeds in one process, so the
ratio says what the dataset writing costs on top of simulation and rendering.

    .venv/bin/python benchmarks/bench_collect.py --quick --json out/bench_collect.json

Last line: ``collect_vs_raw=<collect frames/s / raw frames/s>`` for PushBlockPoint-v0.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import cosmos_robot  # noqa: F401  (MUJOCO_GL=egl before mujoco is imported)
from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.collect import collect
from cosmos_robot.envs.gym_adapter import make_env
from cosmos_robot.policies.scripted import ScriptedExpert


def raw_frames_per_second(env_id: str, episodes: int, noise: float, seed: int = 0) -> tuple[float, int]:
    """Step + render with the same expert and seeds as ``collect``, writing nothing."""
    env = make_env(env_id)
    expert = ScriptedExpert.for_env(env, noise=noise)
    frames = 0
    started = time.perf_counter()
    for k in range(episodes):
        obs, info = env.reset(seed=seed + k)
        expert.reset(seed=seed + k)
        while True:
            obs, _, terminated, truncated, info = env.step(expert.act(obs, info))
            frames += 1
            if terminated or truncated:
                break
    seconds = time.perf_counter() - started
    env.close()
    return frames / seconds, frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer episodes, one env (under a minute)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode (both sides)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    episodes = 20 if args.quick else 100
    env_ids = (
        ["cosmos_robot/PushBlockPoint-v0"]
        if args.quick
        else ["cosmos_robot/PushBlockPoint-v0", "cosmos_robot/PushBlockArm2-v0", "Reacher-v5"]
    )
    noise = 0.3  # longer episodes than the pure expert: closer to a training-data mix
    results = {}
    scratch = Path(tempfile.mkdtemp(prefix="bench_collect-"))
    try:
        for env_id in env_ids:
            raw_fps, raw_frames = raw_frames_per_second(env_id, episodes, noise, args.seed)
            row = {"raw_fps": raw_fps, "frames": raw_frames}
            for label, video in (("video", True), ("images", False)):
                summary = collect(
                    env_id,
                    episodes,
                    scratch / f"{label}",
                    noise=noise,
                    seed=args.seed,
                    video=video,
                    overwrite=True,
                    progress=False,
                )
                if summary.frames != raw_frames:
                    raise RuntimeError(f"{env_id}: collect wrote {summary.frames} frames, raw ran {raw_frames}")
                row[f"collect_{label}_fps"] = summary.frames_per_second
                row[f"collect_{label}_vs_raw"] = summary.frames_per_second / raw_fps
            results[env_id] = row
            print(
                f"{env_id:<34} frames {raw_frames:>6}  raw {raw_fps:8.0f} fps   "
                f"collect(mp4) {row['collect_video_fps']:6.0f} fps ({row['collect_video_vs_raw']:.2f}x)   "
                f"collect(png) {row['collect_images_fps']:6.0f} fps ({row['collect_images_vs_raw']:.2f}x)"
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    headline = results["cosmos_robot/PushBlockPoint-v0"]["collect_video_vs_raw"]
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(
            args.json,
            json.dumps(
                {"results": results, "collect_vs_raw": headline, "episodes": episodes, "noise": noise}, indent=2
            ),
        )
    print(f"collect_vs_raw={np.round(headline, 3)}")


if __name__ == "__main__":
    main()
