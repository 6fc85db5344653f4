"""Training the fast decoder: after the autoencoder is frozen, a small decoder learns to draw frames
from the same latents, so a learned env with pixel observations can decode every step.

It is trained on real frames (not on the big decoder's output, whose blur it would copy), with the
autoencoder's own loss: L1 + MSE, each pixel weighted by its distance from the frame's background
colour (small objects are what the env is read for).
"""

from __future__ import annotations

import torch
from tqdm.auto import tqdm

from cosmos_robot.autoencoder_training import one_cycle, reconstruction_loss
from cosmos_robot.metrics import psnr
from cosmos_robot.model.tokenizers import FrameAutoencoder, float_to_frames, frames_to_float
from cosmos_robot.phase_checkpoint import NO_SAVER, PhaseSaver


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
    if steps < 1:
        raise ValueError(f"steps={steps!r}; expected a positive integer")
    rng = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(decoder.parameters(), lr=lr, weight_decay=0.0)
    schedule = one_cycle(optimizer, lr, steps)
    saver = saver or NO_SAVER
    loop = saver.start(decoder, optimizer, schedule, rng)
    autoencoder.eval()
    decoder.train()
    losses = loop.losses
    bar = tqdm(range(loop.step, steps), initial=loop.step, total=steps, desc="fast decoder", disable=not progress)
    for step in bar:
        idx = torch.randint(len(frames_nhwc), (min(batch_size, len(frames_nhwc)),), generator=rng)
        x = frames_to_float(frames_nhwc[idx])
        with torch.no_grad():
            latents = autoencoder.encode(x)
        loss = reconstruction_loss(decoder(latents), x, object_weight)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        saver.after_step(step + 1, steps, decoder, optimizer, schedule, rng, losses)
    decoder.eval()
    return losses


@torch.no_grad()
def fast_reconstruction_psnr(autoencoder: FrameAutoencoder, frames_nhwc: torch.Tensor, batch: int = 256) -> float:
    """PSNR (dB) of the fast decoder's reconstructions of uint8 frames (encoder, then fast decoder)."""
    decoder = _fast_decoder(autoencoder)
    recon = [
        float_to_frames(decoder(autoencoder.encode(frames_to_float(frames_nhwc[i : i + batch]))))
        for i in range(0, len(frames_nhwc), batch)
    ]
    return psnr(frames_nhwc, torch.cat(recon))
