"""Random but well-formed model inputs of any size: for tests, benchmarks and shape checks."""

from __future__ import annotations

import torch

from cosmos_robot.model.batches import GeneratorInputs, PriorBatch, ReasonerInputs, TransitionBatch
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.tokenizers import ByteTokenizer


def example_inputs(
    config: ModelConfig,
    batch: int = 2,
    num_frames: int = 4,
    num_actions: int = 3,
    context_frames: int = 1,
    action_dim: int = 2,
    state_dim: int = 2,
    fps: float = 10.0,
    seed: int = 0,
    instruction: str = "move the object onto the goal",
) -> tuple[ReasonerInputs, GeneratorInputs]:
    """A (reasoner, generator) pair with random frames, latents, actions and states, times at ``fps``."""
    g = torch.Generator().manual_seed(seed)
    ids, valid = ByteTokenizer().encode([instruction[: (i + 1) * 7] for i in range(batch)], config.max_text_len)
    frame_time = torch.arange(num_frames, dtype=torch.float32)[None].expand(batch, -1) / fps
    per = num_actions // (num_frames - 1)
    action_time = (torch.arange(num_actions, dtype=torch.float32) + 1)[None].expand(batch, -1) / (fps * per)
    action_channels = torch.zeros(batch, config.action_width, dtype=torch.bool)
    action_channels[:, :action_dim] = True
    state_channels = torch.zeros(batch, config.state_width, dtype=torch.bool)
    state_channels[:, :state_dim] = True
    domain = torch.arange(batch) % config.num_domains
    size = config.image_size
    reasoner = ReasonerInputs(
        domain=domain,
        text_ids=ids,
        text_valid=valid,
        state=torch.randn(batch, config.state_width, generator=g) * state_channels,
        observed_frames=torch.randint(0, 256, (batch, context_frames, size, size, 3), generator=g, dtype=torch.uint8),
        observed_time=frame_time[:, :context_frames],
    )
    generator = GeneratorInputs(
        domain=domain,
        frames=torch.randn(batch, num_frames, config.tokens_per_frame, config.frame_token_dim, generator=g),
        frame_t=torch.zeros(batch, num_frames),
        frame_time=frame_time,
        actions=torch.randn(batch, num_actions, config.action_width, generator=g) * action_channels[:, None],
        action_t=torch.zeros(batch, num_actions),
        action_time=action_time,
        action_channels=action_channels,
        states=torch.randn(batch, num_frames, config.state_width, generator=g) * state_channels[:, None],
        state_t=torch.zeros(batch, num_frames),
        state_channels=state_channels,
    )
    return reasoner, generator


def example_prior_batch(generator: GeneratorInputs, chunk: int | None = None) -> PriorBatch:
    """A :class:`PriorBatch` from example generator inputs: frame 0 and its state, the first ``chunk`` actions."""
    chunk = chunk or generator.actions.shape[1]
    return PriorBatch(
        frames=generator.frames[:, 0],
        state=generator.states[:, 0],
        domain=generator.domain,
        actions=generator.actions[:, :chunk],
        action_channels=generator.action_channels,
        action_valid=torch.ones(generator.actions.shape[0], chunk, dtype=torch.bool),
    )


def example_transition_batch(generator: GeneratorInputs) -> TransitionBatch:
    """A :class:`TransitionBatch` from example generator inputs: frames 0 and 1 and the action between them."""
    return TransitionBatch(
        frames=generator.frames[:, :2],
        domain=generator.domain,
        actions=generator.actions[:, 0],
        action_channels=generator.action_channels,
    )
