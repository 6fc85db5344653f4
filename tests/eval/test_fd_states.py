"""State-only fidelity: agent_pos against MuJoCo in the env configuration the benchmark times; MuJoCo as its
own model scores zero, the shipped default's agent heads follow the actions; the CLI prints one line."""

from __future__ import annotations

import json

import pytest

from cosmos_robot.cli import main
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.eval.fd_states import evaluate_fd_states
from cosmos_robot.eval.oracle import MuJoCoOracle
from cosmos_robot.seeds import FD_SEED
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def shipped():
    return WorldActionModel.from_pretrained("default")


def test_mujoco_as_its_own_model_scores_zero():
    oracle = MuJoCoOracle(PUSH_BLOCK_IDS["point"], seeds=range(FD_SEED, FD_SEED + 2))
    result = evaluate_fd_states(oracle, "point", episodes=2, horizon=8, progress=False)
    assert max(result.state_error) < 1e-6 and result.shuffled_ratio_h8 is None
    assert result.stepped_by == "MuJoCoOracle"
    # The baselines are MuJoCo's own motion: the pusher moves, and other actions move it elsewhere.
    assert result.state_error_copy_last[-1] > 0.005 and result.state_error_shuffled[-1] > 0.005


@pytest.mark.parametrize("embodiment", ["point", "arm2"])
def test_the_agent_heads_follow_the_actions_closer_than_the_prior(shipped, embodiment):
    heads = evaluate_fd_states(shipped, embodiment, episodes=4, horizon=8, progress=False)
    prior = evaluate_fd_states(shipped, embodiment, episodes=4, horizon=8, agent_heads=False, progress=False)
    assert shipped.agent_heads  # restored
    assert (heads.stepped_by, prior.stepped_by) == ("agent heads", "forward prior")
    assert heads.shuffled_ratio_h8 > 10 and prior.shuffled_ratio_h8 > 10
    assert heads.state_error[-1] < prior.state_error[-1]
    assert set(heads.per_source) == {"expert", "noisy", "random"} and len(heads.horizon) == 8


def test_bad_settings_are_named(shipped):
    with pytest.raises(ValueError, match="horizon=4"):
        evaluate_fd_states(shipped, "point", episodes=2, horizon=4)
    with pytest.raises(ValueError, match="episodes=1"):
        evaluate_fd_states(shipped, "point", episodes=1)
    with pytest.raises(ValueError, match="embodiment='aloha'"):
        evaluate_fd_states(shipped, "aloha")


def test_cli_prints_one_line_and_writes_json(tmp_path, capsys):
    out = tmp_path / "fds.json"
    args = ["eval", "fd-state", "--episodes", "2", "--horizon", "8", "--seed", "4242", "--json", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1].startswith("fd-state point (agent heads): agent_pos error mm h1 ")
    data = json.loads(out.read_text())
    assert data["seeds"] == [4242, 4243] and data["stepped_by"] == "agent heads" and len(data["state_error"]) == 8
    with pytest.raises(SystemExit) as refused:
        main([*args[:-2], "--stepped-by", "mot", "--json", str(out)])
    assert refused.value.code != 0 and "invalid choice: 'mot'" in capsys.readouterr().err
