"""A forward-dynamics prior: (latent grid, state, action) -> the change of the grid and of the state.

Forward dynamics learned inside the MoT alone did not follow its actions: in a frame of 64 latent
cells the pusher lives in one or two, the flow loss averages over all of them, and most forward
samples are drawn at flow times where the action hardly matters (docs/model.md, "Forward prior").
This deterministic conv net is trained on its own batch of short sequences each step, as the two
action priors are, and its rollout is where the generator's frame and state tokens start from in
forward dynamics: the MoT's heads add a correction to it.

Why this shape:
- the action enters every residual block by FiLM (a per-embodiment projection to scales and
  shifts), so "where does the pusher go" is a function of the action at every layer, not a
  feature the loss can ignore;
- it predicts the change of the grid, not the grid: an untrained net copies the frame;
- with ``warp`` it also predicts where each cell's content moves (a displacement in cells, sampled
  bilinearly) and adds its change to the moved grid, so a sub-cell move is one number per cell instead
  of a pattern the convolutions must paint (at width 32 the one-step push went from 0.88 / 0.53 of the
  way to 0.93 / 0.66, point / arm2; docs/results.md);
- width is what fits a push, and a wide prior is paid for by running its convolutions in bfloat16 and,
  with ``block="relu"``, dropping the group norm and GELUs whose elementwise passes then dominate the
  step (:class:`ReLUFiLMBlock`); the shipped default does both at width 64;
- coordinate channels tell the convolutions where the walls are;
- the state change comes from the pooled features, the state and the action, so ``agent_pos`` is
  integrated from the last known state instead of being drawn anew each step; with ``state_action`` a
  term linear in the action is added (a velocity command integrates into the state), which
  :func:`cosmos_robot.forward_prior_training.fit_state_head` fits with the rest of the state head on
  one-step examples: the rollout loss, weighted to the frames, left arm2's joint angles 3x the error
  of integrating the commands (docs/results.md);
- :func:`rollout_loss` unrolls it on its own predictions for several steps (the gradient goes
  through the whole rollout) and weighs the cells that change, where the pusher and block are.
"""

from __future__ import annotations

import contextlib
import copy
import math
import weakref

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from cosmos_robot.model.channels_last import gelu_tanh, group_norm

# Steps of the prior's training rollouts (the default window's future frames).
ROLLOUT_STEPS = 4
# Extra weight of a latent cell per unit of its RMS change: the moving objects fill 2-4 of 64 cells.
CHANGE_WEIGHT = 20.0
# Weight of the state term: a 3 mm error is 0.015 normalised units, far below the latent errors.
STATE_WEIGHT = 10.0
# Pairs of sin/cos features per normalised state channel (as the action prior).
STATE_FREQUENCIES = 2


def _by_domain(vectors: torch.Tensor, weights: torch.Tensor, domain: torch.Tensor | int) -> torch.Tensor:
    """``vectors`` (B, i) times each row's embodiment weight (D, i, o): one matmul when the whole batch
    is one embodiment (an int, as in an env), else a per-row gather (training batches mix them)."""
    if not isinstance(domain, torch.Tensor):
        return vectors @ weights[int(domain)].to(vectors.dtype)
    return torch.einsum("bi,bio->bo", vectors, weights[domain].to(vectors.dtype))


class _FiLMResidual(nn.Module):
    """Two 3x3 convolutions and the FiLM projection of a condition, zero-initialised so an untrained
    block ignores its condition."""

    def __init__(self, width: int, condition: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1)
        self.film = nn.Linear(condition, 2 * width)
        nn.init.zeros_(self.film.weight)
        nn.init.zeros_(self.film.bias)


class FiLMBlock(_FiLMResidual):
    """A residual block of two 3x3 convolutions whose features are scaled and shifted by a condition."""

    def __init__(self, width: int, condition: int) -> None:
        super().__init__(width, condition)
        self.norm = nn.GroupNorm(8, width)

    def forward(self, x: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        """x (B, W, h, w), condition (B, condition) -> (B, W, h, w)."""
        scale, shift = self.film(condition)[..., None, None].chunk(2, 1)
        h = gelu_tanh(self.conv1(group_norm(x, self.norm)))
        h = h * (1.0 + scale) + shift
        return x + self.conv2(gelu_tanh(h))


class ReLUFiLMBlock(_FiLMResidual):
    """:class:`FiLMBlock` without its group norm and with ReLU: four elementwise passes instead of ~15.

    In bfloat16 on a CPU with AMX a width-64 prior's convolutions take a fifth of the float32 time and
    the norm and GELUs became two thirds of the step; this block keeps the FiLM conditioning, the
    residual path and the zero-initialised condition, and drops what costs without being needed by a
    four-block net trained with Adam.
    """

    def forward(self, x: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        """x (B, W, h, w), condition (B, condition) -> (B, W, h, w)."""
        scale, shift = self.film(condition)[..., None, None].to(x.dtype).chunk(2, 1)
        # In place where autograd allows it: neither the convolution nor addcmul needs its own output.
        h = torch.relu_(self.conv1(torch.relu(x)))
        h = torch.relu_(torch.addcmul(shift, h, scale + 1.0))
        return x + self.conv2(h)


# The residual blocks by ``ModelConfig.forward_block`` name.
BLOCKS: dict[str, type[_FiLMResidual]] = {"norm_gelu": FiLMBlock, "relu": ReLUFiLMBlock}

# bfloat16 copies of each prior's trunk for the calls made without autograd (the env's steps), remade
# when a weight changes (an optimiser step or a load bumps its version): autocast would recast every
# weight on every call, a fifth of a width-64 step at batch 64.
_BFLOAT16_TRUNKS: weakref.WeakKeyDictionary[nn.Module, tuple[tuple, list[nn.Module]]] = weakref.WeakKeyDictionary()


class ForwardPrior(nn.Module):
    """One step of forward dynamics on the autoencoder's latent grid, per embodiment.

    Args:
        latent_channels: channels of the latent grid.
        state_width: the shared (padded) state width.
        action_width: the shared (padded) action width.
        num_domains: embodiments (one action and one state projection each).
        width: conv width.
        blocks: FiLM residual blocks.
        hidden: width of the condition (action + state features).
        state_frequencies: sinusoidal features per state channel (pairs).
        warp: also move each cell's content by a predicted displacement (see the module docstring).
        block: ``"norm_gelu"`` (:class:`FiLMBlock`) or ``"relu"`` (:class:`ReLUFiLMBlock`).
        bfloat16: run the convolutional trunk (stem, blocks, output conv) in bfloat16; the condition,
            the state path and the sums that carry the grid and the state from step to step stay float32.
        extra_inputs: input channels beside the grid and the coordinates, given per step as ``extra``
            (maps of what the grid does not say, e.g. where an object is; see :meth:`add_inputs`).
        state_action: the state change also has a term linear in the action, one matrix per embodiment
            (zero until trained: the prior computes what it did without it).
    """

    def __init__(
        self,
        latent_channels: int,
        state_width: int,
        action_width: int,
        num_domains: int,
        width: int = 64,
        blocks: int = 4,
        hidden: int = 128,
        state_frequencies: int = STATE_FREQUENCIES,
        warp: bool = False,
        block: str = "norm_gelu",
        bfloat16: bool = False,
        extra_inputs: int = 0,
        state_action: bool = False,
    ) -> None:
        super().__init__()
        if block not in BLOCKS:
            raise ValueError(f"block={block!r}; expected one of {', '.join(BLOCKS)}")
        self.state_width = state_width
        self.warp = warp
        self.bfloat16 = bfloat16
        self.register_buffer(
            "state_scales", math.pi * 2.0 ** torch.arange(state_frequencies, dtype=torch.float32), persistent=False
        )
        state_features = state_width * (1 + 2 * state_frequencies)
        self.action_weight = nn.Parameter(torch.randn(num_domains, action_width, hidden) / action_width**0.5)
        self.condition = nn.Sequential(
            nn.GELU(approximate="tanh"),
            nn.Linear(hidden + state_features, hidden),
            nn.GELU(approximate="tanh"),
            nn.Linear(hidden, hidden),
        )
        self.extra_inputs = extra_inputs
        self.stem = nn.Conv2d(latent_channels + 2 + extra_inputs, width, 3, padding=1)
        with torch.no_grad():  # extra inputs start unread, as added ones do (add_inputs)
            self.stem.weight[:, latent_channels + 2 :] = 0.0
        self.blocks = nn.ModuleList(BLOCKS[block](width, hidden) for _ in range(blocks))
        # With ``warp``, two more channels: each cell's displacement (x, y) in cells.
        self.frame_out = nn.Conv2d(width, latent_channels + (2 if warp else 0), 3, padding=1)
        nn.init.zeros_(self.frame_out.weight)
        nn.init.zeros_(self.frame_out.bias)
        self.state_mlp = nn.Sequential(
            nn.Linear(width + hidden + action_width + state_features, hidden),
            nn.GELU(approximate="tanh"),
        )
        self.state_weight = nn.Parameter(torch.zeros(num_domains, hidden, state_width))
        self.state_bias = nn.Parameter(torch.zeros(num_domains, state_width))
        self.state_action = nn.Parameter(torch.zeros(num_domains, action_width, state_width)) if state_action else None

    def add_inputs(self, count: int) -> None:
        """Give the stem ``count`` more input channels, zero-weighted: the prior computes what it did until
        they are trained (how a trained prior is taught to read a new map without starting over)."""
        if count < 1:
            raise ValueError(f"count={count!r}; expected a positive number of channels")
        old = self.stem
        stem = nn.Conv2d(old.in_channels + count, old.out_channels, 3, padding=1).to(old.weight)
        with torch.no_grad():
            stem.weight.zero_()
            stem.weight[:, : old.in_channels] = old.weight
            stem.bias.copy_(old.bias)
        self.stem, self.extra_inputs = stem, self.extra_inputs + count

    def _trunk(self) -> list[nn.Module]:
        """The convolutional trunk: stem, blocks, output convolution (a plain list: it is made every step)."""
        return [self.stem, *self.blocks, self.frame_out]

    def _bfloat16_trunk(self) -> list[nn.Module]:
        trunk = self._trunk()
        key = tuple((p._version, p.data_ptr(), p.device) for module in trunk for p in module.parameters())
        cached = _BFLOAT16_TRUNKS.get(self)
        if cached is None or cached[0] != key:
            with torch.no_grad():
                copies = [module.to(torch.bfloat16) for module in copy.deepcopy(trunk)]
            cached = _BFLOAT16_TRUNKS[self] = (key, copies)
        return cached[1]

    def _run_trunk(
        self, grid: torch.Tensor, maps: torch.Tensor, condition: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(the output convolution's channels, the last block's features pooled over the cells), both in
        ``grid``'s dtype; ``maps`` are the coordinate channels and any extra inputs."""
        x = torch.cat([grid, maps], 1).contiguous(memory_format=torch.channels_last)
        autocast = self.bfloat16
        if self.bfloat16 and not torch.is_grad_enabled():
            trunk, autocast = self._bfloat16_trunk(), False
            x, condition = x.to(torch.bfloat16), condition.to(torch.bfloat16)
        else:
            trunk = self._trunk()
        # No context at all without it: a caller's own autocast (bf16 on a GPU) still applies as before.
        context = torch.autocast(grid.device.type, dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
        with context:
            x = trunk[0](x)
            for block in trunk[1:-1]:
                x = block(x, condition)
            out = trunk[-1](x).contiguous()
        return out.to(grid.dtype), x.mean((2, 3)).to(grid.dtype)

    def _state_features(self, state: torch.Tensor) -> torch.Tensor:
        angles = (state[:, :, None] * self.state_scales.to(state.dtype)).flatten(1)
        return torch.cat([state, angles.sin(), angles.cos()], 1)

    def forward(
        self,
        grid: torch.Tensor,
        state: torch.Tensor,
        action: torch.Tensor,
        domain: torch.Tensor | int,
        extra: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(grid change (B, C, h, w), state change (B, state_width)) of one control step.

        Args:
            grid: (B, C, h, w) latent grid now.
            state: (B, state_width) normalised state now (padded channels zero).
            action: (B, action_width) normalised action (padded channels zero).
            domain: (B,) embodiment ids, or one id for the whole batch.
            extra: (B, extra_inputs, h, w) the extra input maps of this step (None: all zero).
        """
        change, pooled = self.trunk_step(grid, state, action, domain, extra)
        return change, self.state_head(pooled, action.to(grid.dtype), domain)

    def trunk_step(
        self,
        grid: torch.Tensor,
        state: torch.Tensor,
        action: torch.Tensor,
        domain: torch.Tensor | int,
        extra: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(grid change (B, C, h, w), the state head's inputs (B, F)) of one step (arguments as :meth:`forward`):
        the state head alone can then be fitted on inputs computed once (``fit_state_head``)."""
        b, _, h, w = grid.shape
        if extra is None and self.extra_inputs:
            # Not told: the maps at zero, what a prior reads before its added inputs are trained.
            extra = grid.new_zeros(b, self.extra_inputs, h, w)
        given = 0 if extra is None else extra.shape[1]
        if given != self.extra_inputs:
            raise ValueError(f"extra has {given} channels; expected extra_inputs={self.extra_inputs}")
        state = state.to(grid.dtype)
        action = action.to(grid.dtype)
        state_features = self._state_features(state)
        embedded = _by_domain(action, self.action_weight, domain)
        condition = self.condition(torch.cat([embedded, state_features], 1))
        rows = torch.linspace(-1.0, 1.0, h, device=grid.device, dtype=grid.dtype)
        cols = torch.linspace(-1.0, 1.0, w, device=grid.device, dtype=grid.dtype)
        coords = torch.stack(torch.meshgrid(rows, cols, indexing="ij"))[None].expand(b, -1, -1, -1)
        inputs = coords if extra is None else torch.cat([coords, extra.to(grid.dtype)], 1)
        change, features = self._run_trunk(grid, inputs, condition)
        pooled = torch.cat([features, condition, action, state_features], 1)
        if self.warp:
            change, flow = change.split([change.shape[1] - 2, 2], 1)
            # grid_sample reads (x, y) in [-1, 1]: a cell is 2 / (side - 1) there (align_corners).
            scale = torch.tensor([2.0 / (w - 1), 2.0 / (h - 1)], dtype=grid.dtype, device=grid.device)
            where = (coords.flip(1) - flow * scale[:, None, None]).permute(0, 2, 3, 1)
            change = change + F.grid_sample(grid, where, align_corners=True, padding_mode="border") - grid
        return change, pooled

    def state_head(self, pooled: torch.Tensor, action: torch.Tensor, domain: torch.Tensor | int) -> torch.Tensor:
        """The state change (B, state_width) from the head's inputs ``pooled`` (B, F; :meth:`trunk_step`) and
        the normalised ``action`` (B, action_width)."""
        change = _by_domain(self.state_mlp(pooled), self.state_weight, domain) + self.state_bias[domain]
        if self.state_action is not None:
            change = change + _by_domain(action, self.state_action, domain)
        return change

    def rollout(
        self,
        grid: torch.Tensor,
        state: torch.Tensor,
        actions: torch.Tensor,
        domain: torch.Tensor | int,
        state_channels: torch.Tensor | None = None,
        extra: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Grids (B, R, C, h, w) and states (B, R, state_width) after each of ``actions`` (B, R, W);
        ``state_channels`` (B, state_width) keeps padded state channels at zero along the way; ``extra``
        (B, R, extra_inputs, h, w) are each step's extra input maps."""
        grids, states = [], []
        for r in range(actions.shape[1]):
            grid_change, state_change = self(grid, state, actions[:, r], domain, None if extra is None else extra[:, r])
            grid, state = grid + grid_change, state + state_change
            if state_channels is not None:
                state = state * state_channels.to(state.dtype)
            grids.append(grid)
            states.append(state)
        return torch.stack(grids, 1), torch.stack(states, 1)


def rollout_loss(
    predicted_grids: torch.Tensor,
    predicted_states: torch.Tensor,
    grids: torch.Tensor,
    states: torch.Tensor,
    state_channels: torch.Tensor,
) -> torch.Tensor:
    """Change-weighted latent MSE plus state MSE of a rollout against the recorded sequence.

    Args:
        predicted_grids: (B, R, C, h, w) the prior's rollout.
        predicted_states: (B, R, S) its states.
        grids: (B, R + 1, C, h, w) the recorded grids, the start first.
        states: (B, R + 1, S) the recorded normalised states, the start first.
        state_channels: (B, S) the embodiment's real state channels.
    """
    targets = grids[:, 1:]
    # A cell's weight grows with how much it changes in this step or moved since the start: the
    # pusher's old and new cells both matter, the static table does not.
    moved = (targets - grids[:, :-1]).pow(2).mean(2, keepdim=True).sqrt()
    since_start = (targets - grids[:, :1]).pow(2).mean(2, keepdim=True).sqrt()
    weight = 1.0 + CHANGE_WEIGHT * torch.maximum(moved, since_start)
    frame_term = ((predicted_grids - targets).pow(2) * weight).mean() / weight.mean()
    mask = state_channels[:, None].to(predicted_states.dtype).expand_as(predicted_states)
    state_term = ((predicted_states - states[:, 1:]).pow(2) * mask).sum() / mask.sum().clamp_min(1.0)
    return frame_term + STATE_WEIGHT * state_term
