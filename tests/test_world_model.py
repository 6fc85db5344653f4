"""The facade: numpy in and out, raw units, batch-aware, validated inputs."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from cosmos_robot.model.object_pose import EFFECTOR_MAPS, MAPS_PER_EFFECTOR, MEMORY_WIDTH, POSE_MAPS
from cosmos_robot.model.painter import WINDOW
from cosmos_robot.model.stems import latent_grids
from cosmos_robot.object_pose_training import drawer_from_prior
from cosmos_robot.pixel_residual import CHANGE_LEVELS
from cosmos_robot.world_model import POLICY_GUIDANCE, WorldActionModel
from tests.golden.make_default_outputs import record_inputs


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


@pytest.fixture
def prior_states(model):
    """The model with its agent heads off: states without frames come from the forward prior, as with them."""
    model.agent_heads = False
    yield model
    model.agent_heads = True


@pytest.fixture(scope="module")
def episode():
    recorded = record_inputs("point", seed=3, steps=9)
    return recorded["frames"], recorded["states"], recorded["actions"]


def test_forward_dynamics_shapes_single_and_batched(model, episode):
    frames, states, actions = episode
    one = model.forward_dynamics(frames[:1], actions[:6], "point", states=states[0], steps=2)
    assert one.frames.shape == (1, 6, 64, 64, 3) and one.frames.dtype == np.uint8
    assert one.states.shape == (1, 6, 2) and one.rewards.shape == (1, 6)
    batch = model.forward_dynamics(np.stack([frames[:1]] * 3), np.stack([actions[:6]] * 3), "point", steps=2)
    assert batch.frames.shape == (3, 6, 64, 64, 3)


def test_same_seed_same_prediction(model, episode):
    frames, _, actions = episode
    a = model.forward_dynamics(frames[:1], actions[:4], "point", steps=2, seed=5).frames
    b = model.forward_dynamics(frames[:1], actions[:4], "point", steps=2, seed=5).frames
    np.testing.assert_array_equal(a, b)


def test_pixel_residual_keeps_the_real_pixels_where_nothing_changes(model, episode):
    frames = episode[0]
    tokens = model._encode(frames[None, :2])  # (1, 2, GG, Cf)
    # A "prediction" equal to the observed frame's latents gives back the observed frame exactly ...
    same = model._decode_against(tokens[:, :1], frames[:1], tokens[:, 0])
    np.testing.assert_array_equal(same[0, 0], frames[0])
    # ... where the plain decode carries the autoencoder's reconstruction error.
    assert np.abs(model._decode(tokens[:, :1])[0, 0].astype(int) - frames[0].astype(int)).max() > 0
    # Pixels whose decoded change reaches CHANGE_LEVELS are the plain decode of the prediction.
    moved = model._decode_against(tokens[:, 1:], frames[:1], tokens[:, 0])[0, 0].astype(int)
    plain = model._decode(tokens[:, 1:])[0, 0].astype(int)
    change = np.abs(plain - model._decode(tokens[:, :1])[0, 0].astype(int)).max(-1)
    np.testing.assert_array_equal(moved[change >= CHANGE_LEVELS], plain[change >= CHANGE_LEVELS])
    # The facade's switch: pixel_residual=False is the plain decode of the sampled latents.
    _, states, actions = episode
    off = model.forward_dynamics(frames[:1], actions[:2], "point", states=states[0], steps=2, pixel_residual=False)
    on = model.forward_dynamics(frames[:1], actions[:2], "point", states=states[0], steps=2)
    assert off.frames.shape == on.frames.shape and not np.array_equal(off.frames, on.frames)


def test_latents_continue_a_rollout_in_latent_space(model, episode):
    frames, states, actions = episode
    # The forward prior alone is deterministic: two one-step calls chained by latents are one two-step call.
    model.forward_path = "prior"
    try:
        both = model.forward_dynamics(frames[:1], actions[:2], "point", states=states[0])
        first = model.forward_dynamics(frames[:1], actions[:1], "point", states=states[0])
        second = model.forward_dynamics(
            first.frames, actions[1:2], "point", states=first.states[:, 0], latents=first.latents
        )
        # The smoke model carries the block: the drawn grid, the agent-state rollout's grid, the object's memory.
        width = 2 * model.config.tokens_per_frame + 1
        assert first.latents.shape == (1, 1, width, model.config.frame_token_dim)
        np.testing.assert_allclose(second.states[:, 0], both.states[:, 1], atol=1e-5)
        np.testing.assert_allclose(second.latents, both.latents, atol=1e-5)
        # All-NaN rows are encoded from their frames, as without latents.
        fresh = np.full_like(first.latents, np.nan)
        again = model.forward_dynamics(frames[:1], actions[:1], "point", states=states[0], latents=fresh)
        np.testing.assert_array_equal(again.latents, first.latents)
    finally:
        model.forward_path = "full"
    # The full model returns latents too, of the last predicted frame.
    full = model.forward_dynamics(frames[:1], actions[:2], "point", states=states[0], steps=2)
    assert full.latents.shape == first.latents.shape and np.isfinite(full.latents).all()


def test_the_full_path_keeps_the_priors_rollout_and_adds_reward_and_success(model, episode, prior_states):
    frames, states, actions = episode
    predictions = {}
    try:
        for path in ("prior", "full", "corrected"):
            model.forward_path = path
            # 6 steps: two MoT windows of 4, the second continuing from the first's rollout.
            predictions[path] = model.forward_dynamics(frames[:1], actions[:6], "point", states=states[0], steps=2)
    finally:
        model.forward_path = "full"
    prior, full, corrected = predictions["prior"], predictions["full"], predictions["corrected"]
    np.testing.assert_allclose(full.states, prior.states, atol=1e-4)
    np.testing.assert_allclose(full.latents, prior.latents, atol=1e-4)
    assert np.abs(full.frames.astype(int) - prior.frames).max() <= 1
    assert full.rewards.shape == full.success.shape == (1, 6) and np.isfinite(full.rewards).all()
    assert np.abs(corrected.states - full.states).max() > 1e-4  # the correction is what the switch turns off


def test_what_is_not_read_is_not_computed(model, episode, prior_states):
    # decode=False leaves the frames out, rewards=False the MoT: the full path is then the prior's rollout.
    frames, states, actions = episode
    full = model.forward_dynamics(frames[:1], actions[:3], "point", states=states[0], steps=2)
    lean = model.forward_dynamics(frames[:1], actions[:3], "point", states=states[0], decode=False, rewards=False)
    assert lean.frames is None and lean.rewards is None and lean.success is None
    np.testing.assert_allclose(lean.states, full.states, atol=1e-4)
    # Not drawn, the block is not pushed: the agent-state rollout's grid is the same, the drawn one follows it
    # and the object's memory is marked to be read again (its flag at 0).
    gg = model.config.tokens_per_frame
    np.testing.assert_allclose(lean.latents[:, :, gg : 2 * gg], full.latents[:, :, gg : 2 * gg], atol=1e-4)
    np.testing.assert_array_equal(lean.latents[:, :, :gg], lean.latents[:, :, gg : 2 * gg])
    assert (lean.latents[:, :, 2 * gg, MEMORY_WIDTH] == 0).all() and (
        full.latents[:, :, 2 * gg, MEMORY_WIDTH] == 1
    ).all()
    pixels = model.forward_dynamics(frames[:1], actions[:3], "point", states=states[0], rewards=False)
    assert np.abs(pixels.frames.astype(int) - full.frames).max() <= 1
    # The MoT reads pixels: where it runs (here: the block without its reward head), the frames come back
    # whatever decode says; the object's reward head reads none.
    objects = model.network.object_pose
    heads = objects.reward
    try:
        objects.reward = None
        mot = model.forward_dynamics(frames[:1], actions[:3], "point", states=states[0], steps=2, decode=False)
    finally:
        objects.reward = heads
    assert mot.frames is not None and mot.rewards.shape == (1, 3)
    scored = model.forward_dynamics(frames[:1], actions[:3], "point", states=states[0], decode=False)
    assert scored.frames is None and scored.rewards.shape == (1, 3)


def test_the_objects_reward_head_scores_the_carried_pose_and_the_mot_does_not_run(model, episode, monkeypatch):
    frames, states, actions = episode
    objects = model.network.object_pose
    assert objects.has_reward  # the smoke recipe fits one

    def no_mot(*args, **kwargs):
        raise AssertionError("the MoT ran")

    monkeypatch.setattr("cosmos_robot.world_model.sample_plan", no_mot)
    scored = model.forward_dynamics(frames[:1], actions[:3], "point", states=states[0])
    assert scored.rewards.shape == scored.success.shape == (1, 3) and np.isfinite(scored.rewards).all()
    assert ((scored.success >= 0) & (scored.success <= 1)).all()
    # The last step's reward is the head's on the carried pose, goal and the effector of the last state.
    gg = model.config.tokens_per_frame
    memory = torch.from_numpy(scored.latents[:, -1, 2 * gg, :MEMORY_WIDTH])
    assert np.abs(memory[0, 8:10].numpy()).max() < 0.3  # the goal, read from the first frame: on the table
    domain = model._entry("point").embodiment.domain_id
    state = torch.from_numpy(model.processor.states_in("point", scored.states[:, -1]))
    with torch.no_grad():
        reward, success = objects.rewards(memory, objects.effector_of(state, domain), domain)
    np.testing.assert_allclose(scored.rewards[:, -1], reward.numpy(), atol=1e-3)
    np.testing.assert_allclose(scored.success[:, -1], success.numpy(), atol=1e-3)


def test_without_frames_the_block_is_carried_and_scored_without_running_the_drawer(
    model, episode, monkeypatch, prior_states
):
    frames, states, actions = episode
    pictured = model.forward_dynamics(frames[:1], actions[:4], "point", states=states[0])
    objects = model.network.object_pose
    calls = []
    hook = objects.drawer.register_forward_hook(lambda *args: calls.append(1))
    try:
        lean = model.forward_dynamics(frames[:1], actions[:4], "point", states=states[0], decode=False)
    finally:
        hook.remove()
    assert calls == [] and lean.frames is None
    # The same states, carried pose, reward and success as the call that drew the frames.
    np.testing.assert_array_equal(lean.states, pictured.states)
    np.testing.assert_allclose(lean.rewards, pictured.rewards, atol=1e-6)
    np.testing.assert_allclose(lean.success, pictured.success, atol=1e-6)
    gg = model.config.tokens_per_frame
    np.testing.assert_allclose(lean.latents[:, :, 2 * gg], pictured.latents[:, :, 2 * gg], atol=1e-6)
    assert lean.latents[0, -1, 2 * gg, MEMORY_WIDTH] == 1  # carried: not read again at the next call
    # The drawn grid is the prior's own, as where nothing is drawn.
    np.testing.assert_allclose(lean.latents[:, :, :gg], lean.latents[:, :, gg : 2 * gg], atol=0)


def test_without_frames_the_agent_heads_step_the_state_and_the_block_and_no_convolution_runs(
    model, episode, monkeypatch
):
    frames, states, actions = episode
    objects = model.network.object_pose
    assert objects.has_agent and model.agent_heads  # the smoke recipe fits them; on by default
    model.agent_heads = False
    prior = model.forward_dynamics(frames[:1], actions[:4], "point", states=states[0], decode=False)
    model.agent_heads = True
    first = model.forward_dynamics(frames[:1], actions[:2], "point", states=states[0], decode=False)

    def no_conv(*args, **kwargs):
        raise AssertionError("a convolution ran")

    monkeypatch.setattr(model.network.forward_prior, "forward", no_conv)
    monkeypatch.setattr(objects.drawer, "forward", no_conv)
    monkeypatch.setattr(objects.readout, "forward", no_conv)  # the block is carried, not read again
    lean = model.forward_dynamics(
        frames[:1], actions[2:4], "point", states=first.states[0, -1], latents=first.latents, decode=False
    )
    assert lean.frames is None and lean.states.shape == (1, 2, 2) and lean.rewards.shape == (1, 2)
    gg = model.config.tokens_per_frame
    assert (lean.latents[:, :, 2 * gg, MEMORY_WIDTH] == 1).all()  # carried: not read again
    # One step by hand: the head's change from the state, the carried memory and the action.
    domain = model._entry("point").embodiment.domain_id
    state = torch.from_numpy(model.processor.states_in("point", first.states[:, -1]))
    memory = torch.from_numpy(first.latents[:, -1, 2 * gg, :MEMORY_WIDTH])
    action = torch.from_numpy(model.processor.actions_in("point", actions[2:3]))
    with torch.no_grad():
        features = objects.agent_features(state, memory, objects.effector_of(state, domain), action)
        stepped = state + objects.agent_change(features, domain)
    np.testing.assert_allclose(lean.states[:, 0], model.processor.states_out("point", stepped.numpy()), atol=1e-5)
    # The prior's states are another rollout of the same actions (what agent_heads=False runs).
    assert prior.states.shape == (1, 4, 2) and not np.allclose(prior.states[:, 2:], lean.states, atol=1e-6)
    # Drawing frames, the heads step the state too (the drawer draws, the prior does not run): the same states,
    # reward and block as without frames.
    monkeypatch.undo()
    pictured = model.forward_dynamics(frames[:1], actions[:2], "point", states=states[0])
    assert pictured.frames.shape == (1, 2, 64, 64, 3)
    np.testing.assert_allclose(pictured.states, first.states, atol=1e-6)
    np.testing.assert_allclose(pictured.rewards, first.rewards, atol=1e-6)
    np.testing.assert_allclose(pictured.latents[:, :, 2 * gg], first.latents[:, :, 2 * gg], atol=1e-6)


def test_the_carried_block_changes_the_frames_only_and_is_read_again_after_steps_not_drawn(
    model, episode, prior_states
):
    frames, states, actions = episode
    carried = model.forward_dynamics(frames[:1], actions[:4], "point", states=states[0], rewards=False)
    objects = model.network.object_pose
    try:
        model.network.object_pose = None  # the same model without the block
        plain = model.forward_dynamics(frames[:1], actions[:4], "point", states=states[0], rewards=False)
    finally:
        model.network.object_pose = objects
    # Agent states come from the forward prior either way; the drawer draws the frames.
    np.testing.assert_array_equal(carried.states, plain.states)
    assert carried.latents.shape[2] == 2 * plain.latents.shape[2] + 1
    gg = model.config.tokens_per_frame
    np.testing.assert_allclose(carried.latents[:, :, gg : 2 * gg], plain.latents, atol=1e-5)
    assert not np.allclose(carried.latents[:, :, :gg], plain.latents, atol=1e-4)
    memory = carried.latents[0, -1, 2 * gg, :MEMORY_WIDTH]
    assert np.abs(memory[3:5]).max() < 0.3  # a block pose on the table (metres)
    # A step without frames, then one with: the block is read again from the drawn grid, then pushed on.
    lean = model.forward_dynamics(
        carried.frames[:, -1:],
        actions[4:5],
        "point",
        states=carried.states[0, -1],
        latents=carried.latents,
        decode=False,
        rewards=False,
    )
    drawn = model.forward_dynamics(
        carried.frames[:, -1:], actions[5:6], "point", states=lean.states[0, -1], latents=lean.latents, rewards=False
    )
    assert drawn.frames.shape == (1, 1, 64, 64, 3) and drawn.latents[0, -1, 2 * gg, MEMORY_WIDTH] == 1
    # Latents without the block's part are refused by a model that carries it.
    with pytest.raises(ValueError, match="latents has shape"):
        model.forward_dynamics(frames[:1], actions[:1], "point", latents=plain.latents)


def test_a_drawer_told_the_effector_is_given_its_places_step_after_step(model, episode):
    frames, states, actions = episode
    objects = model.network.object_pose
    drawer = objects.drawer
    told = drawer_from_prior(model.network.forward_prior, tell_effector=True)
    given = []
    draw = told.forward

    def spy(grid, state, action, domain, extra=None):
        given.append(extra.clone())
        return draw(grid, state, action, domain, extra)

    told.forward = spy
    try:
        objects.drawer = told
        out = model.forward_dynamics(frames[:1], actions[:3], "point", states=states[0], rewards=False)
    finally:
        objects.drawer = drawer
    assert out.frames.shape == (1, 3, 64, 64, 3) and len(given) == 3
    assert all(maps.shape[1] == POSE_MAPS + EFFECTOR_MAPS for maps in given)
    places = [maps[:, POSE_MAPS:] for maps in given]
    for now, then in zip(places, places[1:], strict=False):  # where a step leaves the effector, the next starts
        torch.testing.assert_close(now[:, MAPS_PER_EFFECTOR:], then[:, :MAPS_PER_EFFECTOR])
    # The map after the last step peaks (within a cell) where the effector map puts the returned state.
    state = torch.from_numpy(model.processor.states_in("point", out.states[0, -1:])).float()
    x, y = objects.effector_of(state, model.processor.entry("point").embodiment.domain_id)[0].tolist()
    side, half = places[-1].shape[-1], objects.half_extent
    row, col = divmod(int(places[-1][0, MAPS_PER_EFFECTOR].argmax()), side)
    cell = 2 * half / side
    assert abs((col + 0.5) * cell - half - x) <= cell and abs(half - (row + 0.5) * cell - y) <= cell


def test_forward_dynamics_draws_with_the_fast_decoder_and_reuses_the_reference_decode(model, episode, monkeypatch):
    assert not model.fast_decoding and model.autoencoder.fast_decoder is not None  # off unless asked for
    model.fast_decoding = True
    frames, states, actions = episode
    settings = {"embodiment": "point", "rewards": False}
    first = model.forward_dynamics(frames[:1], actions[:1], states=states[0], **settings)
    calls = []
    original = model._decode
    monkeypatch.setattr(
        model, "_decode", lambda tokens, fast=False, places=None: calls.append(fast) or original(tokens, fast, places)
    )
    carried = {"states": first.states[:, 0], "latents": first.latents}
    second = model.forward_dynamics(first.frames, actions[1:2], **carried, **settings)
    assert calls == [True]  # the prediction alone: the reference is the last call's prediction, decoded then
    model._last_decode = None
    calls.clear()
    again = model.forward_dynamics(first.frames, actions[1:2], **carried, **settings)
    assert calls == [True, True]
    np.testing.assert_array_equal(second.frames, again.frames)
    model.fast_decoding = False
    full = model.forward_dynamics(first.frames, actions[1:2], **carried, **settings)
    assert calls[2:] == [False, False] and full.frames.shape == second.frames.shape


def test_the_painter_redraws_only_the_window_round_the_effector_of_each_returned_state(model, episode):
    frames, states, actions = episode
    objects = model.network.object_pose
    assert objects.painter is not None  # the smoke recipe trains one, as the default recipe does
    settings = {"embodiment": "point", "states": states[0], "rewards": False, "pixel_residual": False}
    painter = objects.painter
    # A painter that shifts every pixel of its window: where it paints is then plain to see.
    shifting = copy.deepcopy(painter)
    torch.nn.init.constant_(shifting.net[-1].bias, 0.4)
    try:
        objects.painter = None
        plain = model.forward_dynamics(frames[:1], actions[:3], **settings)
        objects.painter = shifting
        shifted = model.forward_dynamics(frames[:1], actions[:3], **settings)
    finally:
        objects.painter = painter
    np.testing.assert_array_equal(shifted.states, plain.states)  # the painter draws; it simulates nothing
    domain = model.processor.entry("point").embodiment.domain_id
    state = torch.from_numpy(model.processor.states_in("point", plain.states[0])).float()
    col, row = painter.pixel_places(objects.effector_of(state, domain), 64)
    for k in range(3):
        rows, cols = np.nonzero((shifted.frames[0, k] != plain.frames[0, k]).any(-1))
        assert 0 < len(rows) <= WINDOW**2
        # The window is centred (to a pixel) on the effector the returned state puts there.
        assert abs((rows.min() + rows.max()) / 2 - row[k].clamp(0, 63).item()) <= 1.5
        assert abs((cols.min() + cols.max()) / 2 - col[k].clamp(0, 63).item()) <= 1.5


def test_reconstruct_is_the_autoencoders_plain_decode_of_the_frames(model, episode):
    frames = episode[0][None, :3]
    rebuilt = model.reconstruct(frames)
    assert rebuilt.shape == frames.shape and rebuilt.dtype == np.uint8
    tokens = model.autoencoder.frames_to_tokens(torch.from_numpy(frames[0]))
    expected = model.autoencoder.tokens_to_frames(tokens, model.config.latent_grid).numpy()
    np.testing.assert_array_equal(rebuilt[0], expected)
    with pytest.raises(ValueError, match=r"frames has shape \(3, 64, 64, 3\)"):
        model.reconstruct(frames[0])


def test_forward_path_is_checked(model):
    with pytest.raises(ValueError, match="forward_path='mot'; expected one of"):
        model.forward_path = "mot"


def test_inverse_dynamics_labels_every_transition_with_a_spread(model, episode):
    frames = episode[0]
    actions, spread = model.inverse_dynamics(frames, "point", fps=10, steps=2, return_spread=True)
    assert actions.shape == spread.shape == (1, len(frames) - 1, 2)
    # Stride 1: the first step lies in the first window only (no spread); later steps in several.
    assert np.all(spread[:, 0] < 1e-5) and spread[:, 1:].max() > 1e-5
    assert model.inverse_dynamics(frames[:2], "point", steps=2).shape == (1, 1, 2)


def test_policy_returns_a_chunk_and_its_frames(model, episode):
    frames, states, _ = episode
    chunk = model.policy(frames[0], "arm2", state=np.zeros(2), steps=2)
    assert chunk.actions.shape == (1, model.future_frames, 2)
    assert chunk.frames.shape == (1, model.future_frames, 64, 64, 3)
    batched = model.policy(frames[:3], "point", instruction="push it", state=states[:3], steps=2)
    assert batched.actions.shape[0] == 3


def test_policy_frames_are_the_learned_envs_frames_for_its_actions(model, episode):
    frames, states, _ = episode
    chunk = model.policy(frames[:2], "point", state=states[:2], steps=2, seed=3)
    imagined = model.forward_dynamics(frames[:2, None], chunk.actions, "point", states=states[:2], steps=2, seed=3)
    np.testing.assert_array_equal(chunk.frames, imagined.frames)
    other = model.forward_dynamics(frames[:2, None], -chunk.actions, "point", states=states[:2], steps=2, seed=3)
    assert not np.array_equal(chunk.frames, other.frames)  # the frames follow the chunk's actions


def test_policy_action_estimate_mean_is_the_one_pass_estimate(model, episode):
    frames, states, _ = episode
    mean = model.policy(frames[:2], "point", state=states[:2], steps=3, seed=4)
    one_step = model.policy(frames[:2], "point", state=states[:2], steps=1, seed=4, action_estimate="sample")
    np.testing.assert_allclose(mean.actions, one_step.actions, rtol=1e-5, atol=1e-6)
    sampled = model.policy(frames[:2], "point", state=states[:2], steps=3, seed=4, action_estimate="sample")
    assert sampled.actions.shape == mean.actions.shape and sampled.frames.shape == mean.frames.shape
    with pytest.raises(ValueError, match="action_estimate='best'"):
        model.policy(frames[0], "point", action_estimate="best")


def test_policy_action_estimate_prior_is_the_action_priors_chunk(model, episode):
    frames, states, _ = episode
    chunk = model.policy(frames[:2], "point", state=states[:2], steps=2, action_estimate="prior")
    # The same chunk straight from the prior's network, in raw units.
    entry = model._entry("point")
    grid = latent_grids(model._encode(frames[:2, None]), model.config)[:, 0]
    state = torch.zeros(2, model.config.state_width)
    state[:, :2] = torch.from_numpy(entry.state_norm.normalize(states[:2]))
    direct = model.network.action_prior(grid, state, torch.zeros(2, dtype=torch.long))[:, : model.future_frames, :2]
    expected = model.processor.actions_out("point", direct.detach().numpy())
    np.testing.assert_allclose(chunk.actions, expected, rtol=1e-4, atol=1e-5)
    mean = model.policy(frames[:2], "point", state=states[:2], steps=2)
    assert not np.allclose(chunk.actions, mean.actions)  # the MoT's estimate is a different one
    assert chunk.frames.shape == mean.frames.shape


def test_policy_guidance_extrapolates_from_the_estimate_without_instruction(smoke_checkpoint, episode):
    # The smoke model has barely seen its instruction: perturb its weights so the instruction matters.
    model = WorldActionModel.from_pretrained(smoke_checkpoint)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.network.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    frames, states, _ = episode
    kwargs = {"state": states[:2], "steps": 2, "seed": 5}
    cond = model.policy(frames[:2], "point", instruction="push it", guidance_scale=1.0, **kwargs).actions
    uncond = model.policy(frames[:2], "point", instruction="", guidance_scale=1.0, **kwargs).actions
    assert np.abs(cond - uncond).max() > 1e-4  # the instruction matters, so guidance can move the estimate
    for scale in (0.0, 2.5):
        guided = model.policy(frames[:2], "point", instruction="push it", guidance_scale=scale, **kwargs).actions
        np.testing.assert_allclose(guided, uncond + scale * (cond - uncond), rtol=1e-4, atol=1e-5)
    assert POLICY_GUIDANCE != 1.0  # the default guides
    for bad in (-1.0, float("nan"), "2", True):
        with pytest.raises(ValueError, match="guidance_scale="):
            model.policy(frames[0], "point", guidance_scale=bad)


def test_bf16_autocast_gives_float32_arrays_close_to_float32(model, episode):
    # On a GPU users run the model under bf16 autocast; numpy has no bfloat16, so every output must
    # come back as float32 (the CPU's autocast takes the same path).
    frames, states, actions = episode
    exact = model.forward_dynamics(frames[:1], actions[:4], "point", states=states[0], steps=2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fd = model.forward_dynamics(frames[:1], actions[:4], "point", states=states[0], steps=2)
        chunk = model.policy(frames[0], "point", state=states[0], steps=2)
        labels = model.inverse_dynamics(frames, "point", steps=2)
    for array in (fd.states, fd.rewards, fd.success, fd.latents, chunk.actions, labels):
        assert array.dtype == np.float32 and np.isfinite(array).all()
    assert fd.frames.dtype == np.uint8
    np.testing.assert_allclose(fd.states, exact.states, atol=0.02)


def test_save_and_reload_give_the_same_outputs(model, episode, tmp_path):
    model.save_pretrained(tmp_path / "copy")
    again = WorldActionModel.from_pretrained(tmp_path / "copy")
    frames = episode[0]
    np.testing.assert_array_equal(
        model.inverse_dynamics(frames, "point", steps=2), again.inverse_dynamics(frames, "point", steps=2)
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, f, s, a: m.policy(f[0].astype(np.float32), "point"), "dtype float32; expected uint8"),
        (lambda m, f, s, a: m.policy(f[0][:32], "point"), "expected"),
        (lambda m, f, s, a: m.policy(f[0], "hexapod"), "embodiment='hexapod' is not known"),
        (lambda m, f, s, a: m.inverse_dynamics(f, "point", fps=30), "fps=30"),
        (lambda m, f, s, a: m.inverse_dynamics(f[:1], "point"), "at least 2"),
        (lambda m, f, s, a: m.forward_dynamics(f[:1], a[:, :1], "point"), "actions has shape"),
        (lambda m, f, s, a: m.forward_dynamics(f[:1], a * np.nan, "point"), "NaN"),
        (lambda m, f, s, a: m.forward_dynamics(f[:1], a, "point", states=np.zeros(5)), "states has shape"),
        (lambda m, f, s, a: m.forward_dynamics(f[:1], a, "point", latents=np.zeros((1, 2))), "latents has shape"),
        (lambda m, f, s, a: m.policy(f[0], "point", steps=0), "steps=0"),
    ],
)
def test_bad_inputs_are_clear_errors(model, episode, call, message):
    frames, states, actions = episode
    with pytest.raises(ValueError, match=message):
        call(model, frames, states, actions)


def test_unknown_backend_and_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="backend='tensorrt' is unknown; expected 'native' or 'cosmos3'"):
        WorldActionModel.from_pretrained("default", backend="tensorrt")
    with pytest.raises(ValueError, match="options of backend='cosmos3'"):
        WorldActionModel.from_pretrained("default", action_stats={})
    with pytest.raises(FileNotFoundError):
        WorldActionModel.from_pretrained(tmp_path / "nothing")


def test_the_shipped_default_loads_in_one_line_and_predicts():
    from cosmos_robot.world_model import default_checkpoint_path

    size = sum(p.stat().st_size for p in default_checkpoint_path().iterdir())
    # 24 MB: the MoT, both priors and the block's drawer (a second forward prior) in float16.
    assert size <= 24 * 2**20, f"the shipped default is {size / 2**20:.1f} MB; the budget is 24 MB"
    model = WorldActionModel.from_pretrained("default")
    assert model.embodiments == ["arm2", "point"] and model.config.d_model == 192  # the `small` preset
    env = gym.make("cosmos_robot/PushBlockPoint-v0")
    obs, _ = env.reset(seed=0)
    env.close()
    pred = model.forward_dynamics(obs["pixels"][None], np.zeros((2, 2), np.float32), "point", states=obs["agent_pos"])
    assert pred.frames.shape == (1, 2, 64, 64, 3) and pred.frames.dtype == np.uint8
    # What it predicts is pinned by tests/test_default_outputs.py.
