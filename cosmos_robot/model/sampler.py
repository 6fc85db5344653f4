"""Sampling a plan: generate the noisy tokens of a window with the Euler sampler, reusing the reasoner cache.

This is the glue between ``flow.py`` (which sees one (B, N, C) tensor and a callable) and the
network (which sees modalities). Frames, actions and states are packed into one tensor with
channels zero-padded to the widest modality; padded channels get no noise and stay zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from cosmos_robot.model.batches import GeneratorInputs, GeneratorOutputs, ReasonerInputs
from cosmos_robot.model.flow import classifier_free_guidance, euler_sample
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.plan import Plan


@dataclass
class Sample:
    """Generated window (clean values everywhere) and the heads read from a final clean pass."""

    tokens: GeneratorInputs
    heads: GeneratorOutputs


class Packer:
    """Packs frames (B, T, GG, Cf), actions (B, K, W) and states (B, T, Sw) into (B, N, C) and back."""

    def __init__(self, template: GeneratorInputs) -> None:
        b, self.t, self.gg, self.cf = template.frames.shape
        self.k, self.w = template.actions.shape[1:]
        self.sw = template.states.shape[2]
        self.c = max(self.cf, self.w, self.sw)

    def _pad(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(x, (0, self.c - x.shape[-1]))

    def pack(self, frames: torch.Tensor, actions: torch.Tensor, states: torch.Tensor) -> torch.Tensor:
        """Three modalities -> (B, T*GG + K + T, C)."""
        return torch.cat([self._pad(frames.flatten(1, 2)), self._pad(actions), self._pad(states)], 1)

    def unpack(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Inverse of :meth:`pack`."""
        n_f = self.t * self.gg
        frames = x[:, :n_f, : self.cf].reshape(x.shape[0], self.t, self.gg, self.cf)
        return frames, x[:, n_f : n_f + self.k, : self.w], x[:, n_f + self.k :, : self.sw]

    def token_flags(self, plan: Plan, batch: int) -> torch.Tensor:
        """(B, N) noisy flags of the packed tokens from a per-frame / per-action / per-state plan."""
        flags = torch.cat([plan.frames.repeat_interleave(self.gg), plan.actions, plan.states])
        return flags[None].expand(batch, -1)

    def channel_mask(self, template: GeneratorInputs) -> torch.Tensor:
        """(B, N, C) True on real channels (padded action/state channels and packing padding are False)."""
        b = template.frames.shape[0]
        frames = torch.ones(b, self.t, self.gg, self.cf, device=template.frames.device)
        actions = template.action_channels[:, None].expand(b, self.k, self.w).float()
        states = template.state_channels[:, None].expand(b, self.t, self.sw).float()
        return self.pack(frames, actions, states) > 0


@torch.no_grad()
def sample_plan(
    network: WorldActionNetwork,
    reasoner: ReasonerInputs,
    template: GeneratorInputs,
    plan: Plan,
    steps: int = 10,
    shift: float = 1.0,
    use_cache: bool = True,
    rng: torch.Generator | None = None,
    cfg_scale: float | None = None,
    uncond_reasoner: ReasonerInputs | None = None,
) -> Sample:
    """Generate the tokens ``plan`` marks noisy; the clean ones are taken from ``template``.

    Args:
        network: the world-action network.
        reasoner: clean reasoner inputs of the request.
        template: generator inputs holding the clean values (noisy slots may hold anything).
        plan: which frames, actions and states to generate.
        steps: Euler steps.
        shift: time shift of the schedule.
        use_cache: run the reasoner once (True) or at every step (False, for comparison).
        rng: seeds the starting noise.
        cfg_scale: classifier-free guidance on the instruction; needs ``uncond_reasoner``.
        uncond_reasoner: the request without its instruction.
    """
    if cfg_scale is not None and uncond_reasoner is None:
        raise ValueError("cfg_scale is set but uncond_reasoner is None; expected the request without instruction")
    packer = Packer(template)
    b = template.frames.shape[0]
    noisy = packer.token_flags(plan, b).to(template.frames.device)
    channels = packer.channel_mask(template).to(template.frames.device)
    clean = packer.pack(template.frames, template.actions, template.states) * channels
    noise = torch.randn(clean.shape, generator=rng, dtype=clean.dtype).to(clean.device) * channels

    caches = None
    if use_cache:
        caches = [network.encode_reasoner(reasoner)]
        if cfg_scale is not None:
            caches.append(network.encode_reasoner(uncond_reasoner))
        rope = network.generator_rope(template)  # positions do not change between steps

    def predict(inputs: GeneratorInputs, which: int) -> GeneratorOutputs:
        if caches is not None:
            return network.generate_step(caches[which], inputs, rope)
        return network(reasoner if which == 0 else uncond_reasoner, inputs)

    def velocity(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        inputs = _with_values(template, packer, x, t)
        out = predict(inputs, 0)
        v = packer.pack(out.frames, out.actions, out.states)
        if cfg_scale is not None:
            out_u = predict(inputs, 1)
            v = classifier_free_guidance(v, packer.pack(out_u.frames, out_u.actions, out_u.states), cfg_scale)
        return v * channels

    x0 = euler_sample(velocity, noise, clean, noisy, steps=steps, shift=shift)
    result = _with_values(template, packer, x0, torch.zeros_like(x0[..., :1]))
    return Sample(tokens=result, heads=predict(result, 0))


def _with_values(template: GeneratorInputs, packer: Packer, x: torch.Tensor, t: torch.Tensor) -> GeneratorInputs:
    """Generator inputs holding packed values ``x`` at per-token times ``t`` (B, N, 1)."""
    frames, actions, states = packer.unpack(x)
    t_frames, t_actions, t_states = packer.unpack(t.expand(-1, -1, packer.c))
    return template.replace(
        frames=frames,
        frame_t=t_frames[:, :, 0, 0],
        actions=actions,
        action_t=t_actions[..., 0],
        states=states,
        state_t=t_states[..., 0],
    )
