"""Every benchmark takes ``--seed``: anyone can rerun a number on starts of their own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).parents[1] / "benchmarks").glob("*.py"))


def _options(path: Path) -> set[str]:
    """The option strings of every ``add_argument`` call in a script."""
    options = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            options |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return options


def test_there_are_benchmarks():
    assert len(BENCHMARKS) >= 10


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_every_benchmark_takes_a_seed(path):
    assert "--seed" in _options(path), f"{path.name} has no --seed option"


def _probe_report(script: str, args: list[str], out: Path) -> dict:
    """Run ``benchmarks/<script>`` with ``args`` and ``--json out``; its JSON report."""
    import json
    import subprocess
    import sys

    path = Path(__file__).parents[1] / "benchmarks" / script
    subprocess.run([sys.executable, str(path), *args, "--json", str(out)], check=True, capture_output=True, timeout=600)
    return json.loads(out.read_text())


@pytest.mark.slow
def test_the_block_probe_reads_the_default_models_pushes(tmp_path):
    args = ["--embodiment", "point", "--episodes", "2", "--horizon", "16"]
    report = _probe_report("probe_block_steps.py", args, tmp_path / "steps.json")
    assert report["pushed_steps"] > 0
    # The shipped model moves a pushed block most of the way in one step: it beats a block that stays.
    assert report["autoencoder_mm"] < report["one_step_mm_pushed"] < report["copy_last_mm_pushed"]
    assert 0.5 < report["one_step_push_fraction_median"] < 1.5


@pytest.mark.slow
def test_the_block_oracle_probe_reports_both_windows(tmp_path, point_images_dataset):
    import json
    import subprocess
    import sys

    out = tmp_path / "oracle.json"
    script = Path(__file__).parents[1] / "benchmarks" / "probe_block_oracle.py"
    args = ["--data", str(point_images_dataset), "--steps", "50", "--fractions", "1", "--fd-episodes", "2"]
    args += ["--json", str(out)]
    subprocess.run([sys.executable, str(script), *args], check=True, capture_output=True, timeout=600)
    report = json.loads(out.read_text())["point@1"]
    assert report["train_episodes"] == 3
    # Every expert episode of eval fd is scored at the horizon; a block that never moves is beside it.
    assert report["fd_expert"]["windows"] == 2
    assert report["fd_expert"]["rollout_copy_mm"] > 0


@pytest.mark.slow
def test_the_block_sensitivity_probe_replays_an_unmoved_start_exactly(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "sensitivity.json"
    script = Path(__file__).parents[1] / "benchmarks" / "probe_block_sensitivity.py"
    args = ["--embodiment", "arm2", "--episodes", "2", "--repeats", "1", "--horizon", "8", "--json", str(out)]
    subprocess.run([sys.executable, str(script), *args], check=True, capture_output=True, timeout=600)
    report = json.loads(out.read_text())
    assert report["block_mm=0"]["mean_mm"] < 1e-6  # MuJoCo is deterministic: the recording, replayed
    assert report["block_moved_mm"] > 0
    assert all(report[key]["mean_mm"] >= 0 for key in report if "=" in key)


@pytest.mark.slow
def test_the_throw_probe_splits_the_block_error_at_a_thrown_block(tmp_path):
    import math

    # The fourth expert episode from seed 4242 throws arm2's block ~12 cm in one step (MuJoCo is deterministic).
    args = ["--embodiment", "arm2", "--episodes", "4", "--seed", "4242"]
    report = _probe_report("probe_block_throws.py", args, tmp_path / "throws.json")
    assert 1 <= report["episodes_thrown"] < 4
    assert report["largest_step_mm"] > report["throw_mm"]
    for mode in ("mujoco_states", "agent_heads", "read_start", "drawn"):
        split = report[f"h16_{mode}_mm"]
        assert all(math.isfinite(split[part]) and split[part] >= 0 for part in ("thrown", "not_thrown"))
        if mode != "drawn":  # carried poses are never missing: the mean of all is the parts' weighted mean
            thrown = report["episodes_thrown"]
            assert split["all"] == pytest.approx((thrown * split["thrown"] + (4 - thrown) * split["not_thrown"]) / 4)


def test_the_env_benchmark_pairs_each_ratio_with_its_own_rounds_mujoco():
    import importlib.util

    path = Path(__file__).parents[1] / "benchmarks" / "bench_fd_env.py"
    spec = importlib.util.spec_from_file_location("bench_fd_env", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # The machine halves its speed in round 2: both rates halve, the round's ratio does not.
    spread = bench.paired_ratios([6000.0, 3000.0, 6600.0], [1200.0, 600.0, 1000.0])
    assert spread == {"median": 5.0, "min": 5.0, "max": 6.6}
    with pytest.raises(ValueError, match="same positive number of rounds"):
        bench.paired_ratios([1.0], [1.0, 2.0])


@pytest.mark.slow
def test_the_pose_conditioning_probe_scores_every_prior_on_held_out_windows(tmp_path, point_images_dataset):
    import json
    import subprocess
    import sys

    out = tmp_path / "pose.json"
    script = Path(__file__).parents[1] / "benchmarks" / "probe_pose_conditioning.py"
    args = ["--data", str(point_images_dataset), "--steps", "2", "--windows", "3", "--oracle-steps", "20"]
    args += ["--moved-mm", "0", "--fd-episodes", "2", "--readout-steps", "20", "--json", str(out)]
    subprocess.run([sys.executable, str(script), *args], check=True, capture_output=True, timeout=900)
    report = json.loads(out.read_text())
    assert 1 <= report["windows"]["point"] <= 3
    for where in ("held-out windows", "eval fd episodes"):
        floor = report[where]["autoencoder's reconstruction of the real frame"]["point"]
        shipped = report[where]["shipped prior"]["point"]
        assert set(floor) == set(shipped) == {"h1", "h8", "h16"}
        for horizon in ("h1", "h16"):
            assert 0.0 <= floor[horizon]["mean_mm"] < 30.0  # the detector finds the reconstructed block
            assert 0.0 <= shipped[horizon]["missing"] <= 1.0
    for label in ("", ", the first pose read from the frame"):
        own = report["eval fd episodes"][f"pose-conditioned, the MLP's poses from the prior's own states{label}"]
        assert set(own["point"]) == {"h1", "h8", "h16"}
    assert report["pose readout on held-out frames"]["place_mm_mean"] > 0.0


def _load_benchmark(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_substep_probe_records_the_control_steps_the_env_takes_and_interpolates_between_them():
    import gymnasium as gym
    import numpy as np

    from cosmos_robot.envs import PUSH_BLOCK_IDS

    probe = _load_benchmark("probe_push_substeps")
    (states, poses, actions), *_ = probe.simulate_substeps("arm2", 1, 4, seed=7, progress=False)
    assert len(states) == len(poses) == 4 * len(actions) + 1
    # Replayed on a fresh env, the recorded actions reach every recorded control step's state and pose.
    env = gym.make(PUSH_BLOCK_IDS["arm2"], pixels=False)
    env.reset(seed=7)
    for k, action in enumerate(actions):
        env.step(action)
        np.testing.assert_allclose(env.unwrapped.agent_pos(), states[4 * (k + 1)], atol=1e-6)
        np.testing.assert_allclose(env.unwrapped.block_pose(), poses[4 * (k + 1)], atol=1e-9)
    env.close()
    interpolated = probe.as_block_episode((states, poses, actions), "arm2", 4, "substep_interpolated")
    true = probe.as_block_episode((states, poses, actions), "arm2", 4, "substep_true")
    control = probe.as_block_episode((states, poses, actions), "arm2", 4, "control_step")
    np.testing.assert_allclose(interpolated.states[::4], states[::4], atol=1e-6)
    np.testing.assert_allclose(interpolated.states[2], (states[0] + states[4]) / 2, atol=1e-6)
    np.testing.assert_allclose(true.states, states, atol=1e-6)
    assert len(control.poses) == len(actions) + 1 and (control.actions[:-1] == actions.astype(np.float32)).all()
    with pytest.raises(ValueError, match="substeps=3; expected a divisor"):
        probe.simulate_substeps("arm2", 1, 3, seed=7, progress=False)


@pytest.mark.slow
def test_the_substep_probe_scores_every_way_on_the_same_windows(tmp_path):
    import math

    args = ["--embodiment", "point", "--episodes", "40", "--test-episodes", "12", "--fit-steps", "50"]
    args += ["--horizon", "8", "--rollout-steps", "3", "--rollout-control-steps", "2"]
    report = _probe_report("probe_push_substeps.py", args, tmp_path / "substeps.json")
    assert report["rollout_steps"] == 3
    windows = {report[way]["windows"] for way in ("control_step", "substep_interpolated", "substep_true")}
    assert len(windows) == 1 and windows.pop() > 0
    for way in ("control_step", "substep_interpolated", "substep_true"):
        assert math.isfinite(report[way]["all_mm"]) and report[way]["all_mm"] >= 0
        assert report[way]["copy_mm"] == report["control_step"]["copy_mm"]


def test_the_substep_probes_differentiable_step_is_the_oracles_step():
    import numpy as np
    import torch

    from cosmos_robot.eval.block_oracle import BlockDynamics, BlockEpisode, _features

    probe = _load_benchmark("probe_push_substeps")
    rng = np.random.default_rng(0)
    episode = BlockEpisode(
        rng.normal(size=(6, 2)).astype(np.float32),
        rng.normal(size=(6, 2)).astype(np.float32),
        rng.normal(size=(6, 3)) * [0.1, 0.1, 2.0],
        rng.normal(size=(6, 2)) * 0.1,
    )
    t = np.array([1, 3])
    poses, before = episode.poses[t], episode.poses[t - 1] + 0.01
    features = torch.from_numpy(_features(episode, t, poses, before))
    torch.manual_seed(0)
    model = BlockDynamics(features.shape[1], features.mean(0), features.std(0) + 1.0)
    path = torch.from_numpy(np.stack([episode.effector[t - 1], episode.effector[t], episode.effector[t + 1]], 1))
    stepped = probe._step(
        model,
        path.float(),
        torch.from_numpy(episode.actions[t]),
        torch.from_numpy(poses).float(),
        torch.from_numpy(before).float(),
    )
    np.testing.assert_allclose(stepped.detach().numpy(), model.step(episode, t, poses, before), atol=1e-5)


@pytest.mark.slow
def test_the_prior_stage_probe_redraws_the_drawer_from_a_fresh_prior(tmp_path, smoke_checkpoint, smoke_data):
    import torch

    from cosmos_robot.checkpoint import load_checkpoint

    args = ["--checkpoint", str(smoke_checkpoint), "--recipe", "smoke", "--data-dir", str(Path(smoke_data[0]).parent)]
    args += ["--out", str(tmp_path / "stage1"), "--stage-steps", "3", "--batch", "4", "--state-steps", "2"]
    args += ["--drawer-steps", "2", "--drawer-rollout", "4", "--decoder-steps", "2", "--threads", "1"]
    report = _probe_report("probe_prior_stages.py", args, tmp_path / "stage1.json")
    assert {"old_prior", "new_prior", "state_head", "drawer_loss", "decoder_on_drawer"} <= set(report)
    before, after = load_checkpoint(smoke_checkpoint), load_checkpoint(tmp_path / "stage1")
    old, new = before.network.state_dict(), after.network.state_dict()
    changed = {k for k in old if not torch.equal(old[k].float(), new[k].float())}
    # The prior and the drawer are new; every other part of the network is the checkpoint's.
    assert all(k.startswith(("forward_prior.", "object_pose.drawer.")) for k in changed)
    assert any(k.startswith("forward_prior.") for k in changed)
    assert any(k.startswith("object_pose.drawer.") for k in changed)


def test_the_prior_stage_probe_refuses_a_bad_count(tmp_path):
    import subprocess
    import sys

    path = Path(__file__).parents[1] / "benchmarks" / "probe_prior_stages.py"
    run = subprocess.run(
        [sys.executable, str(path), "--checkpoint", "x", "--out", str(tmp_path / "o"), "--drawer-steps", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0 and "--drawer-steps=0: expected a positive integer" in run.stderr


@pytest.mark.slow
def test_the_autoencoder_probe_reads_every_variant_on_the_same_mujoco_frames(tmp_path):
    args = ["--recipe", "smoke", "--data-dir", str(tmp_path / "data"), "--variants", "base", "fullres"]
    report = _probe_report("probe_autoencoder.py", [*args, "--steps", "3", "--episodes", "2"], tmp_path / "ae.json")
    assert set(report) == {"base", "fullres"}
    for robot in ("point", "arm2"):
        shown = {report[name][robot]["effector_shown"] for name in report}
        assert len(shown) == 1 and shown.pop() > 0  # the same real frames for every variant
        for name in report:
            read = report[name][robot]
            assert 0 <= read["effector_lost"] <= read["effector_shown"] and read["psnr"] > 0
