"""Training the frame autoencoder: the first phase of ``train``, before it is frozen.

Few colours on a flat background: an L1 term keeps small objects sharp where MSE alone blurs them,
and every pixel weighs more the further its colour is from the frame's background (its median
colour). Without that weight the autoencoder dropped arm2's fingertip, a 5-pixel sphere: the colour
detector found it in 0.7 % of reconstructions of real frames (MuJoCo's own frames: 90 %, the rest
out of the camera's view), so no forward model on those latents could draw it; with
``object_weight=10``, 88 % (docs/model.md).
"""

from __future__ import annotations

import torch

from cosmos_robot.metrics import psnr
from cosmos_robot.model.tokenizers import FrameAutoencoder, float_to_frames, frames_to_float
from cosmos_robot.part_training import train_part
from cosmos_robot.phase_checkpoint import PhaseSaver


def object_weights(x: torch.Tensor, object_weight: float) -> torch.Tensor:
    """(N, 1, H, W) loss weights of frames (N, 3, H, W) in [-1, 1]: 1 on the background, plus
    ``object_weight`` per unit of a pixel's largest channel distance from the frame's median colour."""
    background = x.flatten(2).median(2).values[..., None, None]
    return 1.0 + object_weight * (x - background).abs().amax(1, keepdim=True)


def reconstruction_loss(recon: torch.Tensor, x: torch.Tensor, object_weight: float) -> torch.Tensor:
    """L1 + MSE of reconstructions of frames x (N, 3, H, W) in [-1, 1], weighted by :func:`object_weights`."""
    error = recon - x
    weight = object_weights(x, object_weight)
    return ((error.abs() + error.pow(2)) * weight).mean() / weight.mean()


@torch.no_grad()
def reconstruction_psnr(autoencoder: FrameAutoencoder, frames_nhwc: torch.Tensor, batch: int = 256) -> float:
    """PSNR (dB) of the autoencoder's reconstructions of uint8 frames."""
    autoencoder.eval()
    recon = [
        float_to_frames(autoencoder(frames_to_float(frames_nhwc[i : i + batch])))
        for i in range(0, len(frames_nhwc), batch)
    ]
    return psnr(frames_nhwc, torch.cat(recon))


def train_autoencoder(
    autoencoder: FrameAutoencoder,
    frames_nhwc: torch.Tensor,
    steps: int = 1000,
    batch_size: int = 64,
    lr: float = 2e-3,
    seed: int = 0,
    progress: bool = True,
    object_weight: float = 0.0,
    saver: PhaseSaver | None = None,
) -> list[float]:
    """Train on uint8 frames (N, H, W, 3) with L1 + MSE weighted by :func:`object_weights`; returns the
    loss per step. ``saver`` checkpoints the loop (and resumes it from ``saver.resume_from``)."""
    if len(frames_nhwc) == 0:
        raise ValueError("frames_nhwc is empty; expected at least one frame")

    def step_loss(rng: torch.Generator) -> torch.Tensor:
        idx = torch.randint(len(frames_nhwc), (min(batch_size, len(frames_nhwc)),), generator=rng)
        x = frames_to_float(frames_nhwc[idx])
        return reconstruction_loss(autoencoder(x), x, object_weight)

    return train_part(autoencoder, step_loss, steps, lr, seed, "autoencoder", progress, saver, grad_clip=None)
