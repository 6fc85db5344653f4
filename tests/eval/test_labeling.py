"""The labeling harness: R^2 against the true actions, MuJoCo replay, the frame-pair baseline."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.eval.labeling import evaluate_labeling, plot_labeling
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


def test_label_eval_reports_r2_replay_and_baseline(model, smoke_data, tmp_path):
    result = evaluate_labeling(
        model,
        "point",
        "cosmos_robot/PushBlockPoint-v0",
        episodes=2,
        steps=1,
        stride=4,
        baseline_data=[smoke_data[0]],
        baseline_seconds=2.0,
        progress=False,
    )
    assert len(result.r2_per_dim) == 2 and np.isfinite(result.r2) and np.isfinite(result.r2_baseline)
    assert result.original_success_rate > 0 and result.replay_success_ratio is not None
    assert np.isfinite(result.final_block_error_m) and result.baseline["steps"] > 0
    assert plot_labeling(result, tmp_path / "label.png").stat().st_size > 1000
