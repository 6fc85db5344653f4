"""describe_network: towers and FLOPs of a network."""

from __future__ import annotations

import pytest

from cosmos_robot.model.config import preset
from cosmos_robot.model.flops import describe_network
from cosmos_robot.model.network import WorldActionNetwork


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_describe_reports_towers_and_flops(name):
    net = WorldActionNetwork(preset(name))
    info = describe_network(net)
    assert info["params_reasoner_tower"] > 0 and info["params_generator_tower"] > info["params_reasoner_tower"]
    assert info["flops_forward"] == pytest.approx(info["flops_reasoner"] + info["flops_generator_step"])
    assert info["params_total"] == sum(p.numel() for p in net.parameters())
