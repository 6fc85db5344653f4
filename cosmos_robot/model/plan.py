"""Modes are conditioning plans: ONE function maps a mode to which tokens are clean and which are generated.

Nothing else in the code branches on the mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import torch


class Mode(Enum):
    """What the model is asked to generate."""

    FORWARD_DYNAMICS = "forward_dynamics"  # given frames so far + all actions -> future frames
    INVERSE_DYNAMICS = "inverse_dynamics"  # given all frames -> the actions (and states) between them
    POLICY = "policy"  # given frames so far (+ action history) -> future frames and actions


@dataclass(frozen=True)
class Plan:
    """Per-token generation flags of a window (True = noisy, generated; False = clean, given).

    Attributes:
        frames: (T,) one flag per frame (all its tokens share it).
        actions: (K,) one flag per action.
        states: (T,) one flag per state sample (states follow their frames).
    """

    frames: torch.Tensor
    actions: torch.Tensor
    states: torch.Tensor


def make_plan(mode: Mode, num_frames: int, num_actions: int, context_frames: int = 1) -> Plan:
    """The clean/noisy plan of a window with ``num_frames`` frames and ``num_actions`` actions.

    The first ``context_frames`` frames are observed in forward dynamics and policy. Actions are
    spread evenly over the frame intervals; an action that leads into a context frame is history
    and stays clean in policy mode. States follow their frames, except in inverse dynamics, where
    they are generated too: labeling works from video alone, without proprioception.

    >>> p = make_plan(Mode.FORWARD_DYNAMICS, 4, 3)
    >>> p.frames.tolist(), p.actions.tolist()
    ([False, True, True, True], [False, False, False])
    >>> p = make_plan(Mode.INVERSE_DYNAMICS, 4, 3)
    >>> p.frames.tolist(), p.actions.tolist(), p.states.tolist()
    ([False, False, False, False], [True, True, True], [True, True, True, True])
    >>> p = make_plan(Mode.POLICY, 4, 3, context_frames=2)
    >>> p.frames.tolist(), p.actions.tolist(), p.states.tolist()
    ([False, False, True, True], [False, True, True], [False, False, True, True])
    """
    if num_frames < 2:
        raise ValueError(f"num_frames={num_frames}; expected at least 2")
    if num_actions < 1 or num_actions % (num_frames - 1):
        raise ValueError(
            f"num_actions={num_actions}; expected a positive multiple of num_frames - 1 = {num_frames - 1}"
        )
    if not 1 <= context_frames < num_frames:
        raise ValueError(f"context_frames={context_frames}; expected 1..{num_frames - 1}")
    per_interval = num_actions // (num_frames - 1)
    # Action k leads into frame (k // per_interval) + 1.
    leads_into = torch.arange(num_actions) // per_interval + 1
    frame_index = torch.arange(num_frames)
    observed = frame_index < context_frames
    if mode is Mode.FORWARD_DYNAMICS:
        frames, actions = ~observed, torch.zeros(num_actions, dtype=torch.bool)
    elif mode is Mode.INVERSE_DYNAMICS:
        frames, actions = torch.zeros(num_frames, dtype=torch.bool), torch.ones(num_actions, dtype=torch.bool)
        return Plan(frames=frames, actions=actions, states=torch.ones(num_frames, dtype=torch.bool))
    elif mode is Mode.POLICY:
        frames, actions = ~observed, leads_into >= context_frames
    else:  # pragma: no cover - Enum is closed
        raise ValueError(f"mode={mode!r}; expected a Mode")
    return Plan(frames=frames, actions=actions, states=frames.clone())
