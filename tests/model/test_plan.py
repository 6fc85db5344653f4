"""Mode plans: each mode marks the right tokens clean; the doctest runs too."""

from __future__ import annotations

import doctest

import pytest

import cosmos_robot.model.plan as plan_module
from cosmos_robot.model.plan import Mode, make_plan


def test_doctest():
    assert doctest.testmod(plan_module).failed == 0


def test_forward_dynamics_generates_future_frames_from_all_actions():
    plan = make_plan(Mode.FORWARD_DYNAMICS, 5, 8, context_frames=2)
    assert plan.frames.tolist() == [False, False, True, True, True]
    assert not plan.actions.any() and plan.states.tolist() == plan.frames.tolist()


def test_inverse_dynamics_generates_every_action_from_every_frame():
    plan = make_plan(Mode.INVERSE_DYNAMICS, 5, 8)
    assert not plan.frames.any() and plan.actions.all() and plan.states.all()  # video only: states generated


def test_policy_keeps_history_actions_clean_and_generates_the_rest():
    plan = make_plan(Mode.POLICY, 4, 6, context_frames=2)  # two actions per frame interval
    assert plan.frames.tolist() == [False, False, True, True]
    assert plan.actions.tolist() == [False, False, True, True, True, True]


@pytest.mark.parametrize(
    ("args", "message"), [((1, 2), "num_frames=1"), ((4, 4), "num_actions=4"), ((4, 3, 4), "context_frames=4")]
)
def test_bad_windows_are_rejected(args, message):
    with pytest.raises(ValueError, match=message):
        make_plan(Mode.POLICY, *args)
