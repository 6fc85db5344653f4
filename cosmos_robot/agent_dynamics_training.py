"""Teaching the carried object's agent heads: the agent state stepped by MLPs, for learned envs that return no frames.

A state-only learned env (``observation="state"``) reads ``agent_pos`` and, where the model has one, the
block's reward; no frame. Stepping the forward prior for it still costs its convolutions (~10 GFLOP/s of
a 2-core CPU at batch 64), because the prior's state change reads its conv features. For the embodiments
that carry the block's pose (:mod:`cosmos_robot.model.object_pose`) the scene is already known without the
grid: the agent state, the block's pose and the action. The agent head (:meth:`ObjectPose.agent_change`)
learns the state's change from them, per embodiment:

1. on every recorded step (the block's pose and the effector as the env carries them: the recorded pose,
   the effector map of the recorded state);
2. then on 16-step rollouts of its own states, the block carried by the push MLP as in the env (the
   gradient goes through the rollout; the push MLP and the effector map are not changed).

Measured on the default's held-out windows (docs/results.md, "State-only steps"): point's agent_pos error
at h16 fell from the prior's 2.8 mm to ~1 mm; arm2's stayed at the prior's level.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import torch

from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.keys import OBS_STATE
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.object_pose import ObjectPose
from cosmos_robot.object_pose_training import (
    PushRecord,
    _fit,
    carried_embodiments,
    check_fit_counts,
    join_records,
    push_record,
    simulated_record,
)
from cosmos_robot.push_data import simulate_pushes

# Examples per step of the one-step fit, and rollouts per step of the rollout fit.
ONE_STEP_BATCH = 512
ROLLOUT_BATCH = 256
# Steps per training rollout, and the horizons the report reads.
AGENT_ROLLOUT = 16


def attach_agent_dynamics(network: WorldActionNetwork) -> None:
    """Give ``network``'s object untrained agent heads and record it in its config (a checkpoint made before them)."""
    objects = network.object_pose
    if objects is None:
        raise ValueError("the network carries no object (ModelConfig.object_pose_domains is empty); no agent head")
    if objects.has_agent:
        raise ValueError("the network's object already has agent heads (ModelConfig.object_agent=True)")
    objects.add_agent(network.config.state_width, network.config.action_width)
    objects.requires_grad_(False)
    network.config = dataclasses.replace(network.config, object_agent=True)


@dataclasses.dataclass(frozen=True)
class AgentRecord:
    """One embodiment's recorded steps: its pushes (:class:`PushRecord`), normalised padded states (N, S),
    the raw states (N, state_dim) and the real state channels (S,)."""

    pushes: PushRecord
    states: torch.Tensor
    raw: np.ndarray
    channels: torch.Tensor


def agent_record(data: TrainingSet, name: str, split: str) -> AgentRecord:
    """The recorded steps of embodiment ``name`` in ``split``."""
    raw = np.asarray(getattr(data.data[name], split).episodes.data[OBS_STATE], np.float64)
    states = torch.from_numpy(data.processor.states_in(name, raw)).float()
    channels = (torch.arange(states.shape[1]) < raw.shape[1]).float()
    return AgentRecord(push_record(data, name, split), states, raw, channels)


def simulated_agent_record(data: TrainingSet, name: str, episodes: int, progress: bool = True) -> AgentRecord:
    """``episodes`` state-only episodes of embodiment ``name`` simulated by
    :func:`cosmos_robot.push_data.simulate_pushes`, as an :class:`AgentRecord`."""
    simulated = simulate_pushes(name, episodes, progress=progress)
    states = torch.from_numpy(data.processor.states_in(name, simulated.states)).float()
    channels = (torch.arange(states.shape[1]) < simulated.states.shape[1]).float()
    return AgentRecord(simulated_record(data.processor, name, simulated), states, simulated.states, channels)


def join_agent_records(first: AgentRecord, second: AgentRecord) -> AgentRecord:
    """One record of both records' episodes."""
    return AgentRecord(
        join_records(first.pushes, second.pushes),
        torch.cat([first.states, second.states]),
        np.concatenate([first.raw, second.raw]),
        first.channels,
    )


def _start_memory(record: AgentRecord, rows: torch.Tensor, effector_before: torch.Tensor) -> torch.Tensor:
    """The object's memory (B, 10) at ``rows`` from the record: the poses a step before and now, the effector
    a step before (``effector_before`` (B, 2): the effector map of the recorded state a step before each row),
    no goal."""
    pushes = record.pushes
    before = pushes.before(rows)
    zeros = effector_before.new_zeros(len(rows), 2)
    return torch.cat([pushes.poses[before], pushes.poses[rows], effector_before, zeros], 1)


def roll_agent(objects: ObjectPose, record: AgentRecord, rows: torch.Tensor, steps: int, domain: int) -> torch.Tensor:
    """Normalised states (B, steps, S) the agent head rolls from ``rows`` (B,) under the recorded actions, the
    block carried by the push MLP and the effector mapped from the head's own states, as the learned env does."""
    state = record.states[rows]
    with torch.no_grad():  # the rows a step before only, not every recorded state (~37k) at every step
        effector_before = objects.effector_of(record.states[record.pushes.before(rows)], domain)
    memory = _start_memory(record, rows, effector_before)
    effector = objects.effector_of(state, domain)
    states = []
    for k in range(steps):
        action = record.pushes.actions[rows + k]
        state_after = objects.agent_step(state, memory, effector, action, domain, record.channels)
        memory, effector = objects.advance(memory, state, state_after, effector, action, domain)
        state = state_after
        states.append(state)
    return torch.stack(states, 1)


def agent_rollout_error(
    objects: ObjectPose, record: AgentRecord, name: str, data: TrainingSet, steps: int, domain: int
) -> list[float]:
    """Mean agent-state error (raw units: metres or radians) per horizon 1..``steps`` of :func:`roll_agent`
    over every window of ``steps`` steps of ``record`` (NaN where no episode is that long: a tiny held-out split)."""
    rows, _ = record.pushes.windows(steps)
    if not len(rows):
        return [float("nan")] * steps
    with torch.no_grad():
        rolled = torch.cat(
            [roll_agent(objects, record, rows[i : i + 1024], steps, domain) for i in range(0, len(rows), 1024)]
        )
    predicted = data.processor.states_out(name, rolled.numpy())
    recorded = record.raw[rows.numpy()[:, None] + np.arange(1, steps + 1)]
    return [float(e) for e in np.linalg.norm(predicted - recorded, axis=-1).mean(0)]


def fit_agent_dynamics(
    network: WorldActionNetwork,
    data: TrainingSet,
    steps: int,
    rollout_steps: int,
    seed: int,
    progress: bool = True,
    simulated_episodes: int = 0,
) -> dict[str, float]:
    """Fit the agent heads of ``network``'s object (see the module docstring); returns held-out agent-state
    errors at horizons 1 and 16 (raw units) before and after the rollout fit, and the seconds it took.

    Args:
        network: a network whose object is trained (``fit_object_pose``) and has agent heads.
        data: the training set (its train split trains, its val split measures).
        steps: one-step optimiser steps per embodiment (>= 1).
        rollout_steps: optimiser steps per embodiment on :data:`AGENT_ROLLOUT`-step rollouts (0: none).
        seed: seeds every fit.
        progress: show progress bars.
        simulated_episodes: state-only episodes per embodiment simulated in MuJoCo (:func:`simulated_agent_record`)
            that the heads learn from beside the data's (0: none).
    """
    started = time.perf_counter()
    check_fit_counts(steps, rollout_steps, simulated_episodes)
    objects = network.object_pose
    if objects is None or not objects.has_agent:
        raise ValueError(
            "the network's object has no agent heads (ModelConfig.object_agent=False); see attach_agent_dynamics"
        )
    names = carried_embodiments(objects, data)
    report: dict[str, float] = {}
    for name in names:
        domain = data.data[name].embodiment.domain_id
        k = objects.domains.index(domain)
        train, val = agent_record(data, name, "train"), agent_record(data, name, "val")
        if simulated_episodes:
            train = join_agent_records(train, simulated_agent_record(data, name, simulated_episodes, progress))
        pushes = train.pushes
        t = torch.cat([torch.arange(start, end - 1) for start, end in pushes.bounds])
        with torch.no_grad():
            mapped = objects.effector_of(train.states, domain)
        memory = _start_memory(train, t, mapped[pushes.before(t)])
        inputs = objects.agent_features(train.states[t], memory, mapped[t], pushes.actions[t])
        targets = (train.states[t + 1] - train.states[t]) * train.channels
        objects.agent_mean[k] = inputs.mean(0)
        objects.agent_std[k] = inputs.std(0) + 1e-6
        objects.agent_scale[k] = torch.where(train.channels > 0, targets.std(0) + 1e-6, torch.ones_like(train.channels))
        scale = objects.agent_scale[k]

        def one_step_loss(rng: torch.Generator, x=inputs, y=targets, domain=domain, scale=scale) -> torch.Tensor:
            index = torch.randint(len(x), (ONE_STEP_BATCH,), generator=rng)
            return ((objects.agent_change(x[index], domain) - y[index]) / scale).pow(2).mean()

        _fit(objects.agent[str(domain)], one_step_loss, steps, 2e-3, seed, f"{name} agent head", progress)
        errors = agent_rollout_error(objects, val, name, data, AGENT_ROLLOUT, domain)
        report[f"{name}_agent_h1"], report[f"{name}_agent_h{AGENT_ROLLOUT}"] = errors[0], errors[-1]
        if rollout_steps:
            rows, _ = pushes.windows(AGENT_ROLLOUT)
            if not len(rows):
                raise ValueError(f"no {name} episode is longer than {AGENT_ROLLOUT} steps; expected longer episodes")

            def rollout_loss(rng: torch.Generator, rows=rows, record=train, domain=domain, scale=scale) -> torch.Tensor:
                index = rows[torch.randint(len(rows), (ROLLOUT_BATCH,), generator=rng)]
                rolled = roll_agent(objects, record, index, AGENT_ROLLOUT, domain)
                recorded = record.states[index[:, None] + torch.arange(1, AGENT_ROLLOUT + 1)]
                return ((rolled - recorded) * record.channels / scale).pow(2).mean()

            _fit(
                objects.agent[str(domain)],
                rollout_loss,
                rollout_steps,
                1e-3,
                seed + 1,
                f"{name} agent rollouts",
                progress,
            )
            errors = agent_rollout_error(objects, val, name, data, AGENT_ROLLOUT, domain)
            report[f"{name}_agent_h1_rolled"] = errors[0]
            report[f"{name}_agent_h{AGENT_ROLLOUT}_rolled"] = errors[-1]
    network.eval()
    report["seconds"] = time.perf_counter() - started
    return report
