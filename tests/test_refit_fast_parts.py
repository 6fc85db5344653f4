"""scripts/refit_fast_parts.py: a trained checkpoint gets a fast decoder and a smaller forward prior,
its MoT and autoencoder untouched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cosmos_robot.checkpoint import load_checkpoint, save_checkpoint
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.network import WorldActionNetwork

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "refit_fast_parts.py"


def _refit(checkpoint: Path, smoke_data: list, out: Path, *options: str) -> dict:
    """Run the script on ``checkpoint`` with the smoke recipe's data and ``options``; its report."""
    data_dir = Path(smoke_data[0]).parent
    args = ["--checkpoint", str(checkpoint), "--recipe", "smoke", "--data-dir", str(data_dir), "--out", str(out)]
    args += ["--fast-decoder-steps", "0", *options]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout[result.stdout.index("{") :])


@pytest.mark.slow
def test_refit_replaces_the_prior_and_adds_a_fast_decoder(smoke_checkpoint, smoke_data, tmp_path):
    data_dir = Path(smoke_data[0]).parent
    out = tmp_path / "fast"
    args = ["--checkpoint", str(smoke_checkpoint), "--recipe", "smoke", "--data-dir", str(data_dir)]
    args += ["--out", str(out), "--fast-decoder-steps", "3", "--forward-width", "16", "--forward-steps", "3"]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert {"fast_decoder_psnr", "old_prior", "new_prior"} <= set(report)
    before, after = load_checkpoint(smoke_checkpoint), load_checkpoint(out)
    assert after.network.config.forward_width == 16 and after.autoencoder.fast_decoder is not None
    assert after.network.object_pose is None  # the block's drawer was a copy of the replaced prior
    kept = {
        k: v for k, v in before.network.state_dict().items() if not k.startswith(("forward_prior.", "object_pose."))
    }
    for name, value in kept.items():
        torch.testing.assert_close(after.network.state_dict()[name], value, rtol=0, atol=0)
    for name, value in before.autoencoder.state_dict().items():
        if not name.startswith("fast_decoder."):
            torch.testing.assert_close(after.autoencoder.state_dict()[name], value, rtol=0, atol=0)


@pytest.mark.slow
def test_finetune_trains_the_checkpoints_own_prior_and_keeps_the_rest(smoke_checkpoint, smoke_data, tmp_path):
    data_dir = Path(smoke_data[0]).parent
    out = tmp_path / "finetuned"
    args = ["--checkpoint", str(smoke_checkpoint), "--recipe", "smoke", "--data-dir", str(data_dir), "--out", str(out)]
    args += ["--fast-decoder-steps", "0", "--forward-finetune", "--forward-rollout", "2", "--forward-steps", "3"]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert {"old_prior", "new_prior"} <= set(report) and "fast_decoder_psnr" not in report
    before, after = load_checkpoint(smoke_checkpoint), load_checkpoint(out)
    assert after.network.config.forward_width == before.network.config.forward_width
    old, new = before.network.state_dict(), after.network.state_dict()
    prior = [k for k in old if k.startswith("forward_prior.")]
    assert any(not torch.equal(old[k], new[k]) for k in prior)  # it trained...
    assert after.network.object_pose is None  # (the block's drawer went with the old prior)
    for name in old:
        # ...and nothing else changed, the autoencoder (and its fast decoder) included
        if name not in prior and not name.startswith("object_pose."):
            torch.testing.assert_close(new[name], old[name], rtol=0, atol=0)
    for name, value in before.autoencoder.state_dict().items():
        torch.testing.assert_close(after.autoencoder.state_dict()[name], value, rtol=0, atol=0)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (["--forward-finetune", "--forward-width", "16"], "--forward-finetune keeps the prior's width"),
        (["--forward-rollout", "0"], "--forward-rollout=0; expected an integer >= 1"),
        (["--fast-decoder-steps", "-1"], "--fast-decoder-steps=-1; expected an integer >= 0"),
        (["--drawer-effector"], "--drawer-effector needs --drawer-steps"),
        (["--drawer-steps", "-2"], "--drawer-steps=-2; expected an integer >= 0"),
        (["--push-path"], "--push-path need --push-steps"),
        (["--agent-simulated-episodes", "3"], "--agent-simulated-episodes=3 needs --agent-steps"),
        (["--push-steps", "3", "--push-simulated-episodes", "-1"], "--push-simulated-episodes=-1; expected"),
        (["--rollout-decoder-drawer-steps", "-1"], "--rollout-decoder-drawer-steps=-1; expected an integer >= 0"),
    ],
)
def test_bad_refit_arguments_are_refused(tmp_path, bad, message):
    args = ["--out", str(tmp_path / "x"), *bad]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0 and message in result.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "measured"),
    [("--rollout-decoder-steps", "rollout_decode_psnr"), ("--rollout-decoder-drawer-steps", "drawer_decode_psnr")],
)
def test_rollout_decoder_steps_fit_the_decoder_alone(smoke_checkpoint, smoke_data, tmp_path, option, measured):
    # The prior's rollouts, or (the smoke model carries the block) its drawer's.
    data_dir = Path(smoke_data[0]).parent
    out = tmp_path / "fitted"
    args = ["--checkpoint", str(smoke_checkpoint), "--recipe", "smoke", "--data-dir", str(data_dir), "--out", str(out)]
    args += ["--fast-decoder-steps", "0", option, "3", "--rollout-decoder-rollout", "3"]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert {f"{measured}_before", f"{measured}_after"} <= set(report)
    before, after = load_checkpoint(smoke_checkpoint), load_checkpoint(out)
    for name, value in before.network.state_dict().items():
        torch.testing.assert_close(after.network.state_dict()[name], value, rtol=0, atol=0)
    old, new = before.autoencoder.state_dict(), after.autoencoder.state_dict()
    assert any(not torch.equal(old[k], new[k]) for k in old if k.startswith("decoder."))
    for name in old:
        if not name.startswith("decoder."):
            torch.testing.assert_close(new[name], old[name], rtol=0, atol=0)


@pytest.mark.slow
def test_the_block_is_fitted_anew_and_the_rest_kept(smoke_checkpoint, smoke_data, tmp_path):
    data_dir = Path(smoke_data[0]).parent
    out = tmp_path / "block"
    args = ["--checkpoint", str(smoke_checkpoint), "--recipe", "smoke", "--data-dir", str(data_dir), "--out", str(out)]
    args += ["--fast-decoder-steps", "0", "--object-fit-steps", "3", "--object-prior-steps", "2"]
    args += ["--object-push-rollout-steps", "2"]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert {"readout_mm", "point_effector_mm", "drawer_loss", "point_push_h16_mm_rolled"} <= set(report["object_pose"])
    before, after = load_checkpoint(smoke_checkpoint), load_checkpoint(out)
    assert after.network.config.object_pose_domains == before.network.config.object_pose_domains
    old, new = before.network.state_dict(), after.network.state_dict()
    assert any(not torch.equal(old[k], new[k]) for k in new if k.startswith("object_pose."))  # fitted anew...
    for name in old:
        if not name.startswith("object_pose."):  # ...and nothing else changed
            torch.testing.assert_close(new[name], old[name], rtol=0, atol=0)


@pytest.mark.slow
def test_state_head_refit_gives_an_old_prior_the_action_term_and_keeps_the_rest(smoke_checkpoint, smoke_data, tmp_path):
    # A checkpoint made before the term: the smoke model with it taken out.
    old = load_checkpoint(smoke_checkpoint)
    config = ModelConfig.from_dict(old.network.config.to_dict() | {"forward_state_action": False})
    plain = WorldActionNetwork(config)
    plain.load_state_dict({k: v for k, v in old.network.state_dict().items() if not k.endswith("state_action")})
    old.network, old.training = plain, None
    save_checkpoint(old, tmp_path / "old")
    data_dir = Path(smoke_data[0]).parent
    out = tmp_path / "state"
    args = ["--checkpoint", str(tmp_path / "old"), "--recipe", "smoke", "--data-dir", str(data_dir), "--out", str(out)]
    args += ["--fast-decoder-steps", "0", "--forward-state-steps", "20"]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert report["state_head"]["state_mse_after"] < report["state_head"]["state_mse_before"]
    after = load_checkpoint(out)
    assert after.network.config.forward_state_action
    new, kept = after.network.state_dict(), plain.state_dict()
    assert new["forward_prior.state_action"].abs().sum() > 0
    head = ("forward_prior.state_mlp.", "forward_prior.state_weight", "forward_prior.state_bias")
    for name in kept:
        if not name.startswith(head):
            torch.testing.assert_close(new[name], kept[name], rtol=0, atol=0)


@pytest.mark.slow
def test_agent_heads_are_given_to_a_checkpoint_made_before_them_and_the_rest_kept(
    smoke_checkpoint, smoke_data, tmp_path
):
    old = load_checkpoint(smoke_checkpoint)
    old.network.object_pose.drop_agent()
    old.network.config = ModelConfig.from_dict(old.network.config.to_dict() | {"object_agent": False})
    old.training = None
    save_checkpoint(old, tmp_path / "old")
    data_dir = Path(smoke_data[0]).parent
    out = tmp_path / "agent"
    args = ["--checkpoint", str(tmp_path / "old"), "--recipe", "smoke", "--data-dir", str(data_dir), "--out", str(out)]
    args += ["--fast-decoder-steps", "0", "--agent-steps", "20", "--agent-rollout-steps", "2"]
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert {"point_agent_h1", "arm2_agent_h16", "point_agent_h16_rolled"} <= set(report["agent_heads"])
    after = load_checkpoint(out)
    assert after.network.config.object_agent and after.network.object_pose.has_agent
    new, kept = after.network.state_dict(), old.network.state_dict()
    for name in kept:
        torch.testing.assert_close(new[name], kept[name], rtol=0, atol=0)
    refused = subprocess.run(
        [sys.executable, str(SCRIPT), *args[:-4], "--agent-rollout-steps", "2"], capture_output=True, text=True
    )
    assert refused.returncode != 0 and "--agent-rollout-steps=2 needs --agent-steps" in refused.stderr


@pytest.mark.slow
def test_the_drawer_alone_is_drawn_anew_told_the_effector(smoke_checkpoint, smoke_data, tmp_path):
    out = tmp_path / "drawer"
    report = _refit(
        smoke_checkpoint, smoke_data, out, "--drawer-steps", "2", "--drawer-effector", "--forward-rollout", "2"
    )
    assert report["drawer_loss"] > 0
    before, after = load_checkpoint(smoke_checkpoint), load_checkpoint(out)
    assert after.network.config.object_effector_maps and after.network.object_pose.tells_effector
    old, new = before.network.state_dict(), after.network.state_dict()
    for name in new:
        if not name.startswith("object_pose.drawer."):  # the block's other parts and everything else kept
            torch.testing.assert_close(new[name], old[name], rtol=0, atol=0)


@pytest.mark.slow
def test_the_push_mlps_alone_are_fitted_anew_reading_the_path_from_simulated_episodes_too(
    smoke_checkpoint, smoke_data, tmp_path
):
    out = tmp_path / "pushes"
    options = ["--push-steps", "20", "--push-rollout-steps", "2", "--push-simulated-episodes", "3", "--push-path"]
    report = _refit(smoke_checkpoint, smoke_data, out, *options)
    assert {"point_push_h16_mm_rolled", "arm2_push_train_steps", "push_seconds"} <= set(report["pushes"])
    before, after = load_checkpoint(smoke_checkpoint), load_checkpoint(out)
    assert after.network.config.object_push_path and after.network.object_pose.push_path
    assert after.network.object_pose.command_gain.abs().sum() > 0
    old, new = before.network.state_dict(), after.network.state_dict()
    assert old["object_pose.push_mean"].shape[1] + 6 == new["object_pose.push_mean"].shape[1]
    for name in old:
        if not name.startswith(("object_pose.push.", "object_pose.push_m", "object_pose.push_s")):
            torch.testing.assert_close(new[name], old[name], rtol=0, atol=0)  # the rest kept
