"""The closed-loop harness and its rerun recording, on real MuJoCo and a real .rrd file."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.cli import main
from cosmos_robot.envs import push_block_embodiment
from cosmos_robot.eval.closed_loop import evaluate_policy, make_policy, predicted_frame_pairs
from cosmos_robot.eval.objects import object_metrics
from cosmos_robot.keys import PIXELS
from cosmos_robot.policies.world_model_policy import ChunkPrediction
from cosmos_robot.rollout import run_episode
from tests.eval.test_recording import rerun_verify

POINT = "cosmos_robot/PushBlockPoint-v0"


def test_the_expert_succeeds_and_random_does_not_on_the_same_starts():
    expert = evaluate_policy(make_policy("pixel-expert", POINT), POINT, episodes=3, progress=False)
    random = evaluate_policy(make_policy("random", POINT), POINT, episodes=3, progress=False)
    assert expert.success_rate == 1.0 and random.success_rate < 1.0
    assert [e["seed"] for e in expert.per_episode] == [e["seed"] for e in random.per_episode]
    assert expert.mean_return > random.mean_return


def test_predicted_frames_are_scored_against_the_frames_mujoco_then_shows():
    env = gym.make(POINT)
    try:
        expert = make_policy("pixel-expert", POINT)
        expert.reset(seed=7)
        episode = run_episode(env, lambda obs, info: np.asarray(expert.act(obs, info), np.float32), 7, max_steps=8)
    finally:
        env.close()
    actions = np.asarray(episode.actions, np.float32)
    pixels = np.stack([obs[PIXELS] for obs in episode.observations])
    oracle = ChunkPrediction(0, actions[:4], pixels[1:5])  # predicts exactly what MuJoCo showed
    frozen = ChunkPrediction(4, actions[4:8], np.repeat(pixels[4:5], 4, axis=0))  # a world that never moves
    replanned = ChunkPrediction(2, actions[2:6] + 0.5, pixels[3:7])  # its actions were not the ones executed
    real, predicted = predicted_frame_pairs(episode, [oracle, frozen, replanned])
    assert real.shape == predicted.shape == (2, 4, 64, 64, 3)
    np.testing.assert_array_equal(predicted[0], pixels[1:5])
    np.testing.assert_array_equal(real[1], pixels[5:9])
    right, wrong = object_metrics(real[:1], predicted[:1]), object_metrics(real[1:], predicted[1:])
    assert right["effector_found"] == [1.0] * 4 and max(right["effector_error_mm"]) == 0.0
    assert wrong["effector_error_mm"][-1] > 10.0  # the expert's pusher moved on; the frozen frame did not
    assert predicted_frame_pairs(episode, [replanned]) is None


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
    predicted = result["predicted_frames"]  # a PushBlock env: the policy's frames are scored
    assert predicted["chunks"] >= 1 and len(predicted["effector_found"]) == 4
    assert rrd.is_file() and not list(tmp_path.glob(".*.tmp"))
    check = rerun_verify(rrd)
    assert check.returncode == 0, check.stderr


def test_bad_input_is_one_line_and_non_zero(tmp_path, capsys):
    assert main(["eval", "policy", "--env", "CartPole-v1", "--json", str(tmp_path / "x.json")]) != 0
    assert "embodiment='cartpole-v1' (the robot_type CartPole-v1's data" in capsys.readouterr().err
    assert main(["eval", "policy", "--policy", "oracle", "--json", str(tmp_path / "x.json")]) != 0

    assert push_block_embodiment(POINT) == "point"


SLIDER = "tests.envs.third_party_env:ThirdPartySlider-v0"


def test_any_gymnasium_mujoco_env_runs_with_its_own_success_test_and_the_models_rate():
    from tests.envs.third_party_env import near_centre

    policy = make_policy("random", SLIDER)
    held = evaluate_policy(policy, SLIDER, 2, action_repeat=2, success_fn=near_centre, progress=False)
    assert [e["length"] for e in held.per_episode] == [10, 10]  # 20 env steps, 2 per policy step
    capped = evaluate_policy(policy, SLIDER, 2, max_steps=3, progress=False)
    assert [e["length"] for e in capped.per_episode] == [3, 3] and capped.success_rate == 0.0  # no success test
    always = evaluate_policy(policy, SLIDER, 1, success_fn=lambda info: True, max_steps=2, progress=False)
    assert always.success_rate == 1.0


def test_the_cli_loads_a_success_function_and_refuses_bad_ones(tmp_path, capsys):
    out = tmp_path / "slider.json"
    args = ["eval", "policy", "--env", SLIDER, "--policy", "random", "--episodes", "1", "--json", str(out)]
    assert main(args + ["--success", "tests.envs.third_party_env:near_centre", "--max-steps", "4"]) == 0
    assert json.loads(out.read_text())["per_episode"][0]["length"] == 4
    capsys.readouterr()
    for spec, message in [
        ("near_centre", "expected 'module:function'"),
        ("tests.envs.third_party_env:missing", "cannot be loaded"),
        ("tests.envs.third_party_env:XML", "is a str; expected a function"),
    ]:
        assert main(args + ["--success", spec]) != 0
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert main(args[:-2] + ["--policy", "expert", "--json", str(out)]) != 0
    assert "is not a PushBlock env" in capsys.readouterr().err
