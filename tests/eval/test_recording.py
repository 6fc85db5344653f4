"""Rerun recordings of closed-loop episodes: real and imagined frames on one timeline, verified by rerun."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cosmos_robot.eval.closed_loop import evaluate_policy, make_policy
from cosmos_robot.eval.recording import PolicyRecorder

POINT = "cosmos_robot/PushBlockPoint-v0"


def rerun_verify(path: Path) -> subprocess.CompletedProcess:
    rerun = Path(sys.executable).with_name("rerun")
    return subprocess.run([str(rerun), "rrd", "verify", str(path)], capture_output=True, text=True, timeout=120)


def test_a_recording_holds_real_and_imagined_frames(smoke_checkpoint, tmp_path):
    policy = make_policy("model", POINT, str(smoke_checkpoint), steps=2)
    recorder = PolicyRecorder(tmp_path / "r.rrd", fps=10)
    result = evaluate_policy(policy, POINT, episodes=1, recorder=recorder, progress=False)
    path = recorder.close()
    rerun = Path(sys.executable).with_name("rerun")
    printed = subprocess.run([str(rerun), "rrd", "print", str(path)], capture_output=True, text=True, timeout=120)
    entities = set(re.findall(r" - (/[\w/]+) - ", printed.stdout))
    assert {"/camera/real", "/camera/imagined", "/action/0", "/state/0", "/success", "/episodes"} <= entities
    # Imagined frames: one per predicted step inside the episode (chunks of 4 from steps 0, 4, ...).
    length = result.per_episode[0]["length"]
    imagined_rows = sum(int(n) for n in re.findall(r"with (\d+) rows .* - /camera/imagined - ", printed.stdout))
    assert imagined_rows == length


def test_a_recording_must_be_an_rrd_file(tmp_path):
    with pytest.raises(ValueError, match="ending in .rrd"):
        PolicyRecorder(tmp_path / "r.mp4", fps=10)
