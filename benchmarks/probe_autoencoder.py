"""What the frame autoencoder alone keeps of MuJoCo's frames, for variants of its decoder and loss.

The learned env draws its frames with the autoencoder's decoder, so what the autoencoder loses of a real
frame no env on its latents can draw: on arm2 its plain reconstructions of MuJoCo's frames lose the
fingertip about as often as the env does (``eval fd``'s ``autoencoder_floor``). This probe trains
autoencoders on the recipe's frames, each for the same steps and batch, and reads their reconstructions
of fresh MuJoCo episodes (expert, noisy and random, ``--episodes`` each from ``--seed``, 16 steps) with
``eval fd``'s object metrics: the fingertip or pusher found (in all, at the worst horizon, frames lost),
the effector's and the block's distance to their detection on MuJoCo's frame, and PSNR. ``--reference``
adds a trained checkpoint's autoencoder (e.g. the shipped default's) read the same way; ``--frozen-encoder``
trains only the variants' decoders, on a checkpoint's encoder kept as it is (its latents unchanged).

    .venv/bin/python benchmarks/probe_autoencoder.py --data-dir data --variants base shuffle \\
        --reference cosmos_robot/assets/default
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from cosmos_robot.atomic import write_file_atomic  # noqa: E402
from cosmos_robot.autoencoder_training import train_autoencoder  # noqa: E402
from cosmos_robot.envs import PUSH_BLOCK_IDS  # noqa: E402
from cosmos_robot.eval.fd_fidelity import SOURCES, record_mujoco  # noqa: E402
from cosmos_robot.eval.objects import object_metrics  # noqa: E402
from cosmos_robot.metrics import psnr  # noqa: E402
from cosmos_robot.model.tokenizers import FrameAutoencoder, float_to_frames, frames_to_float  # noqa: E402
from cosmos_robot.recipes import get_recipe, prepare_data  # noqa: E402
from cosmos_robot.seeds import FD_SEED  # noqa: E402

HORIZON = 16
VARIANTS = ("base", "shuffle", "fullres", "weight30", "wide_encoder", "latent12")


def _variant(name: str) -> tuple[FrameAutoencoder, float]:
    """An autoencoder of the named variant and its loss's object weight."""
    ae = FrameAutoencoder(8, 2)
    weight = 10.0
    if name == "base":
        pass
    elif name == "shuffle":
        # The last upsampling as sub-pixel convolution: each of a 2x2 block's pixels gets its own weights
        # instead of one learned interpolation of nearest-upsampled features (same cost).
        ae.decoder = nn.Sequential(*list(ae.decoder)[:-2], nn.Conv2d(32, 12, 3, 1, 1), nn.PixelShuffle(2))
    elif name == "fullres":
        # One more convolution block at full resolution (width 16): ~+50 % decoder cost.
        ae = FrameAutoencoder(8, 2, full_resolution_width=16)
    elif name == "weight30":
        weight = 30.0
    elif name == "wide_encoder":
        # The encoder at twice the width (the decoder as it is): is the fingertip lost in the encoding?
        ae.encoder = FrameAutoencoder(8, 2, width=64).encoder
    elif name == "latent12":
        # 12 latent channels instead of 8 (48-channel tokens downstream): is it lost for want of room?
        ae = FrameAutoencoder(12, 2)
    else:
        raise ValueError(f"variant={name!r}; expected one of {', '.join(VARIANTS)}")
    return ae, weight


@torch.no_grad()
def reconstruct(decode_encode, frames: np.ndarray, batch: int = 256) -> np.ndarray:
    """uint8 frames (..., H, W, 3) through ``decode_encode`` (float frames in, float frames out)."""
    flat = torch.from_numpy(frames.reshape(-1, *frames.shape[-3:]))
    out = [float_to_frames(decode_encode(frames_to_float(flat[i : i + batch]))) for i in range(0, len(flat), batch)]
    return torch.cat(out).numpy().reshape(frames.shape)


def read(real: dict[str, np.ndarray], recon: dict[str, np.ndarray]) -> dict[str, float]:
    """Pooled object metrics of reconstructions against MuJoCo's frames (steps 1..H of every source)."""
    real_all = np.concatenate([real[s] for s in SOURCES])
    recon_all = np.concatenate([recon[s] for s in SOURCES])
    m = object_metrics(real_all, recon_all)
    visible = np.array(m["effector_visible"]) * len(real_all)
    found = np.array([f if f is not None else 1.0 for f in m["effector_found"]])
    lost = np.rint(visible * (1 - found)).sum()
    block = [b for b in m["block_error_mm"] if b is not None]
    return {
        "effector_found": float((visible * found).sum() / visible.sum()),
        "effector_worst_horizon": float(found.min()),
        "effector_lost": int(lost),
        "effector_shown": int(np.rint(visible.sum())),
        "effector_error_mm": float(np.mean([e for e in m["effector_error_mm"] if e is not None])),
        "block_error_mm": float(np.mean(block)),
        "psnr": psnr(
            torch.from_numpy(real_all.reshape(-1, *real_all.shape[-3:])),
            torch.from_numpy(recon_all.reshape(-1, *recon_all.shape[-3:])),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", default="default", help="the recipe whose datasets train the autoencoders")
    parser.add_argument("--data-dir", default="data", help="where the recipe's datasets are (collected if not)")
    parser.add_argument("--variants", nargs="+", default=["base", "shuffle"], choices=VARIANTS)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--seed", type=int, default=FD_SEED)
    parser.add_argument("--reference", default=None, help="a checkpoint whose autoencoder is read too")
    parser.add_argument(
        "--frozen-encoder",
        default=None,
        help="a checkpoint whose encoder every variant keeps, frozen (only the decoders train; its latents stay)",
    )
    parser.add_argument("--json", default="probe_autoencoder.json", help="where the report is written")
    args = parser.parse_args()
    reshaped = sorted({"wide_encoder", "latent12"} & set(args.variants))
    if args.frozen_encoder and reshaped:
        parser.error(f"--variants {reshaped[0]} changes the encoder; expected it without --frozen-encoder")
    torch.set_num_threads(2)

    from cosmos_robot.datasets.training_set import TrainingSet
    from cosmos_robot.train import TrainConfig

    recipe = get_recipe(args.recipe)
    paths = prepare_data(recipe, args.data_dir)
    config = TrainConfig(datasets=paths, out=args.json + ".unused", **recipe.train)
    frames = TrainingSet(paths, config.model_config(), config.num_frames, seed=0).frames()
    print(f"{len(frames)} training frames")

    seeds = [args.seed + i for i in range(args.episodes)]
    real = {
        emb: {
            s: record_mujoco(PUSH_BLOCK_IDS[emb], noise, seeds, HORIZON)["frames"][:, 1:]
            for s, noise in SOURCES.items()
        }
        for emb in PUSH_BLOCK_IDS
    }
    results: dict[str, dict] = {}

    def report(name: str, decode_encode, seconds: float) -> None:
        results[name] = {"train_s": seconds}
        for emb, by_source in real.items():
            recon = {s: reconstruct(decode_encode, f) for s, f in by_source.items()}
            results[name][emb] = read(by_source, recon)
        print(name, json.dumps(results[name]), flush=True)

    if args.reference:
        from cosmos_robot.world_model import load_world_model

        ref = load_world_model(args.reference).autoencoder.eval()
        report("reference", lambda x: ref.decoder(ref.encode(x)), 0.0)
    for name in args.variants:
        torch.manual_seed(0)
        ae, weight = _variant(name)
        if args.frozen_encoder:
            from cosmos_robot.checkpoint import load_autoencoder

            ae.encoder = load_autoencoder(args.frozen_encoder).encoder.requires_grad_(False)
        start = time.perf_counter()
        train_autoencoder(ae, frames, steps=args.steps, batch_size=args.batch, object_weight=weight, seed=0)
        ae.eval()
        report(name, lambda x, ae=ae: ae.decoder(ae.encode(x)), time.perf_counter() - start)
        write_file_atomic(args.json, json.dumps(results, indent=1))
    write_file_atomic(args.json, json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
