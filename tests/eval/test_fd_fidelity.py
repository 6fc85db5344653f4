"""FD fidelity: per-horizon metrics against MuJoCo on a tiny model; the CLI writes JSON and plots."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cosmos_robot.cli import main
from cosmos_robot.eval.fd_fidelity import evaluate_fd
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


def test_fd_fidelity_reports_per_horizon_metrics(model):
    result = evaluate_fd(model, "point", episodes=2, horizon=8, sampling_steps=1, progress=False)
    for key in ("psnr", "psnr_copy_last", "ssim", "state_error", "psnr_shuffled"):
        assert len(getattr(result, key)) == 8 and all(np.isfinite(getattr(result, key)))
    assert result.horizon == list(range(1, 9))
    assert np.isfinite(result.delta_psnr_shuffled)
    # The copy-last baseline is computed from MuJoCo alone: it must be a real PSNR, falling with horizon.
    assert 15 < result.psnr_copy_last[-1] < result.psnr_copy_last[0] < 60
    assert set(result.per_source) == {"expert", "noisy", "random"}
    # Object level: one value per horizon, and a detector that finds real objects within a few mm.
    assert len(result.effector_found) == len(result.block_error_mm) == len(result.effector_error_mm_shuffled) == 8
    assert 0 < result.detector_floor_mm["effector"] < 10 and 0 < result.detector_floor_mm["block"] < 10
    # The model's own reconstructions of MuJoCo's frames are scored beside it, per horizon.
    floor = result.autoencoder_floor
    assert set(floor) == {"effector_found", "block_found", "effector_error_mm", "block_error_mm"}
    assert all(len(values) == 8 for values in floor.values())
    assert all(share is None or 0.0 <= share <= 1.0 for share in floor["effector_found"] + floor["block_found"])


def test_fd_fidelity_rejects_short_horizons(model):
    with pytest.raises(ValueError, match="horizon=4"):
        evaluate_fd(model, "point", episodes=2, horizon=4)


@pytest.mark.slow
def test_cli_eval_fd_writes_json_and_plots(smoke_checkpoint, tmp_path):
    out = tmp_path / "fd.json"
    code = main(
        ["eval", "fd", "--checkpoint", str(smoke_checkpoint), "--episodes", "2", "--horizon", "8",
         "--sampling-steps", "1", "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    data = json.loads(out.read_text())
    assert {"horizon", "psnr", "psnr_copy_last", "state_error", "delta_psnr_shuffled"} <= set(data)
    assert out.with_suffix(".png").stat().st_size > 1000 and out.with_suffix(".strip.png").stat().st_size > 1000


@pytest.mark.slow
def test_cli_eval_fd_runs_the_forward_prior_alone(smoke_checkpoint, tmp_path, capsys):
    out = tmp_path / "fd.json"
    args = ["eval", "fd", "--checkpoint", str(smoke_checkpoint), "--episodes", "2", "--horizon", "8"]
    assert main([*args, "--forward-path", "prior", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("point: effector found h1/h8/h8") and "block error" in printed
    assert main([*args, "--forward-path", "mot", "--json", str(out)]) != 0
    assert "forward_path='mot'" in capsys.readouterr().err
