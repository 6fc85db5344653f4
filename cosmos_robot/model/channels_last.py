"""Inference kernels for channels-last convolution stacks on CPU: the learned env's hot path.

The forward prior steps every imagined step and the frame decoder draws every pixel observation. Their
convolutions run channels-last (a quarter faster on these CPUs than contiguous), but two of torch's
own kernels are slow on that layout or on these small tensors: the group norm (~15x slower on a
channels-last tensor) and the nearest-neighbour upsampling of a contiguous tensor (~10x slower than
of a channels-last one: 184 of the decoder's 320 ms at batch 64). Each function here matches torch's
module to float rounding, and with autograd on it falls back to torch's own kernels, whose fused
backward passes train faster.
"""

from __future__ import annotations

import math

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
    cells = x.permute(0, 2, 3, 1).reshape(b, h * w, c)
    wide = cells.float()
    mean = wide.mean(1).view(b, groups, -1).mean(-1, keepdim=True)
    variance = (wide * wide).mean(1).view(b, groups, -1).mean(-1, keepdim=True) - mean * mean
    scale = torch.rsqrt(variance.clamp_min(0.0) + norm.eps) * norm.weight.float().view(groups, -1)
    shift = norm.bias.float() - (mean * scale).view(b, c)
    normalised = torch.addcmul(shift[:, None], wide, scale.view(b, 1, c)).to(x.dtype)
    return normalised.view(b, h, w, c).permute(0, 3, 1, 2)


def decode_channels_last(decoder: nn.Sequential, z: torch.Tensor) -> torch.Tensor:
    """``decoder(z)`` to float rounding, run channels-last, for the autoencoder's decoder: conv + group
    norm + SiLU blocks, nearest upsampling and convolutions. Returned contiguous (N, 3, H, W)."""
    if torch.is_grad_enabled():
        return decoder(z)
    x = z.contiguous(memory_format=torch.channels_last)
    for layer in decoder:
        if isinstance(layer, nn.Sequential) and [type(m) for m in layer] == [nn.Conv2d, nn.GroupNorm, nn.SiLU]:
            conv, norm, _ = layer
            x = F.silu(group_norm(conv(x), norm), inplace=True)
        elif isinstance(layer, nn.Upsample) and layer.mode == "nearest":
            x = F.interpolate(x, scale_factor=layer.scale_factor, mode="nearest")
        else:
            x = layer(x)
    return x.contiguous()
