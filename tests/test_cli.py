"""The command line: one-line errors, non-zero exits, nothing half-written after an interruption."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cosmos_robot.cli import main
from cosmos_robot.datasets.lerobot_io import load_lerobot
from tests.test_collect import assert_same_dataset


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cosmos_robot.cli", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "Nope-v0", "--episodes", "2"], "env='Nope-v0'"),
        (["--env", "Reacher-v5", "--episodes", "0"], "episodes=0"),
        (["--env", "Reacher-v5", "--episodes", "-3"], "episodes=-3"),
        (["--env", "Reacher-v5", "--episodes", "1", "--width", "30"], "width=30"),
        (["--env", "Reacher-v5", "--episodes", "1", "--height", "0"], "height=0"),
        (["--env", "Reacher-v5", "--episodes", "two"], "invalid int value"),
    ],
)
def test_bad_input_is_one_line_and_non_zero(tmp_path, args, message):
    result = run_cli("collect", *args, "--out", str(tmp_path / "x"))
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert message in lines[0] and "Traceback" not in result.stderr
    assert not (tmp_path / "x").exists()


def test_existing_out_is_refused_without_overwrite(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    code = main(["collect", "--env", "cosmos_robot/PushBlockPoint-v0", "--episodes", "1", "--out", str(tmp_path / "x")])
    assert code != 0
    assert "already exists" in capsys.readouterr().err


@pytest.mark.slow
def test_collect_prints_a_summary_and_writes_a_dataset(tmp_path):
    out = tmp_path / "ds"
    result = run_cli(
        "collect",
        "--env",
        "cosmos_robot/PushBlockArm2-v0",
        "--episodes",
        "2",
        "--out",
        str(out),
        "--json",
        str(tmp_path / "s.json"),
    )
    assert result.returncode == 0, result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    assert "collected 2 episodes" in summary and "success rate" in summary and "frames/s" in summary
    assert load_lerobot(out).meta.total_episodes == 2
    assert (tmp_path / "s.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_interrupted_collect_resumes_from_its_last_complete_episode(tmp_path, sig):
    out, spool = tmp_path / "ds", tmp_path / ".ds.episodes"
    args = ["collect", "--env", "cosmos_robot/PushBlockPoint-v0", "--episodes", "40", "--noise", "0.5"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cosmos_robot.cli", *args, "--out", str(out)],
        # No pipes: a helper process that outlives a killed parent would hold them open.
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        # A shell running us in the background (no job control) ignores SIGINT, and children inherit
        # that; a terminal's Ctrl-C reaches a process that does not, so the child starts without it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 60
    while len(list(spool.glob("episode_*.npz"))) < 2:  # two episodes are complete
        assert time.time() < deadline and proc.poll() is None, "collect never kept an episode"
        time.sleep(0.02)
    # To the whole process group, as a terminal's Ctrl-C does: a killed parent's helper processes would
    # otherwise keep the output pipes open (communicate then waits for them, not for the parent).
    os.killpg(proc.pid, sig)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    assert not out.exists(), "a half-written dataset was left at --out"
    assert [p.name for p in tmp_path.iterdir()] == [".ds.episodes"]  # whole episodes only, hidden

    refused = run_cli(*args, "--out", str(out))
    assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "complete episodes" in refused.stderr and "--resume" in refused.stderr
    resumed = run_cli(*args, "--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]
    assert load_lerobot(out).meta.total_episodes == 40
    assert run_cli(*args, "--out", str(tmp_path / "whole")).returncode == 0
    assert_same_dataset(tmp_path / "whole", out)


@pytest.mark.slow
def test_convert_round_trip_from_the_cli(point_images_dataset, tmp_path):
    store, back = tmp_path / "s.zarr", tmp_path / "back"
    assert run_cli("convert", str(point_images_dataset), str(store)).returncode == 0
    result = run_cli("convert", str(store), str(back))
    assert result.returncode == 0, result.stderr
    assert load_lerobot(back).meta.total_episodes == 4
    bad = run_cli("convert", str(tmp_path / "missing"), str(tmp_path / "y"))
    assert bad.returncode != 0 and "neither a LeRobot dataset nor a zarr store" in bad.stderr


def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("collect", "convert", "demo"):
        assert command in result.stdout
    assert Path(sys.executable).exists()
