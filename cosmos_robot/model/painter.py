"""The effector drawn at full resolution where the carried agent state puts it.

The drawer paints the next latent grid told where the effector is (a Gaussian on the 8x8 grid), and the
decoder turns that grid into pixels. A small effector -- arm2's fingertip is ~5 pixels -- then comes out
as a paler smudge where the decoder is least sure: at the view's edge, where MuJoCo's frame shows a
sliver of one or two pixels, and over the green goal disc. The detector misses those smudges
(docs/results.md, "Where arm2's fingertip is lost"), and the autoencoder's own reconstructions of
MuJoCo's frames lose the fingertip about as often, so no grid the decoder reads can fix it.

The learned env knows where the effector is: the object's effector map of the agent state. So after the
decoder, :class:`EffectorPainter` redraws a small window of the frame round that place, at full
resolution: a few convolutions read the decoded window, a Gaussian round the effector's sub-pixel place
(times its offsets) and where the window lies in the view, and add a correction. Only the window is
computed, so a step costs a fraction of the decoder's (a learned env decodes every step).
"""

from __future__ import annotations

import torch
from torch import nn

# The window's side in pixels: the effector and the smudge the decoder drew near it (the learned place is
# a few millimetres off, a pixel is ~7 mm).
WINDOW = 16
# The Gaussian's width in pixels round the effector's place.
PIXEL_SIGMA = 1.5
# Inputs per window pixel: the decoded colour (3), the Gaussian times (1, column, row offset) (3), whether
# the pixel is inside the view (1), and its place in the view (2).
INPUTS = 9


class EffectorPainter(nn.Module):
    """A correction of decoded frames in a window round the effector's place.

    Args:
        half_extent: half the side, in metres, of the square the top-down camera sees (x right, y up).
        width: channels of the convolutions.
        bfloat16: paint (at inference, :meth:`paint`) with the convolutions in bfloat16, as a model whose forward
            prior runs its trunk so (``ModelConfig.forward_bfloat16``): a third of the float32 time on CPUs with
            AVX512-BF16 or AMX; training stays in float32.
    """

    def __init__(self, half_extent: float, width: int = 16, bfloat16: bool = False) -> None:
        super().__init__()
        if not half_extent > 0:
            raise ValueError(f"half_extent={half_extent!r}; expected a positive number of metres")
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width={width!r}; expected a positive integer")
        self.half_extent = float(half_extent)
        self.width = width
        self.bfloat16 = bool(bfloat16)
        self.net = nn.Sequential(
            nn.Conv2d(INPUTS, width, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(width, 3, 1),
        )
        # Untrained, the painter leaves every frame as decoded.
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def pixel_places(self, places: torch.Tensor, side: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Places (N, 2: x, y metres) -> (column, row) in pixels of a ``side``-pixel frame (pixel centres at
        integers; the same geometry as ``object_pose.pose_maps``)."""
        col = (places[:, 0] / self.half_extent + 1.0) * side / 2 - 0.5
        row = (1.0 - places[:, 1] / self.half_extent) * side / 2 - 0.5
        return col, row

    def _windows(
        self, places: torch.Tensor, h: int, w: int
    ) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor, torch.Tensor]:
        """For each place (N, 2, metres) in an (h, w) frame: the window's pixel indices (batch, row, column;
        (N, WINDOW, WINDOW) each, clamped into the frame), which of them lie inside it (N, WINDOW, WINDOW),
        and the inputs other than colour (N, INPUTS - 3, WINDOW, WINDOW)."""
        n, device = len(places), places.device
        col, row = self.pixel_places(places.float(), w)
        half = WINDOW // 2
        # The window's top-left pixel, clamped so that it overlaps the frame by at least one pixel.
        left = (col.round().long() - half + 1).clamp(1 - WINDOW, w - 1)
        top = (row.round().long() - half + 1).clamp(1 - WINDOW, h - 1)
        steps = torch.arange(WINDOW, device=device)
        rows = (top[:, None] + steps)[:, :, None].expand(-1, -1, WINDOW)
        cols = (left[:, None] + steps)[:, None, :].expand(-1, WINDOW, -1)
        inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
        batch = torch.arange(n, device=device)[:, None, None].expand(-1, WINDOW, WINDOW)
        dx, dy = cols - col[:, None, None], rows - row[:, None, None]
        near = torch.exp(-(dx**2 + dy**2) / (2 * PIXEL_SIGMA**2))
        mask = inside.float()
        where = [(rows + 0.5) / h * 2 - 1, (cols + 0.5) / w * 2 - 1]
        extra = torch.stack([near, near * dx, near * dy, mask, *where], 1)
        return (batch, rows.clamp(0, h - 1), cols.clamp(0, w - 1)), inside, extra

    def _change(self, window: torch.Tensor, extra: torch.Tensor) -> torch.Tensor:
        """The correction (N, WINDOW, WINDOW, 3) of windows (N, WINDOW, WINDOW, 3) in [-1, 1]."""
        extra = extra.to(window.dtype)
        # The inside-the-frame mask is one of the extra inputs (its fourth channel): padding reads as zero colour.
        inputs = torch.cat([window.permute(0, 3, 1, 2) * extra[:, 3:4], extra], 1)
        return self.net(inputs).permute(0, 2, 3, 1)

    def _check(self, frames: torch.Tensor, places: torch.Tensor, layout: str) -> None:
        channels = frames.shape[1] if layout == "NCHW" else frames.shape[-1]
        if frames.ndim != 4 or channels != 3 or places.shape != (frames.shape[0], 2):
            raise ValueError(
                f"frames {tuple(frames.shape)} and places {tuple(places.shape)}; expected {layout} with 3 colour "
                "channels and (N, 2)"
            )

    def forward(self, frames: torch.Tensor, places: torch.Tensor) -> torch.Tensor:
        """Frames (N, 3, H, W) in [-1, 1] with the window round each frame's effector place (N, 2, metres)
        corrected; the rest of each frame unchanged (what training fits)."""
        self._check(frames, places, "NCHW")
        index, inside, extra = self._windows(places, *frames.shape[2:])
        pixels = frames.permute(0, 2, 3, 1)
        window = pixels[index]
        out = pixels.clone()
        # Only the window's pixels inside the frame are written: those clamped onto its edge repeat one.
        out[tuple(i[inside] for i in index)] = (window + self._change(window, extra))[inside]
        return out.permute(0, 3, 1, 2)

    @torch.no_grad()
    def paint(self, frames: torch.Tensor, places: torch.Tensor) -> torch.Tensor:
        """uint8 frames (N, H, W, 3) corrected round the effector's places (N, 2, metres): what a learned env
        shows. Only the windows are converted and computed."""
        self._check(frames, places, "NHWC")
        index, inside, extra = self._windows(places, *frames.shape[1:3])
        window = frames[index].float() / 127.5 - 1.0
        with torch.autocast(frames.device.type, torch.bfloat16, enabled=self.bfloat16):
            change = self._change(window, extra).float()
        painted = (window + change).clamp(-1, 1).add(1.0).mul(127.5).round()
        out = frames.clone()
        out[tuple(i[inside] for i in index)] = painted[inside].to(torch.uint8)
        return out
