"""Training: it learns, checkpoints load, resume continues exactly, DDP equals one process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import cosmos_robot.train as train_module
from cosmos_robot.checkpoint import load_checkpoint
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.phase_checkpoint import PHASES, load_phase
from cosmos_robot.train import TrainConfig, Trainer, export_inference, learning_rate, train
from tests.conftest import smoke_config

# The smoke recipe fits the decoder to the prior's and the drawer's rollouts (~4 s with their held-out
# passes); tests of other phases leave those fits out.
NO_DECODER_FITS = {"rollout_decoder_steps": 0, "rollout_decoder_drawer": False}


def test_smoke_training_writes_a_loadable_checkpoint(smoke_checkpoint):
    ckpt = load_checkpoint(smoke_checkpoint, with_training=True)
    assert sorted(ckpt.embodiments) == ["arm2", "point"]
    assert ckpt.training["step"] == 10
    history = ckpt.training["history"]
    assert len(history) == 10 and "val" in history[4] and all("loss" in h for h in history)
    assert ckpt.embodiments["point"].task == "push the red block onto the green disc"


@pytest.mark.slow  # three training runs end to end (~10 s): with the slow tests, which CI runs too
def test_resume_continues_with_the_same_losses(smoke_data, tmp_path):
    config = smoke_config(smoke_data, tmp_path / "a", steps=8, checkpoint_every=4, val_every=0)
    uninterrupted = Trainer(config, progress=False)
    uninterrupted.run()

    interrupted_config = smoke_config(smoke_data, tmp_path / "b", steps=8, checkpoint_every=4, val_every=0)
    first = Trainer(interrupted_config, progress=False)
    for _ in range(4):
        first.history.append(first.train_step())
    first.save()  # ...and the process dies here
    resumed = Trainer(interrupted_config, resume=True, progress=False)
    assert resumed.step == 4
    resumed.run()
    assert [h["loss"] for h in resumed.history] == [h["loss"] for h in uninterrupted.history]
    a = load_file(str(tmp_path / "a" / "model.safetensors"))
    b = load_file(str(tmp_path / "b" / "model.safetensors"))
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=0, rtol=0)


class SimulatedKillError(Exception):
    """Stands for the process dying right after a phase checkpoint was written."""


# Each trains the smoke recipe twice, so every phase runs with the slow tests to keep `make test`
# short; test_resume_continues_with_the_same_losses covers resuming in the default run.
@pytest.mark.parametrize(
    "phase",
    [pytest.param(p, marks=pytest.mark.slow) for p in PHASES],
)
def test_resume_inside_a_phase_matches_an_uninterrupted_run(smoke_data, tmp_path, monkeypatch, phase):
    changes = {"steps": 4, "ae_steps": 10, "forward_steps": 10, "forward_finetune_steps": 10, "prior_steps": 10}
    changes |= {"inverse_steps": 10, "checkpoint_every": 5, "val_every": 0}
    uninterrupted = Trainer(smoke_config(smoke_data, tmp_path / "a", **changes), progress=False)
    uninterrupted.run()

    save_phase = train_module.save_phase

    def save_then_die(out, state):
        save_phase(out, state)
        if state["phase"] == phase:
            raise SimulatedKillError

    monkeypatch.setattr(train_module, "save_phase", save_then_die)
    config = smoke_config(smoke_data, tmp_path / "b", **changes)
    with pytest.raises(SimulatedKillError):
        Trainer(config, progress=False)
    monkeypatch.undo()
    saved = load_phase(tmp_path / "b")
    assert saved["phase"] == phase and saved["loop"]["step"] == 5
    assert not (tmp_path / "b" / "model.safetensors").exists()

    resumed = Trainer(config, resume=True, progress=False)
    resumed.run()
    assert load_phase(tmp_path / "b") is None  # the world model's checkpoint replaced the phase state
    assert [h["loss"] for h in resumed.history] == [h["loss"] for h in uninterrupted.history]
    for name in ("model.safetensors", "autoencoder.safetensors"):
        a = load_file(str(tmp_path / "a" / name))
        b = load_file(str(tmp_path / "b" / name))
        for key in a:
            torch.testing.assert_close(a[key], b[key], atol=0, rtol=0)


# Trains the smoke recipe in a child process that SIGKILLs itself at a chosen point.
KILL_AT = """
import json, os, signal, sys
import cosmos_robot.checkpoint as checkpoint
import cosmos_robot.train as train
from tests.conftest import smoke_config

point, datasets, out, changes = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
if point in ("autoencoder", "forward_prior", "forward_finetune", "action_prior", "inverse_prior"):  # after a first save
    save_phase = train.save_phase
    def patched(o, state):
        save_phase(o, state)
        if state["phase"] == point:
            die()
    train.save_phase = patched
elif point == "world_model":  # right after the first checkpoint
    save = train.Trainer.save
    train.Trainer.save = lambda self: (save(self), die())
else:  # in the middle of writing the second checkpoint (3 files per checkpoint)
    save_file, calls = checkpoint.save_file, []
    def patched(tensors, path):
        calls.append(path)
        if len(calls) == 5:
            die()
        save_file(tensors, path)
    checkpoint.save_file = patched
train.train(smoke_config(datasets, out, **changes), progress=False)
"""
KILL_CHANGES = {"steps": 8, "ae_steps": 10, "forward_steps": 10, "forward_finetune_steps": 6, "prior_steps": 6}
KILL_CHANGES |= {"inverse_steps": 6, "checkpoint_every": 4, "val_every": 0}


@pytest.fixture(scope="module")
def uninterrupted_smoke_run(smoke_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted") / "ck"
    Trainer(smoke_config(smoke_data, out, **KILL_CHANGES), progress=False).run()
    return out


@pytest.mark.slow
@pytest.mark.parametrize("point", [*PHASES, "world_model", "checkpoint_write"])
def test_sigkill_anywhere_in_training_then_resume_equals_an_uninterrupted_run(
    smoke_data, uninterrupted_smoke_run, tmp_path, point
):
    out = tmp_path / "ck"
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AT, point, json.dumps(list(smoke_data)), str(out), json.dumps(KILL_CHANGES)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    Trainer(smoke_config(smoke_data, out, **KILL_CHANGES), resume=True, progress=False).run()
    assert [p.name for p in tmp_path.iterdir()] == ["ck"], "a killed run left something beside the checkpoint"
    for name in ("model.safetensors", "autoencoder.safetensors", "training/state.safetensors"):
        a, b = load_file(str(uninterrupted_smoke_run / name)), load_file(str(out / name))
        assert a.keys() == b.keys()
        for key in a:
            torch.testing.assert_close(a[key], b[key], atol=0, rtol=0)


def test_resume_without_a_checkpoint_is_a_clear_error(smoke_data, tmp_path):
    with pytest.raises(FileNotFoundError, match="no training checkpoint to resume from.*without --resume"):
        Trainer(smoke_config(smoke_data, tmp_path / "none"), resume=True, progress=False)


@pytest.mark.slow
def test_ddp_with_two_processes_matches_one_process(smoke_data, tmp_path):
    env = os.environ | {"OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1"}
    data_dir = str(Path(smoke_data[0]).parent)  # the smoke recipe finds its datasets there and collects nothing
    common = ["--recipe", "smoke", "--data-dir", data_dir, "--train-steps", "6", "--batch-size", "4", "--threads", "1"]
    single = subprocess.run(
        [sys.executable, "-m", "cosmos_robot.cli", "train", *common, "--out", str(tmp_path / "one")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert single.returncode == 0, single.stderr[-2000:]
    ddp = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node=2",
            "--master_port=29517",
            "-m",
            "cosmos_robot.cli",
            "train",
            *common,
            "--out",
            str(tmp_path / "two"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert ddp.returncode == 0, ddp.stderr[-2000:]

    config = smoke_config(smoke_data, "unused")
    torch.manual_seed(config.seed + 1)
    init = WorldActionNetwork(config.model_config()).state_dict()
    one = load_file(str(tmp_path / "one" / "training" / "state.safetensors"))
    two = load_file(str(tmp_path / "two" / "training" / "state.safetensors"))
    moved = sum(float(((one[f"model.{k}"] - v) ** 2).sum()) for k, v in init.items()) ** 0.5
    apart = sum(float(((one[f"model.{k}"] - two[f"model.{k}"]) ** 2).sum()) for k in init) ** 0.5
    assert moved > 1e-3, "training did not move the weights"
    assert apart < 0.02 * moved, f"DDP weights differ by {apart:.2e}, training moved them by {moved:.2e}"


def test_learning_rate_warms_up_then_decays():
    config = TrainConfig(datasets=["x"], out="y", steps=100, warmup=10, lr=1.0)
    rates = [learning_rate(s, config) for s in range(100)]
    assert rates[0] == pytest.approx(0.1) and rates[9] == pytest.approx(1.0)
    assert rates[99] == pytest.approx(0.1, abs=0.01)
    assert all(b <= a + 1e-12 for a, b in zip(rates[10:-1], rates[11:], strict=True))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"datasets": []}, "datasets=\\[\\]"),
        ({"mode_mix": (0.5, 0.5, 0.5)}, "mode_mix"),
        ({"context_frames": 5}, "context_frames=5"),
        ({"steps": 0}, "steps=0"),
        ({"prior_batch": -1}, "prior_batch=-1"),
        ({"inverse_batch": 2.5}, "inverse_batch=2.5"),
        ({"inverse_steps": -1}, "inverse_steps=-1"),
        ({"inverse_steps": 5, "inverse_batch": 0}, "inverse_steps=5 but inverse_batch=0"),
        ({"forward_steps": -1}, "forward_steps=-1"),
        ({"forward_batch": 0}, "forward_batch=0"),
        ({"forward_rollout": 0}, "forward_rollout=0"),
        ({"forward_finetune_steps": -1}, "forward_finetune_steps=-1"),
        ({"rollout_decoder_steps": -2}, "rollout_decoder_steps=-2"),
        ({"forward_steps": 0, "rollout_decoder_steps": 3}, "rollout_decoder_steps=3 but forward_steps=0"),
        ({"rollout_decoder_drawer": 1}, "rollout_decoder_drawer=1; expected True or False"),
        (
            {"forward_steps": 5, "rollout_decoder_steps": 3, "rollout_decoder_drawer": True},
            "rollout_decoder_drawer=True but rollout_decoder_steps=3, object_fit_steps=0",
        ),
        ({"forward_finetune_rollout": 0}, "forward_finetune_rollout=0"),
        ({"rollout_decoder_prior": "no"}, "rollout_decoder_prior='no'; expected True or False"),
        (
            {"forward_steps": 5, "rollout_decoder_steps": 3, "rollout_decoder_prior": False},
            "rollout_decoder_steps=3 but rollout_decoder_prior=False and rollout_decoder_drawer=False",
        ),
        ({"drawer_rollout": -1}, "drawer_rollout=-1"),
        ({"ae_full_resolution_width": 12}, "ae_full_resolution_width=12; expected 0 or a positive multiple of 8"),
        ({"ae_full_resolution_width": -8}, "ae_full_resolution_width=-8"),
        ({"ae_full_resolution_width": 8.0}, "ae_full_resolution_width=8.0"),
        ({"forward_steps": 0, "drawer_rollout": 8}, "drawer_rollout=8 but forward_steps=0"),
        ({"forward_lr": 0.0}, "forward_lr=0.0"),
        ({"prior_steps": -1}, "prior_steps=-1"),
        ({"prior_lr": 0.0}, "prior_lr=0.0"),
        ({"prior_steps": 5, "prior_batch": 0}, "prior_steps=5 but prior_batch=0"),
        ({"object_fit_steps": -1}, "object_fit_steps=-1"),
        ({"forward_steps": 0, "object_fit_steps": 3}, "object_fit_steps=3.*forward_steps=0"),
        ({"forward_steps": 5, "object_prior_steps": 3}, "object_fit_steps=0, object_prior_steps=3"),
        ({"object_push_rollout_steps": -1}, "object_push_rollout_steps=-1"),
        ({"forward_steps": 5, "object_push_rollout_steps": 3}, "object_fit_steps=0.*object_push_rollout_steps=3"),
        ({"object_reward_steps": -1}, "object_reward_steps=-1"),
        ({"object_simulated_episodes": -1}, "object_simulated_episodes=-1"),
        ({"forward_steps": 5, "object_simulated_episodes": 3}, "object_fit_steps=0.*object_simulated_episodes=3"),
        ({"forward_steps": 5, "object_push_steps": 3}, "object_fit_steps=0.*object_push_steps=3"),
        ({"forward_state_steps": -1}, "forward_state_steps=-1"),
        ({"forward_steps": 0, "forward_state_steps": 3}, "forward_state_steps=3 but forward_steps=0"),
        ({"forward_steps": 5, "object_reward_steps": 3}, "object_fit_steps=0.*object_reward_steps=3"),
        ({"object_agent_steps": -1}, "object_agent_steps=-1"),
        ({"forward_steps": 5, "object_agent_steps": 3}, "object_fit_steps=0.*object_agent_steps=3"),
        ({"object_painter_steps": -1}, "object_painter_steps=-1"),
        ({"forward_steps": 5, "object_painter_steps": 3}, "object_fit_steps=0.*object_painter_steps=3"),
        (
            {"forward_steps": 5, "object_fit_steps": 3, "object_agent_rollout_steps": 3},
            "object_agent_rollout_steps=3 but object_agent_steps=0",
        ),
        (
            {"forward_steps": 5, "model_overrides": {"forward_prior": True, "object_effector_maps": True}},
            "model_overrides sets object_effector_maps=True but object_fit_steps=0",
        ),
    ],
)
def test_bad_training_settings_are_rejected(changes, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**({"datasets": ["x"], "out": "y"} | changes))


def test_smoke_training_trains_and_records_the_forward_prior(smoke_checkpoint):
    ckpt = load_checkpoint(smoke_checkpoint, with_training=True)
    assert ckpt.network.forward_prior is not None
    measured = ckpt.training["forward_prior"]
    assert {"latent_mse", "copy_mse", "state_rmse", "seconds"} <= set(measured) and measured["seconds"] > 0
    # The smoke recipe refits the prior's state head with its linear action term.
    assert ckpt.network.config.forward_state_action and ckpt.network.forward_prior.state_action is not None
    assert {"state_mse_before", "state_mse_after", "seconds"} <= set(measured["state_head"])
    # As the default, the smoke recipe fits the decoder to the drawer's rollouts only, not to the prior's.
    assert "decoder_on_rollouts" not in measured
    fitted = measured["decoder_on_drawer"]
    assert {"psnr_before", "psnr_after", "seconds"} <= set(fitted) and fitted["seconds"] > 0
    # The smoke recipe carries the block for both robots: its parts are fitted and saved with the model.
    carried = measured["object_pose"]
    assert {"readout_mm", "point_effector_mm", "arm2_push_mm_pushed", "drawer_loss"} <= set(carried)
    assert ckpt.network.object_pose is not None and len(ckpt.network.config.object_pose_domains) == 2
    # The smoke autoencoder's decoder has a block at full resolution (the default's has none), saved with its width.
    assert ckpt.autoencoder.full_resolution_width == 16
    assert json.loads((smoke_checkpoint / "config.json").read_text())["autoencoder"]["full_resolution_width"] == 16
    # ... and its reward head, which the learned env's reward and success then come from.
    scored = measured["object_reward"]
    assert {"goal_readout_mm", "point_reward_mae", "arm2_success_recall", "seconds"} <= set(scored)
    assert ckpt.network.object_pose.has_reward and ckpt.network.config.object_reward
    # ... and its agent heads, which a learned env without frames steps instead of the prior.
    stepped = measured["object_agent"]
    assert {"point_agent_h1", "arm2_agent_h16", "point_agent_h16_rolled", "seconds"} <= set(stepped)
    assert ckpt.network.object_pose.has_agent and ckpt.network.config.object_agent
    # ... and then fits the decoder again, to the drawer's rollouts: the frames the env decodes.
    drawn = measured["decoder_on_drawer"]
    assert {"psnr_before", "psnr_after", "seconds"} <= set(drawn) and drawn["seconds"] > 0
    # As the default's: the drawer is told the effector, the action and inverse priors train alone.
    assert ckpt.network.config.object_effector_maps and ckpt.network.object_pose.tells_effector
    assert {"val_loss", "seconds"} <= set(ckpt.training["action_prior"])
    assert ckpt.training["inverse_prior"]["seconds"] > 0


@pytest.mark.slow  # a whole smoke Trainer, end to end
def test_an_action_prior_trained_alone_is_frozen_in_the_mot_and_recorded(smoke_data, tmp_path):
    changes = {"steps": 2, "ae_steps": 2, "forward_steps": 2, "forward_finetune_steps": 0, "prior_steps": 3}
    changes |= NO_DECODER_FITS
    trainer = Trainer(smoke_config(smoke_data, tmp_path / "x", val_every=0, **changes), progress=False)
    alone = {k: v.clone() for k, v in trainer.network.action_prior.state_dict().items()}
    trainer.run()
    assert all("prior" not in logged for logged in trainer.history)  # the MoT drew no prior batch
    for key, value in trainer.network.action_prior.state_dict().items():
        torch.testing.assert_close(value, alone[key], atol=0, rtol=0)
    measured = load_checkpoint(tmp_path / "x", with_training=True).training["action_prior"]
    assert set(measured["val_loss"]) == {"arm2", "point"} and measured["seconds"] > 0


@pytest.mark.slow  # a whole smoke Trainer, end to end
def test_an_inverse_prior_trained_alone_is_frozen_in_the_mot_and_recorded(smoke_data, tmp_path):
    changes = {"steps": 2, "ae_steps": 2, "forward_steps": 2, "forward_finetune_steps": 0, "inverse_steps": 3}
    changes |= NO_DECODER_FITS
    trainer = Trainer(smoke_config(smoke_data, tmp_path / "x", val_every=0, **changes), progress=False)
    alone = {k: v.clone() for k, v in trainer.network.inverse_prior.state_dict().items()}
    trainer.run()
    assert all("inverse" not in logged for logged in trainer.history)  # the MoT drew no inverse batch
    for key, value in trainer.network.inverse_prior.state_dict().items():
        torch.testing.assert_close(value, alone[key], atol=0, rtol=0)
    measured = load_checkpoint(tmp_path / "x", with_training=True).training["inverse_prior"]
    assert set(measured["val_r2"]) == {"arm2", "point"} and measured["seconds"] > 0


@pytest.mark.slow  # a whole smoke Trainer, end to end
def test_the_forward_prior_trains_on_rollouts_of_the_configured_length(smoke_data, tmp_path, monkeypatch):
    lengths = []
    train_forward_prior = train_module.train_forward_prior

    def recording(network, table, **kwargs):
        lengths.append(table.steps)
        return train_forward_prior(network, table, **kwargs)

    monkeypatch.setattr(train_module, "train_forward_prior", recording)
    changes = {"steps": 1, "ae_steps": 2, "forward_steps": 2, "forward_rollout": 2, "val_every": 0}
    changes |= {"forward_finetune_steps": 2, "forward_finetune_rollout": 3} | NO_DECODER_FITS
    trainer = Trainer(smoke_config(smoke_data, tmp_path / "x", **changes), progress=False)
    assert lengths == [2, 3]  # short rollouts first, then the second stage's longer ones
    assert trainer.forward_prior["latent_mse"] > 0  # read at ROLLOUT_STEPS, whatever the training length


@pytest.mark.slow  # a whole smoke Trainer, end to end
def test_the_drawer_and_the_decoder_roll_out_their_own_length(smoke_data, tmp_path, monkeypatch):
    drawn, decoded = [], []
    fit_object_pose, fit_decoder = train_module.fit_object_pose, train_module.fit_decoder_to_rollouts

    def recording_object(*args, rollout, **kwargs):
        drawn.append(rollout)
        return fit_object_pose(*args, rollout=rollout, **kwargs)

    def recording_decoder(*args, rollout, drawer, **kwargs):
        decoded.append((rollout, drawer))
        return fit_decoder(*args, rollout=rollout, drawer=drawer, **kwargs)

    monkeypatch.setattr(train_module, "fit_object_pose", recording_object)
    monkeypatch.setattr(train_module, "fit_decoder_to_rollouts", recording_decoder)
    changes = {"steps": 1, "ae_steps": 2, "forward_steps": 2, "forward_rollout": 2, "val_every": 0}
    changes |= {"drawer_rollout": 3, "rollout_decoder_prior": False, "rollout_decoder_drawer": True}
    Trainer(smoke_config(smoke_data, tmp_path / "x", **changes), progress=False)
    assert drawn == [3]  # the drawer's rollouts, not the prior's 2
    assert decoded == [(3, True)]  # one fit, to the drawer's rollouts of that length


def test_forward_steps_need_a_forward_prior(smoke_data, tmp_path):
    config = smoke_config(smoke_data, tmp_path / "x", model_overrides={})
    with pytest.raises(ValueError, match="forward_steps=5 but the model has no forward prior"):
        Trainer(config, progress=False)


def test_export_halves_the_weights(smoke_checkpoint, tmp_path):
    exported = export_inference(smoke_checkpoint, tmp_path / "export")
    assert not (exported / "training").exists()
    assert (exported / "model.safetensors").stat().st_size < 0.6 * (
        smoke_checkpoint / "model.safetensors"
    ).stat().st_size
    assert load_file(str(exported / "model.safetensors"))["frame_in.weight"].dtype == torch.float16


def test_the_objects_switches_wait_for_the_objects_embodiments(smoke_data, tmp_path):
    # The carried object's embodiments come from the loaded data: before them the model is configured
    # without the object's switches (a ModelConfig refuses them without embodiments), after them with.
    config = smoke_config(
        smoke_data, tmp_path / "ckpt", model_overrides={"forward_prior": True, "object_effector_maps": True}
    )
    before = config.model_config()
    assert before.object_pose_domains == () and not before.object_effector_maps
    after = config.model_config((1, 0))
    assert after.object_pose_domains == (1, 0) and after.object_effector_maps
    assert after.object_reward and after.object_agent  # the smoke recipe fits both heads


def test_a_fresh_model_widens_its_shared_widths_to_fit_its_robots(smoke_data, tmp_path):
    import numpy as np

    from cosmos_robot.datasets.zarr_store import lerobot_to_zarr, read_zarr, write_zarr
    from cosmos_robot.keys import OBS_STATE

    narrow = read_zarr(lerobot_to_zarr(smoke_data[0], tmp_path / "point.zarr"), in_memory=True)
    narrow.data[OBS_STATE] = np.tile(narrow.data[OBS_STATE], (1, 9))[:, :17]  # wider than tiny's 16
    narrow.robot_type = "wide"
    wide = write_zarr(narrow, tmp_path / "wide.zarr")
    config = smoke_config(smoke_data + [str(wide)], tmp_path / "ckpt")
    assert (config.model_config().state_width, config.model_config().action_width) == (24, 32)
    pinned = smoke_config(smoke_data, tmp_path / "ckpt", model_overrides={"state_width": 8})
    assert pinned.model_config().state_width == 8  # an explicit width is kept


@pytest.mark.slow
def test_a_reused_autoencoder_brings_the_shape_of_its_decoder(smoke_data, smoke_checkpoint, tmp_path):
    # The smoke checkpoint's decoder has a block at full resolution; a run told to build none reuses it whole.
    out = tmp_path / "reused"
    train(smoke_config(smoke_data, out, autoencoder=str(smoke_checkpoint), ae_full_resolution_width=0), progress=False)
    source, reused = load_checkpoint(smoke_checkpoint), load_checkpoint(out, with_training=True)
    assert reused.autoencoder.full_resolution_width == 16
    # Its fast decoder comes along, measured on this run's held-out frames (it once went unmeasured, and the
    # first save failed).
    assert reused.training["fast_decoder_psnr"] > 0
    for key, value in source.autoencoder.encoder.state_dict().items():
        torch.testing.assert_close(reused.autoencoder.encoder.state_dict()[key], value)
