"""The object's pose beside the grid: maps peak at the object's cell, the block frame turns and turns
back, an untrained push leaves the pose where it is and the memory keeps its layout."""

from __future__ import annotations

import math

import pytest
import torch

from cosmos_robot.model.forward_prior import ForwardPrior
from cosmos_robot.model.object_pose import (
    EFFECTOR_MAPS,
    MAPS_PER_EFFECTOR,
    MAPS_PER_POSE,
    MEMORY_WIDTH,
    PATH_FEATURES,
    POSE_MAPS,
    PUSH_FEATURES,
    ObjectPose,
    PoseReadout,
    block_frame,
    fold,
    pose_maps,
    step_maps,
)

HALF = 0.2


def test_maps_peak_at_the_cell_under_the_pose_and_carry_its_offset_and_quarter_turn():
    # Cell centres of an 8-cell grid over [-0.2, 0.2]: x = -0.175 + 0.05 * col, y = 0.175 - 0.05 * row.
    poses = torch.tensor([[-0.175 + 0.05 * 5, 0.175 - 0.05 * 2, 0.0], [0.0, 0.0, math.pi / 8]])
    maps = pose_maps(poses, 8, HALF)
    assert maps.shape == (2, MAPS_PER_POSE, 8, 8)
    assert divmod(int(maps[0, 0].argmax()), 8) == (2, 5)
    assert maps[0, 0].max() == pytest.approx(1.0)
    # On the cell's centre the offsets are zero there; between four cells, symmetric.
    assert maps[0, 1, 2, 5].abs() < 1e-6 and maps[0, 2, 2, 5].abs() < 1e-6
    assert torch.allclose(maps[1, 0, 3, 3], maps[1, 0, 4, 4])
    # A quarter turn of 4 x 22.5 degrees: cos 0, sin 1 on the Gaussian.
    assert torch.allclose(maps[1, 4], maps[1, 0], atol=1e-6) and maps[1, 3].abs().max() < 1e-6
    both = step_maps(poses, poses.flip(0), 8, HALF)
    assert both.shape == (2, POSE_MAPS, 8, 8)
    torch.testing.assert_close(both[0, MAPS_PER_POSE:], maps[1])


def test_a_drawer_told_the_effector_gets_its_places_after_the_poses():
    poses = torch.tensor([[0.0, 0.0, 0.3], [0.1, -0.1, 0.0]])
    # The effector one cell right of the first block, then on the cell (2, 5) of the first test.
    before, after = torch.tensor([[0.05, 0.0], [0.1, -0.1]]), torch.tensor([[0.075, 0.075], [0.075, 0.075]])
    maps = step_maps(poses, poses, 8, HALF, before, after)
    assert maps.shape == (2, POSE_MAPS + EFFECTOR_MAPS, 8, 8)
    torch.testing.assert_close(maps[:, :POSE_MAPS], step_maps(poses, poses, 8, HALF))
    places = maps[:, POSE_MAPS:]
    assert divmod(int(places[0, MAPS_PER_EFFECTOR].argmax()), 8) == (2, 5)
    as_poses = pose_maps(torch.cat([before, torch.zeros(2, 1)], 1), 8, HALF)[:, :MAPS_PER_EFFECTOR]
    torch.testing.assert_close(places[:, :MAPS_PER_EFFECTOR], as_poses)
    with pytest.raises(ValueError, match="both or neither"):
        step_maps(poses, poses, 8, HALF, before)
    drawer = ForwardPrior(4, 3, 2, 2, width=8, extra_inputs=POSE_MAPS + EFFECTOR_MAPS)
    objects = ObjectPose(4, 3, 2, (0,), HALF, drawer)
    assert objects.tells_effector
    memory = torch.cat([poses, poses, torch.zeros(2, 4)], 1)
    torch.testing.assert_close(objects.drawer_maps(memory, before, after, 8), maps)
    plain = ObjectPose(4, 3, 2, (0,), HALF, ForwardPrior(4, 3, 2, 2, width=8, extra_inputs=POSE_MAPS))
    assert not plain.tells_effector and plain.drawer_maps(memory, before, after, 8).shape[1] == POSE_MAPS
    with pytest.raises(ValueError, match="extra_inputs=3"):
        ObjectPose(4, 3, 2, (0,), HALF, ForwardPrior(4, 3, 2, 2, width=8, extra_inputs=3))


def test_block_frame_turns_back_and_fold_keeps_a_quarter_turn():
    vectors, yaw = torch.randn(16, 2), torch.rand(16) * 6 - 3
    torch.testing.assert_close(block_frame(block_frame(vectors, yaw), -yaw), vectors)
    torch.testing.assert_close(
        block_frame(torch.tensor([[1.0, 0.0]]), torch.tensor([math.pi / 2])),
        torch.tensor([[0.0, -1.0]]),
        atol=1e-6,
        rtol=0,
    )
    folded = fold(yaw)
    assert folded.min() >= -math.pi / 4 and folded.max() < math.pi / 4
    torch.testing.assert_close(torch.cos(4 * folded), torch.cos(4 * yaw), atol=1e-5, rtol=0)


def test_an_untrained_push_leaves_the_pose_and_the_memory_keeps_its_layout():
    torch.manual_seed(0)
    drawer = ForwardPrior(4, 3, 2, 2, width=8, extra_inputs=POSE_MAPS)
    objects = ObjectPose(
        latent_channels=4, state_width=3, action_width=2, domains=(1,), half_extent=HALF, drawer=drawer
    )
    for mlp in objects.push.values():
        torch.nn.init.zeros_(mlp[-1].weight)
        torch.nn.init.zeros_(mlp[-1].bias)
    memory = torch.tensor([[0.01, 0.02, 0.1, 0.03, 0.04, 0.2, -0.1, 0.1, 0.05, -0.06]])
    state, after = torch.zeros(1, 3), torch.full((1, 3), 0.1)
    effector, effector_after = objects.effector_of(state, 1), objects.effector_of(after, 1)
    stepped = objects.step(memory, effector, effector_after, torch.zeros(1, 2), 1)
    assert stepped.shape == (1, MEMORY_WIDTH)
    torch.testing.assert_close(stepped[:, :3], memory[:, 3:6])  # the pose now becomes the pose before
    torch.testing.assert_close(stepped[:, 3:6], memory[:, 3:6])  # not pushed: where it was
    torch.testing.assert_close(stepped[:, 6:8], objects.effector_of(state, 1))  # the effector now becomes before
    torch.testing.assert_close(stepped[:, 8:], memory[:, 8:])  # the goal stays
    assert objects.carries(1) and not objects.carries(0)
    start = objects.start(torch.randn(2, 4, 8, 8), torch.zeros(2, 3), 1)
    torch.testing.assert_close(start[:, :3], start[:, 3:6])  # at rest at a start
    assert (start[:, 8:] == 0).all() and not objects.has_reward  # no goal read without a reward head
    with pytest.raises(ValueError, match="no reward head"):
        objects.rewards(stepped, effector_after, 1)
    scored = ObjectPose(4, 3, 2, (1,), HALF, drawer, reward=True)
    reward, success = scored.rewards(scored.start(torch.randn(2, 4, 8, 8), torch.zeros(2, 3), 1), effector, 1)
    assert reward.shape == success.shape == (2,) and ((success > 0) & (success < 1)).all()
    with pytest.raises(ValueError, match=r"domains=\(\)"):
        ObjectPose(4, 3, 2, (), HALF, drawer)
    with pytest.raises(ValueError, match="drawer.extra_inputs=0; expected 10"):
        ObjectPose(4, 3, 2, (1,), HALF, ForwardPrior(4, 3, 2, 2, width=8))


def test_the_readout_reads_back_its_own_targets_units():
    readout = PoseReadout(channels=4, half_extent=HALF)
    poses = torch.tensor([[0.05, -0.1, 0.3]])
    targets = PoseReadout.targets(poses)
    back = torch.cat([targets[:, :2] / 100.0, torch.atan2(targets[:, 3], targets[:, 2])[:, None] / 4.0], 1)
    torch.testing.assert_close(back, poses)
    assert readout(torch.randn(3, 4, 8, 8)).shape == (3, 4) and readout.poses(torch.randn(3, 4, 8, 8)).shape == (3, 3)


def test_push_mlps_that_read_the_path_need_it_and_read_where_the_action_commanded_the_effector():
    torch.manual_seed(0)
    drawer = ForwardPrior(4, 3, 2, 2, width=8, extra_inputs=POSE_MAPS)
    plain = ObjectPose(4, 3, 2, (1,), HALF, drawer)
    with pytest.raises(ValueError, match="object_push_path=False"):
        plain.path_of(torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 2), 1)
    objects = ObjectPose(4, 3, 2, (1,), HALF, drawer, push_path=True)
    assert objects.push["1"][0].in_features == plain.push["1"][0].in_features + PATH_FEATURES
    # An action of one along the first channel commands the state 0.5 further along it.
    objects.command_gain[0] = torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.5, 0.0]])
    state, after, action = torch.zeros(2, 3), torch.full((2, 3), 0.2), torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    path = objects.path_of(state, after, action, 1)
    torch.testing.assert_close(path[:, :2], objects.effector_of(torch.full((2, 3), 0.1), 1))  # half way
    torch.testing.assert_close(path[0, 2:], objects.effector_of(torch.tensor([[0.5, 0.0, 0.0]]), 1)[0])
    torch.testing.assert_close(path[1, 2:], objects.effector_of(state[:1], 1)[0])  # no action: stays
    memory = torch.zeros(2, MEMORY_WIDTH)
    effector, effector_after = objects.effector_of(state, 1), objects.effector_of(after, 1)
    with pytest.raises(ValueError, match="path=None"):
        objects.step(memory, effector, effector_after, action, 1)
    features = objects.push_features(memory[:, 3:6], memory[:, :3], effector, effector, effector_after, action, path)
    assert features.shape == (2, PUSH_FEATURES + PATH_FEATURES + 2)
    torch.testing.assert_close(features[:, PUSH_FEATURES : PUSH_FEATURES + 2], path[:, 2:])  # block at 0, yaw 0
    assert objects.step(memory, effector, effector_after, action, 1, path).shape == (2, MEMORY_WIDTH)
    # Rebuilt without the path, the MLPs and their buffers shrink back.
    objects.set_push(3, 2, push_path=False)
    assert (
        objects.push["1"][0].in_features == plain.push["1"][0].in_features
        and "command_gain" not in objects.state_dict()
    )
