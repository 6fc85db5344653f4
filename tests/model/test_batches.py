"""TensorBatch: one to / select / replace for every batch dataclass, None and tuple fields included."""

from __future__ import annotations

import torch

from cosmos_robot.model.batches import GeneratorOutputs
from cosmos_robot.model.config import preset
from cosmos_robot.model.example_inputs import example_inputs, example_transition_batch


def test_select_takes_the_same_samples_from_every_field():
    reasoner, generator = example_inputs(preset("tiny"), batch=3)
    part = generator.select(slice(1, 3))
    assert part.frames.shape[0] == part.action_channels.shape[0] == 2
    torch.testing.assert_close(part.actions, generator.actions[1:3])
    index = torch.tensor([2, 0])
    torch.testing.assert_close(reasoner.select(index).text_ids, reasoner.text_ids[index])
    pairs = example_transition_batch(generator).select(index)
    torch.testing.assert_close(pairs.frames, generator.frames[index, :2])


def test_replace_copies_and_to_moves_tuples_too():
    _, generator = example_inputs(preset("tiny"), batch=2)
    moved = generator.replace(frame_t=torch.ones_like(generator.frame_t))
    assert moved.frame_t.eq(1).all() and generator.frame_t.eq(0).all() and moved.frames is generator.frames
    out = GeneratorOutputs(*(torch.zeros(2, 1) for _ in range(5)), x0=(torch.ones(2), torch.ones(2), torch.ones(2)))
    half = out.to(torch.float16)
    assert half.frames.dtype == torch.float16 and all(x.dtype == torch.float16 for x in half.x0)
