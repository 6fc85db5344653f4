"""Time-aligned mRoPE: same instant, same temporal rotation; scores depend on position differences only."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.model.rope import (
    MRoPE,
    apply_rotary,
    grid_positions,
    interleaved_axis,
    point_positions,
    temporal_positions,
    text_positions,
)

SECTIONS = (6, 5, 5)
HEAD_DIM = 32


def temporal_part(cos: torch.Tensor, axis: torch.Tensor) -> torch.Tensor:
    """The columns of cos (..., D) driven by the temporal axis."""
    t_cols = torch.cat([axis == 0, axis == 0])  # rotate-half layout repeats the pairs
    return cos[..., t_cols]


def test_same_timestamp_same_temporal_rotation_across_modalities_and_rates():
    rope = MRoPE(HEAD_DIM, SECTIONS)
    ups = 6.0
    # A frame of a 10 fps video at index 3, and action 5 of a 20 Hz stream stamped at the frame it
    # leads into ((5 + 1) / 20 s): both happen at 0.3 s.
    frame_time = temporal_positions(torch.tensor([3 / 10]), ups)
    action_time = temporal_positions(torch.tensor([(5 + 1) / 20]), ups)
    frame_tokens = grid_positions(frame_time, grid=4)  # (16, 3), all at t, various (row, col)
    action_token = point_positions(action_time)  # (1, 3) at (t, 0, 0)
    cos_f, sin_f = rope(frame_tokens)
    cos_a, sin_a = rope(action_token)
    axis = rope.axis
    for f in range(16):
        torch.testing.assert_close(temporal_part(cos_f[f], axis), temporal_part(cos_a[0], axis))
        torch.testing.assert_close(temporal_part(sin_f[f], axis), temporal_part(sin_a[0], axis))
    # ...and a different instant rotates differently
    cos_later, _ = rope(point_positions(temporal_positions(torch.tensor([0.4]), ups)))
    assert not torch.allclose(temporal_part(cos_later[0], axis), temporal_part(cos_a[0], axis))


@pytest.mark.parametrize(("fps", "tcf", "k"), [(10, 1, 0), (10, 1, 7), (15, 1, 4), (24, 4, 3)])
def test_temporal_positions_follow_the_cosmos3_formula(fps, tcf, k):
    # Cosmos 3 (cosmos-framework, diffusers 0.42):
    # t = (k + start_offset) / (fps / tcf) * (base_fps / base_tcf) + offset, base 24 fps / tcf 4,
    # with start_offset 1 for actions; ours is seconds * 6 + offset with the action at the frame it leads into.
    base = 24 / 4
    offset = 15000.0
    cosmos_action = (k + 1) / (fps / tcf) * base + offset
    ours_action = temporal_positions(torch.tensor((k + 1) * tcf / fps), 6.0, offset)
    assert float(ours_action) == pytest.approx(cosmos_action)
    cosmos_latent = k / (fps / tcf) * base + offset
    assert float(temporal_positions(torch.tensor(k * tcf / fps), 6.0, offset)) == pytest.approx(cosmos_latent)


def test_text_is_a_running_index_on_all_axes():
    pos = text_positions(5)
    assert pos.tolist() == [[i, i, i] for i in range(5)]


def test_grid_positions_are_row_major_rows_and_columns():
    pos = grid_positions(torch.tensor([[1.0, 2.0]]), grid=2)  # (1, 8, 3)
    assert pos[0].tolist() == [[1, 0, 0], [1, 0, 1], [1, 1, 0], [1, 1, 1], [2, 0, 0], [2, 0, 1], [2, 1, 0], [2, 1, 1]]


def test_interleaving_gives_every_axis_high_and_low_frequencies():
    axis = interleaved_axis(16, SECTIONS)
    assert torch.bincount(axis).tolist() == list(SECTIONS)
    for a in range(3):
        where = torch.nonzero(axis == a).flatten()
        assert where.min() <= 2 and where.max() >= 13  # spread over the whole band
    with pytest.raises(ValueError, match="cannot be interleaved"):
        interleaved_axis(16, (2, 2, 12))


def test_attention_scores_depend_only_on_position_differences():
    torch.manual_seed(0)
    rope = MRoPE(HEAD_DIM, SECTIONS)
    q, k = torch.randn(1, 1, 6, HEAD_DIM), torch.randn(1, 1, 6, HEAD_DIM)
    pos_q = torch.rand(1, 6, 3) * 50
    pos_k = torch.rand(1, 6, 3) * 50

    def scores(pq, pk):
        qr = apply_rotary(q, *rope(pq))
        kr = apply_rotary(k, *rope(pk))
        return qr @ kr.transpose(-1, -2)

    shift = torch.tensor([13.5, -4.0, 7.0])
    torch.testing.assert_close(scores(pos_q, pos_k), scores(pos_q + shift, pos_k + shift), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(scores(pos_q, pos_k), scores(pos_q + shift, pos_k), atol=1e-3)


def test_rotation_preserves_norms():
    rope = MRoPE(HEAD_DIM, SECTIONS)
    x = torch.randn(2, 3, 5, HEAD_DIM)
    rotated = apply_rotary(x, *rope(torch.rand(2, 5, 3) * 100))
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
