"""The block's agent heads on real PushBlock data: attached untrained and recorded in the config, the fit
takes the held-out agent-state error down, rollouts carry the block as the env does; bad arguments are named."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from cosmos_robot.agent_dynamics_training import (
    AGENT_ROLLOUT,
    agent_record,
    agent_rollout_error,
    attach_agent_dynamics,
    fit_agent_dynamics,
    join_agent_records,
    roll_agent,
    simulated_agent_record,
)
from cosmos_robot.checkpoint import load_checkpoint
from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.network import WorldActionNetwork


@pytest.fixture(scope="module")
def carried(smoke_data, smoke_checkpoint):
    """The smoke checkpoint's network (a prior and a fitted object) without its agent heads, and its data."""
    checkpoint = load_checkpoint(smoke_checkpoint)
    network = checkpoint.network.float()
    network.object_pose.drop_agent()
    network.config = ModelConfig.from_dict(network.config.to_dict() | {"object_agent": False})
    data = TrainingSet(smoke_data, network.config, num_frames=5, seed=0)
    data.prepare(checkpoint.autoencoder.float().eval())
    return data, network


def _copy(network: WorldActionNetwork) -> WorldActionNetwork:
    copy = WorldActionNetwork(network.config)
    copy.load_state_dict(network.state_dict())
    return copy.eval()


def test_attached_heads_are_recorded_in_the_config_and_load_into_a_fresh_network(carried):
    _, trained = carried
    network = _copy(trained)
    assert not network.object_pose.has_agent
    with pytest.raises(ValueError, match="no agent head"):
        network.object_pose.agent_change(torch.zeros(2, 3 * 16 + 32 + 12), 0)
    attach_agent_dynamics(network)
    assert network.config.object_agent and network.object_pose.has_agent
    assert not any(p.requires_grad for p in network.object_pose.parameters())
    fresh = WorldActionNetwork(network.config)
    fresh.load_state_dict(network.state_dict())  # the same structure from the config alone
    with pytest.raises(ValueError, match="already has agent heads"):
        attach_agent_dynamics(network)
    with pytest.raises(ValueError, match="object_agent=True needs object_pose_domains"):
        ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": True, "object_agent": True})


@pytest.fixture(scope="module")
def fitted(carried):
    """(the network with fitted agent heads, its report, the report of heads fitted one step)."""
    data, trained = carried
    untrained, network = _copy(trained), _copy(trained)
    attach_agent_dynamics(untrained)
    attach_agent_dynamics(network)
    before = fit_agent_dynamics(untrained, data, steps=1, rollout_steps=0, seed=0, progress=False)
    report = fit_agent_dynamics(network, data, steps=300, rollout_steps=3, seed=0, progress=False)
    return network, report, before


def test_the_fit_takes_the_held_out_agent_state_error_down(fitted):
    network, report, before = fitted
    for name in ("point", "arm2"):
        assert report[f"{name}_agent_h1"] < 0.5 * before[f"{name}_agent_h1"]
        assert report[f"{name}_agent_h{AGENT_ROLLOUT}_rolled"] == pytest.approx(
            report[f"{name}_agent_h{AGENT_ROLLOUT}_rolled"]
        )  # finite
    # point's state is the pusher's place in metres: one step of the fitted head is within a few millimetres.
    assert report["point_agent_h1"] < 0.005
    assert not any(p.requires_grad for p in network.object_pose.parameters())


def test_rollouts_step_the_state_and_follow_the_actions(carried, fitted):
    data, network = carried[0], fitted[0]
    objects, domain = network.object_pose, data.data["point"].embodiment.domain_id
    record = agent_record(data, "point", "val")
    rows, _ = record.pushes.windows(4)
    rows = rows[:8]
    with torch.no_grad():
        rolled = roll_agent(objects, record, rows, 4, domain)
        flipped = record.pushes.actions.clone()
        flipped[:, :2] = -flipped[:, :2]
        record_flipped = type(record)(
            dataclasses.replace(record.pushes, actions=flipped),
            record.states,
            record.raw,
            record.channels,
        )
        opposite = roll_agent(objects, record_flipped, rows, 4, domain)
    assert rolled.shape == (8, 4, record.states.shape[1])
    assert torch.all(rolled[..., 2:] == 0)  # the padded channels stay at zero
    moved, moved_back = rolled[:, -1, :2] - record.states[rows, :2], opposite[:, -1, :2] - record.states[rows, :2]
    # A held-out split without an episode that long reads NaN, not an error (a tiny dataset trains on).
    errors = agent_rollout_error(objects, record, "point", data, 10_000, domain)
    assert len(errors) == 10_000 and all(e != e for e in errors)
    # Opposite velocity commands move the pusher the opposite way.
    assert torch.nn.functional.cosine_similarity(moved, moved_back, dim=-1).mean() < -0.5


def test_simulated_episodes_join_the_data_for_the_heads(carried):
    data, trained = carried
    record, simulated = agent_record(data, "arm2", "train"), simulated_agent_record(data, "arm2", 5, progress=False)
    assert len(simulated.pushes.bounds) == 5 and len(simulated.states) == len(simulated.raw) == len(
        simulated.pushes.poses
    )
    torch.testing.assert_close(
        simulated.states[:, :2], torch.from_numpy(data.processor.states_in("arm2", simulated.raw))[:, :2]
    )
    joined = join_agent_records(record, simulated)
    assert len(joined.states) == len(record.states) + len(simulated.states) == len(joined.pushes.poses)
    assert len(joined.pushes.bounds) == len(record.pushes.bounds) + 5
    network = _copy(trained)
    attach_agent_dynamics(network)
    report = fit_agent_dynamics(network, data, steps=5, rollout_steps=1, seed=0, simulated_episodes=3, progress=False)
    assert report["arm2_agent_h1_rolled"] == pytest.approx(report["arm2_agent_h1_rolled"])  # finite


def test_bad_arguments_are_named(carried):
    data, trained = carried
    with pytest.raises(ValueError, match="steps=0"):
        fit_agent_dynamics(_copy(trained), data, steps=0, rollout_steps=0, seed=0)
    with pytest.raises(ValueError, match="simulated_episodes=-1"):
        fit_agent_dynamics(_copy(trained), data, steps=1, rollout_steps=0, seed=0, simulated_episodes=-1)
    with pytest.raises(ValueError, match="no agent heads"):
        fit_agent_dynamics(_copy(trained), data, steps=1, rollout_steps=0, seed=0)
    plain = WorldActionNetwork(ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": True}))
    with pytest.raises(ValueError, match="carries no object"):
        attach_agent_dynamics(plain)
