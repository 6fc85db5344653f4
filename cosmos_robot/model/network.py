"""The world-action network: packs a window into ``[AR ; DM]``, runs the MoT stack, returns velocities and heads.

Reasoner (AR) tokens, in order: the embodiment's domain token, the instruction bytes, the current
proprio state, patch tokens of the observed frame(s). Generator (DM) tokens: frame latents (T x 16),
one token per action, one state token per frame. Every generator token carries its own flow time
(0 for clean conditioning tokens). The heads predict clean values (x0) for frames, actions and
states, from which the velocity ``(x_t - x0) / t`` the sampler integrates is derived, plus a reward
and a success logit per action. The network knows nothing about sampling (``flow.py``, ``sampler.py``)
nor about losses (``objective.py``).

Direct paths (a departure from Cosmos 3; why: docs/model.md): besides attention, every generator
token is given the frame content it is most tied to. A frame token gets its anchor frame's token at
the same grid cell (the anchor is the latest clean frame at or before it) plus a conv of the anchor
grid and the actions since (:class:`~cosmos_robot.model.stems.DynamicsStem`); an action token gets a
conv of the frames it leads from and into (:class:`~cosmos_robot.model.stems.MotionStem`); a state
token gets its frame. Two small priors, each trained on its own batch, give action tokens a starting
estimate that the action x0 head adds to: the behaviour-cloning chunk of
:class:`~cosmos_robot.model.action_prior.ActionPrior` where a policy acts, the estimate of
:class:`~cosmos_robot.model.inverse_prior.InversePrior` where both frames around an action are clean.
The frame x0 head adds to the anchor token, so an untrained head copies the last frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from cosmos_robot.model.action_prior import PRIOR_CHUNK, ActionPrior
from cosmos_robot.model.batches import (
    GeneratorInputs,
    GeneratorOutputs,
    PriorBatch,
    ReasonerInputs,
    SequenceBatch,
    TransitionBatch,
)
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.forward_prior import ForwardPrior
from cosmos_robot.model.inverse_prior import InversePrior
from cosmos_robot.model.mot import MoTBlock, ReasonerCache
from cosmos_robot.model.object_pose import EFFECTOR_MAPS, POSE_MAPS, ObjectPose
from cosmos_robot.model.rope import MRoPE, grid_positions, point_positions, temporal_positions, text_positions
from cosmos_robot.model.stems import (
    DomainLinear,
    DynamicsStem,
    MotionStem,
    action_frame_index,
    anchor_frame_index,
    grid_tokens,
    latent_grids,
    pick_frames,
)
from cosmos_robot.model.tokenizers import ByteTokenizer, PatchStem


@dataclass
class DirectPaths:
    """What :meth:`WorldActionNetwork._direct_paths` hands the generator tokens and the heads.

    Attributes:
        frames: (B, T*G*G, D) embedded anchor cell + actions since the anchor, per frame token.
        actions: (B, K, D) embedded frames around each action.
        states: (B, T, D) embedded frame of each state.
        anchor_frames: (B, T, G*G, Cf) each frame's anchor tokens: the forward prior's rollout where it
            applies, else the latest clean frame (zeros where there is none).
        anchor_states: (B, T, S) the forward prior's rolled-out state where it applies, else zeros.
        rolled: (B, T) where the forward prior's rollout applies.
        prior_actions: (B, K, W) the action prior's or the inverse prior's action per action token
            (zeros where neither applies).
        prior_gate: (B, K) where one of them applies.
    """

    frames: torch.Tensor
    actions: torch.Tensor
    states: torch.Tensor
    anchor_frames: torch.Tensor
    anchor_states: torch.Tensor
    rolled: torch.Tensor
    prior_actions: torch.Tensor
    prior_gate: torch.Tensor


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
        self.motion_stem = MotionStem(config, d)
        self.dynamics_stem = DynamicsStem(config, d)
        self.state_frame_in = nn.Linear(frame_flat + 1, d)
        self.action_in = DomainLinear(config.num_domains, config.action_width, d)
        self.action_prior = ActionPrior(
            config.latent_channels, config.state_width, config.action_width, PRIOR_CHUNK, config.num_domains
        )
        self.inverse_prior = InversePrior(
            config.latent_channels, config.latent_grid * config.patch_merge, config.action_width, config.num_domains
        )
        self.forward_prior = self._new_forward_prior() if config.forward_prior else None
        # The pose of a pushed object, for the embodiments whose data record one (model/object_pose.py).
        self.object_pose = (
            ObjectPose(
                config.latent_channels,
                config.state_width,
                config.action_width,
                config.object_pose_domains,
                config.object_half_extent,
                self._new_forward_prior(extra_inputs=POSE_MAPS + EFFECTOR_MAPS * config.object_effector_maps),
                reward=config.object_reward,
                agent=config.object_agent,
                push_path=config.object_push_path,
                painter=config.object_painter,
            )
            if config.object_pose_domains
            else None
        )
        # Whether the x0 heads add the MoT's correction to the forward prior's rollout. Training learns
        # the correction; inference leaves it off (WorldActionModel.forward_path): measured, the sampled
        # correction moved objects and agent_pos away from MuJoCo (docs/results.md), so the rollout is
        # kept as is and the MoT reads it for reward and success. Not a config field: a switch.
        self.forward_correction = True
        # One input projection for both priors' estimates: their gates are disjoint.
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

    def _new_forward_prior(self, extra_inputs: int = 0) -> ForwardPrior:
        """A forward prior of this config's shape (the block's drawer is one with the pose maps' inputs)."""
        config = self.config
        return ForwardPrior(
            config.latent_channels,
            config.state_width,
            config.action_width,
            config.num_domains,
            width=config.forward_width,
            blocks=config.forward_blocks,
            warp=config.forward_warp,
            block=config.forward_block,
            bfloat16=config.forward_bfloat16,
            state_action=config.forward_state_action,
            extra_inputs=extra_inputs,
        )

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
        rolled_frames, rolled_states, rolled = self._forward_rollout(inputs, grids)
        anchor = torch.where(rolled[..., None, None], rolled_frames, anchor)
        flat = torch.cat([frames.flatten(2), frame_t[..., None]], -1)  # (B, T, GG*Cf + 1)
        motion = self.motion_stem(grids, inputs.frame_t, latest, into)
        frame_path = self.frame_anchor_in(anchor.flatten(1, 2)) + self.dynamics_stem(inputs, grids, latest, into)
        policy, policy_gate = self._prior_actions(inputs, grids, into)
        inverse, inverse_gate = self._inverse_actions(inputs, grids, into)
        # The two gates are disjoint: a policy action's frames are noisy, an inverse-dynamics one's clean.
        return DirectPaths(
            frame_path,
            motion,
            self.state_frame_in(flat),
            anchor,
            rolled_states,
            rolled,
            policy + inverse,
            policy_gate | inverse_gate,
        )

    def _forward_rollout(
        self, inputs: GeneratorInputs, grids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The forward prior rolled out from each clean frame through the clean actions that follow it,
        into the noisy frames they lead to (forward dynamics): (tokens (B, T, GG, Cf), normalised states
        (B, T, S), gate (B, T)); states are zero where the gate is off. Detached: only its own batch trains it.

        Action k leads from frame k to frame k + 1 (one action per frame step, as every window here).
        """
        frame_t, action_t = inputs.frame_t, inputs.action_t
        b, t = frame_t.shape
        tokens = torch.zeros_like(inputs.frames)
        states = torch.zeros_like(inputs.states)
        gate = torch.zeros(b, t, dtype=torch.bool, device=frame_t.device)
        if self.forward_prior is None or action_t.shape[1] != t - 1:  # no prior, or several actions per frame
            return tokens, states, gate
        steps = t - 1
        follows = (action_t[:, :steps] == 0) & (frame_t[:, 1 : steps + 1] > 0)  # a clean action into a noisy frame
        rows = follows.any(1).nonzero().squeeze(1)
        if not len(rows):  # inverse dynamics or policy: skip the prior's net
            return tokens, states, gate
        grid, state = grids[rows, 0], inputs.states[rows, 0] * inputs.state_channels[rows]
        actions = inputs.actions[rows] * inputs.action_channels[rows, None]
        domain, chain = inputs.domain[rows], torch.zeros(len(rows), dtype=torch.bool, device=frame_t.device)
        rolled_grids, rolled_states = [grid], [state]
        with torch.no_grad():
            for k in range(steps):
                grid_change, state_change = self.forward_prior(grid, state, actions[:, k], domain)
                # A chain starts at a clean frame and continues while actions stay clean and frames noisy.
                chain = follows[rows, k] & (chain | (frame_t[rows, k] == 0))
                keep = chain[:, None, None, None]
                grid = torch.where(keep, grid + grid_change, grids[rows, k + 1])
                state = torch.where(chain[:, None], state + state_change, inputs.states[rows, k + 1])
                state = state * inputs.state_channels[rows]
                gate[rows, k + 1] = chain
                rolled_grids.append(grid)
                rolled_states.append(state)
        tokens[rows] = grid_tokens(torch.stack(rolled_grids, 1), self.config).to(tokens.dtype)
        states[rows] = torch.stack(rolled_states, 1).to(states.dtype)
        states[~gate] = 0.0  # the heads add the state base unconditionally; frame anchors pick by the gate
        return tokens, states, gate

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
        gate = usable[:, None] & (inputs.action_t > 0) & noisy.gather(1, into) & (row >= 0) & (row < PRIOR_CHUNK)
        if not gate.any():  # forward or inverse dynamics (the env step, labeling): skip the prior's net
            return torch.zeros_like(inputs.actions), gate
        rows = torch.arange(b, device=frame_t.device)
        state = inputs.states[rows, source] * inputs.state_channels
        with torch.no_grad():
            chunk = self.action_prior(grids[rows, source], state, inputs.domain)  # (B, P, W)
        picked = chunk.gather(1, row.clamp(0, PRIOR_CHUNK - 1)[..., None].expand(-1, -1, chunk.shape[-1]))
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

    def forward_sequence(self, batch: SequenceBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The forward prior's rollout (grids (B, R, C, h, w), states (B, R, S)) from each sequence's first
        frame through its actions (what its loss trains)."""
        if self.forward_prior is None:
            raise ValueError("this network has no forward prior (ModelConfig.forward_prior=False)")
        grids = latent_grids(batch.frames[:, :1], self.config)[:, 0]
        state = batch.states[:, 0] * batch.state_channels
        actions = batch.actions * batch.action_channels[:, None]
        return self.forward_prior.rollout(grids, state, actions, batch.domain, batch.state_channels)

    def embed_generator(self, inputs: GeneratorInputs) -> tuple[torch.Tensor, torch.Tensor, DirectPaths]:
        """(tokens (B, Ld, D), per-token modulation (B, Ld, 6D) from each token's flow time, the direct paths)."""
        paths = self._direct_paths(inputs)
        frames = self.frame_in(inputs.frames.flatten(1, 2)) + paths.frames + self.modality[0]  # (B, T*GG, D)
        actions = self.action_in(inputs.actions * inputs.action_channels[:, None], inputs.domain)
        actions = actions + paths.actions + self.modality[1]
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

    def forward(self, reasoner: ReasonerInputs, generator: GeneratorInputs, joint: bool = False) -> GeneratorOutputs:
        """Full pass. ``joint=True`` runs each block as ONE attention over ``[AR ; DM]`` (the reference
        the cached path is tested against); otherwise the reasoner runs first, then the generator."""
        if not joint:
            return self.generate_step(self.encode_reasoner(reasoner), generator)
        reasoner = self.trim_text(reasoner)
        ar, valid = self.embed_reasoner(reasoner)
        ar_rope = self.rope(self.reasoner_positions(reasoner))
        dm, modulation, paths = self.embed_generator(generator)
        dm_rope = self.rope(self.generator_positions(generator))
        for block in self.blocks:
            ar, dm = block.forward_joint(ar, dm, modulation, ar_rope, dm_rope, valid)
        return self._heads(dm, generator, paths)

    def _heads(self, dm: torch.Tensor, inputs: GeneratorInputs, paths: DirectPaths) -> GeneratorOutputs:
        b, t, gg, cf = inputs.frames.shape
        k = inputs.actions.shape[1]
        h = self.out_norm(dm)
        frame_h, action_h, state_h = h[:, : t * gg], h[:, t * gg : t * gg + k], h[:, t * gg + k :]
        frames = self.frame_out(frame_h).view(b, t, gg, cf)
        actions = self.action_out(action_h, inputs.domain) * inputs.action_channels[:, None]
        states = self.state_out(state_h) * inputs.state_channels[:, None]
        # The heads predict clean values on top of the direct paths' starting points.
        frames = frames + paths.anchor_frames
        states = states + paths.anchor_states
        if not self.forward_correction:
            frames = torch.where(paths.rolled[..., None, None], paths.anchor_frames, frames)
            states = torch.where(paths.rolled[..., None], paths.anchor_states, states)
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
