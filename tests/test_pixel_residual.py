"""Keeping unchanged pixels: the real frame where the decoded change is zero, the decoder where it is large."""

from __future__ import annotations

import numpy as np

from cosmos_robot.pixel_residual import CHANGE_LEVELS, keep_unchanged_pixels


def test_no_decoded_change_gives_back_the_real_frame_exactly():
    rng = np.random.default_rng(0)
    reference = rng.integers(0, 256, (1, 8, 8, 3), dtype=np.uint8)
    decoded_reference = rng.integers(0, 256, (1, 8, 8, 3)).astype(np.float32)  # the decoder's own error
    out = keep_unchanged_pixels(decoded_reference[:, None].repeat(2, 1), decoded_reference, reference)
    np.testing.assert_array_equal(out, reference[:, None].repeat(2, 1))


def test_a_large_change_is_drawn_by_the_decoder_alone():
    reference = np.full((1, 4, 4, 3), 10, np.uint8)
    decoded_reference = np.full((1, 4, 4, 3), 20.0, np.float32)
    decoded = decoded_reference[:, None].copy()
    decoded[0, 0, 1, 1] = 20.0 + CHANGE_LEVELS  # a moved object: its pixel is the decoder's
    decoded[0, 0, 2, 2] = 20.0 + CHANGE_LEVELS / 2  # halfway: half kept-plus-change, half decoder
    out = keep_unchanged_pixels(decoded, decoded_reference, reference)
    assert out[0, 0, 1, 1, 0] == 20 + CHANGE_LEVELS
    assert out[0, 0, 2, 2, 0] == round(0.5 * (10 + CHANGE_LEVELS / 2) + 0.5 * (20 + CHANGE_LEVELS / 2))
    assert out[0, 0, 0, 0, 0] == 10
