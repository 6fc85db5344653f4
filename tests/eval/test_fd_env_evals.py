"""The learned-env evaluations (fidelity, ranking, imagination RL) run end to end on a tiny model
and report the keys the issue names; the CLI writes JSON and plots."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cosmos_robot.cli import main
from cosmos_robot.eval.fd_fidelity import evaluate_fd
from cosmos_robot.eval.imagination_rl import evaluate_imagination_rl, reach_reward, reach_success
from cosmos_robot.eval.ranking import evaluate_ranking
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


def test_fd_fidelity_reports_per_horizon_metrics(model):
    result = evaluate_fd(model, "point", episodes=2, horizon=8, sampling_steps=1, progress=False)
    for key in ("psnr", "psnr_copy_last", "ssim", "state_error", "psnr_shuffled"):
        assert len(result[key]) == 8 and all(np.isfinite(result[key]))
    assert result["horizon"] == list(range(1, 9))
    assert np.isfinite(result["delta_psnr_shuffled"])
    # The copy-last baseline is computed from MuJoCo alone: it must be a real PSNR, falling with horizon.
    assert 15 < result["psnr_copy_last"][-1] < result["psnr_copy_last"][0] < 60
    assert set(result["per_source"]) == {"expert", "noisy", "random"}


def test_fd_fidelity_rejects_short_horizons(model):
    with pytest.raises(ValueError, match="horizon=4"):
        evaluate_fd(model, "point", episodes=2, horizon=4)


def test_ranking_reports_correlations(model):
    result = evaluate_ranking(model, "point", episodes=2, noises=(0.0, 0.5, 1.0), sampling_steps=1, progress=False)
    assert len(result["policies"]) == 3
    expert, random = result["policies"][0], result["policies"][-1]
    assert expert["mujoco_success_rate"] == 1.0 and expert["mujoco_return"] > random["mujoco_return"]
    for key in ("spearman", "pearson", "spearman_success", "pearson_success"):
        assert -1.0 <= result[key] <= 1.0


def test_reach_task_reward():
    assert reach_reward(np.array([0.1, -0.08])) == pytest.approx(1.0)
    assert reach_reward(np.array([-0.2, 0.2])) == 0.0
    assert reach_success(np.array([0.105, -0.08])) and not reach_success(np.array([0.0, 0.0]))


def test_imagination_rl_trains_both_and_evaluates_in_mujoco(model):
    result = evaluate_imagination_rl(model, steps=128, num_envs=2, eval_episodes=2, sampling_steps=1, progress=False)
    for key in ("real_return_imagination_ppo", "real_return_mujoco_ppo", "real_return_random", "ratio_real_return"):
        assert key in result
    assert 0.0 <= result["real_return_mujoco_ppo"] <= 40.0


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


def test_cli_eval_rejects_an_unknown_embodiment(smoke_checkpoint, tmp_path, capsys):
    code = main(["eval", "rank", "--checkpoint", str(smoke_checkpoint), "--embodiment", "cartpole",
                 "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cartpole" in err[0]


def test_label_eval_reports_r2_replay_and_baseline(model, smoke_data, tmp_path):
    from cosmos_robot.eval.labeling import evaluate_labeling, plot_labeling

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
    assert len(result["r2_per_dim"]) == 2 and np.isfinite(result["r2"]) and np.isfinite(result["r2_baseline"])
    assert result["original_success_rate"] > 0 and result["replay_success_ratio"] is not None
    assert result["final_block_error_m"] >= 0 and result["baseline"]["steps"] > 0
    assert plot_labeling(result, tmp_path / "label.png").stat().st_size > 1000
