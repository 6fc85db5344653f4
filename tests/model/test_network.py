"""The packed network: shapes, cached == joint, masks, domains, direct paths, priors, text trimming."""

from __future__ import annotations

import torch

import cosmos_robot.model.stems as stems
from cosmos_robot.model.action_prior import PRIOR_CHUNK
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.example_inputs import example_inputs, example_prior_batch, example_transition_batch
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.objective import TrainingModule


def tiny_config(forward_prior: bool = True) -> ModelConfig:
    """The tiny preset, with a forward prior unless told otherwise."""
    return ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": forward_prior})


def perturbed_network(seed: int = 0) -> WorldActionNetwork:
    """A tiny network with its zero-initialised layers made non-zero, so outputs depend on everything."""
    torch.manual_seed(seed)
    net = WorldActionNetwork(tiny_config()).eval()
    with torch.no_grad():
        for p in net.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return net


def test_output_shapes():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=3, num_frames=4, num_actions=6)
    out = net(reasoner, gen)
    assert out.frames.shape == gen.frames.shape == (3, 4, 16, net.config.frame_token_dim)
    assert out.actions.shape == (3, 6, net.config.action_width)
    assert out.states.shape == (3, 4, net.config.state_width)
    assert out.reward.shape == out.success_logit.shape == (3, 6)


def test_cached_forward_equals_joint_forward():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2, context_frames=2)
    a, b = net(reasoner, gen), net(reasoner, gen, joint=True)
    for name in ("reward", "success_logit"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name), atol=1e-5, rtol=1e-5)
    for x, y in zip(a.x0, b.x0, strict=True):  # the predicted clean values (velocities divide by t)
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)


def test_padded_channels_are_zero_in_the_output_and_ignored_in_the_input():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2, action_dim=2, state_dim=3)
    out = net(reasoner, gen)
    assert out.actions[..., 2:].abs().max() == 0 and out.states[..., 3:].abs().max() == 0
    junk = gen.replace(
        actions=gen.actions + 5.0 * ~gen.action_channels[:, None],
        states=gen.states + 5.0 * ~gen.state_channels[:, None],
    )
    torch.testing.assert_close(net(reasoner, junk).frames, out.frames)


def test_the_domain_selects_the_action_projection():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2)
    other = gen.replace(domain=(gen.domain + 1) % net.config.num_domains)
    assert (net(reasoner, gen).actions - net(reasoner, other).actions).abs().max() > 1e-4


def test_actions_change_the_predicted_frames():
    # The generator must be able to read its actions (FD that ignores actions is the failure users report).
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=1)
    moved = gen.replace(actions=gen.actions + 1.0 * gen.action_channels[:, None])
    assert (net(reasoner, gen).frames - net(reasoner, moved).frames).abs().max() > 1e-4


def policy_window(config, batch=2, context_frames=1):
    """Example inputs laid out as policy mode: context frames clean, later frames and their actions noisy."""
    reasoner, gen = example_inputs(config, batch=batch, num_frames=5, num_actions=4, context_frames=context_frames)
    frame_t = torch.full_like(gen.frame_t, 0.7)
    frame_t[:, :context_frames] = 0.0
    action_t = torch.full_like(gen.action_t, 0.7)
    action_t[:, : context_frames - 1] = 0.0
    state_t = frame_t.clone()
    return reasoner, gen.replace(frame_t=frame_t, action_t=action_t, state_t=state_t)


def test_untrained_network_copies_the_anchor_and_starts_from_the_prior():
    net = WorldActionNetwork(preset("tiny"))
    reasoner, gen = policy_window(net.config)
    frames, actions, states = net(reasoner, gen).x0
    # frame_residual: every frame's x0 is its anchor (the clean context frame) before any training.
    torch.testing.assert_close(frames, gen.frames[:, :1].expand_as(frames))
    # action_prior: the policy actions' x0 is the prior's chunk read from the context frame and state.
    grid = stems.latent_grids(gen.frames[:, :1], net.config)[:, 0]
    chunk = net.action_prior(grid, gen.states[:, 0] * gen.state_channels, gen.domain)
    torch.testing.assert_close(actions, chunk * gen.action_channels[:, None])
    assert actions.abs().max() > 0 and states.abs().max() == 0


def test_the_action_prior_applies_to_policy_actions_and_the_inverse_prior_between_clean_frames():
    net = perturbed_network()
    # Two context frames: action 0 leads into a clean frame (history), actions 1..3 get chunk rows 0..2.
    reasoner, gen = policy_window(net.config, context_frames=2)
    paths = net._direct_paths(gen)
    assert paths.prior_gate.tolist() == [[False, True, True, True]] * 2
    grid = stems.latent_grids(gen.frames[:, 1:2], net.config)[:, 0]
    chunk = net.action_prior(grid, gen.states[:, 1] * gen.state_channels, gen.domain)
    torch.testing.assert_close(paths.prior_actions[:, 1:], (chunk[:, :3] * gen.action_channels[:, None]))
    # Action 0 there spans two clean frames but is clean itself (history): no estimate.
    assert paths.prior_actions[:, 0].abs().max() == 0
    # Inverse dynamics (every frame clean, actions noisy): the inverse prior's estimate on every action.
    _, clean = example_inputs(net.config, num_frames=5, num_actions=4)
    inverse = clean.replace(action_t=torch.full_like(clean.action_t, 0.5))
    paths = net._direct_paths(inverse)
    assert paths.prior_gate.all()
    grids = stems.latent_grids(clean.frames, net.config)
    for k in range(4):
        estimate = net.inverse_prior(grids[:, k], grids[:, k + 1], clean.domain) * clean.action_channels
        assert estimate.abs().max() > 0
        torch.testing.assert_close(paths.prior_actions[:, k], estimate)
    # Forward dynamics (actions clean): neither prior anywhere.
    fd = clean.replace(frame_t=torch.tensor([[0.0, 0.5, 0.5, 0.5, 0.5]] * 2))
    assert not net._direct_paths(fd).prior_gate.any()


def test_the_priors_train_on_their_own_batches_beside_the_network():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, num_frames=5, num_actions=4)
    out, prior, inverse = TrainingModule(net)(reasoner, gen, example_prior_batch(gen), example_transition_batch(gen))
    assert prior.shape == (2, PRIOR_CHUNK, net.config.action_width)
    grids = stems.latent_grids(gen.frames, net.config)
    torch.testing.assert_close(inverse, net.inverse_prior(grids[:, 0], grids[:, 1], gen.domain))
    torch.testing.assert_close(out.x0[0], net(reasoner, gen).x0[0])
    # Without their batches, no prior output (and no cost).
    assert TrainingModule(net)(reasoner, gen)[1:] == (None, None)


def test_untrained_network_starts_inverse_dynamics_from_the_inverse_prior():
    net = WorldActionNetwork(preset("tiny"))
    reasoner, gen = example_inputs(net.config, num_frames=3, num_actions=2)
    gen = gen.replace(action_t=torch.full_like(gen.action_t, 1.0))
    actions = net(reasoner, gen).x0[1]
    grids = stems.latent_grids(gen.frames, net.config)
    for k in range(2):
        estimate = net.inverse_prior(grids[:, k], grids[:, k + 1], gen.domain) * gen.action_channels
        torch.testing.assert_close(actions[:, k], estimate)


def test_x0_target_gives_the_velocity_that_lands_on_x0():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2)
    t = torch.full_like(gen.action_t, 0.4)
    gen = gen.replace(action_t=t, frame_t=torch.full_like(gen.frame_t, 0.4))
    out = net(reasoner, gen)
    # One Euler step from t to 0 along the returned velocity reaches the predicted clean value.
    torch.testing.assert_close(gen.actions - 0.4 * out.actions, out.x0[1] * gen.action_channels[:, None])
    torch.testing.assert_close(gen.frames - 0.4 * out.frames, out.x0[0])


def close_all_gates(net: WorldActionNetwork) -> WorldActionNetwork:
    """Zero the adaLN modulation, so every block is the identity and only the direct paths remain."""
    with torch.no_grad():
        for block in net.blocks:
            block.modulation_table.zero_()
        net.time_modulation[1].weight.zero_()
        net.time_modulation[1].bias.zero_()
    return net


def test_a_target_frame_token_reads_its_context_cell_directly():
    # Changing one grid cell of the clean context frame changes the same cell of a noisy target frame
    # even with attention switched off (gates zero): the anchor path is per cell, not through attention.
    net = close_all_gates(perturbed_network())
    with torch.no_grad():  # the conv paths spread to neighbouring cells: tested on their own
        for layer in (net.dynamics_stem.net[-1], net.forward_prior.frame_out):
            layer.weight.zero_()
            layer.bias.zero_()
    reasoner, gen = example_inputs(net.config, batch=1, num_frames=3, num_actions=2)
    gen = gen.replace(frame_t=torch.tensor([[0.0, 0.7, 0.7]]))
    moved_frames = gen.frames.clone()
    moved_frames[0, 0, 5] += 1.0
    delta = (net(reasoner, gen).frames - net(reasoner, gen.replace(frames=moved_frames)).frames).abs().sum(-1)[0]
    assert delta[1:, 5].min() > 0 and delta[1:, :5].max() == 0 and delta[1:, 6:].max() == 0


def test_an_action_token_reads_the_two_frames_it_spans():
    net = close_all_gates(perturbed_network())
    reasoner, gen = example_inputs(net.config, batch=1, num_frames=4, num_actions=3)
    moved_frames = gen.frames.clone()
    moved_frames[0, 2] += 1.0  # frame 2: action 1 leads into it, action 2 leads out of it
    delta = (net(reasoner, gen).actions - net(reasoner, gen.replace(frames=moved_frames)).actions).abs().sum(-1)[0]
    assert delta[0] == 0 and delta[1] > 0 and delta[2] > 0


def test_a_noisy_frame_reads_the_actions_since_its_anchor_directly():
    # With attention switched off, frame j of a forward-dynamics window changes when an action leading
    # into frames 1..j changes, and not when a later one does: the dynamics stem, not attention.
    net = close_all_gates(perturbed_network())
    reasoner, gen = example_inputs(net.config, batch=1, num_frames=4, num_actions=3)
    gen = gen.replace(frame_t=torch.tensor([[0.0, 0.6, 0.6, 0.6]]), action_t=torch.zeros(1, 3))
    moved = gen.actions.clone()
    moved[0, 1] += 1.0  # action 1 leads into frame 2
    delta = (net(reasoner, gen).frames - net(reasoner, gen.replace(actions=moved)).frames).abs().sum((-1, -2))[0]
    assert delta[0] == 0 and delta[1] == 0 and delta[2] > 0 and delta[3] > 0


def test_a_policy_action_reads_the_observed_frame_directly():
    # In policy mode the pair an action spans is noise; its anchor, the observed frame, is what it reads.
    net = close_all_gates(perturbed_network())
    reasoner, gen = example_inputs(net.config, batch=1, num_frames=4, num_actions=3)
    gen = gen.replace(frame_t=torch.tensor([[0.0, 0.6, 0.6, 0.6]]), action_t=torch.full((1, 3), 0.6))
    moved_frames = gen.frames.clone()
    moved_frames[0, 0] += 1.0
    delta = (net(reasoner, gen).actions - net(reasoner, gen.replace(frames=moved_frames)).actions).abs().sum(-1)[0]
    assert (delta > 0).all()


def test_trimming_text_padding_changes_nothing():
    net = perturbed_network()
    reasoner, gen = example_inputs(net.config, batch=2)
    assert reasoner.text_valid.sum(1).max() < reasoner.text_ids.shape[1]  # padding present
    trimmed = net.trim_text(reasoner)
    assert trimmed.text_ids.shape[1] == int(reasoner.text_valid.sum(1).max())
    torch.testing.assert_close(net(reasoner, gen).actions, net(trimmed, gen).actions)
    torch.testing.assert_close(net(reasoner, gen, joint=True).frames, net(reasoner, gen).frames, atol=1e-5, rtol=1e-5)


def fd_window(config, batch=2):
    """Example inputs laid out as forward dynamics: frame 0 clean, frames 1..4 and their states noisy."""
    reasoner, gen = example_inputs(config, batch=batch, num_frames=5, num_actions=4)
    frame_t = torch.tensor([[0.0, 0.6, 0.6, 0.6, 0.6]] * batch)
    return reasoner, gen.replace(frame_t=frame_t, state_t=frame_t.clone())


def test_forward_dynamics_frames_and_states_start_from_the_forward_priors_rollout():
    net = perturbed_network()
    reasoner, gen = fd_window(net.config)
    paths = net._direct_paths(gen)
    grids = stems.latent_grids(gen.frames, net.config)
    state0 = gen.states[:, 0] * gen.state_channels
    actions = gen.actions * gen.action_channels[:, None]
    with torch.no_grad():  # as the network rolls it out (training kernels differ by float rounding)
        rolled, states = net.forward_prior.rollout(grids[:, 0], state0, actions, gen.domain, gen.state_channels)
    torch.testing.assert_close(paths.anchor_frames[:, 1:], stems.grid_tokens(rolled, net.config))
    torch.testing.assert_close(paths.anchor_states[:, 1:], states)
    # The context frame keeps itself as anchor and gets no state base.
    torch.testing.assert_close(paths.anchor_frames[:, 0], gen.frames[:, 0])
    assert paths.anchor_states[:, 0].abs().max() == 0
    # The rollout follows the actions: other actions, other anchors.
    moved = net._direct_paths(gen.replace(actions=gen.actions + gen.action_channels[:, None]))
    assert (moved.anchor_frames[:, 1:] - paths.anchor_frames[:, 1:]).abs().max() > 1e-4
    # Policy and inverse dynamics (noisy actions): no rollout; the anchor is the latest clean frame.
    _, policy = policy_window(net.config)
    policy_paths = net._direct_paths(policy)
    torch.testing.assert_close(policy_paths.anchor_frames, policy.frames[:, :1].expand_as(policy.frames))
    assert policy_paths.anchor_states.abs().max() == 0


def test_untrained_forward_prior_copies_the_frame_and_the_state():
    net = WorldActionNetwork(tiny_config())
    reasoner, gen = fd_window(net.config)
    frames, _, states = net(reasoner, gen).x0
    torch.testing.assert_close(frames, gen.frames[:, :1].expand_as(frames))
    expected = (gen.states[:, :1] * gen.state_channels[:, None]).expand(-1, 4, -1)
    torch.testing.assert_close(states[:, 1:], expected)


def test_forward_sequence_is_the_priors_rollout_from_the_first_frame():
    from cosmos_robot.model.batches import SequenceBatch

    net = perturbed_network()
    _, gen = example_inputs(net.config, num_frames=5, num_actions=4)
    batch = SequenceBatch(gen.frames, gen.states, gen.actions, gen.domain, gen.action_channels, gen.state_channels)
    grids, states = net.forward_sequence(batch)
    assert grids.shape == (2, 4, net.config.latent_channels, 8, 8) and states.shape == (2, 4, net.config.state_width)
    first = stems.latent_grids(gen.frames[:, :1], net.config)[:, 0]
    change, _ = net.forward_prior(first, gen.states[:, 0] * gen.state_channels, gen.actions[:, 0], gen.domain)
    torch.testing.assert_close(grids[:, 0], first + change)


def test_a_network_without_forward_prior_anchors_on_the_clean_frame():
    # Checkpoints made before the forward prior load and behave as they did.
    net = WorldActionNetwork(tiny_config(forward_prior=False))
    assert net.forward_prior is None and not any(k.startswith("forward_prior") for k in net.state_dict())
    reasoner, gen = fd_window(net.config)
    paths = net._direct_paths(gen)
    torch.testing.assert_close(paths.anchor_frames, gen.frames[:, :1].expand_as(gen.frames))
    assert paths.anchor_states.abs().max() == 0
