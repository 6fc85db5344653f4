"""The training objective: rectified-flow loss over the noisy tokens of per-sample plans.

Each sample of a batch has its own mode (a plan from ``plan.make_plan``). Frames and actions draw
independent flow times (UWM-style), so one network learns forward dynamics, inverse dynamics, the
policy and their marginals. Clean conditioning tokens have t = 0 and no loss; padded action and
state channels get no noise and no loss; actions weigh ``action_loss_weight`` (Cosmos 3: 10).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812

from cosmos_robot.model.flow import add_noise, flow_loss, sample_time, velocity_target
from cosmos_robot.model.network import GeneratorInputs, ReasonerInputs, WorldActionNetwork
from cosmos_robot.model.plan import Mode, Plan, make_plan


@dataclass
class BatchPlan:
    """Per-sample noisy flags: frames (B, T), actions (B, K), states (B, T)."""

    frames: torch.Tensor
    actions: torch.Tensor
    states: torch.Tensor

    @classmethod
    def from_modes(cls, modes: list[Mode], num_frames: int, num_actions: int, context_frames: int = 1) -> BatchPlan:
        """Stack the plan of each sample's mode."""
        plans: list[Plan] = [make_plan(m, num_frames, num_actions, context_frames) for m in modes]
        return cls(*(torch.stack([getattr(p, name) for p in plans]) for name in ("frames", "actions", "states")))


@dataclass
class LossTerms:
    """Total loss and its parts (detached parts, for logging)."""

    total: torch.Tensor
    frames: float
    actions: float
    states: float
    reward: float
    success: float


def training_loss(
    network: WorldActionNetwork,
    reasoner: ReasonerInputs,
    clean: GeneratorInputs,
    plan: BatchPlan,
    rewards: torch.Tensor | None = None,
    successes: torch.Tensor | None = None,
    shift: float = 1.0,
    generator: torch.Generator | None = None,
) -> LossTerms:
    """Noise the planned tokens, predict velocities, and return the weighted flow loss plus head losses.

    Args:
        network: the world-action network.
        reasoner: clean reasoner inputs.
        clean: generator inputs holding clean values (their ``*_t`` fields are ignored).
        plan: which tokens each sample generates.
        rewards: (B, K) true rewards per action, or None to skip the reward head.
        successes: (B, K) true success flags per action, or None.
        shift: time shift of the logit-normal sampler.
        generator: seeds noise and times.
    """
    b, t_frames = clean.frame_t.shape
    k = clean.actions.shape[1]
    device = clean.frames.device

    def noise_like(x: torch.Tensor) -> torch.Tensor:
        return torch.randn(x.shape, generator=generator, dtype=x.dtype).to(device)

    # Independent flow times for frames and actions (states follow their frames).
    t_frame = sample_time((b, 1), shift, generator).to(device).expand(b, t_frames) * plan.frames
    t_action = sample_time((b, 1), shift, generator).to(device).expand(b, k) * plan.actions
    t_state = t_frame * plan.states

    eps_f = noise_like(clean.frames)
    eps_a = noise_like(clean.actions) * clean.action_channels[:, None]
    eps_s = noise_like(clean.states) * clean.state_channels[:, None]
    noisy = clean.replace(
        frames=add_noise(clean.frames, eps_f, t_frame[..., None, None]),
        frame_t=t_frame,
        actions=add_noise(clean.actions, eps_a, t_action[..., None]),
        action_t=t_action,
        states=add_noise(clean.states, eps_s, t_state[..., None]),
        state_t=t_state,
    )
    out = network(reasoner, noisy)

    gg = clean.frames.shape[2]
    sse_f, n_f = flow_loss(
        out.frames.flatten(1, 2),
        velocity_target(clean.frames, eps_f).flatten(1, 2),
        plan.frames.repeat_interleave(gg, dim=1),
    )
    sse_a, n_a = flow_loss(
        out.actions,
        velocity_target(clean.actions, eps_a),
        plan.actions,
        clean.action_channels,
        weight=network.config.action_loss_weight,
    )
    sse_s, n_s = flow_loss(out.states, velocity_target(clean.states, eps_s), plan.states, clean.state_channels)
    # Normalise by the unweighted count so the action weight really tilts the balance.
    total = (sse_f + sse_a + sse_s) / (n_f + n_a + n_s).clamp_min(1.0)

    reward_loss = success_loss = torch.zeros((), device=device)
    if rewards is not None:
        reward_loss = F.mse_loss(out.reward, rewards.to(out.reward.dtype))
        total = total + reward_loss
    if successes is not None:
        success_loss = F.binary_cross_entropy_with_logits(out.success_logit, successes.to(out.success_logit.dtype))
        total = total + success_loss

    def mean(sse: torch.Tensor, n: torch.Tensor) -> float:
        return float(sse.detach() / n.clamp_min(1.0))

    return LossTerms(
        total,
        mean(sse_f, n_f),
        mean(sse_a, n_a) / network.config.action_loss_weight,
        mean(sse_s, n_s),
        float(reward_loss.detach()),
        float(success_loss.detach()),
    )
