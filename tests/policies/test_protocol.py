"""Every policy the harness runs satisfies the one Policy protocol; other objects do not."""

from __future__ import annotations

from cosmos_robot.eval.closed_loop import make_policy
from cosmos_robot.policies.protocol import Policy

POINT = "cosmos_robot/PushBlockPoint-v0"


def test_shipped_policies_are_policies():
    for kind in ("expert", "pixel-expert", "random"):
        assert isinstance(make_policy(kind, POINT), Policy), kind
    assert isinstance(make_policy("model", POINT, "default"), Policy)


def test_an_object_without_act_is_not_a_policy():
    class OnlyReset:
        def reset(self, seed=None) -> None: ...

    assert not isinstance(OnlyReset(), Policy)
