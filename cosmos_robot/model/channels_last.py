"""Inference kernels for channels-last convolution stacks on CPU: the learned env's hot path.

The forward prior steps every imagined step and the frame decoder draws every pixel observation. Their
convolutions run channels-last (a quarter faster on these CPUs than contiguous), but torch's own
kernels lose time in three places: the group norm (~15x slower on a channels-last tensor), the
nearest-neighbour upsampling of a contiguous tensor (~10x slower than of a channels-last one: 184 of
the decoder's 290 ms at batch 64), and a 3x3 convolution of an upsampled image, which spends 9
multiply-adds per output pixel where 4 suffice and makes the upsampled image (:func:`upsample_conv`).
Each function matches torch's modules to float rounding; with autograd on, the public entry points fall
back to torch's own kernels, whose fused backward passes train faster.
"""

from __future__ import annotations

import math
import weakref

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

# GELU's tanh approximation as a sigmoid: 0.5 * (1 + tanh(z)) == sigmoid(2 z), z = sqrt(2/pi) (x + 0.044715 x^3).
_GELU_LINEAR = 2.0 * math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715 * _GELU_LINEAR


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """``F.gelu(x, approximate="tanh")`` to float rounding, written with a sigmoid.

    On AVX2 CPUs torch's tanh kernel took a fifth of the forward prior's step, its sigmoid a third of
    that. Without autograd it works in place on a new tensor.
    """
    if torch.is_grad_enabled():
        # Training: torch's fused kernel and its fused backward beat the five multiplies' autograd graph.
        return F.gelu(x, approximate="tanh")
    z = x * x
    return z.mul_(_GELU_CUBIC).add_(_GELU_LINEAR).mul_(x).sigmoid_().mul_(x)


def group_norm(x: torch.Tensor, norm: nn.GroupNorm) -> torch.Tensor:
    """``norm(x)`` for a channels-last (B, C, h, w) tensor, returned channels-last.

    The convolutions run channels-last (a quarter faster on these CPUs) and torch's own group norm
    on a channels-last tensor is ~15x slower than on a contiguous one: the statistics here come from
    per-channel means, and the normalisation is one fused multiply-add per element. Both run in float32
    (in bfloat16, E[x^2] - E[x]^2 and x * scale + shift cancel away what distinguishes the cells).
    """
    if torch.is_grad_enabled():
        # Training: torch's kernel with its own backward (on a contiguous float32 copy) costs less than
        # autograd through the statistics below.
        wide = F.group_norm(x.contiguous().float(), norm.num_groups, norm.weight.float(), norm.bias.float(), norm.eps)
        return wide.to(x.dtype).contiguous(memory_format=torch.channels_last)
    b, c, h, w = x.shape
    groups = norm.num_groups
    wide = x.float()
    cells = wide.permute(0, 2, 3, 1).reshape(b, h * w, c)  # a view: the memory is channels-last
    mean = cells.mean(1).view(b, groups, -1).mean(-1, keepdim=True)
    variance = (cells * cells).mean(1).view(b, groups, -1).mean(-1, keepdim=True) - mean * mean
    scale = torch.rsqrt(variance.clamp_min(0.0) + norm.eps) * norm.weight.float().view(groups, -1)
    shift = norm.bias.float() - (mean * scale).view(b, c)
    # On the 4-d channels-last tensor: torch's broadcasting kernel runs ~4x faster there than on the
    # (B, cells, C) view of the same memory.
    normalised = torch.addcmul(shift.view(b, c, 1, 1), wide, scale.view(b, c, 1, 1)).to(x.dtype)
    return normalised.contiguous(memory_format=torch.channels_last)


def _is_upsample_conv(upsample: nn.Module, conv: nn.Module) -> bool:
    return (
        isinstance(upsample, nn.Upsample)
        and upsample.mode == "nearest"
        and upsample.scale_factor in (2, 2.0)
        and isinstance(conv, nn.Conv2d)
        and conv.kernel_size == (3, 3)
        and conv.stride == (1, 1)
        and conv.padding == (1, 1)
        and conv.dilation == (1, 1)
        and conv.groups == 1
        and conv.bias is not None
    )


# A 3x3 convolution of a 2x nearest-upsampled row reads, for output row 2i, low-resolution rows i-1
# (with tap 0) and i (taps 1 and 2); for output row 2i+1, rows i (taps 0 and 1) and i+1 (tap 2).
# _FOLD[a] sums the taps per low-resolution row for output phase a, rows in order;
# _TRANSPOSE places the same sums at the taps of a stride-2, 4-tap transposed kernel (3, 1 | 2, 0).
_FOLD = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]], [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])
_TRANSPOSE = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])

# Below this many output channels the four phase convolutions win: their interleaving copies little,
# and oneDNN's transposed convolution is ~2.5x slower than them for the decoder's 3-channel output; at 32
# and 64 channels it is 2-3x faster (64x64 frames, batch 64, 2 cores).
_TRANSPOSED_FROM_CHANNELS = 8

# Kernels per convolution, remade when its weight changes (an optimiser step or a load bumps the
# tensor's version): making them costs more than the convolutions at batch 1.
_KERNELS: weakref.WeakKeyDictionary[nn.Conv2d, tuple[tuple, torch.Tensor, torch.Tensor]] = weakref.WeakKeyDictionary()


def _upsample_kernels(conv: nn.Conv2d) -> tuple[torch.Tensor, torch.Tensor]:
    """(kernel, bias): the stride-2 transposed kernel (C, O, 4, 4) for wide outputs, else the four
    phases' 2x2 kernels stacked (4 O, C, 2, 2) with the bias repeated."""
    key = (conv.weight._version, conv.weight.data_ptr(), conv.weight.dtype, conv.bias._version, conv.bias.data_ptr())
    cached = _KERNELS.get(conv)
    if cached is None or cached[0] != key:
        o, c = conv.out_channels, conv.in_channels
        # Made in the weight's own precision: an autocast around the first call must not leave
        # bfloat16 kernels behind for the calls made without it.
        with torch.autocast(conv.weight.device.type, enabled=False):
            if o >= _TRANSPOSED_FROM_CHANNELS:
                taps = _TRANSPOSE.to(conv.weight)
                kernel = torch.einsum("kt,oitu,lu->iokl", taps, conv.weight, taps).contiguous()
                bias = conv.bias.detach().clone()
            else:
                fold = _FOLD.to(conv.weight)
                kernel = torch.einsum("ark,oikl,bsl->aboirs", fold, conv.weight, fold).reshape(4 * o, c, 2, 2)
                bias = conv.bias.detach().repeat(4)
        cached = _KERNELS[conv] = (key, kernel, bias)
    return cached[1], cached[2]


def upsample_conv(x: torch.Tensor, conv: nn.Conv2d) -> torch.Tensor:
    """``conv(F.interpolate(x, scale_factor=2, mode="nearest"))`` to float rounding, without making the
    upsampled tensor: each output pixel reads 2x2 low-resolution pixels with taps that are sums of the
    3x3 kernel's (4 multiply-adds instead of 9). For a wide output, one stride-2 transposed convolution
    with those taps writes the interleaved output directly; for a narrow one, each of the four output
    phases is a 2x2 convolution and the phases are interleaved by copying."""
    kernel, bias = _upsample_kernels(conv)
    kernel, bias = kernel.to(x.dtype), bias.to(x.dtype)
    if conv.out_channels >= _TRANSPOSED_FROM_CHANNELS:
        return F.conv_transpose2d(x, kernel, bias, stride=2, padding=1)
    n, _, h, w = x.shape
    o = conv.out_channels
    phases = F.conv2d(x, kernel, bias, padding=1)  # (n, 4o, h+1, w+1)
    out = x.new_empty(n, o, 2 * h, 2 * w).contiguous(memory_format=torch.channels_last)
    for a in (0, 1):
        for b in (0, 1):
            p = 2 * a + b
            out[:, :, a::2, b::2] = phases[:, p * o : (p + 1) * o, a : a + h, b : b + w]
    return out


def _split_block(layer: nn.Module) -> tuple[nn.Module, nn.GroupNorm | None]:
    """(convolution, its group norm) of a conv + group norm + SiLU block; (layer, None) for any other."""
    if isinstance(layer, nn.Sequential) and [type(m) for m in layer] == [nn.Conv2d, nn.GroupNorm, nn.SiLU]:
        return layer[0], layer[1]
    return layer, None


def decode_channels_last(
    decoder: nn.Sequential, z: torch.Tensor, memory_format: torch.memory_format = torch.contiguous_format
) -> torch.Tensor:
    """``decoder(z)`` to float rounding, for the autoencoder's decoder (conv + group norm + SiLU blocks,
    nearest 2x upsampling, convolutions): channels-last, each upsampling fused into the convolution
    after it (:func:`upsample_conv`). Returned (N, 3, H, W) in ``memory_format``: ``torch.channels_last``
    skips a copy for a caller that wants (N, H, W, 3) frames, as the convolutions leave it so."""
    if torch.is_grad_enabled():
        return decoder(z)
    layers = list(decoder)
    x = z.contiguous(memory_format=torch.channels_last)
    i = 0
    while i < len(layers):
        conv, norm = _split_block(layers[i])
        if i + 1 < len(layers) and _is_upsample_conv(layers[i], _split_block(layers[i + 1])[0]):
            conv, norm = _split_block(layers[i + 1])
            x = upsample_conv(x, conv)
            i += 2
        else:
            x = conv(x)
            i += 1
        if norm is not None:
            x = F.silu(group_norm(x, norm), inplace=True)
    return x.contiguous(memory_format=memory_format)
