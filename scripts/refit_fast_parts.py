"""Give a trained checkpoint the parts a fast learned env needs, without retraining its MoT.

- a fast decoder (``model.tokenizers.FastDecoder``), trained on the frozen autoencoder's latents of the
  recipe's frames (``fast_decoder_training``);
- optionally a smaller forward prior (``--forward-width`` / ``--forward-blocks``), retrained on the
  frozen latents exactly as ``train`` trains it (``forward_prior_training``), replacing the old one.

The MoT is kept: at inference it reads the prior's rollout only for the learned reward and success, so
re-check ``eval rank`` (which reads them) after replacing the prior. This is how the shipped default
got its fast parts (docs/model.md, "Fast parts"):

    .venv/bin/python scripts/refit_fast_parts.py --checkpoint default --recipe default --data-dir data \
        --fast-decoder-steps 3000 --forward-width 32 --forward-steps 1600 --out out/fast_default
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import torch

from cosmos_robot.checkpoint import load_checkpoint, save_checkpoint
from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.fast_decoder_training import fast_reconstruction_psnr, train_fast_decoder
from cosmos_robot.forward_prior_training import rollout_error, train_forward_prior
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.forward_prior import ROLLOUT_STEPS
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.recipes import get_recipe, prepare_data
from cosmos_robot.world_model import default_checkpoint_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--recipe", default="default", help="the recipe whose data trained the checkpoint")
    parser.add_argument("--data-dir", default="data", help="where the recipe's datasets are (collected if missing)")
    parser.add_argument("--out", required=True, help="checkpoint folder to write")
    parser.add_argument("--fast-decoder-steps", type=int, default=3000)
    parser.add_argument("--forward-width", type=int, help="retrain the forward prior at this width")
    parser.add_argument("--forward-blocks", type=int, help="... and this many blocks (default: the current)")
    parser.add_argument("--forward-steps", type=int, default=1600, help="steps of the retrained prior")
    parser.add_argument("--ae-object-weight", type=float, default=10.0, help="the autoencoder's object weight")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    checkpoint = load_checkpoint(default_checkpoint_path() if args.checkpoint == "default" else args.checkpoint)
    recipe = get_recipe(args.recipe)
    started = time.perf_counter()
    data = TrainingSet(prepare_data(recipe, args.data_dir), checkpoint.network.config, checkpoint.window["num_frames"])
    data.prepare(checkpoint.autoencoder.eval())
    report: dict[str, object] = {}

    old = checkpoint.autoencoder
    autoencoder = FrameAutoencoder(old.latent_channels, old.patch_merge, fast_decoder=True)
    autoencoder.load_state_dict(old.state_dict(), strict=False)
    autoencoder.requires_grad_(False)
    autoencoder.fast_decoder.requires_grad_(True)
    train_fast_decoder(autoencoder, data.frames(), steps=args.fast_decoder_steps, object_weight=args.ae_object_weight)
    autoencoder.requires_grad_(False).eval()
    held_out = data.frames("val")[:2048]
    with torch.no_grad():
        report["fast_decoder_psnr"] = fast_reconstruction_psnr(autoencoder, held_out)
    checkpoint.autoencoder = autoencoder
    checkpoint.autoencoder_config = dict(checkpoint.autoencoder_config) | {"fast_decoder": True}

    if args.forward_width is not None:
        network = checkpoint.network
        val = data.transitions("val", steps=ROLLOUT_STEPS)
        report["old_prior"] = dataclasses.asdict(rollout_error(network, val))
        blocks = args.forward_blocks or network.config.forward_blocks
        config = ModelConfig.from_dict(
            network.config.to_dict() | {"forward_width": args.forward_width, "forward_blocks": blocks}
        )
        torch.manual_seed(1)
        refit = WorldActionNetwork(config)
        kept = {k: v for k, v in network.state_dict().items() if not k.startswith("forward_prior.")}
        refit.load_state_dict(kept, strict=False)
        train_forward_prior(refit, data.transitions(steps=ROLLOUT_STEPS), steps=args.forward_steps, seed=3)
        refit.forward_prior.requires_grad_(False)
        report["new_prior"] = dataclasses.asdict(rollout_error(refit, val))
        checkpoint.network = refit.eval()
    checkpoint.training = None
    save_checkpoint(checkpoint, args.out)
    report["seconds"] = time.perf_counter() - started
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
