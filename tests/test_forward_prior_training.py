"""Forward-prior training: on real PushBlock latents its rollout beats copying the first frame; it
touches nothing but the prior; it refuses zero steps. The state head's fit lowers the held-out state
error and changes nothing but the state head."""

from __future__ import annotations

import pytest
import torch

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.forward_prior_training import (
    fit_state_head,
    rollout_error,
    state_head_examples,
    train_forward_prior,
)
from cosmos_robot.model.config import ModelConfig, preset
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.tokenizers import FrameAutoencoder


@pytest.fixture(scope="module")
def prepared(smoke_data):
    config = ModelConfig.from_dict(preset("tiny").to_dict() | {"forward_prior": True})
    data = TrainingSet(smoke_data, config, num_frames=5, seed=0)
    torch.manual_seed(0)
    data.prepare(FrameAutoencoder(config.latent_channels, config.patch_merge))
    return data


def test_training_changes_only_the_prior_and_beats_copying(prepared):
    torch.manual_seed(0)
    network = WorldActionNetwork(prepared.config)
    before = {k: v.clone() for k, v in network.state_dict().items()}
    table = prepared.transitions(steps=2)
    untrained = rollout_error(network, table)
    assert untrained.latent_mse == pytest.approx(untrained.copy_mse)  # an untrained prior copies
    losses = train_forward_prior(network, table, steps=60, batch_size=16, progress=False)
    assert len(losses) == 60 and sum(losses[-10:]) < sum(losses[:10])
    trained = rollout_error(network, table)
    assert trained.latent_mse < untrained.latent_mse and trained.state_rmse < untrained.state_rmse
    changed = {k for k, v in network.state_dict().items() if not torch.equal(v, before[k])}
    assert changed and all(k.startswith("forward_prior.") for k in changed)


def test_training_needs_steps(prepared):
    with pytest.raises(ValueError, match="steps=0"):
        train_forward_prior(WorldActionNetwork(prepared.config), prepared.transitions(steps=2), steps=0)


def test_state_head_fit_lowers_the_held_out_error_and_changes_only_the_head(prepared):
    config = ModelConfig.from_dict(prepared.config.to_dict() | {"forward_state_action": True})
    torch.manual_seed(0)
    network = WorldActionNetwork(config)
    train_forward_prior(network, prepared.transitions(steps=2), steps=20, batch_size=16, progress=False)
    before = {k: v.clone() for k, v in network.state_dict().items()}
    network.forward_prior.requires_grad_(False)
    flags = [p.requires_grad for p in network.forward_prior.parameters()]
    report = fit_state_head(
        network, prepared.transitions(steps=1), prepared.transitions("val", steps=1), steps=150, progress=False
    )
    assert report["state_mse_after"] < 0.5 * report["state_mse_before"]
    changed = {k for k, v in network.state_dict().items() if not torch.equal(v, before[k])}
    head = ("forward_prior.state_mlp.", "forward_prior.state_weight", "forward_prior.state_bias")
    assert "forward_prior.state_action" in changed and all(
        k.startswith(head + ("forward_prior.state_action",)) for k in changed
    )
    # The head is left as trainable (or not) as it was found.
    assert [p.requires_grad for p in network.forward_prior.parameters()] == flags


def test_state_head_fit_needs_the_action_term_and_one_step_runs(prepared):
    network = WorldActionNetwork(prepared.config)  # forward_state_action off
    with pytest.raises(ValueError, match="forward_state_action"):
        fit_state_head(network, prepared.transitions(steps=1), prepared.transitions("val", steps=1), steps=5)
    with pytest.raises(ValueError, match="table.steps=2"):
        state_head_examples(network, prepared.transitions(steps=2))
