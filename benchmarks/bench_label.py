"""Labeling speed: frames per second labeled by inverse dynamics, against real time, one run.

Renders seeded PushBlockPoint episodes to mp4 (expert, 80 frames or fewer), then times
``cosmos_robot.labeler.label`` end to end (decode, resize, inverse dynamics, LeRobot write) for a few
(stride, denoising steps) settings. The ratio is against real time at the model's frame rate
(10 fps): 10x real time is 100 labeled frames/s.

    .venv/bin/python benchmarks/bench_label.py --quick --json out/bench_label.json

Last line: ``label_fps=<frames/s of the fastest setting whose stride still overlaps windows>``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.datasets.video_io import write_video
from cosmos_robot.eval.labeling import record_episodes
from cosmos_robot.labeler import label
from cosmos_robot.world_model import WorldActionModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="two videos, two settings")
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--seed", type=int, default=700_000, help="seed of the first recorded episode")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = WorldActionModel.from_pretrained(args.checkpoint)
    episodes = record_episodes("cosmos_robot/PushBlockPoint-v0", 2 if args.quick else 6, seed=args.seed)
    settings = [(1, 10), (2, 4)] if args.quick else [(1, 10), (1, 4), (2, 4), (4, 4)]
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        videos = Path(tmp) / "videos"
        for i, ep in enumerate(episodes):
            write_video(videos / f"e{i}.mp4", ep["frames"], fps=model.fps)
        frames = sum(len(ep["frames"]) for ep in episodes)
        for stride, steps in settings:
            started = time.perf_counter()
            label(videos, model, "point", Path(tmp) / f"out_{stride}_{steps}", stride=stride, steps=steps,
                  progress=False)  # fmt: skip
            fps = frames / (time.perf_counter() - started)
            results[f"stride{stride}_steps{steps}"] = fps
            print(f"stride {stride}, {steps:>2} steps: {fps:7.1f} frames/s  ({fps / model.fps:.1f}x real time)")
    best = max(v for k, v in results.items() if not k.startswith(f"stride{model.num_frames - 1}"))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps({"frames": frames, **results, "label_fps": best}, indent=2))
    print(f"label_fps={best:.1f}")


if __name__ == "__main__":
    main()
