"""Teaching a prior to carry the block's pose, on real PushBlock data: the attached parts start unread,
the fit learns the effector and the readout, the prior then reads the maps; bad arguments are named."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.envs.push_block import effector_from_state
from cosmos_robot.envs.push_block_scene import CONTROL_HZ
from cosmos_robot.forward_prior_training import train_forward_prior
from cosmos_robot.keys import ACTION, OBS_STATE
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.object_pose import EFFECTOR_MAPS, POSE_MAPS
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.object_pose_training import (
    PUSH_ROLLOUT,
    attach_object_pose,
    command_map,
    fit_drawer,
    fit_object_pose,
    fit_push_rollouts,
    fit_pushes,
    join_records,
    object_embodiments,
    push_record,
    roll_pushes,
)


@pytest.fixture(scope="module")
def prepared(smoke_data):
    config = ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": True})
    data = TrainingSet(smoke_data, config, num_frames=5, seed=0)
    torch.manual_seed(0)
    autoencoder = FrameAutoencoder(config.latent_channels, config.patch_merge).requires_grad_(False).eval()
    data.prepare(autoencoder)
    network = WorldActionNetwork(config)
    train_forward_prior(network, data.transitions(steps=3), steps=20, batch_size=16, progress=False)
    return data, network


def test_attached_parts_leave_the_prior_as_it_was_until_trained(prepared):
    data, trained = prepared
    network = WorldActionNetwork(trained.config)
    network.load_state_dict(trained.state_dict())
    grid, state, action = torch.randn(2, 8, 8, 8), torch.randn(2, 16) * 0.1, torch.randn(2, 32) * 0.1
    before = network.forward_prior(grid, state, action, 0)
    assert object_embodiments(data) == ["arm2", "point"]
    attach_object_pose(network, (0, 1))
    assert network.config.object_pose_domains == (0, 1) and network.object_pose.drawer.extra_inputs == POSE_MAPS
    after = network.object_pose.drawer(grid, state, action, 0, torch.randn(2, POSE_MAPS, 8, 8))
    for got, want, prior in zip(after, before, network.forward_prior(grid, state, action, 0), strict=True):
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(prior, want)
    # The same structure comes from the config: a checkpoint of it loads into a fresh network.
    WorldActionNetwork(network.config).load_state_dict(network.state_dict())
    with pytest.raises(ValueError, match="already carries an object"):
        attach_object_pose(network, (0,))


@pytest.fixture(scope="module")
def fitted(prepared):
    """(a copy of the trained network with its object fitted 100 steps, the report)."""
    data, trained = prepared
    network = WorldActionNetwork(trained.config)
    network.load_state_dict(trained.state_dict())
    attach_object_pose(network, tuple(data.data[n].embodiment.domain_id for n in object_embodiments(data)))
    report = fit_object_pose(network, data, fit_steps=100, prior_steps=3, rollout=3, seed=0, progress=False)
    return network, report


def test_the_fit_learns_the_effector_and_the_readout_and_teaches_the_prior_the_maps(prepared, fitted):
    data, trained = prepared
    network = WorldActionNetwork(trained.config)
    network.load_state_dict(trained.state_dict())
    domains = tuple(data.data[n].embodiment.domain_id for n in object_embodiments(data))
    attach_object_pose(network, domains)
    stem = network.object_pose.drawer.stem.weight[:, -POSE_MAPS:].clone()
    prior_before = {k: v.clone() for k, v in trained.forward_prior.state_dict().items()}
    untrained = fit_object_pose(network, data, fit_steps=1, prior_steps=0, rollout=3, seed=0, progress=False)
    network2, report = fitted
    for name in ("point", "arm2"):
        assert report[f"{name}_effector_mm"] < 0.25 * untrained[f"{name}_effector_mm"]
        assert report[f"{name}_effector_mm"] < 15.0
    assert report["readout_mm"] < 0.7 * untrained["readout_mm"]
    assert torch.equal(network.object_pose.drawer.stem.weight[:, -POSE_MAPS:], stem)  # prior_steps=0: untouched
    assert network2.object_pose.drawer.stem.weight[:, -POSE_MAPS:].abs().sum() > 0  # now it reads the maps
    # The forward prior itself is left as trained (agent states, the MoT's rollout).
    assert all(torch.equal(v, prior_before[k]) for k, v in network2.forward_prior.state_dict().items())
    assert not any(p.requires_grad for p in network2.object_pose.parameters())


def _drawer_trunk_gap(network: WorldActionNetwork) -> float:
    """Largest difference between the drawer's weights and the forward prior's (the stem's grid channels)."""
    drawer, prior = network.object_pose.drawer.state_dict(), network.forward_prior.state_dict()
    gaps = [(drawer[k].float() - v.float()).abs().max() for k, v in prior.items() if k != "stem.weight"]
    stem = drawer["stem.weight"][:, : prior["stem.weight"].shape[1]]
    return float(max([*gaps, (stem.float() - prior["stem.weight"].float()).abs().max()]))


@pytest.mark.parametrize("tell_effector", [False, True])
def test_a_drawer_built_with_the_network_is_drawn_from_the_trained_prior(prepared, tell_effector):
    # ``train`` builds the object with the network (its drawer untrained), then fits it: the drawer must start
    # from the trained prior, as attach_object_pose's does, not from the network's random initialisation.
    data, trained = prepared
    domains = tuple(data.data[n].embodiment.domain_id for n in object_embodiments(data))
    config = ModelConfig.from_dict(
        trained.config.to_dict() | {"object_pose_domains": domains, "object_effector_maps": tell_effector}
    )
    network = WorldActionNetwork(config)
    network.load_state_dict(trained.state_dict(), strict=False)
    assert _drawer_trunk_gap(network) > 1e-3  # as built: random
    extra = POSE_MAPS + EFFECTOR_MAPS * tell_effector
    assert network.object_pose.drawer.extra_inputs == extra and network.object_pose.tells_effector == tell_effector
    stem_before = network.object_pose.drawer.stem.weight[:, -extra:].clone()
    fit_drawer(network, data, steps=2, rollout=3, seed=0, lr=1e-9, progress=False)
    assert _drawer_trunk_gap(network) < 1e-6  # a copy of the prior, barely moved
    assert network.object_pose.drawer.extra_inputs == extra
    fit_drawer(network, data, steps=5, rollout=3, seed=0, progress=False)
    stem = network.object_pose.drawer.stem.weight[:, -extra:]
    assert not torch.equal(stem, stem_before) and stem.abs().sum() > 0  # it learned to read the maps
    if tell_effector:  # ... the effector's among them
        assert stem[:, -EFFECTOR_MAPS:].abs().sum() > 0
    assert not any(p.requires_grad for p in network.object_pose.drawer.parameters())
    WorldActionNetwork(network.config).load_state_dict(network.state_dict())  # the config says its shape


def test_bad_arguments_are_refused_by_name(prepared):
    data, network = prepared
    with pytest.raises(ValueError, match="carries no object"):
        fit_object_pose(network, data, fit_steps=1, prior_steps=0, rollout=3, seed=0, progress=False)
    with pytest.raises(ValueError, match="fit_steps=0"):
        fit_object_pose(network, data, fit_steps=0, prior_steps=0, rollout=3, seed=0, progress=False)
    with pytest.raises(ValueError, match="carries no object"):
        fit_drawer(network, data, steps=1, rollout=3, seed=0, progress=False)
    with pytest.raises(ValueError, match="push_rollout_steps=-1"):
        fit_object_pose(network, data, 1, 0, rollout=3, seed=0, push_rollout_steps=-1, progress=False)


def test_rollout_training_takes_the_carried_pushes_drift_down(prepared, fitted):
    data = prepared[0]
    network = WorldActionNetwork(fitted[0].config)
    network.load_state_dict(fitted[0].state_dict())  # a copy: the other tests read the fitted object as it is
    network.requires_grad_(False)  # as the fit left it
    domain = data.data["point"].embodiment.domain_id
    objects, record = network.object_pose, push_record(data, "point", "train")
    rows, _ = record.windows(PUSH_ROLLOUT)

    def drift() -> float:
        with torch.no_grad():
            carried = roll_pushes(objects, record, rows, PUSH_ROLLOUT, domain)
        recorded = record.poses[rows[:, None] + torch.arange(1, PUSH_ROLLOUT + 1)]
        return float((carried[..., :2] - recorded[..., :2]).norm(dim=-1).mean())

    before = drift()
    fit_push_rollouts(objects, record, domain, PUSH_ROLLOUT, steps=80, seed=0, progress=False)
    assert drift() < 0.8 * before
    assert not any(p.requires_grad for p in objects.push.parameters())
    with pytest.raises(ValueError, match="rollout=100000"):
        fit_push_rollouts(objects, record, domain, 100_000, steps=1, seed=0, progress=False)


def test_the_commanded_state_is_where_the_velocity_takes_the_raw_state_in_one_control_period(prepared):
    data, network = prepared
    config = network.config
    for name in ("point", "arm2"):
        gain, offset = command_map(data.processor, name, config.state_width, config.action_width)
        raw_states = np.asarray(data.data[name].train.episodes.data[OBS_STATE], np.float64)[:50]
        raw_actions = np.asarray(data.data[name].train.episodes.data[ACTION], np.float64)[:50]
        states = torch.from_numpy(data.processor.states_in(name, raw_states)).double()
        actions = torch.from_numpy(data.processor.actions_in(name, raw_actions)).double()
        commanded = data.processor.states_out(name, (states + actions @ gain.double() + offset.double()).numpy())
        np.testing.assert_allclose(commanded, raw_states + raw_actions / CONTROL_HZ, atol=1e-5)
        record = push_record(data, name, "train")
        start, end = record.bounds[0]
        np.testing.assert_allclose(
            record.path[start, 2:].numpy(),
            effector_from_state(name, raw_states[:1] + raw_actions[:1] / CONTROL_HZ)[0],
            atol=1e-6,
        )


def test_push_mlps_refitted_with_the_path_and_simulated_episodes(prepared, fitted):
    data = prepared[0]
    config = ModelConfig.from_dict(fitted[0].config.to_dict() | {"object_push_path": True})
    network = WorldActionNetwork(config)
    state = {k: v for k, v in fitted[0].state_dict().items() if not k.startswith("object_pose.push")}
    network.load_state_dict(state, strict=False)  # the readout and effector maps as fitted, new push MLPs
    objects = network.object_pose
    assert objects.push_path and objects.command_gain.abs().sum() == 0
    plain = fit_pushes(fitted[0], data, steps=3, rollout_steps=0, seed=0, progress=False)
    report = fit_pushes(network, data, steps=40, rollout_steps=2, seed=0, simulated_episodes=4, progress=False)
    assert objects.command_gain.abs().sum() > 0  # set from the data's statistics
    for name in ("point", "arm2"):
        # The simulated episodes' steps are learned from beside the data's.
        assert report[f"{name}_push_train_steps"] > plain[f"{name}_push_train_steps"] + 4
        assert np.isfinite(report[f"{name}_push_h{PUSH_ROLLOUT}_mm_rolled"])
    reloaded = WorldActionNetwork(network.config)
    reloaded.load_state_dict(network.state_dict())  # the config says the MLPs' shape
    torch.testing.assert_close(reloaded.object_pose.command_gain, objects.command_gain)
    with pytest.raises(ValueError, match="simulated_episodes=-1"):
        fit_pushes(network, data, steps=1, rollout_steps=0, seed=0, simulated_episodes=-1, progress=False)


def test_joined_records_keep_each_episode_apart(prepared):
    data = prepared[0]
    first, second = push_record(data, "point", "train"), push_record(data, "point", "val")
    joined = join_records(first, second)
    assert len(joined.poses) == len(first.poses) + len(second.poses) == len(joined.path)
    assert len(joined.bounds) == len(first.bounds) + len(second.bounds)
    assert joined.bounds[len(first.bounds)] == (len(first.poses), len(first.poses) + second.bounds[0][1])
    rows = torch.tensor([s for s, _ in joined.bounds])
    assert torch.equal(joined.before(rows), rows)  # every episode starts at rest
