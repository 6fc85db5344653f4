"""Training the fast decoder: after the autoencoder is frozen, a small decoder learns to draw frames
from the same latents, so a learned env with pixel observations can decode every step.

It is trained on real frames (not on the big decoder's output, whose blur it would copy), with the
autoencoder's own loss: L1 + MSE, each pixel weighted by its distance from the frame's background
colour (small objects are what the env is read for).
"""

from __future__ import annotations

import torch

from cosmos_robot.autoencoder_training import reconstruction_loss
from cosmos_robot.metrics import psnr
from cosmos_robot.model.tokenizers import FrameAutoencoder, float_to_frames, frames_to_float
from cosmos_robot.part_training import train_part
from cosmos_robot.phase_checkpoint import PhaseSaver


def _fast_decoder(autoencoder: FrameAutoencoder) -> torch.nn.Module:
    if autoencoder.fast_decoder is None:
        raise ValueError("the autoencoder has no fast decoder; build it with FrameAutoencoder(..., fast_decoder=True)")
    return autoencoder.fast_decoder


def train_fast_decoder(
    autoencoder: FrameAutoencoder,
    frames_nhwc: torch.Tensor,
    steps: int = 2000,
    batch_size: int = 128,
    lr: float = 2e-3,
    object_weight: float = 10.0,
    seed: int = 0,
    progress: bool = True,
    saver: PhaseSaver | None = None,
) -> list[float]:
    """Train ``autoencoder.fast_decoder`` on the frozen encoder's latents of uint8 frames (N, H, W, 3);
    returns the loss per step. Nothing else of the autoencoder changes."""
    decoder = _fast_decoder(autoencoder)
    if len(frames_nhwc) == 0:
        raise ValueError("frames_nhwc is empty; expected at least one frame")
    autoencoder.eval()

    def step_loss(rng: torch.Generator) -> torch.Tensor:
        idx = torch.randint(len(frames_nhwc), (min(batch_size, len(frames_nhwc)),), generator=rng)
        x = frames_to_float(frames_nhwc[idx])
        with torch.no_grad():
            latents = autoencoder.encode(x)
        return reconstruction_loss(decoder(latents), x, object_weight)

    return train_part(decoder, step_loss, steps, lr, seed, "fast decoder", progress, saver, grad_clip=None)


@torch.no_grad()
def fast_reconstruction_psnr(autoencoder: FrameAutoencoder, frames_nhwc: torch.Tensor, batch: int = 256) -> float:
    """PSNR (dB) of the fast decoder's reconstructions of uint8 frames (encoder, then fast decoder)."""
    decoder = _fast_decoder(autoencoder)
    recon = [
        float_to_frames(decoder(autoencoder.encode(frames_to_float(frames_nhwc[i : i + batch]))))
        for i in range(0, len(frames_nhwc), batch)
    ]
    return psnr(frames_nhwc, torch.cat(recon))
