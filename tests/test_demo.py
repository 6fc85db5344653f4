"""The main job in its reduced size, on the tiny smoke checkpoint: every artefact and every metric."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cosmos_robot.cli import main
from cosmos_robot.datasets.lerobot_io import load_lerobot

METRICS = {
    "forward_dynamics": (
        "psnr",
        "psnr_copy_last",
        "psnr_shuffled",
        "delta_psnr_shuffled",
        "state_error",
        "ssim",
        "effector_found",
        "effector_error_mm",
        "block_error_mm",
        "detector_floor_mm",
    ),
    "labeling": ("r2", "mse_per_dim", "replay_success_ratio", "true_action_replay_success_rate"),
}


@pytest.mark.slow
def test_the_demo_writes_the_report_the_plots_and_a_verified_recording(smoke_checkpoint, tmp_path, capsys):
    out = tmp_path / "demo_out"
    assert main(["demo", "--out", str(out), "--checkpoint", str(smoke_checkpoint), "--quick"]) == 0
    report = json.loads((out / "report.json").read_text())
    for section, keys in METRICS.items():
        for embodiment in ("point", "arm2"):
            assert set(keys) <= set(report[section][embodiment]), (section, embodiment)
    for embodiment in ("point", "arm2"):
        policy = report["policy"][embodiment]
        assert {"model", "pixel-expert", "random"} == set(policy)
        assert policy["pixel-expert"]["success_rate"] == 1.0  # the harness itself works
        for name in (f"fd_{embodiment}.png", f"fd_strip_{embodiment}.png", f"label_{embodiment}.png"):
            assert (out / name).stat().st_size > 1000, name
        labeled = load_lerobot(out / f"label_{embodiment}" / "labeled")
        assert labeled.meta.total_episodes == 2
        assert len(list((out / f"label_{embodiment}" / "videos").glob("*.mp4"))) == 2
    assert (out / "policy_success.png").stat().st_size > 1000
    assert "| point | labels R2 vs true actions |" in (out / "report.md").read_text()
    assert "| point | FD effector found where MuJoCo shows it" in (out / "report.md").read_text()
    assert "| point | FD ablation at h" in (out / "report.md").read_text()  # the smoke model has a forward prior
    # Every rate carries its interval and its count.
    text = (out / "report.md").read_text()
    assert re.search(r"\| point \| policy success rate in MuJoCo[^|]*\| \d\.\d\d \(\d\.\d\d-\d\.\d\d, n=\d+\) \|", text)
    assert re.search(
        r"\| point \| FD effector found where MuJoCo shows it[^|]*\| \d\.\d\d \(\d\.\d\d-\d\.\d\d, n=\d+\) /", text
    )
    assert re.search(r"\| point \| replayed labels[^|]*\| \d\.\d\d \(\d\.\d\d-\d\.\d\d, n=\d+\) \[", text)
    assert set(report["forward_dynamics"]["point"]["prior_alone"]) >= {"effector_found", "block_error_mm"}
    rerun = Path(sys.executable).with_name("rerun")
    assert subprocess.run([str(rerun), "rrd", "verify", str(out / "policy.rrd")], capture_output=True).returncode == 0
    printed = capsys.readouterr().out
    assert f"rerun {out / 'policy.rrd'}" in printed and "FD PSNR" in printed


def test_an_unknown_embodiment_is_one_line_and_non_zero(smoke_checkpoint, tmp_path, capsys):
    code = main(["demo", "--out", str(tmp_path), "--checkpoint", str(smoke_checkpoint), "--embodiment", "octopus"])
    assert code != 0 and "embodiment='octopus'" in capsys.readouterr().err
