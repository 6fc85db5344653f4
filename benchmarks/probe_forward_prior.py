"""The forward prior alone, on a checkpoint's frozen autoencoder, measured with the object metrics.

Trains a fresh forward prior (``--steps`` steps of ``--batch`` rollouts of 4 actions, then
``--finetune-steps`` of 8 as the recipe does) at ``--width`` on the latents
of ``--data`` encoded by ``--autoencoder``'s autoencoder, writes a checkpoint holding only that
prior (the MoT is untrained, so the checkpoint is for ``forward_path="prior"`` only), and runs the
``eval fd`` harness on it: minutes, where a full retrain takes an hour. This is how the numbers in
docs/results.md ("The forward prior alone") were made.

    .venv/bin/python benchmarks/probe_forward_prior.py --data data/point_* data/arm2_* --steps 800 \\
        --out out/probe_prior --json out/probe_prior.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.checkpoint import Checkpoint, load_autoencoder, save_checkpoint
from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.eval.fd_fidelity import evaluate_fd
from cosmos_robot.forward_prior_training import rollout_error, train_forward_prior
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.forward_prior import ROLLOUT_STEPS
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.world_model import WorldActionModel, default_checkpoint_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", required=True, help="LeRobot datasets (the default recipe's)")
    parser.add_argument(
        "--autoencoder", default=str(default_checkpoint_path()), help="checkpoint whose autoencoder to use"
    )
    parser.add_argument("--steps", type=int, default=800, help="steps on rollouts of 4 actions")
    parser.add_argument("--finetune-steps", type=int, default=0, help="then steps on rollouts of 8 (the recipe's)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--width", type=int, default=32, help="the prior's conv width (the default's: 32)")
    parser.add_argument("--warp", action="store_true", help="ModelConfig.forward_warp")
    parser.add_argument("--block", default="norm_gelu", help="ModelConfig.forward_block (norm_gelu or relu)")
    parser.add_argument("--bfloat16", action="store_true", help="ModelConfig.forward_bfloat16")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--episodes", type=int, default=8, help="eval fd episodes per action source")
    parser.add_argument("--out", required=True, help="checkpoint folder to write")
    parser.add_argument("--seed", type=int, default=0, help="seeds the data split (the weights: seed + 1)")
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    overrides = {
        "forward_prior": True,
        "forward_width": args.width,
        "forward_warp": args.warp,
        "forward_block": args.block,
        "forward_bfloat16": args.bfloat16,
    }
    config = ModelConfig.from_dict(preset("small").to_dict() | overrides)
    data = TrainingSet(args.data, config, num_frames=5, seed=args.seed)
    autoencoder = load_autoencoder(args.autoencoder).requires_grad_(False).eval()
    # Saved as it was read (with its fast decoder, where it has one).
    autoencoder_config = json.loads((Path(args.autoencoder) / "config.json").read_text())["autoencoder"]
    data.prepare(autoencoder)
    torch.manual_seed(args.seed + 1)
    network = WorldActionNetwork(config)
    started = time.perf_counter()
    # The recipe's two stages, with its learning rates and seeds (cosmos_robot/train.py).
    train_forward_prior(
        network, data.transitions(steps=ROLLOUT_STEPS), steps=args.steps, batch_size=args.batch, seed=args.seed + 3
    )
    if args.finetune_steps:
        rollout = 2 * ROLLOUT_STEPS
        train_forward_prior(
            network,
            data.transitions(steps=rollout),
            steps=args.finetune_steps,
            batch_size=args.batch,
            lr=1e-3,
            seed=args.seed + 5,
        )
    seconds = time.perf_counter() - started
    held_out = rollout_error(network, data.transitions("val", steps=ROLLOUT_STEPS))
    window = {"num_frames": 5, "context_frames": 1, "fps": 10.0}
    checkpoint = Checkpoint(network, autoencoder, dict(data.processor.entries), window, autoencoder_config)
    save_checkpoint(checkpoint, args.out, overwrite=True)
    model = WorldActionModel.from_pretrained(args.out)
    model.forward_path = "prior"
    report = {"train_seconds": seconds, "held_out": vars(held_out)}
    for embodiment in sorted(data.data):
        result = evaluate_fd(model, embodiment, episodes=args.episodes, progress=False)
        report[embodiment] = {
            key: getattr(result, key)
            for key in (
                "effector_found",
                "effector_error_mm",
                "effector_error_mm_shuffled",
                "block_error_mm",
                "state_error",
                "delta_psnr_shuffled",
            )
        } | {"expert_block_error_mm": result.per_source["expert"]["block_error_mm"]}
        r = report[embodiment]
        print(
            f"{embodiment}: effector found h1/h8/h16 {r['effector_found'][0]:.2f}/{r['effector_found'][7]:.2f}/"
            f"{r['effector_found'][15]:.2f}; expert block error h16 {r['expert_block_error_mm'][15]:.1f} mm; "
            f"delta_psnr_shuffled {r['delta_psnr_shuffled']:.2f} dB"
        )
    write_file_atomic(args.json, json.dumps(report, indent=2))
    print(
        f"prior trained in {seconds:.0f} s; held-out latent MSE {held_out.latent_mse:.3f} "
        f"vs copy {held_out.copy_mse:.3f}"
    )


if __name__ == "__main__":
    main()
