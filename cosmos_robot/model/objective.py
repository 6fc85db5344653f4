"""The training objective: rectified-flow loss over the noisy tokens of per-sample plans.

Each sample of a batch has its own mode (a plan from ``plan.make_plan``). Frames and actions draw
independent flow times (UWM-style), so one network learns forward dynamics, inverse dynamics, the
policy and their marginals. Clean conditioning tokens have t = 0 and no loss; padded action and
state channels get no noise and no loss; actions weigh ``action_loss_weight`` (Cosmos 3: 10).
The loss is the squared error of the predicted clean values (x0), i.e. the velocity loss of
Cosmos 3 weighted by t^2: it weighs high noise levels, where the conditioning must carry the
information, and on 2 CPU cores it is what lets inverse dynamics learn within the budget.
The two priors of the network add their own regression losses on their own batches.

The loss is a mean over samples of per-sample means, and the noise is drawn for a whole batch by
:func:`draw_noise`: a data-parallel rank can then draw the global batch's noise and keep its slice,
and its gradients average to exactly the single-process gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from cosmos_robot.model.action_prior import prior_loss
from cosmos_robot.model.batches import (
    GeneratorInputs,
    GeneratorOutputs,
    PriorBatch,
    ReasonerInputs,
    TensorBatch,
    TransitionBatch,
)
from cosmos_robot.model.flow import add_noise, sample_time
from cosmos_robot.model.inverse_prior import inverse_loss
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.plan import Mode, Plan, make_plan


@dataclass
class BatchPlan(TensorBatch):
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
class FlowNoise(TensorBatch):
    """Noise and flow times of a batch: eps per modality, one time per sample for frames and for actions."""

    frames: torch.Tensor
    actions: torch.Tensor
    states: torch.Tensor
    t_frames: torch.Tensor  # (B, 1)
    t_actions: torch.Tensor  # (B, 1)


def draw_noise(clean: GeneratorInputs, rng: torch.Generator | None = None, shift: float = 1.0) -> FlowNoise:
    """Gaussian noise for every generator value and independent frame/action flow times (logit-normal, shifted)."""
    b = clean.frames.shape[0]

    def randn(x: torch.Tensor) -> torch.Tensor:
        return torch.randn(x.shape, generator=rng, dtype=x.dtype).to(x.device)

    return FlowNoise(
        frames=randn(clean.frames),
        actions=randn(clean.actions) * clean.action_channels[:, None],
        states=randn(clean.states) * clean.state_channels[:, None],
        t_frames=sample_time((b, 1), shift, rng).to(clean.frames.device),
        t_actions=sample_time((b, 1), shift, rng).to(clean.frames.device),
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


class TrainingModule(nn.Module):
    """The network and its two priors' regression outputs in one ``forward``.

    The priors train on their own batches; computing them inside one forward is what lets
    data-parallel training (DDP wraps this module) see every parameter used in every step.
    """

    def __init__(self, network: WorldActionNetwork) -> None:
        super().__init__()
        self.network = network

    def forward(
        self,
        reasoner: ReasonerInputs,
        noisy: GeneratorInputs,
        prior_batch: PriorBatch | None = None,
        inverse_batch: TransitionBatch | None = None,
    ) -> tuple[GeneratorOutputs, torch.Tensor | None, torch.Tensor | None]:
        """(network outputs, the action prior's chunk for ``prior_batch``, the inverse prior's action
        for ``inverse_batch``); a prior without its batch gives None."""
        out = self.network(reasoner, noisy)
        prior = None if prior_batch is None else self.network.prior(prior_batch)
        inverse = None if inverse_batch is None else self.network.inverse(inverse_batch)
        return out, prior, inverse


def _sse(pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample (sum of masked squared errors, count); tensors (B, N, C), mask broadcastable."""
    mask = mask.to(pred.dtype).expand_as(pred)
    return ((pred - target) ** 2 * mask).flatten(1).sum(1), mask.flatten(1).sum(1)


def training_loss(
    model: WorldActionNetwork | nn.Module,
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
        model: the world-action network, or its :class:`TrainingModule` (wrapped by DDP or not).
        reasoner: clean reasoner inputs.
        clean: generator inputs holding clean values (their ``*_t`` fields are ignored).
        plan: which tokens each sample generates.
        noise: from :func:`draw_noise` for this batch.
        rewards: (B, K) true rewards per action (NaN: unknown, left out), or None to skip the reward head.
        successes: (B, K) true success flags per action (NaN: unknown), or None.
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
    if isinstance(model, WorldActionNetwork):
        model = TrainingModule(model)
    out, prior, inverse = model(reasoner, noisy, prior_batch, inverse_batch)

    frame_mask = plan.frames[..., None, None]
    action_mask = plan.actions[..., None] & clean.action_channels[:, None]
    state_mask = plan.states[..., None] & clean.state_channels[:, None]
    sse_f, n_f = _sse(out.x0[0], clean.frames, frame_mask)
    sse_a, n_a = _sse(out.x0[1], clean.actions, action_mask)
    sse_s, n_s = _sse(out.x0[2], clean.states, state_mask)
    weight = getattr(model, "module", model).network.config.action_loss_weight  # DDP wraps the module
    # Each modality is averaged over its own noisy elements, then actions are weighted: normalising by
    # the joint count would drown a sample's 8 action values among its 2048 frame values.
    per_sample = sse_f / n_f.clamp_min(1.0) + weight * sse_a / n_a.clamp_min(1.0) + sse_s / n_s.clamp_min(1.0)
    total = per_sample.mean()

    reward_loss = success_loss = torch.zeros((), device=total.device)
    # NaN targets are unknown (a dataset that records no reward or success) and are left out.
    if rewards is not None and (known := torch.isfinite(rewards)).any():
        reward_loss = F.mse_loss(out.reward[known], rewards[known].to(out.reward.dtype))
        total = total + reward_loss
    if successes is not None and (known := torch.isfinite(successes.float())).any():
        success_loss = F.binary_cross_entropy_with_logits(
            out.success_logit[known], successes[known].to(out.success_logit.dtype)
        )
        total = total + success_loss

    prior_term = torch.zeros((), device=total.device)
    if prior_batch is not None:
        prior_term = prior_loss(prior, prior_batch.actions, prior_batch.action_channels, prior_batch.action_valid)
        total = total + prior_term
    inverse_term = torch.zeros((), device=total.device)
    if inverse_batch is not None:
        inverse_term = inverse_loss(inverse, inverse_batch.actions, inverse_batch.action_channels)
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
