"""Rectified flow: noising, the velocity target, the time sampler, and a few-step Euler sampler.

Conventions (Cosmos 3): ``x_t = t * eps + (1 - t) * x0`` with t = 1 pure noise and t = 0 clean; the
network predicts ``v = eps - x0``. Clean conditioning tokens carry t = 0. The sampler takes the
network as a callable and knows nothing of its insides; the network knows nothing of sampling.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# velocity_fn(x_t, t) -> v, with x_t and v of one shape and t broadcastable per token.
VelocityFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def add_noise(x0: torch.Tensor, eps: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``x_t = t * eps + (1 - t) * x0``; ``t`` broadcasts over trailing axes (e.g. (B, N, 1))."""
    return t * eps + (1.0 - t) * x0


def velocity_target(x0: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """The regression target ``v = eps - x0``."""
    return eps - x0


def shift_time(u: torch.Tensor, shift: float) -> torch.Tensor:
    """``t = s * u / (1 + (s - 1) * u)``: shift > 1 spends more time at high noise."""
    return shift * u / (1.0 + (shift - 1.0) * u)


def sample_time(
    shape: tuple[int, ...],
    shift: float = 1.0,
    rng: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """Logit-normal times in (0, 1), then shifted."""
    u = torch.sigmoid(torch.randn(shape, generator=rng, device=device))
    return shift_time(u, shift)


def euler_times(steps: int, shift: float = 1.0) -> torch.Tensor:
    """(steps + 1,) times from 1 to 0 on the shifted schedule."""
    if steps < 1:
        raise ValueError(f"steps={steps}; expected at least 1")
    return shift_time(torch.linspace(1.0, 0.0, steps + 1), shift)


@torch.no_grad()
def euler_sample(
    velocity_fn: VelocityFn,
    noise: torch.Tensor,
    clean: torch.Tensor,
    noisy: torch.Tensor,
    steps: int = 10,
    shift: float = 1.0,
) -> torch.Tensor:
    """Integrate ``dx/dt = v`` from t = 1 to 0 for the noisy tokens; clean tokens stay fixed at t = 0.

    Args:
        velocity_fn: the network as ``(x_t, t) -> v``; ``t`` is (B, N, 1) per token.
        noise: (B, N, C) starting noise.
        clean: (B, N, C) values of the clean tokens (ignored where ``noisy``).
        noisy: (B, N) True for tokens to generate.
        steps: Euler steps.
        shift: time shift of the schedule.
    """
    gen = noisy[..., None]  # (B, N, 1)
    x = torch.where(gen, noise, clean)
    times = euler_times(steps, shift).to(noise.device)
    for t_now, t_next in zip(times[:-1], times[1:], strict=True):
        t = torch.where(gen, t_now, torch.zeros((), device=noise.device)).to(noise.dtype)
        v = velocity_fn(x, t)
        x = torch.where(gen, x + (t_next - t_now) * v, clean)
    return x


def classifier_free_guidance(v_cond: torch.Tensor, v_uncond: torch.Tensor, scale: float) -> torch.Tensor:
    """``v_uncond + scale * (v_cond - v_uncond)``; scale 1 is the conditional prediction."""
    return v_uncond + scale * (v_cond - v_uncond)
