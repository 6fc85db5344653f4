"""The closed-loop harness and its rerun recording, on real MuJoCo and a real .rrd file."""

from __future__ import annotations

import json

import pytest

from cosmos_robot.cli import main
from cosmos_robot.envs import push_block_embodiment
from cosmos_robot.eval.closed_loop import evaluate_policy, make_policy
from tests.eval.test_recording import rerun_verify

POINT = "cosmos_robot/PushBlockPoint-v0"


def test_the_expert_succeeds_and_random_does_not_on_the_same_starts():
    expert = evaluate_policy(make_policy("pixel-expert", POINT), POINT, episodes=3, progress=False)
    random = evaluate_policy(make_policy("random", POINT), POINT, episodes=3, progress=False)
    assert expert.success_rate == 1.0 and random.success_rate < 1.0
    assert [e["seed"] for e in expert.per_episode] == [e["seed"] for e in random.per_episode]
    assert expert.mean_return > random.mean_return


@pytest.mark.slow
def test_the_model_policy_runs_closed_loop_and_its_recording_verifies(smoke_checkpoint, tmp_path):
    rrd = tmp_path / "policy.rrd"
    out = tmp_path / "policy.json"
    code = main(
        ["eval", "policy", "--checkpoint", str(smoke_checkpoint), "--episodes", "1", "--denoising-steps", "2"]
        + ["--guidance-scale", "1.0", "--action-estimate", "prior", "--rerun", str(rrd), "--json", str(out)]
    )
    assert code == 0
    result = json.loads(out.read_text())
    assert result["episodes"] == 1 and result["per_episode"][0]["length"] >= 1
    assert result["success_rate"] == float(result["per_episode"][0]["success"])
    assert rrd.is_file() and not list(tmp_path.glob(".*.tmp"))
    check = rerun_verify(rrd)
    assert check.returncode == 0, check.stderr


def test_bad_input_is_one_line_and_non_zero(tmp_path, capsys):
    assert main(["eval", "policy", "--env", "CartPole-v1", "--json", str(tmp_path / "x.json")]) != 0
    assert "embodiment='cartpole-v1' (the robot_type CartPole-v1's data" in capsys.readouterr().err
    assert main(["eval", "policy", "--policy", "oracle", "--json", str(tmp_path / "x.json")]) != 0

    assert push_block_embodiment(POINT) == "point"
