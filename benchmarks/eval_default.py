"""Held-out quality of a model (default: the shipped one) against the issue's bars, both embodiments.

Collects held-out episodes with evaluation seeds (500000+, disjoint from every recipe's data),
runs ``evaluate_offline`` on expert and noisy episodes of each embodiment, and prints the bars:
forward dynamics beats copy-last-frame PSNR at every horizon 1..8 (on noisy episodes, where things
move), inverse dynamics R^2 >= 0.9 (on noisy episodes: varied actions), and policy action MSE <= 0.3x
the mean-action baseline (on expert episodes).

    .venv/bin/python benchmarks/eval_default.py --json out/eval_default.json [--checkpoint C] [--quick]

Last line: ``bars_met=<n>/6``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.collect import collect
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.eval.offline import evaluate_offline
from cosmos_robot.seeds import EVAL_SEED
from cosmos_robot.world_model import WorldActionModel


def heldout(data_dir: Path, embodiment: str, noise: float, episodes: int, seed: int) -> Path:
    """A held-out dataset (collected once). Its folder names its seed: tuning and evaluation episodes
    never share a cached folder."""
    path = data_dir / f"{embodiment}_noise{noise:.1f}_{episodes}_seed{seed}"
    if not (path / "meta" / "info.json").is_file():
        collect(
            PUSH_BLOCK_IDS[embodiment],
            episodes,
            path,
            noise=noise,
            seed=seed,
            video=False,
            overwrite=path.exists(),
            progress=False,
        )
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="default")
    parser.add_argument("--data-dir", default="out/heldout")
    parser.add_argument("--quick", action="store_true", help="5 episodes per dataset instead of 20")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument(
        "--seed", type=int, default=EVAL_SEED, help="first held-out episode seed (datasets at +10000 steps)"
    )
    parser.add_argument("--json", help="write all metrics here")
    parser.add_argument(
        "--plain-decode",
        action="store_true",
        help="score the plain decode of predicted latents instead of observed frame + decoded change",
    )
    args = parser.parse_args()
    model = WorldActionModel.from_pretrained(args.checkpoint)
    episodes = 5 if args.quick else 20
    report, bars = {}, {}
    for k, embodiment in enumerate(("point", "arm2")):
        noisy = evaluate_offline(
            model,
            heldout(Path(args.data_dir), embodiment, 0.3, episodes, args.seed + 10_000 * (2 * k + 1)),
            steps=args.steps,
            progress=False,
            pixel_residual=not args.plain_decode,
        )
        expert = evaluate_offline(
            model,
            heldout(Path(args.data_dir), embodiment, 0.0, episodes, args.seed + 10_000 * 2 * k),
            steps=args.steps,
            progress=False,
            pixel_residual=not args.plain_decode,
        )
        report[embodiment] = {"noisy": noisy.to_json(), "expert": expert.to_json()}
        fd_gain = np.array(noisy.fd_psnr) - np.array(noisy.fd_psnr_copy_last)
        ratio = expert.policy_action_mse / expert.policy_action_mse_mean_baseline
        bars[f"{embodiment}_fd_beats_copy_last"] = bool(np.all(fd_gain > 0))
        bars[f"{embodiment}_id_r2_ge_0.9"] = noisy.id_r2 >= 0.9
        bars[f"{embodiment}_policy_mse_le_0.3x"] = ratio <= 0.3
        print(
            f"{embodiment}: FD PSNR (noisy) model "
            + " ".join(f"{p:.1f}" for p in noisy.fd_psnr)
            + " | copy-last "
            + " ".join(f"{p:.1f}" for p in noisy.fd_psnr_copy_last)
        )
        print(
            f"{embodiment}: ID R2 {noisy.id_r2:.3f} (noisy), {expert.id_r2:.3f} (expert); ID MSE "
            f"{noisy.id_mse:.4f}; policy MSE {expert.policy_action_mse:.4f} vs mean-action "
            f"{expert.policy_action_mse_mean_baseline:.4f} (ratio {ratio:.2f})"
        )
    for name, met in bars.items():
        print(f"  {'MET ' if met else 'MISS'} {name}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(
            args.json,
            json.dumps(
                {"metrics": report, "bars": bars, "episodes": episodes, "checkpoint": args.checkpoint}, indent=2
            ),
        )
    print(f"bars_met={sum(bars.values())}/{len(bars)}")


if __name__ == "__main__":
    main()
