"""Training one part of the model alone, on its own loss: the loop every phase before the MoT shares.

The autoencoder, the fast decoder, the forward prior and (in recipes that ask for it) the action prior
are trained this way and then frozen: each has a loss of its own, so it needs no MoT pass, and the MoT
then learns against parts that no longer move. The loop checkpoints through a
:class:`~cosmos_robot.phase_checkpoint.PhaseSaver`, so a run killed inside it resumes bit-identically.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from tqdm.auto import tqdm

from cosmos_robot.phase_checkpoint import NO_SAVER, PhaseSaver

# One step's loss, given the phase's batch generator (every random draw of a step comes from it).
StepLoss = Callable[[torch.Generator], torch.Tensor]


def one_cycle(optimizer: torch.optim.Optimizer, lr: float, steps: int) -> torch.optim.lr_scheduler.OneCycleLR:
    """The one-cycle schedule of a training phase; its warm-up spans at least two steps (a one-step
    phase divides by zero)."""
    total = max(steps, 3)
    return torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, total_steps=total, pct_start=max(0.05, 2.0 / total)
    )


def train_part(
    part: torch.nn.Module,
    step_loss: StepLoss,
    steps: int,
    lr: float,
    seed: int,
    desc: str,
    progress: bool = True,
    saver: PhaseSaver | None = None,
    grad_clip: float | None = 1.0,
) -> list[float]:
    """Train ``part`` (its parameters alone) for ``steps`` AdamW steps on a one-cycle schedule; returns
    the loss per step.

    Args:
        part: the module whose parameters are trained.
        step_loss: the loss of one step's batch, drawn with the generator it is given.
        steps: optimiser steps.
        lr: peak learning rate.
        seed: seeds the batch generator.
        desc: the progress bar's label.
        progress: show a progress bar.
        saver: checkpoints the loop (and resumes it from ``saver.resume_from``).
        grad_clip: the gradient-norm clip (None: none).
    """
    if steps < 1:
        raise ValueError(f"steps={steps!r}; expected a positive integer")
    rng = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(part.parameters(), lr=lr, weight_decay=0.0)
    schedule = one_cycle(optimizer, lr, steps)
    saver = saver or NO_SAVER
    loop = saver.start(part, optimizer, schedule, rng)
    part.train()
    losses = loop.losses
    bar = tqdm(range(loop.step, steps), initial=loop.step, total=steps, desc=desc, disable=not progress)
    for step in bar:
        loss = step_loss(rng)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(part.parameters(), grad_clip)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if len(losses) % 50 == 0:
            bar.set_postfix(loss=f"{sum(losses[-50:]) / 50:.4f}")
        saver.after_step(step + 1, steps, part, optimizer, schedule, rng, losses)
    # No gradient may outlive this phase: a stale one would count in the MoT's gradient-norm clip.
    optimizer.zero_grad(set_to_none=True)
    part.eval()
    return losses
