"""Action-prior training alone: on real PushBlock demonstrations its held-out error falls; it touches
nothing but the action prior; it refuses zero steps."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.action_prior_training import prior_error, train_action_prior
from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.model.action_prior import PRIOR_CHUNK
from cosmos_robot.model.config import preset
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.tokenizers import FrameAutoencoder


@pytest.fixture(scope="module")
def prepared(smoke_data):
    config = preset("tiny")
    data = TrainingSet(smoke_data, config, num_frames=5, seed=0)
    torch.manual_seed(0)
    data.prepare(FrameAutoencoder(config.latent_channels, config.patch_merge))
    return data


def test_training_changes_only_the_action_prior_and_lowers_its_error(prepared):
    torch.manual_seed(0)
    network = WorldActionNetwork(prepared.config)
    before = {k: v.clone() for k, v in network.state_dict().items()}
    table = prepared.demonstrations(PRIOR_CHUNK)
    untrained = prior_error(network, table)
    assert sorted(untrained) == sorted(table.domain.unique().tolist())  # one error per embodiment
    losses = train_action_prior(network, table, steps=60, batch_size=16, lr=3e-3, progress=False)
    assert len(losses) == 60 and sum(losses[-10:]) < sum(losses[:10])
    trained = prior_error(network, table)
    assert all(trained[d] < untrained[d] for d in untrained), (untrained, trained)
    changed = {k for k, v in network.state_dict().items() if not torch.equal(v, before[k])}
    assert changed and all(k.startswith("action_prior.") for k in changed)
    assert not network.action_prior.training  # left in eval mode, as the MoT will use it


def test_training_needs_steps(prepared):
    with pytest.raises(ValueError, match="steps=0"):
        train_action_prior(WorldActionNetwork(prepared.config), prepared.demonstrations(PRIOR_CHUNK), steps=0)
