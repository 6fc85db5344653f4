"""The training objective: rectified-flow loss over the noisy tokens of per-sample plans.

Each sample of a batch has its own mode (a plan from ``plan.make_plan``). Frames and actions draw
independent flow times (UWM-style), so one network learns forward dynamics, inverse dynamics, the
policy and their marginals. Clean conditioning tokens have t = 0 and no loss; padded action and
state channels get no noise and no loss; actions weigh ``action_loss_weight`` (Cosmos 3: 10).
With ``ModelConfig.target == "x0"`` the loss is the squared error of the predicted clean values
(the velocity loss weighted by t^2); with ``"velocity"`` it is the velocity error (Cosmos 3).

The loss is a mean over samples of per-sample means, and the noise is drawn for a whole batch by
:func:`draw_noise`: a data-parallel rank can then draw the global batch's noise and keep its slice,
and its gradients average to exactly the single-process gradient.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F  # noqa: N812

from cosmos_robot.model.action_prior import prior_loss
from cosmos_robot.model.flow import add_noise, sample_time, velocity_target
from cosmos_robot.model.inverse_prior import TransitionBatch, inverse_loss
from cosmos_robot.model.network import GeneratorInputs, PriorBatch, ReasonerInputs, WorldActionNetwork
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

    def select(self, index: torch.Tensor | slice) -> BatchPlan:
        """The plan of a subset of samples."""
        return BatchPlan(self.frames[index], self.actions[index], self.states[index])


@dataclass
class FlowNoise:
    """Noise and flow times of a batch: eps per modality, one time per sample for frames and for actions."""

    frames: torch.Tensor
    actions: torch.Tensor
    states: torch.Tensor
    t_frames: torch.Tensor  # (B, 1)
    t_actions: torch.Tensor  # (B, 1)

    def select(self, index: torch.Tensor | slice) -> FlowNoise:
        """The noise of a subset of samples."""
        return FlowNoise(*(getattr(self, f.name)[index] for f in fields(self)))


def draw_noise(clean: GeneratorInputs, generator: torch.Generator | None = None, shift: float = 1.0) -> FlowNoise:
    """Gaussian noise for every generator value and independent frame/action flow times (logit-normal, shifted)."""
    b = clean.frames.shape[0]

    def randn(x: torch.Tensor) -> torch.Tensor:
        return torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)

    return FlowNoise(
        frames=randn(clean.frames),
        actions=randn(clean.actions) * clean.action_channels[:, None],
        states=randn(clean.states) * clean.state_channels[:, None],
        t_frames=sample_time((b, 1), shift, generator).to(clean.frames.device),
        t_actions=sample_time((b, 1), shift, generator).to(clean.frames.device),
    )


@dataclass
class LossTerms:
    """Total loss, the per-sample flow loss (for per-mode logging) and detached parts."""

    total: torch.Tensor
    per_sample: torch.Tensor
    frames: float
    actions: float
    states: float
    reward: float
    success: float
    prior: float = 0.0
    inverse: float = 0.0


def _sse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample (sum of masked squared errors, count); tensors (B, N, C), mask broadcastable."""
    mask = mask.to(pred.dtype).expand_as(pred)
    return ((pred - target) ** 2 * mask).flatten(1).sum(1), mask.flatten(1).sum(1)


def training_loss(
    network: WorldActionNetwork,
    reasoner: ReasonerInputs,
    clean: GeneratorInputs,
    plan: BatchPlan,
    noise: FlowNoise,
    rewards: torch.Tensor | None = None,
    successes: torch.Tensor | None = None,
    prior_batch: PriorBatch | None = None,
    inverse_batch: TransitionBatch | None = None,
) -> LossTerms:
    """Noise the planned tokens, predict velocities, and return the weighted flow loss plus head losses.

    Args:
        network: the world-action network.
        reasoner: clean reasoner inputs.
        clean: generator inputs holding clean values (their ``*_t`` fields are ignored).
        plan: which tokens each sample generates.
        noise: from :func:`draw_noise` for this batch.
        rewards: (B, K) true rewards per action, or None to skip the reward head.
        successes: (B, K) true success flags per action, or None.
        prior_batch: demonstration windows for the action prior's regression loss (added to the
            total), or None to skip it.
        inverse_batch: consecutive-frame pairs for the inverse prior's regression loss (added to the
            total), or None to skip it.
    """
    t_frame = noise.t_frames * plan.frames  # (B, T)
    t_action = noise.t_actions * plan.actions  # (B, K)
    t_state = t_frame * plan.states
    noisy = clean.replace(
        frames=add_noise(clean.frames, noise.frames, t_frame[..., None, None]),
        frame_t=t_frame,
        actions=add_noise(clean.actions, noise.actions, t_action[..., None]),
        action_t=t_action,
        states=add_noise(clean.states, noise.states, t_state[..., None]),
        state_t=t_state,
    )
    extra = {"prior_batch": prior_batch, "inverse_batch": inverse_batch}
    out = network(reasoner, noisy, **{k: v for k, v in extra.items() if v is not None})

    frame_mask = plan.frames[..., None, None]
    action_mask = plan.actions[..., None] & clean.action_channels[:, None]
    state_mask = plan.states[..., None] & clean.state_channels[:, None]
    if out.x0 is not None:  # x0-predicting heads: the loss is the error of the clean values
        sse_f, n_f = _sse(out.x0[0], clean.frames, frame_mask)
        sse_a, n_a = _sse(out.x0[1], clean.actions, action_mask)
        sse_s, n_s = _sse(out.x0[2], clean.states, state_mask)
    else:
        sse_f, n_f = _sse(out.frames, velocity_target(clean.frames, noise.frames), frame_mask)
        sse_a, n_a = _sse(out.actions, velocity_target(clean.actions, noise.actions), action_mask)
        sse_s, n_s = _sse(out.states, velocity_target(clean.states, noise.states), state_mask)
    weight = getattr(network, "module", network).config.action_loss_weight  # DDP wraps the network
    # Each modality is averaged over its own noisy elements, then actions are weighted: normalising by
    # the joint count would drown a sample's 8 action values among its 2048 frame values.
    per_sample = sse_f / n_f.clamp_min(1.0) + weight * sse_a / n_a.clamp_min(1.0) + sse_s / n_s.clamp_min(1.0)
    total = per_sample.mean()

    reward_loss = success_loss = torch.zeros((), device=total.device)
    if rewards is not None:
        reward_loss = F.mse_loss(out.reward, rewards.to(out.reward.dtype))
        total = total + reward_loss
    if successes is not None:
        success_loss = F.binary_cross_entropy_with_logits(out.success_logit, successes.to(out.success_logit.dtype))
        total = total + success_loss

    prior_term = torch.zeros((), device=total.device)
    if prior_batch is not None:
        prior_term = prior_loss(out.prior, prior_batch.actions, prior_batch.action_channels, prior_batch.action_valid)
        total = total + prior_term
    inverse_term = torch.zeros((), device=total.device)
    if inverse_batch is not None:
        inverse_term = inverse_loss(out.inverse, inverse_batch.actions, inverse_batch.action_channels)
        total = total + inverse_term

    def mean(sse: torch.Tensor, n: torch.Tensor) -> float:
        return float(sse.detach().sum() / n.sum().clamp_min(1.0))

    return LossTerms(
        total,
        per_sample.detach(),
        mean(sse_f, n_f),
        mean(sse_a, n_a),
        mean(sse_s, n_s),
        float(reward_loss.detach()),
        float(success_loss.detach()),
        float(prior_term.detach()),
        float(inverse_term.detach()),
    )
