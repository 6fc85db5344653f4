"""Index helpers of the conv stems: anchors, the frame an action leads into, and their doctests."""

from __future__ import annotations

import doctest

import torch

import cosmos_robot.model.stems as stems
from cosmos_robot.model.stems import action_frame_index, anchor_frame_index


def test_anchor_is_the_latest_clean_frame():
    frame_t = torch.tensor([[0.0, 0.4, 0.0, 0.4], [0.0, 0.0, 0.0, 0.0], [0.9, 0.9, 0.9, 0.9]])
    assert anchor_frame_index(frame_t).tolist() == [[0, 0, 2, 2], [0, 1, 2, 3], [-1, -1, -1, -1]]


def test_actions_lead_into_the_frame_stamped_with_them():
    # Two actions per frame interval at 10 fps: stamped 0.05, 0.1, 0.15, 0.2 lead into frames 1, 1, 2, 2.
    frame_time = torch.tensor([[0.0, 0.1, 0.2]])
    assert action_frame_index(frame_time, torch.tensor([[0.05, 0.1, 0.15, 0.2]])).tolist() == [[1, 1, 2, 2]]


def test_doctests():
    assert doctest.testmod(stems).failed == 0
