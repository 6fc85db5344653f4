"""Choose the policy's classifier-free guidance scale on tuning episodes (not the evaluation seeds).

Collects expert episodes with tuning seeds (320000 point, 330000 arm2: disjoint from every recipe's
data and from the evaluation seeds 500000+), and prints the policy's action MSE over the mean-action
MSE for each guidance scale - the metric of ``eval offline`` and of the issue's bar.
``world_model.POLICY_GUIDANCE`` is the scale this prints as best for the shipped default.

    .venv/bin/python benchmarks/tune_policy_guidance.py [--checkpoint default] [--scales 1 1.25 1.5 2]

Last line: ``best_guidance=<scale>`` (lowest mean ratio over the embodiments).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from eval_default import heldout  # noqa: E402

from cosmos_robot.datasets.windows import open_episodes  # noqa: E402
from cosmos_robot.eval.offline import policy_chunks  # noqa: E402
from cosmos_robot.keys import ACTION, OBS_STATE  # noqa: E402
from cosmos_robot.world_model import WorldActionModel  # noqa: E402

FIRST_TUNING_SEED = 320_000  # point; arm2 at + 10000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="default")
    parser.add_argument("--data-dir", default="out/tuning")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 1.25, 1.5, 1.75, 2.0, 2.5])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--seed", type=int, default=FIRST_TUNING_SEED, help="first tuning episode seed (point; arm2 +10000)"
    )
    parser.add_argument("--sampling-seed", type=int, default=0, help="seeds the policy's sampling noise")
    args = parser.parse_args()
    model = WorldActionModel.from_pretrained(args.checkpoint)
    ratios = {scale: [] for scale in args.scales}
    for embodiment, seed in {"point": args.seed, "arm2": args.seed + 10_000}.items():
        data = open_episodes(heldout(Path(args.data_dir), embodiment, 0.0, args.episodes, seed)).to_memory()
        camera, mean_action = data.image_keys[0], data.data[ACTION].mean(0)
        for scale in args.scales:
            predicted, true = [], []
            for ep in range(data.num_episodes):
                start, stop = data.episode_bounds(ep)
                p, t = policy_chunks(
                    model,
                    embodiment,
                    data.data[camera][start:stop],
                    data.data[OBS_STATE][start:stop],
                    data.data[ACTION][start:stop],
                    steps=args.steps,
                    seed=args.sampling_seed,
                    guidance_scale=scale,
                )
                predicted.append(p)
                true.append(t)
            predicted, true = np.concatenate(predicted), np.concatenate(true)
            ratio = float(((predicted - true) ** 2).mean() / ((mean_action - true) ** 2).mean())
            ratios[scale].append(ratio)
            print(f"{embodiment:5s} guidance {scale:4.2f}: policy MSE / mean-action MSE {ratio:.3f}", flush=True)
    best = min(args.scales, key=lambda s: np.mean(ratios[s]))
    print(f"best_guidance={best}")


if __name__ == "__main__":
    main()
