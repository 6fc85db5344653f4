"""Channels-last inference kernels: each equals torch's own module, with and without autograd."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from cosmos_robot.model.channels_last import decode_channels_last, gelu_tanh, group_norm, upsample_conv
from cosmos_robot.model.tokenizers import FrameAutoencoder


@pytest.mark.parametrize("grad", [True, False])
def test_fast_gelu_is_torchs_tanh_gelu(grad):
    x = torch.linspace(-8.0, 8.0, 4001).view(1, 1, 1, -1)
    with torch.set_grad_enabled(grad):
        torch.testing.assert_close(gelu_tanh(x), F.gelu(x, approximate="tanh"), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("grad", [True, False])
def test_channels_last_group_norm_is_torchs_group_norm(grad):
    torch.manual_seed(0)
    norm = nn.GroupNorm(4, 16)
    with torch.no_grad():
        norm.weight.normal_()
        norm.bias.normal_()
    x = torch.randn(3, 16, 5, 7) * 3.0 + 2.0
    expected = norm(x)
    with torch.set_grad_enabled(grad):
        got = group_norm(x.contiguous(memory_format=torch.channels_last), norm)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert got.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("grad", [True, False])
def test_channels_last_group_norm_keeps_the_variance_in_bfloat16(grad):
    """Activations far from zero mean: the statistics must not be taken in bfloat16."""
    torch.manual_seed(0)
    norm = nn.GroupNorm(4, 16)
    x = torch.randn(2, 16, 8, 8) * 0.5 + 20.0
    with torch.set_grad_enabled(grad):
        got = group_norm(x.bfloat16().contiguous(memory_format=torch.channels_last), norm)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), norm(x.bfloat16().float()), atol=0.05, rtol=0.05)


@pytest.mark.parametrize("grad", [True, False])
def test_the_channels_last_decoder_draws_what_the_decoder_draws(grad):
    torch.manual_seed(0)
    autoencoder = FrameAutoencoder()
    with torch.no_grad():
        for norm in (m for m in autoencoder.decoder.modules() if isinstance(m, nn.GroupNorm)):
            norm.weight.normal_()
            norm.bias.normal_()
    z = torch.tanh(torch.randn(3, 8, 8, 8))
    with torch.no_grad():
        expected = autoencoder.decoder(z)
    with torch.set_grad_enabled(grad):
        got = decode_channels_last(autoencoder.decoder, z)
        assert torch.equal(autoencoder.decode(z), got)
    assert got.shape == (3, 3, 64, 64) and got.is_contiguous()
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_upsampling_fused_into_the_convolution_is_upsample_then_convolve():
    torch.manual_seed(0)
    conv = nn.Conv2d(5, 7, 3, padding=1)
    x = torch.randn(2, 5, 4, 6)  # not square: rows and columns fold separately
    expected = conv(F.interpolate(x, scale_factor=2, mode="nearest"))
    with torch.no_grad():
        got = upsample_conv(x.contiguous(memory_format=torch.channels_last), conv)
    assert got.shape == (2, 7, 8, 12)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_transposed_kernels_follow_the_weights_and_outlive_an_autocast():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(1, 3, 5, 5)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        upsample_conv(x, conv)  # made once, under autocast
    with torch.no_grad():
        conv.weight.mul_(-2.0)  # an in-place update, as an optimiser step makes
        got = upsample_conv(x, conv)
        expected = conv(F.interpolate(x, scale_factor=2, mode="nearest"))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("out_channels", [3, 16])
def test_narrow_and_wide_outputs_both_upsample_then_convolve(out_channels):
    # Narrow outputs take the four phase convolutions, wide ones the transposed convolution.
    torch.manual_seed(1)
    conv = nn.Conv2d(6, out_channels, 3, padding=1)
    x = torch.randn(3, 6, 5, 7).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        got = upsample_conv(x, conv)
        expected = conv(F.interpolate(x, scale_factor=2, mode="nearest"))
    assert got.shape == (3, out_channels, 10, 14)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
