"""Choose ``pixel_residual.CHANGE_LEVELS`` on tuning episodes (not the evaluation seeds).

The pixel residual keeps the camera's pixels where the decoded change is small and draws the decoder's pixels
where it reaches ``CHANGE_LEVELS`` grey levels (docs/model.md). This collects noisy (0.3) episodes with tuning
seeds (``--seed``, default 340000 point and 350000 arm2: disjoint from every recipe's data, from the guidance
tuning's 320000+ and from the evaluation seeds 500000+), and prints, for each candidate, forward-dynamics PSNR
over horizons 1..8 from each episode's start with its recorded actions (the pixel-residual frames, as ``eval
offline`` scores them), and the object metric that PSNR alone cannot judge: the share of those frames where
the effector is found. ``CHANGE_LEVELS`` is the level with the best mean PSNR among those that keep the
effector found as often as the best candidate does.

    .venv/bin/python benchmarks/tune_change_levels.py [--checkpoint default] [--levels 16 32 64 128 255]

Last line: ``best_change_levels=<level>``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from eval_default import heldout  # noqa: E402

import cosmos_robot.pixel_residual as pixel_residual  # noqa: E402
from cosmos_robot.atomic import write_file_atomic  # noqa: E402
from cosmos_robot.datasets.windows import open_episodes  # noqa: E402
from cosmos_robot.eval.objects import object_metrics  # noqa: E402
from cosmos_robot.keys import ACTION, OBS_STATE  # noqa: E402
from cosmos_robot.metrics import psnr  # noqa: E402
from cosmos_robot.world_model import WorldActionModel  # noqa: E402

FIRST_TUNING_SEED = 340_000  # point; arm2 at + 10000
HORIZON = 8


def score(model: WorldActionModel, dataset: Path, embodiment: str, starts: int) -> tuple[float, float]:
    """(mean PSNR over horizons 1..8, share of those predicted frames where the effector is found), from
    the start of each of the first ``starts`` episodes with the recorded actions."""
    data = open_episodes(dataset).to_memory()
    camera = data.image_keys[0]
    real, predicted = [], []
    for ep in range(min(starts, data.num_episodes)):
        start, stop = data.episode_bounds(ep)
        if stop - start <= HORIZON:
            continue
        frames = data.data[camera][start : start + HORIZON + 1]
        actions = data.data[ACTION][start : start + HORIZON]
        states = data.data[OBS_STATE][start]
        prediction = model.forward_dynamics(frames[:1], actions, embodiment, states=states, pixel_residual=True)
        real.append(frames[1:])
        predicted.append(prediction.frames[0])
    real, predicted = np.stack(real), np.stack(predicted)
    found = object_metrics(real, predicted)["effector_found"]
    return float(
        np.mean(
            [
                psnr(p, r)
                for p, r in zip(predicted.reshape(-1, *real.shape[2:]), real.reshape(-1, *real.shape[2:]), strict=True)
            ]
        )
    ), float(np.mean([share for share in found if share is not None]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="default")
    parser.add_argument("--data-dir", default="out/tuning")
    parser.add_argument("--episodes", type=int, default=10, help="tuning episodes per embodiment")
    parser.add_argument("--levels", type=float, nargs="+", default=[16.0, 32.0, 64.0, 128.0, 255.0])
    parser.add_argument("--seed", type=int, default=FIRST_TUNING_SEED, help="first tuning seed (point; arm2 +10000)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    model = WorldActionModel.from_pretrained(args.checkpoint)
    data = {
        e: heldout(Path(args.data_dir), e, 0.3, args.episodes, args.seed + 10_000 * k)
        for k, e in enumerate(("point", "arm2"))
    }
    results: dict[str, dict[str, float]] = {}
    for level in args.levels:
        pixel_residual.CHANGE_LEVELS = level  # read at every call
        row = {}
        for embodiment, path in data.items():
            row[f"{embodiment}_psnr"], row[f"{embodiment}_effector_found"] = score(
                model, path, embodiment, args.episodes
            )
        row["mean_psnr"] = float(np.mean([row["point_psnr"], row["arm2_psnr"]]))
        row["mean_effector_found"] = float(np.mean([row["point_effector_found"], row["arm2_effector_found"]]))
        results[f"{level:g}"] = row
        print(
            f"CHANGE_LEVELS {level:5g}: PSNR h1..8 point {row['point_psnr']:.2f} arm2 {row['arm2_psnr']:.2f} dB; "
            f"effector found point {row['point_effector_found']:.2f} arm2 {row['arm2_effector_found']:.2f}",
            flush=True,
        )
    best_found = max(r["mean_effector_found"] for r in results.values())
    keeping = {k: r for k, r in results.items() if r["mean_effector_found"] >= best_found - 1e-9}
    best = max(keeping, key=lambda k: keeping[k]["mean_psnr"])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(args.json, json.dumps({"seed": args.seed, "results": results, "best": best}, indent=2))
    print(f"best_change_levels={best}")


if __name__ == "__main__":
    main()
