"""One Mixture-of-Transformers block: reasoner (AR) and generator (DM) weights, one shared attention.

A sample is packed as ``[AR ; DM]``. Every block holds two full weight sets (norms, qkv, output,
MLP). Attention is shared: reasoner queries attend causally to reasoner keys only; generator
queries attend to all reasoner keys and all generator keys. The reasoner never reads the
generator, so its keys and values can be computed once per request and reused by every denoising
step (:class:`ReasonerCache`); :meth:`MoTBlock.forward_joint` is the literal one-attention version
that the cached path must match.

Generator tokens are conditioned on their own flow time through adaLN (DiT naming:
``shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp``), in PixArt-alpha's "adaLN-single"
form: the network projects each token's time embedding to the six modulations ONCE, and every block
adds its own learned table. Per-token modulation computed in every block was the generator's second
largest matmul; shared, it is paid once per step. The network's projection and the tables start at
zero, so every generator block starts as the identity (adaLN-Zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from cosmos_robot.model.rope import apply_rotary


@dataclass
class ReasonerCache:
    """Per-layer rotated keys and values of the reasoner tokens, plus their padding mask.

    Attributes:
        keys: per layer, (B, H, La, Dh).
        values: per layer, (B, H, La, Dh).
        key_valid: (B, La) True where the reasoner token is real (not padding).
        hidden: (B, La, D) the reasoner's last hidden states.
    """

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    key_valid: torch.Tensor
    hidden: torch.Tensor

    def expand(self, repeats: int) -> ReasonerCache:
        """The cache repeated along the batch (e.g. for CFG or several samples per request)."""

        def rep(x: torch.Tensor) -> torch.Tensor:
            return x.repeat_interleave(repeats, dim=0)

        return ReasonerCache(
            [rep(k) for k in self.keys], [rep(v) for v in self.values], rep(self.key_valid), rep(self.hidden)
        )


class Tower(nn.Module):
    """One tower's weights inside a block: norms, qkv (with per-head QK-norm), output, MLP."""

    def __init__(self, d_model: int, num_heads: int, mlp_ratio: float) -> None:
        super().__init__()
        self.num_heads = num_heads
        head_dim = d_model // num_heads
        self.norm_attn = nn.RMSNorm(d_model, eps=1e-6)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.q_norm = nn.RMSNorm(head_dim, eps=1e-6)
        self.k_norm = nn.RMSNorm(head_dim, eps=1e-6)
        self.out = nn.Linear(d_model, d_model)
        self.norm_mlp = nn.RMSNorm(d_model, eps=1e-6)
        hidden = int(d_model * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, d_model))

    def project(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Normalised input (B, L, D) -> rotated q, k and v, each (B, H, L, Dh)."""
        b, length, d = h.shape
        q, k, v = self.qkv(h).view(b, length, 3, self.num_heads, d // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k = self.q_norm(q), self.k_norm(k)
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin), v

    def merge_heads(self, attn: torch.Tensor) -> torch.Tensor:
        """(B, H, L, Dh) -> output projection of (B, L, D)."""
        b, h, length, dh = attn.shape
        return self.out(attn.transpose(1, 2).reshape(b, length, h * dh))


def reasoner_mask(key_valid: torch.Tensor) -> torch.Tensor:
    """(B, 1, La, La) boolean mask: causal over the reasoner, padded keys removed."""
    length = key_valid.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool, device=key_valid.device).tril()
    return causal[None, None] & key_valid[:, None, None, :]


def generator_mask(key_valid: torch.Tensor, num_generator: int) -> torch.Tensor:
    """(B, 1, 1, La + Ld) boolean mask: every real reasoner key and every generator key."""
    dm_valid = torch.ones(key_valid.shape[0], num_generator, dtype=torch.bool, device=key_valid.device)
    return torch.cat([key_valid, dm_valid], 1)[:, None, None, :]


class MoTBlock(nn.Module):
    """A Mixture-of-Transformers block (see the module docstring)."""

    def __init__(self, d_model: int, num_heads: int, mlp_ratio: float) -> None:
        super().__init__()
        self.reasoner = Tower(d_model, num_heads, mlp_ratio)
        self.generator = Tower(d_model, num_heads, mlp_ratio)
        # This block's offsets to the shared per-token modulation (adaLN-single); zero: identity at start.
        self.modulation_table = nn.Parameter(torch.zeros(6 * d_model))

    # -- reasoner -----------------------------------------------------------------------------------
    def reasoner_step(
        self, ar: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor], key_valid: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the reasoner half: returns (new ar hidden, rotated keys, values) for the cache."""
        tower = self.reasoner
        q, k, v = tower.project(tower.norm_attn(ar), *rope)
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=reasoner_mask(key_valid))
        ar = ar + tower.merge_heads(attn)
        ar = ar + tower.mlp(tower.norm_mlp(ar))
        return ar, k, v

    # -- generator ----------------------------------------------------------------------------------
    def generator_step(
        self,
        dm: torch.Tensor,
        modulation: torch.Tensor,
        rope: tuple[torch.Tensor, torch.Tensor],
        ar_keys: torch.Tensor,
        ar_values: torch.Tensor,
        ar_key_valid: torch.Tensor,
    ) -> torch.Tensor:
        """Run the generator half against the reasoner's (cached) keys and values.

        ``modulation`` (B, Ld, 6D) is the shared per-token projection of the flow-time embedding.
        """
        tower = self.generator
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = (modulation + self.modulation_table).chunk(
            6, -1
        )
        h = tower.norm_attn(dm) * (1 + scale_msa) + shift_msa
        q, k, v = tower.project(h, *rope)
        keys, values = torch.cat([ar_keys, k], 2), torch.cat([ar_values, v], 2)  # (B, H, La + Ld, Dh)
        attn = F.scaled_dot_product_attention(q, keys, values, attn_mask=generator_mask(ar_key_valid, dm.shape[1]))
        dm = dm + gate_msa * tower.merge_heads(attn)
        h = tower.norm_mlp(dm) * (1 + scale_mlp) + shift_mlp
        return dm + gate_mlp * tower.mlp(h)

    # -- the literal version: one attention over [AR ; DM] --------------------------------------------
    def forward_joint(
        self,
        ar: torch.Tensor,
        dm: torch.Tensor,
        modulation: torch.Tensor,
        ar_rope: tuple[torch.Tensor, torch.Tensor],
        dm_rope: tuple[torch.Tensor, torch.Tensor],
        ar_key_valid: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Both towers through ONE attention call with the block mask; the reference for the cache."""
        la, ld = ar.shape[1], dm.shape[1]
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = (modulation + self.modulation_table).chunk(
            6, -1
        )
        q_ar, k_ar, v_ar = self.reasoner.project(self.reasoner.norm_attn(ar), *ar_rope)
        q_dm, k_dm, v_dm = self.generator.project(self.generator.norm_attn(dm) * (1 + scale_msa) + shift_msa, *dm_rope)
        q, k, v = (torch.cat(pair, 2) for pair in ((q_ar, q_dm), (k_ar, k_dm), (v_ar, v_dm)))
        mask = torch.zeros(ar.shape[0], 1, la + ld, la + ld, dtype=torch.bool, device=ar.device)
        mask[:, :, :la, :la] = reasoner_mask(ar_key_valid)  # AR rows: causal, AR keys only
        mask[:, :, la:, :] = generator_mask(ar_key_valid, ld)  # DM rows: all AR and all DM keys
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        ar = ar + self.reasoner.merge_heads(attn[:, :, :la])
        ar = ar + self.reasoner.mlp(self.reasoner.norm_mlp(ar))
        dm = dm + gate_msa * self.generator.merge_heads(attn[:, :, la:])
        dm = dm + gate_mlp * self.generator.mlp(self.generator.norm_mlp(dm) * (1 + scale_mlp) + shift_mlp)
        return ar, dm
