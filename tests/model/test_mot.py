"""MoT attention: AR never reads DM, DM reads AR, AR is causal, the cache equals the joint attention."""

from __future__ import annotations

import torch

from cosmos_robot.model.mot import MoTBlock
from cosmos_robot.model.rope import MRoPE

D, HEADS, LA, LD = 32, 4, 7, 9


def setup(seed: int = 0):
    torch.manual_seed(seed)
    block = MoTBlock(D, HEADS, 2.0).eval()
    with torch.no_grad():  # leave adaLN-Zero: a random table so the generator path is exercised
        block.modulation_table.normal_(std=0.3)
    rope = MRoPE(D // HEADS, (2, 1, 1))
    # cond: the shared per-token modulation (B, Ld, 6D)
    ar, dm, cond = torch.randn(2, LA, D), torch.randn(2, LD, D), 0.3 * torch.randn(2, LD, 6 * D)
    ar_rope, dm_rope = rope(torch.rand(2, LA, 3) * 20), rope(torch.rand(2, LD, 3) * 20)
    valid = torch.ones(2, LA, dtype=torch.bool)
    return block, ar, dm, cond, ar_rope, dm_rope, valid


def test_reasoner_outputs_ignore_generator_tokens():
    block, ar, dm, cond, ar_rope, dm_rope, valid = setup()
    ar_a, _ = block.forward_joint(ar, dm, cond, ar_rope, dm_rope, valid)
    ar_b, _ = block.forward_joint(ar, torch.randn_like(dm), torch.randn_like(cond), ar_rope, dm_rope, valid)
    torch.testing.assert_close(ar_a, ar_b)


def test_generator_outputs_read_the_reasoner():
    block, ar, dm, cond, ar_rope, dm_rope, valid = setup()
    _, dm_a = block.forward_joint(ar, dm, cond, ar_rope, dm_rope, valid)
    ar_changed = ar.clone()
    ar_changed[:, 2] += 1.0
    _, dm_b = block.forward_joint(ar_changed, dm, cond, ar_rope, dm_rope, valid)
    assert (dm_a - dm_b).abs().max() > 1e-3


def test_reasoner_is_causal():
    block, ar, dm, cond, ar_rope, dm_rope, valid = setup()
    ar_a, _ = block.forward_joint(ar, dm, cond, ar_rope, dm_rope, valid)
    changed = ar.clone()
    changed[:, 4] += 1.0
    ar_b, _ = block.forward_joint(changed, dm, cond, ar_rope, dm_rope, valid)
    torch.testing.assert_close(ar_a[:, :4], ar_b[:, :4])
    assert (ar_a[:, 4:] - ar_b[:, 4:]).abs().amax(dim=(0, 2)).min() > 1e-4


def test_padded_reasoner_tokens_are_invisible_to_the_generator():
    block, ar, dm, cond, ar_rope, dm_rope, valid = setup()
    valid[:, 5:] = False
    _, dm_a = block.forward_joint(ar, dm, cond, ar_rope, dm_rope, valid)
    changed = ar.clone()
    changed[:, 5:] = torch.randn_like(changed[:, 5:])
    _, dm_b = block.forward_joint(changed, dm, cond, ar_rope, dm_rope, valid)
    torch.testing.assert_close(dm_a, dm_b)


def test_cached_halves_equal_the_joint_attention():
    block, ar, dm, cond, ar_rope, dm_rope, valid = setup()
    valid[1, 6:] = False
    ar_joint, dm_joint = block.forward_joint(ar, dm, cond, ar_rope, dm_rope, valid)
    ar_split, k, v = block.reasoner_step(ar, ar_rope, valid)
    dm_split = block.generator_step(dm, cond, dm_rope, k, v, valid)
    torch.testing.assert_close(ar_split, ar_joint, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dm_split, dm_joint, atol=1e-5, rtol=1e-5)


def test_zero_modulation_makes_the_generator_block_the_identity():
    # adaLN-Zero: the network's modulation projection and the block tables start at zero.
    torch.manual_seed(0)
    block = MoTBlock(D, HEADS, 2.0)
    rope = MRoPE(D // HEADS, (2, 1, 1))
    ar, dm = torch.randn(1, LA, D), torch.randn(1, LD, D)
    valid = torch.ones(1, LA, dtype=torch.bool)
    _, k, v = block.reasoner_step(ar, rope(torch.zeros(1, LA, 3)), valid)
    out = block.generator_step(dm, torch.zeros(1, LD, 6 * D), rope(torch.zeros(1, LD, 3)), k, v, valid)
    torch.testing.assert_close(out, dm)
