"""What a network costs: parameters per tower and FLOPs per forward and per cached denoising step."""

from __future__ import annotations

from torch import nn

from cosmos_robot.model.network import WorldActionNetwork


def describe_network(
    network: WorldActionNetwork, num_frames: int = 4, num_actions: int = 3, context_frames: int = 1
) -> dict[str, float]:
    """Parameters per tower and FLOPs of one forward (and of one cached generator step) for a window."""
    c = network.config

    def count(modules) -> int:
        return sum(p.numel() for m in modules for p in m.parameters())

    reasoner = count(b.reasoner for b in network.blocks)
    generator = (
        count(b.generator for b in network.blocks)
        + sum(b.modulation_table.numel() for b in network.blocks)
        + count([network.time_mlp, network.time_modulation])
    )
    la = 1 + c.max_text_len + 1 + context_frames * c.understanding_grid**2
    ld = num_frames * c.tokens_per_frame + num_actions + num_frames

    def per_layer_linear(tokens: int, tower: nn.Module) -> float:
        return 2.0 * tokens * sum(m.weight.numel() for m in tower.modules() if isinstance(m, nn.Linear))

    tower_r, tower_g = network.blocks[0].reasoner, network.blocks[0].generator
    attn_ar = 4 * la * la * c.d_model / 2  # causal: half the score matrix
    attn_dm = 4 * ld * (la + ld) * c.d_model
    modulation = 2 * ld * network.time_modulation[1].weight.numel()  # once per step, all blocks
    reasoner_flops = c.num_layers * (per_layer_linear(la, tower_r) + attn_ar)
    generator_flops = c.num_layers * (per_layer_linear(ld, tower_g) + attn_dm) + modulation
    return {
        "params_total": float(sum(p.numel() for p in network.parameters())),
        "params_reasoner_tower": float(reasoner),
        "params_generator_tower": float(generator),
        "reasoner_tokens": float(la),
        "generator_tokens": float(ld),
        "flops_reasoner": float(reasoner_flops),
        "flops_generator_step": float(generator_flops),
        "flops_forward": float(reasoner_flops + generator_flops),
    }
