"""The world-action network: packs a window into ``[AR ; DM]``, runs the MoT stack, returns velocities and heads.

Reasoner (AR) tokens, in order: the embodiment's domain token, the instruction bytes, the current
proprio state, patch tokens of the observed frame(s). Generator (DM) tokens: frame latents (T x 16),
one token per action, one state token per frame. Every generator token carries its own flow time
(0 for clean conditioning tokens). Velocities come out for frames, actions and states, plus a reward
and a success logit per action. The network knows nothing about sampling (``flow.py``, ``sampler.py``).

Direct paths (a departure from Cosmos 3, measured necessary on 2 CPU cores): besides attention, every
generator token is given, by a linear map, the frame content it is most tied to. A frame token gets the
token at the same grid cell of its anchor frame (the latest clean frame at or before it); an action
token gets the two frames it leads from and into (flattened, with their flow times); a state token
gets its frame. Attention can learn these look-ups, but slowly: in 2500 steps the first default model
learned neither to copy its context frame (frame loss ~1.1, copy-last scores ~0.45) nor to read
actions off frame pairs (ID R^2 -0.06). The action path is a small conv net over the pair's latent
grids (:class:`MotionStem`): a linear map of the flattened pair was still ignored after 1750 steps.

Two more conv paths followed, for the same reason. The second default model still generated the
same frames for any actions (``eval fd``: delta_psnr_shuffled 0.0 dB) although its predicted states
followed them: frames saw actions only through attention, and copying the anchor was a strong local
optimum. :class:`DynamicsStem` now hands every frame token a conv of (its anchor grid, the actions
taken since the anchor). And the policy had to read block, goal and pusher from one clean frame
through attention (its action MSE stayed at the mean-action baseline): :class:`MotionStem` also sees
the anchor of the pair, so a policy action, whose pair is still noise, reads the observed frame.

Two residual heads followed the third default model (``ModelConfig.frame_residual`` and
``action_prior``). Its imagined frames lost the pusher and rounded the block's corners already one
step ahead (point FD PSNR h1 25.5 dB vs copy-last 26.0): the x0 head had to rebuild the whole frame
from the residual stream, so a frame token's x0 is now its anchor token plus what the head adds.
Its policy stayed above the mean-action MSE: policy action tokens now start from the chunk of a
keypoint behaviour-cloning prior (:mod:`cosmos_robot.model.action_prior`), trained on its own batch.
The fourth default model's arm2 inverse dynamics stayed at R^2 0.75, for the same reason (too few
pairs seen): action tokens between two clean frames now start from a small inverse-dynamics net
(:mod:`cosmos_robot.model.inverse_prior`), also trained on its own batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import torch
from torch import nn

from cosmos_robot.model.action_prior import ActionPrior
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.inverse_prior import InversePrior, TransitionBatch
from cosmos_robot.model.mot import MoTBlock, ReasonerCache
from cosmos_robot.model.rope import MRoPE, grid_positions, point_positions, temporal_positions, text_positions
from cosmos_robot.model.tokenizers import ByteTokenizer, PatchStem


@dataclass
class ReasonerInputs:
    """What the reasoner reads (clean, once per request).

    Attributes:
        domain: (B,) long, the embodiment's domain id.
        text_ids: (B, Lt) long byte ids (0 = padding).
        text_valid: (B, Lt) bool.
        state: (B, state_width) current proprio state, normalised and zero-padded.
        observed_frames: (B, Tc, H, W, 3) uint8, the frames seen so far.
        observed_time: (B, Tc) seconds of the observed frames.
    """

    domain: torch.Tensor
    text_ids: torch.Tensor
    text_valid: torch.Tensor
    state: torch.Tensor
    observed_frames: torch.Tensor
    observed_time: torch.Tensor


@dataclass
class GeneratorInputs:
    """The generator's tokens at flow time t (clean ones at t = 0).

    Attributes:
        domain: (B,) long.
        frames: (B, T, G*G, Cf) frame latent tokens x_t.
        frame_t: (B, T) flow time of each frame.
        frame_time: (B, T) seconds.
        actions: (B, K, W) normalised, padded actions x_t.
        action_t: (B, K) flow time of each action.
        action_time: (B, K) seconds (the time of the frame each action leads into).
        action_channels: (B, W) bool, the embodiment's real action channels.
        states: (B, T, Sw) normalised, padded states x_t at the frame times.
        state_t: (B, T) flow time of each state.
        state_channels: (B, Sw) bool, the embodiment's real state channels.
    """

    domain: torch.Tensor
    frames: torch.Tensor
    frame_t: torch.Tensor
    frame_time: torch.Tensor
    actions: torch.Tensor
    action_t: torch.Tensor
    action_time: torch.Tensor
    action_channels: torch.Tensor
    states: torch.Tensor
    state_t: torch.Tensor
    state_channels: torch.Tensor

    def replace(self, **changes: torch.Tensor) -> GeneratorInputs:
        """A copy with some fields replaced."""
        return GeneratorInputs(**({f.name: getattr(self, f.name) for f in fields(self)} | changes))


@dataclass
class GeneratorOutputs:
    """Velocities and heads. Shapes follow :class:`GeneratorInputs`; reward and success are (B, K).

    ``x0`` holds the predicted clean frames, actions and states when the model predicts x0
    (``ModelConfig.target``); ``frames``, ``actions`` and ``states`` are then the derived velocities.
    """

    frames: torch.Tensor
    actions: torch.Tensor
    states: torch.Tensor
    reward: torch.Tensor
    success_logit: torch.Tensor
    x0: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None
    prior: torch.Tensor | None = None
    inverse: torch.Tensor | None = None


@dataclass
class DirectPaths:
    """What :meth:`WorldActionNetwork._direct_paths` hands the generator tokens and the heads.

    Attributes:
        frames: (B, T*G*G, D) embedded anchor cell + actions since the anchor, per frame token.
        actions: (B, K, D) embedded frames around each action.
        states: (B, T, D) embedded frame of each state.
        anchor_frames: (B, T, G*G, Cf) each frame's anchor tokens (zeros where it has none).
        prior_actions: (B, K, W) the action prior's or the inverse prior's action per action token
            (zeros where neither applies), or None in a model without either.
        prior_gate: (B, K) where one of them applies, or None.
    """

    frames: torch.Tensor
    actions: torch.Tensor
    states: torch.Tensor
    anchor_frames: torch.Tensor
    prior_actions: torch.Tensor | None = None
    prior_gate: torch.Tensor | None = None


@dataclass
class PriorBatch:
    """Demonstration windows the action prior is trained on (its own batch, beside the main one).

    Attributes:
        frames: (B, G*G, Cf) latent tokens of the observed frame.
        state: (B, state_width) normalised, padded proprio state at that frame.
        domain: (B,) long.
        actions: (B, P, W) the normalised, padded actions taken from that frame on (the targets).
        action_channels: (B, W) bool, the embodiment's real action channels.
        action_valid: (B, P) bool, actions inside the episode.
    """

    frames: torch.Tensor
    state: torch.Tensor
    domain: torch.Tensor
    actions: torch.Tensor
    action_channels: torch.Tensor
    action_valid: torch.Tensor

    def to(self, device: torch.device) -> PriorBatch:
        """On ``device``."""
        return PriorBatch(*(getattr(self, f.name).to(device) for f in fields(self)))

    def select(self, index: slice) -> PriorBatch:
        """A subset of the samples."""
        return PriorBatch(*(getattr(self, f.name)[index] for f in fields(self)))


# Below this flow time the x0 -> velocity conversion is clamped (the sampler never goes there).
MIN_FLOW_TIME = 1e-3


def velocity_from_x0(x_t: torch.Tensor, x0: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``v = (x_t - x0) / t``, the velocity whose Euler step to t = 0 lands on ``x0``; t broadcasts from the left."""
    t = t.clamp_min(MIN_FLOW_TIME).to(x_t.dtype)
    return (x_t - x0) / t.reshape(*t.shape, *([1] * (x_t.ndim - t.ndim)))


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10000.0) -> torch.Tensor:
    """Sinusoidal features (..., dim) of flow times t in [0, 1] (scaled by 1000, as DiT)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = (t.to(torch.float32) * 1000.0)[..., None] * freqs
    return torch.cat([args.cos(), args.sin()], -1)


def anchor_frame_index(frame_t: torch.Tensor) -> torch.Tensor:
    """(B, T) index of the latest clean frame (t = 0) at or before each frame; -1 where there is none.

    >>> anchor_frame_index(torch.tensor([[0.0, 0.5, 0.5, 0.0, 0.7], [0.3, 0.0, 0.2, 0.2, 0.2]])).tolist()
    [[0, 0, 0, 3, 3], [-1, 1, 1, 1, 1]]
    """
    index = torch.arange(frame_t.shape[1], device=frame_t.device).expand_as(frame_t)
    return torch.where(frame_t == 0, index, -1).cummax(dim=1).values


def action_frame_index(frame_time: torch.Tensor, action_time: torch.Tensor) -> torch.Tensor:
    """(B, K) index of the frame each action leads into: the first frame stamped at or after it (>= 1).

    >>> action_frame_index(torch.tensor([[0.0, 0.1, 0.2]]), torch.tensor([[0.05, 0.1, 0.15, 0.2]])).tolist()
    [[1, 1, 2, 2]]
    """
    into = torch.searchsorted(frame_time.contiguous(), action_time.contiguous() - 1e-6)
    return into.clamp(1, frame_time.shape[1] - 1)


def latent_grids(frames: torch.Tensor, config: ModelConfig) -> torch.Tensor:
    """Frame tokens (B, T, G*G, C*p*p) -> the autoencoder's latent grids (B, T, C, G*p, G*p)."""
    b, t = frames.shape[:2]
    g, p, c = config.latent_grid, config.patch_merge, config.latent_channels
    return frames.reshape(b, t, g, g, c, p, p).permute(0, 1, 4, 2, 5, 3, 6).reshape(b, t, c, g * p, g * p)


def pick_frames(grids: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """grids (B, T, C, H, W), index (B, K) with -1 for "none" -> (B, K, C, H, W), zeros where -1."""
    b, k = index.shape
    picked = grids.gather(1, index.clamp_min(0)[..., None, None, None].expand(b, k, *grids.shape[2:]))
    return picked * (index >= 0)[..., None, None, None].to(grids.dtype)


class MotionStem(nn.Module):
    """What an action token sees of the frames around it: a small conv net over their latent grids.

    The frame tokens are un-merged to the autoencoder's (C, 8, 8) latent grid; the pair the action
    spans (the frame it leads from and the one it leads into) and the pair's anchor (the latest clean
    frame at or before the first, zeros if none) are stacked with their flow times and the anchor's
    distance in frames as constant channels, and run through two 3x3 convolutions. Measured on
    frame-latent pairs of PushBlock (same data, same samples seen): this conv probe reaches action
    R^2 0.71 after 12.8k pairs and 0.92 after 51k, where an MLP on the flattened tokens is at 0.15 and
    0.67 - translation equivariance is what makes "where did the pusher move" cheap to learn. The
    anchor is what a policy action reads: in policy mode its pair is still noise.
    """

    def __init__(self, config: ModelConfig, d_out: int, width: int = 64) -> None:
        super().__init__()
        self.config = config
        side = config.latent_grid * config.patch_merge
        self.net = nn.Sequential(
            nn.Conv2d(3 * config.latent_channels + 3, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Flatten(),
            nn.Linear(width * side * side, d_out),
        )

    def forward(
        self, grids: torch.Tensor, frame_t: torch.Tensor, anchors: torch.Tensor, into: torch.Tensor
    ) -> torch.Tensor:
        """grids (B, T, C, H, W) from :func:`latent_grids`, frame_t (B, T), anchors (B, T) from
        :func:`anchor_frame_index`, into (B, K) from :func:`action_frame_index` -> (B, K, d_out)."""
        b, t = frame_t.shape
        k, side = into.shape[1], grids.shape[-1]
        anchor = anchors.gather(1, into - 1)
        before, after = pick_frames(grids, into - 1), pick_frames(grids, into)
        scalars = torch.stack(
            [frame_t.gather(1, into - 1), frame_t.gather(1, into), (into - 1 - anchor).clamp_max(t) / t], -1
        )
        scalars = scalars[..., None, None].expand(b, k, 3, side, side).to(grids.dtype)
        x = torch.cat([pick_frames(grids, anchor), before, after, scalars], 2).flatten(0, 1)
        return self.net(x).view(b, k, -1)


class DynamicsStem(nn.Module):
    """What a frame token sees of the actions that produce it: a conv over (anchor grid, actions since).

    For frame j with anchor a (the latest clean frame at or before it), the actions leading into
    frames a+1..j are embedded per embodiment, summed (velocity commands: the sum is the
    displacement), and broadcast over the anchor's latent grid with their mean flow time, the frame's
    flow time and the distance j - a. Three 3x3 convolutions (receptive field: the 2 latent cells a
    pusher moves in 4 steps, and more) end in a p x p strided conv onto the generator's token grid.
    The last conv starts at zero, so the path opens only as far as the loss asks.
    """

    def __init__(self, config: ModelConfig, d_out: int, width: int = 64, action_features: int = 16) -> None:
        super().__init__()
        self.config = config
        self.action_embed = DomainLinear(config.num_domains, config.action_width, action_features)
        p = config.patch_merge
        self.net = nn.Sequential(
            nn.Conv2d(config.latent_channels + action_features + 3, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(approximate="tanh"),
            nn.Conv2d(width, d_out, p, stride=p),
        )
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def forward(
        self, inputs: GeneratorInputs, grids: torch.Tensor, anchor: torch.Tensor, into: torch.Tensor
    ) -> torch.Tensor:
        """grids, anchor (B, T) and into (B, K) as for :class:`MotionStem` -> (B, T*G*G, d_out), in the
        order of the frame tokens."""
        frame_t = inputs.frame_t
        b, t = frame_t.shape
        frame_index = torch.arange(t, device=frame_t.device)
        # since[b, j, k]: action k leads into a frame after frame j's anchor and at or before frame j.
        since = (into[:, None, :] > anchor[:, :, None]) & (into[:, None, :] <= frame_index[None, :, None])
        since = since.to(grids.dtype)
        embedded = self.action_embed(inputs.actions * inputs.action_channels[:, None], inputs.domain)
        summed = torch.einsum("bjk,bkf->bjf", since, embedded)
        count = since.sum(-1).clamp_min(1.0)
        action_t = torch.einsum("bjk,bk->bj", since, inputs.action_t.to(grids.dtype)) / count
        scalars = torch.cat(
            [summed, torch.stack([action_t, frame_t.to(grids.dtype), (frame_index - anchor).clamp_max(t) / t], -1)], -1
        )
        side = grids.shape[-1]
        x = torch.cat([pick_frames(grids, anchor), scalars[..., None, None].expand(-1, -1, -1, side, side)], 2)
        out = self.net(x.flatten(0, 1))  # (B*T, d, G, G)
        return out.flatten(2).transpose(1, 2).reshape(b, t * out.shape[-1] * out.shape[-2], -1)


class DomainLinear(nn.Module):
    """One weight matrix per embodiment (domain-aware projection of the shared action space)."""

    def __init__(self, num_domains: int, d_in: int, d_out: int, zero_init: bool = False) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_domains, d_in, d_out))
        self.bias = nn.Parameter(torch.zeros(num_domains, d_out))
        if zero_init:
            nn.init.zeros_(self.weight)
        else:
            nn.init.normal_(self.weight, std=1.0 / math.sqrt(d_in))

    def forward(self, x: torch.Tensor, domain: torch.Tensor) -> torch.Tensor:
        """x (B, N, d_in), domain (B,) -> (B, N, d_out)."""
        return torch.einsum("bni,bio->bno", x, self.weight[domain]) + self.bias[domain][:, None]


class WorldActionNetwork(nn.Module):
    """The MoT world-action network of :class:`ModelConfig` size."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.rope = MRoPE(config.head_dim, config.rope_sections, config.rope_theta)
        # reasoner inputs
        self.domain_embed = nn.Embedding(config.num_domains, d)
        self.text_embed = nn.Embedding(ByteTokenizer.vocab_size, d)
        self.reasoner_state = nn.Linear(config.state_width, d)
        self.patch_stem = PatchStem(d, config.understanding_patch)
        # generator inputs
        self.frame_in = nn.Linear(config.frame_token_dim, d)
        self.frame_anchor_in = nn.Linear(config.frame_token_dim, d)
        frame_flat = config.tokens_per_frame * config.frame_token_dim
        self.action_frames_in = MotionStem(config, d)
        self.frame_actions_in = DynamicsStem(config, d)
        self.state_frame_in = nn.Linear(frame_flat + 1, d)
        self.action_in = DomainLinear(config.num_domains, config.action_width, d)
        if config.action_prior:
            self.action_prior = ActionPrior(
                config.latent_channels,
                config.state_width,
                config.action_width,
                config.action_prior,
                config.num_domains,
                state_frequencies=config.prior_state_frequencies,
            )
        if config.inverse_prior:
            self.inverse_prior = InversePrior(
                config.latent_channels, config.latent_grid * config.patch_merge, config.action_width, config.num_domains
            )
        if config.action_prior or config.inverse_prior:
            self.prior_in = DomainLinear(config.num_domains, config.action_width, d)
        self.state_in = nn.Linear(config.state_width, d)
        self.modality = nn.Parameter(torch.zeros(3, d))  # frame, action, state
        nn.init.normal_(self.modality, std=0.02)
        self.time_mlp = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))
        # adaLN-single: one projection of the time embedding to the six modulations, shared by all blocks.
        self.time_modulation = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))
        nn.init.zeros_(self.time_modulation[1].weight)
        nn.init.zeros_(self.time_modulation[1].bias)
        self.blocks = nn.ModuleList(MoTBlock(d, config.num_heads, config.mlp_ratio) for _ in range(config.num_layers))
        # outputs (zero-initialised: the untrained network predicts v = 0)
        self.out_norm = nn.RMSNorm(d, eps=1e-6)
        self.frame_out = nn.Linear(d, config.frame_token_dim)
        self.action_out = DomainLinear(config.num_domains, d, config.action_width, zero_init=True)
        self.state_out = nn.Linear(d, config.state_width)
        self.reward_head = nn.Linear(d, 1)
        self.success_head = nn.Linear(d, 1)
        for layer in (self.frame_out, self.state_out):
            nn.init.zeros_(layer.weight)
            nn.init.zeros_(layer.bias)

    # -- positions --------------------------------------------------------------------------------------
    def _time(self, seconds: torch.Tensor) -> torch.Tensor:
        return temporal_positions(seconds, self.config.units_per_second, self.config.text_margin)

    def reasoner_positions(self, inputs: ReasonerInputs) -> torch.Tensor:
        """(B, La, 3): domain + text as a running index, then state and patches at their times after the margin."""
        b, lt = inputs.text_ids.shape
        text = text_positions(1 + lt).to(inputs.state.device).expand(b, -1, -1)  # domain token is index 0
        now = self._time(inputs.observed_time[:, -1:])  # (B, 1)
        state = point_positions(now)  # (B, 1, 3)
        patches = grid_positions(self._time(inputs.observed_time), self.config.understanding_grid)
        return torch.cat([text, state, patches], 1)

    def generator_positions(self, inputs: GeneratorInputs) -> torch.Tensor:
        """(B, Ld, 3): frame tokens (t, row, col); actions and states (t, 0, 0)."""
        frame_times = self._time(inputs.frame_time)
        return torch.cat(
            [
                grid_positions(frame_times, self.config.latent_grid),
                point_positions(self._time(inputs.action_time)),
                point_positions(frame_times),
            ],
            1,
        )

    # -- the two halves ---------------------------------------------------------------------------------
    @staticmethod
    def trim_text(inputs: ReasonerInputs) -> ReasonerInputs:
        """Drop text columns that are padding in every sample: exact (padded keys are masked and the
        positions after the text are time-based), and short instructions no longer pay for long ones."""
        used = int(inputs.text_valid.any(0).nonzero().max()) + 1 if inputs.text_valid.any() else 0
        if used == inputs.text_ids.shape[1]:
            return inputs
        return replace(inputs, text_ids=inputs.text_ids[:, :used], text_valid=inputs.text_valid[:, :used])

    def embed_reasoner(self, inputs: ReasonerInputs) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens (B, La, D), key_valid (B, La))."""
        b, tc = inputs.observed_frames.shape[:2]
        patches = self.patch_stem(inputs.observed_frames.flatten(0, 1)).view(b, -1, self.config.d_model)
        tokens = torch.cat(
            [
                self.domain_embed(inputs.domain)[:, None],
                self.text_embed(inputs.text_ids),
                self.reasoner_state(inputs.state)[:, None],
                patches,
            ],
            1,
        )
        ones = torch.ones(b, 1, dtype=torch.bool, device=tokens.device)
        valid = torch.cat([ones, inputs.text_valid, ones, ones.expand(b, patches.shape[1])], 1)
        return tokens, valid

    def _direct_paths(self, inputs: GeneratorInputs) -> DirectPaths:
        """The frame content each generator token is tied to (see the module docstring), embedded."""
        frames, frame_t = inputs.frames, inputs.frame_t.to(inputs.frames.dtype)
        # Indices and latent grids are computed once here and shared by both conv stems.
        latest = anchor_frame_index(inputs.frame_t)
        into = action_frame_index(inputs.frame_time, inputs.action_time)
        grids = latent_grids(frames, self.config)
        anchor = frames.gather(1, latest.clamp_min(0)[..., None, None].expand_as(frames))
        anchor = anchor * (latest >= 0)[..., None, None].to(frames.dtype)
        flat = torch.cat([frames.flatten(2), frame_t[..., None]], -1)  # (B, T, GG*Cf + 1)
        motion = self.action_frames_in(grids, inputs.frame_t, latest, into)
        frame_path = self.frame_anchor_in(anchor.flatten(1, 2)) + self.frame_actions_in(inputs, grids, latest, into)
        paths = DirectPaths(frame_path, motion, self.state_frame_in(flat), anchor)
        if self.config.action_prior:
            paths.prior_actions, paths.prior_gate = self._prior_actions(inputs, grids, into)
        if self.config.inverse_prior:
            inverse, gate = self._inverse_actions(inputs, grids, into)
            if paths.prior_actions is None:
                paths.prior_actions, paths.prior_gate = inverse, gate
            else:  # the two gates are disjoint: a policy action's frames are noisy, an inverse one's clean
                paths.prior_actions, paths.prior_gate = paths.prior_actions + inverse, paths.prior_gate | gate
        return paths

    def _inverse_actions(
        self, inputs: GeneratorInputs, grids: torch.Tensor, into: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The inverse prior's estimate for each noisy action whose two frames are clean (inverse
        dynamics); ((B, K, W), gate (B, K)). Detached: only its own batch trains it."""
        clean = inputs.frame_t == 0
        gate = (inputs.action_t > 0) & clean.gather(1, into - 1) & clean.gather(1, into)
        if not gate.any():  # forward dynamics or policy: skip the net
            return torch.zeros_like(inputs.actions), gate
        b, k = into.shape
        with torch.no_grad():
            estimate = self.inverse_prior(
                pick_frames(grids, into - 1).flatten(0, 1),
                pick_frames(grids, into).flatten(0, 1),
                inputs.domain.repeat_interleave(k),
            ).view(b, k, -1)
        return estimate * (gate[..., None] & inputs.action_channels[:, None]).to(estimate.dtype), gate

    def _prior_actions(
        self, inputs: GeneratorInputs, grids: torch.Tensor, into: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The prior's chunk, read from the clean frame before the first noisy one, laid on the noisy
        actions that follow it (policy mode); ((B, K, W), gate (B, K)). Detached: only its own batch
        trains the prior."""
        frame_t, b = inputs.frame_t, inputs.frame_t.shape[0]
        noisy = frame_t > 0
        first_noisy = noisy.to(torch.int64).argmax(1)  # 0 where no frame is noisy
        source = (first_noisy - 1).clamp_min(0)
        usable = noisy.any(1) & (first_noisy >= 1)
        row = into - 1 - source[:, None]  # action k's place in the chunk
        gate = (
            usable[:, None]
            & (inputs.action_t > 0)
            & noisy.gather(1, into)
            & (row >= 0)
            & (row < self.config.action_prior)
        )
        if not gate.any():  # forward or inverse dynamics (the env step, labeling): skip the prior's net
            return torch.zeros_like(inputs.actions), gate
        rows = torch.arange(b, device=frame_t.device)
        state = inputs.states[rows, source] * inputs.state_channels
        with torch.no_grad():
            chunk = self.action_prior(grids[rows, source], state, inputs.domain)  # (B, P, W)
        picked = chunk.gather(1, row.clamp(0, self.config.action_prior - 1)[..., None].expand(-1, -1, chunk.shape[-1]))
        return picked * (gate[..., None] & inputs.action_channels[:, None]).to(picked.dtype), gate

    def prior(self, batch: PriorBatch) -> torch.Tensor:
        """The action prior's chunk (B, P, W) for a :class:`PriorBatch` (what its loss trains)."""
        c = self.config
        grid = latent_grids(batch.frames[:, None], c)[:, 0]
        return self.action_prior(grid, batch.state, batch.domain)

    def inverse(self, batch: TransitionBatch) -> torch.Tensor:
        """The inverse prior's action (B, W) for a :class:`TransitionBatch` (what its loss trains)."""
        grids = latent_grids(batch.frames, self.config)
        return self.inverse_prior(grids[:, 0], grids[:, 1], batch.domain)

    def embed_generator(self, inputs: GeneratorInputs) -> tuple[torch.Tensor, torch.Tensor, DirectPaths]:
        """(tokens (B, Ld, D), per-token modulation (B, Ld, 6D) from each token's flow time, the direct paths)."""
        paths = self._direct_paths(inputs)
        frames = self.frame_in(inputs.frames.flatten(1, 2)) + paths.frames + self.modality[0]  # (B, T*GG, D)
        actions = self.action_in(inputs.actions * inputs.action_channels[:, None], inputs.domain)
        actions = actions + paths.actions + self.modality[1]
        if paths.prior_actions is not None:
            gate = paths.prior_gate[..., None].to(actions.dtype)
            actions = actions + self.prior_in(paths.prior_actions, inputs.domain) * gate
        states = self.state_in(inputs.states * inputs.state_channels[:, None]) + paths.states + self.modality[2]
        tokens = torch.cat([frames, actions, states], 1)
        gg = self.config.tokens_per_frame
        t = torch.cat([inputs.frame_t.repeat_interleave(gg, dim=1), inputs.action_t, inputs.state_t], 1)  # (B, Ld)
        # A window holds only a few distinct flow times (clean 0, one per noisy modality): embed and
        # project those once, then gather per token, rather than running the MLPs on every token.
        unique_t, index = torch.unique(t, return_inverse=True)
        modulation = self.time_modulation(self.time_mlp(timestep_embedding(unique_t, self.config.d_model)))[index]
        return tokens, modulation, paths

    def encode_reasoner(self, inputs: ReasonerInputs) -> ReasonerCache:
        """Run the reasoner once; its per-layer keys and values serve every denoising step."""
        inputs = self.trim_text(inputs)
        ar, valid = self.embed_reasoner(inputs)
        rope = self.rope(self.reasoner_positions(inputs))
        keys, values = [], []
        for block in self.blocks:
            ar, k, v = block.reasoner_step(ar, rope, valid)
            keys.append(k)
            values.append(v)
        return ReasonerCache(keys, values, valid, ar)

    def generator_rope(self, inputs: GeneratorInputs) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotary cos/sin of the generator tokens; fixed across the denoising steps of a request."""
        return self.rope(self.generator_positions(inputs))

    def generate_step(
        self, cache: ReasonerCache, inputs: GeneratorInputs, rope: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> GeneratorOutputs:
        """One generator pass against a reasoner cache: the cost of a denoising step.

        ``rope`` may be passed from :meth:`generator_rope` to skip recomputing it at every step.
        """
        dm, modulation, paths = self.embed_generator(inputs)
        rope = rope if rope is not None else self.generator_rope(inputs)
        for block, k, v in zip(self.blocks, cache.keys, cache.values, strict=True):
            dm = block.generator_step(dm, modulation, rope, k, v, cache.key_valid)
        return self._heads(dm, inputs, paths)

    def forward(
        self,
        reasoner: ReasonerInputs,
        generator: GeneratorInputs,
        joint: bool = False,
        prior_batch: PriorBatch | None = None,
        inverse_batch: TransitionBatch | None = None,
    ) -> GeneratorOutputs:
        """Full pass. ``joint=True`` runs each block as ONE attention over ``[AR ; DM]`` (the reference
        the cached path is tested against); otherwise the reasoner runs first, then the generator.
        With ``prior_batch`` the outputs also hold the action prior's chunk for it (``prior``): its
        loss is computed inside ``forward`` so data-parallel training sees every parameter used.
        Likewise ``inverse_batch`` and the inverse prior's action for it (``inverse``)."""
        if not joint:
            out = self.generate_step(self.encode_reasoner(reasoner), generator)
        else:
            reasoner = self.trim_text(reasoner)
            ar, valid = self.embed_reasoner(reasoner)
            ar_rope = self.rope(self.reasoner_positions(reasoner))
            dm, modulation, paths = self.embed_generator(generator)
            dm_rope = self.rope(self.generator_positions(generator))
            for block in self.blocks:
                ar, dm = block.forward_joint(ar, dm, modulation, ar_rope, dm_rope, valid)
            out = self._heads(dm, generator, paths)
        if prior_batch is not None:
            if not self.config.action_prior:
                raise ValueError("prior_batch was given but the model has no action prior (action_prior=0)")
            out.prior = self.prior(prior_batch)
        if inverse_batch is not None:
            if not self.config.inverse_prior:
                raise ValueError("inverse_batch was given but the model has no inverse prior (inverse_prior=false)")
            out.inverse = self.inverse(inverse_batch)
        return out

    def _heads(self, dm: torch.Tensor, inputs: GeneratorInputs, paths: DirectPaths) -> GeneratorOutputs:
        b, t, gg, cf = inputs.frames.shape
        k = inputs.actions.shape[1]
        h = self.out_norm(dm)
        frame_h, action_h, state_h = h[:, : t * gg], h[:, t * gg : t * gg + k], h[:, t * gg + k :]
        frames = self.frame_out(frame_h).view(b, t, gg, cf)
        actions = self.action_out(action_h, inputs.domain) * inputs.action_channels[:, None]
        states = self.state_out(state_h) * inputs.state_channels[:, None]
        x0 = None
        if self.config.target == "x0":
            if self.config.frame_residual:
                frames = frames + paths.anchor_frames
            if paths.prior_actions is not None:
                actions = actions + paths.prior_actions
            x0 = (frames, actions, states)
            frames = velocity_from_x0(inputs.frames, frames, inputs.frame_t)
            actions = velocity_from_x0(inputs.actions, actions, inputs.action_t) * inputs.action_channels[:, None]
            states = velocity_from_x0(inputs.states, states, inputs.state_t) * inputs.state_channels[:, None]
        return GeneratorOutputs(
            frames=frames,
            actions=actions,
            states=states,
            reward=self.reward_head(action_h).squeeze(-1),
            success_logit=self.success_head(action_h).squeeze(-1),
            x0=x0,
        )

    # -- reporting --------------------------------------------------------------------------------------
    def describe(self, num_frames: int = 4, num_actions: int = 3, context_frames: int = 1) -> dict[str, float]:
        """Parameters per tower and FLOPs of one forward (and of one cached generator step) for a window."""
        c = self.config

        def count(modules) -> int:
            return sum(p.numel() for m in modules for p in m.parameters())

        reasoner = count(b.reasoner for b in self.blocks)
        generator = (
            count(b.generator for b in self.blocks)
            + sum(b.modulation_table.numel() for b in self.blocks)
            + count([self.time_mlp, self.time_modulation])
        )
        la = 1 + c.max_text_len + 1 + context_frames * c.understanding_grid**2
        ld = num_frames * c.tokens_per_frame + num_actions + num_frames

        def per_layer_linear(tokens: int, tower: nn.Module) -> float:
            return 2.0 * tokens * sum(m.weight.numel() for m in tower.modules() if isinstance(m, nn.Linear))

        tower_r, tower_g = self.blocks[0].reasoner, self.blocks[0].generator
        attn_ar = 4 * la * la * c.d_model / 2  # causal: half the score matrix
        attn_dm = 4 * ld * (la + ld) * c.d_model
        modulation = 2 * ld * self.time_modulation[1].weight.numel()  # once per step, all blocks
        reasoner_flops = c.num_layers * (per_layer_linear(la, tower_r) + attn_ar)
        generator_flops = c.num_layers * (per_layer_linear(ld, tower_g) + attn_dm) + modulation
        return {
            "params_total": float(sum(p.numel() for p in self.parameters())),
            "params_reasoner_tower": float(reasoner),
            "params_generator_tower": float(generator),
            "reasoner_tokens": float(la),
            "generator_tokens": float(ld),
            "flops_reasoner": float(reasoner_flops),
            "flops_generator_step": float(generator_flops),
            "flops_forward": float(reasoner_flops + generator_flops),
        }
