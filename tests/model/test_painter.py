"""The effector painter: untrained it changes nothing; it changes only the window round each place (inside the
frame, also where the place is at or past the view's edge); its uint8 path is its training path, rounded; bad
inputs are refused by name."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.model.painter import WINDOW, EffectorPainter
from cosmos_robot.model.tokenizers import float_to_frames, frames_to_float

HALF_EXTENT = 0.22


def _frames(n: int = 4) -> torch.Tensor:
    return torch.randint(0, 256, (n, 64, 64, 3), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)


def _trained_looking(width: int = 8) -> EffectorPainter:
    painter = EffectorPainter(HALF_EXTENT, width).eval()
    torch.manual_seed(1)
    for module in painter.net:
        if isinstance(module, torch.nn.Conv2d):
            torch.nn.init.normal_(module.weight, std=0.3)
            torch.nn.init.normal_(module.bias, std=0.3)
    return painter


def test_an_untrained_painter_changes_no_pixel():
    frames = _frames()
    places = torch.tensor([[0.0, 0.0], [0.1, -0.1], [0.21, 0.21], [-0.3, 0.0]])
    assert torch.equal(EffectorPainter(HALF_EXTENT).paint(frames, places), frames)


def test_only_the_window_round_each_place_changes():
    painter, frames = _trained_looking(), _frames()
    # The centre, a corner just inside the view, a place past its right edge, a place far outside it.
    places = torch.tensor([[0.0, 0.0], [-0.21, 0.21], [0.24, 0.0], [5.0, -5.0]])
    changed = (painter.paint(frames, places) != frames).any(-1)
    col, row = painter.pixel_places(places, 64)
    for k in range(len(places)):
        rows, cols = torch.nonzero(changed[k], as_tuple=True)
        assert len(rows) <= WINDOW**2
        # Every changed pixel lies within a window's side of the place (clamped into the frame).
        assert (cols - col[k].clamp(0, 63)).abs().max() <= WINDOW and (rows - row[k].clamp(0, 63)).abs().max() <= WINDOW
    assert changed[0].sum() == WINDOW**2  # a window wholly inside the frame is redrawn whole
    assert 0 < changed[2].sum() < WINDOW**2 // 2  # past the edge: only the part inside the frame
    assert changed[2][:, :32].sum() == 0  # the right edge's window leaves the frame's left half alone


def test_the_uint8_path_is_the_training_path_rounded():
    painter, frames = _trained_looking(), _frames()
    places = torch.tensor([[0.05, 0.02], [-0.2, -0.19], [0.23, 0.1], [0.0, 0.25]])
    from_float = float_to_frames(painter(frames_to_float(frames), places))
    assert torch.equal(painter.paint(frames, places), from_float)


def test_a_bfloat16_painter_paints_what_the_float32_one_does_within_a_few_grey_levels():
    painter, frames = _trained_looking(), _frames()
    places = torch.tensor([[0.05, 0.02], [-0.2, -0.19], [0.23, 0.1], [0.0, 0.25]])
    exact = painter.paint(frames, places)
    painter.bfloat16 = True
    fast = painter.paint(frames, places)
    assert (fast.int() - exact.int()).abs().max() <= 8 and (fast != frames).any()


def test_training_reaches_the_window_weights():
    painter = EffectorPainter(HALF_EXTENT)
    frames = frames_to_float(_frames(2))
    painter(frames, torch.zeros(2, 2)).sum().backward()
    assert painter.net[-1].weight.grad is not None and painter.net[-1].weight.grad.abs().sum() > 0


def test_bad_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match="half_extent=0"):
        EffectorPainter(0)
    with pytest.raises(ValueError, match="width=0"):
        EffectorPainter(HALF_EXTENT, 0)
    painter = EffectorPainter(HALF_EXTENT)
    with pytest.raises(ValueError, match=r"frames \(4, 64, 64, 3\) and places \(3, 2\)"):
        painter.paint(_frames(), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="expected NCHW"):
        painter(frames_to_float(_frames()).movedim(1, -1), torch.zeros(4, 2))
