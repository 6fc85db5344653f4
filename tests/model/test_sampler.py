"""Sampling a plan: cached == uncached for every mode; clean tokens kept; padded channels stay zero; CFG."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.model.example_inputs import example_inputs
from cosmos_robot.model.plan import Mode, make_plan
from cosmos_robot.model.sampler import Packer, sample_plan
from tests.model.test_network import perturbed_network


@pytest.mark.parametrize("mode", list(Mode))
def test_cached_sampling_equals_uncached(mode):
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2, num_frames=4, num_actions=3, context_frames=1)
    plan = make_plan(mode, 4, 3)
    a = sample_plan(net, reasoner, gen, plan, steps=4, use_cache=True, rng=torch.Generator().manual_seed(0))
    b = sample_plan(net, reasoner, gen, plan, steps=4, use_cache=False, rng=torch.Generator().manual_seed(0))
    for name in ("frames", "actions", "states"):
        torch.testing.assert_close(getattr(a.tokens, name), getattr(b.tokens, name), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a.heads.reward, b.heads.reward, atol=1e-5, rtol=1e-5)


def test_clean_tokens_are_kept_and_noisy_ones_generated():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=1)
    plan = make_plan(Mode.POLICY, 4, 3)
    out = sample_plan(net, reasoner, gen, plan, steps=3).tokens
    torch.testing.assert_close(out.frames[:, 0], gen.frames[:, 0])
    assert (out.frames[:, 1:] - gen.frames[:, 1:]).abs().max() > 1e-3
    assert (out.actions - gen.actions).abs().max() > 1e-3
    assert out.actions[..., 2:].abs().max() == 0  # padded action channels: no noise, no output
    assert out.frame_t.abs().max() == 0 and out.action_t.abs().max() == 0


def test_guidance_needs_an_unconditional_request_and_changes_the_result():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=1)
    plan = make_plan(Mode.POLICY, 4, 3)
    with pytest.raises(ValueError, match="uncond_reasoner"):
        sample_plan(net, reasoner, gen, plan, cfg_scale=3.0)
    uncond = type(reasoner)(
        **(
            vars(reasoner)
            | {"text_valid": torch.zeros_like(reasoner.text_valid), "text_ids": torch.zeros_like(reasoner.text_ids)}
        )
    )
    seed = 0
    plain = sample_plan(net, reasoner, gen, plan, steps=3, rng=torch.Generator().manual_seed(seed))
    guided = sample_plan(
        net,
        reasoner,
        gen,
        plan,
        steps=3,
        cfg_scale=3.0,
        uncond_reasoner=uncond,
        rng=torch.Generator().manual_seed(seed),
    )
    assert (plain.tokens.actions - guided.tokens.actions).abs().max() > 1e-4
    same = sample_plan(
        net,
        reasoner,
        gen,
        plan,
        steps=3,
        cfg_scale=1.0,
        uncond_reasoner=uncond,
        rng=torch.Generator().manual_seed(seed),
    )
    torch.testing.assert_close(same.tokens.actions, plain.tokens.actions, atol=1e-5, rtol=1e-5)


def test_the_channel_mask_is_made_on_the_templates_device():
    # A mask made on the CPU for a template on a GPU broke every MoT call there; the meta device
    # stands in for the GPU (no data, but device checks are the same).
    config = perturbed_network().config
    _, gen = example_inputs(config, batch=2, num_frames=4, num_actions=3, context_frames=1)
    meta = gen.to("meta")
    assert Packer(meta).channel_mask(meta).device.type == "meta"
    on_cpu = Packer(gen).channel_mask(gen)
    assert on_cpu.dtype == torch.bool and on_cpu.any() and not on_cpu.all()
