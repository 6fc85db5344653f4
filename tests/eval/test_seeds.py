"""Every ``cosmos-robot eval`` subcommand takes ``--seed``, and two seeds give different episodes.

Run in process through the CLI; the learned-env harnesses on the MuJoCo oracle (cheap and exact),
the others on the smoke model or a scripted policy.
"""

from __future__ import annotations

import json

import pytest

from cosmos_robot.cli import main

SEEDS = (700_001, 700_101)


def _run(args: list[str], seed: int, tmp_path) -> dict:
    out = tmp_path / f"{args[1]}_{seed}.json"
    assert main([*args, "--seed", str(seed), "--json", str(out)]) == 0
    return json.loads(out.read_text())


def _both(args: list[str], tmp_path) -> tuple[dict, dict]:
    return tuple(_run(args, seed, tmp_path) for seed in SEEDS)


def test_eval_policy(tmp_path):
    a, b = _both(["eval", "policy", "--policy", "pixel-expert", "--episodes", "2"], tmp_path)
    assert [e["seed"] for e in a["per_episode"]] == [SEEDS[0], SEEDS[0] + 1]
    assert [e["return"] for e in a["per_episode"]] != [e["return"] for e in b["per_episode"]]


def test_eval_fd(tmp_path):
    a, b = _both(["eval", "fd", "--checkpoint", "mujoco", "--episodes", "2", "--horizon", "8"], tmp_path)
    assert a["seeds"] != b["seeds"] and SEEDS[0] in a["seeds"]
    assert a["psnr_copy_last"] != b["psnr_copy_last"]  # other starts, other real episodes


@pytest.mark.slow
def test_eval_rank(tmp_path):
    a, b = _both(["eval", "rank", "--checkpoint", "mujoco", "--episodes", "2"], tmp_path)
    assert a["seeds"][0] == SEEDS[0] and b["seeds"][0] == SEEDS[1]
    assert [p["mujoco_return"] for p in a["policies"]] != [p["mujoco_return"] for p in b["policies"]]


@pytest.mark.slow
def test_eval_imagination_rl(tmp_path):
    args = ["eval", "imagination-rl", "--checkpoint", "mujoco", "--ppo-steps", "512", "--eval-episodes", "2"]
    a, b = _both(args, tmp_path)
    assert a["eval_seeds"] == [SEEDS[0], SEEDS[0] + 1] and b["eval_seeds"] == [SEEDS[1], SEEDS[1] + 1]
    assert a["real_return_random"] != b["real_return_random"]


@pytest.mark.slow
def test_eval_label(smoke_checkpoint, tmp_path):
    args = ["eval", "label", "--checkpoint", str(smoke_checkpoint), "--episodes", "2", "--denoising-steps", "1"]
    a, b = _both(args, tmp_path)
    assert a["seeds"] != b["seeds"] and a["r2_per_dim"] != b["r2_per_dim"]


@pytest.mark.slow
def test_eval_offline(smoke_checkpoint, smoke_data, tmp_path):
    args = ["eval", "offline", "--checkpoint", str(smoke_checkpoint), "--dataset", smoke_data[0], "--episodes", "1"]
    a, b = _both([*args, "--denoising-steps", "2"], tmp_path)
    # Its episodes are the dataset's; the seed draws the sampling noise (forward dynamics is the
    # deterministic prior's rollout, inverse dynamics is sampled).
    assert a["id_r2"] != b["id_r2"]
