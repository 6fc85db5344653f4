"""Time-aligned 3-D rotary positions (t, h, w) with interleaved frequency allocation (Qwen3-VL style).

Every token carries three positions. The temporal one comes from the token's real timestamp,
``t = seconds * units_per_second + offset``, so a frame, an action and a state sample that happen at
the same instant share it whatever their rate or modality. Frames use (t, row, col) of their grid;
actions and states use (t, 0, 0); text uses a running index on all three axes, and everything after
the text is offset by a margin so text and time never overlap (Cosmos 3: margin 15000).

Frequencies are dealt out to the axes interleaved (t, h, w, t, h, w, ...) rather than in three
contiguous bands, so each axis gets both high and low frequencies.
"""

from __future__ import annotations

import torch
from torch import nn


def temporal_positions(seconds: torch.Tensor, units_per_second: float, offset: float = 0.0) -> torch.Tensor:
    """Rotary time of tokens stamped at ``seconds`` (any shape)."""
    return seconds.to(torch.float32) * units_per_second + offset


def text_positions(num_tokens: int) -> torch.Tensor:
    """(L, 3) positions of a text run: the index on all three axes."""
    index = torch.arange(num_tokens, dtype=torch.float32)
    return index[:, None].expand(num_tokens, 3).clone()


def grid_positions(times: torch.Tensor, grid: int) -> torch.Tensor:
    """(..., T * grid * grid, 3) positions of frame tokens: (t, row, col), row-major per frame.

    Args:
        times: (..., T) rotary times of the frames.
        grid: tokens per frame side.
    """
    rows = torch.arange(grid, dtype=torch.float32, device=times.device)
    row, col = torch.meshgrid(rows, rows, indexing="ij")
    row, col = row.reshape(-1), col.reshape(-1)  # (G*G,)
    t = times[..., :, None].expand(*times.shape, grid * grid)  # (..., T, G*G)
    hw = torch.stack([row, col], -1).expand(*t.shape, 2)  # (..., T, G*G, 2)
    return torch.cat([t[..., None], hw], -1).flatten(-3, -2)  # (..., T*G*G, 3)


def point_positions(times: torch.Tensor) -> torch.Tensor:
    """(..., N, 3) positions (t, 0, 0) of actions or states at rotary ``times`` (..., N)."""
    zeros = torch.zeros_like(times)
    return torch.stack([times, zeros, zeros], -1)


def interleaved_axis(num_pairs: int, sections: tuple[int, int, int]) -> torch.Tensor:
    """(num_pairs,) axis (0=t, 1=h, 2=w) of each frequency pair, as Qwen3-VL's interleaved mRoPE.

    Pair i goes to h if i % 3 == 1 and i < 3 * sections[1], to w if i % 3 == 2 and i < 3 * sections[2],
    else to t; the counts then match ``sections``.

    >>> interleaved_axis(8, (3, 3, 2)).tolist()
    [0, 1, 2, 0, 1, 2, 0, 1]
    """
    index = torch.arange(num_pairs)
    axis = torch.zeros(num_pairs, dtype=torch.long)
    axis[(index % 3 == 1) & (index < 3 * sections[1])] = 1
    axis[(index % 3 == 2) & (index < 3 * sections[2])] = 2
    counts = torch.bincount(axis, minlength=3).tolist()
    if counts != list(sections):
        raise ValueError(f"sections={tuple(sections)} cannot be interleaved over {num_pairs} pairs (got {counts})")
    return axis


class MRoPE(nn.Module):
    """Rotary embedding over (t, h, w) positions.

    Args:
        head_dim: per-head width (even).
        sections: frequency pairs per axis, summing to head_dim / 2.
        theta: rotary base.
    """

    def __init__(self, head_dim: int, sections: tuple[int, int, int], theta: float = 10000.0) -> None:
        super().__init__()
        num_pairs = head_dim // 2
        inv_freq = 1.0 / theta ** (torch.arange(num_pairs, dtype=torch.float32) / num_pairs)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.register_buffer("axis", interleaved_axis(num_pairs, sections), persistent=False)

    def forward(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin of shape (..., L, head_dim) for positions (..., L, 3)."""
        pos = positions.to(torch.float32).gather(-1, self.axis.expand(*positions.shape[:-1], -1))  # (..., L, pairs)
        angles = pos * self.inv_freq  # (..., L, pairs)
        angles = torch.cat([angles, angles], -1)  # (..., L, head_dim): rotate-half layout
        return angles.cos(), angles.sin()


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the last axis halves."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], -1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate (B, H, L, D) queries or keys by (B, L, D) cos/sin."""
    cos, sin = cos[:, None].to(x.dtype), sin[:, None].to(x.dtype)  # (B, 1, L, D)
    return x * cos + rotate_half(x) * sin
