"""Offline evaluation: every metric the issue names, with the right lengths."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from cosmos_robot.eval.offline import evaluate_offline, r2_per_dim
from cosmos_robot.world_model import WorldActionModel


def test_r2_is_one_for_perfect_and_zero_for_the_mean():
    true = np.random.default_rng(0).normal(size=(50, 2))
    np.testing.assert_allclose(r2_per_dim(true, true), 1.0)
    np.testing.assert_allclose(r2_per_dim(np.broadcast_to(true.mean(0), true.shape), true), 0.0, atol=1e-12)


def test_offline_metrics_on_a_smoke_model(smoke_checkpoint, smoke_data):
    model = WorldActionModel.from_pretrained(smoke_checkpoint)
    metrics = evaluate_offline(model, smoke_data[0], episodes=2, steps=2, progress=False)
    assert len(metrics.fd_psnr) == len(metrics.fd_psnr_copy_last) == 8
    assert metrics.fd_windows > 0 and all(p is not None and p > 0 for p in metrics.fd_psnr)
    for key in ("id_r2", "id_mse", "policy_action_mse", "policy_action_mse_mean_baseline"):
        assert np.isfinite(getattr(metrics, key)), key
    assert metrics.embodiment == "point"


@pytest.mark.slow
def test_eval_cli_writes_json(smoke_checkpoint, smoke_data, tmp_path):
    out = tmp_path / "m.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cosmos_robot.cli",
            "eval",
            "offline",
            "--checkpoint",
            str(smoke_checkpoint),
            "--dataset",
            smoke_data[1],
            "--episodes",
            "1",
            "--denoising-steps",
            "1",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(out.read_text())["embodiment"] == "arm2"
    assert "FD PSNR" in result.stdout
