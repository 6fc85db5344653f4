"""collect: real LeRobot v3 datasets that reload offline, for PushBlock and a gymnasium MuJoCo env."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cosmos_robot.collect import collect
from cosmos_robot.datasets.lerobot_io import load_lerobot, read_lerobot
from cosmos_robot.keys import ACTION, META_FILE, OBS_ENV_STATE, OBS_STATE, REWARD, SUCCESS

CAMERA = "observation.images.top"


@pytest.mark.parametrize(
    ("env_id", "embodiment"),
    [
        ("cosmos_robot/PushBlockPoint-v0", "point"),
        ("cosmos_robot/PushBlockArm2-v0", "arm2"),
        ("Reacher-v5", "reacher"),
    ],
)
def test_expert_dataset_reloads_with_lerobot(tmp_path, env_id, embodiment):
    out = tmp_path / "ds"
    summary = collect(env_id, 3, out, seed=5, progress=False)
    assert summary.episodes == 3 and summary.success_rate > 0

    dataset = load_lerobot(out)
    assert dataset.meta.total_episodes == 3
    assert len(dataset) == summary.frames
    assert dataset.meta.robot_type == embodiment
    item = dataset[len(dataset) // 2]
    frame = item[CAMERA]
    assert tuple(frame.shape) == (3, 64, 64)
    assert float(frame.max()) > 0.1, "decoded frame is black"
    assert item["task"]
    successes = np.asarray(dataset.hf_dataset.with_format(None)[SUCCESS]).reshape(-1)
    assert successes.any(), "the expert should have succeeded in some episode"

    sidecar = json.loads((out / META_FILE).read_text())
    assert sidecar["embodiment"] == embodiment and sidecar["env_id"] == env_id
    assert sidecar["episode_seeds"] == [5, 6, 7]


def test_push_block_datasets_carry_block_and_goal(point_images_dataset):
    episodes = read_lerobot(point_images_dataset)
    env_state = episodes.data[OBS_ENV_STATE]
    assert env_state.shape[1] == 5
    assert np.abs(env_state[:, :2]).max() <= 0.2 + 1e-3  # block inside the workspace


def test_same_seed_gives_the_same_dataset(tmp_path):
    a = collect("cosmos_robot/PushBlockArm2-v0", 2, tmp_path / "a", noise=0.3, seed=9, video=False, progress=False)
    b = collect("cosmos_robot/PushBlockArm2-v0", 2, tmp_path / "b", noise=0.3, seed=9, video=False, progress=False)
    assert a.frames == b.frames
    ea, eb = read_lerobot(tmp_path / "a"), read_lerobot(tmp_path / "b")
    for key in (CAMERA, OBS_STATE, ACTION, REWARD):
        np.testing.assert_array_equal(ea.data[key], eb.data[key])


def test_video_frames_decode_close_to_the_rendered_frames(point_images_dataset, tmp_path):
    # Same seeds stored both ways: the mp4 path must stay near-lossless (h264 4:4:4, crf 0).
    collect("cosmos_robot/PushBlockPoint-v0", 4, tmp_path / "v", noise=0.3, seed=100, progress=False)
    exact = read_lerobot(point_images_dataset).data[CAMERA].astype(float)
    decoded = read_lerobot(tmp_path / "v").data[CAMERA].astype(float)
    mse = np.mean((exact - decoded) ** 2)
    psnr = 10 * np.log10(255.0**2 / max(mse, 1e-10))
    assert psnr > 40, f"video round trip PSNR {psnr:.1f} dB"


def test_existing_out_is_refused_then_overwritten(tmp_path):
    out = tmp_path / "ds"
    collect("cosmos_robot/PushBlockPoint-v0", 1, out, progress=False)
    with pytest.raises(FileExistsError, match="already exists"):
        collect("cosmos_robot/PushBlockPoint-v0", 1, out, progress=False)
    collect("cosmos_robot/PushBlockPoint-v0", 2, out, overwrite=True, progress=False)
    assert load_lerobot(out).meta.total_episodes == 2
    assert [p.name for p in tmp_path.iterdir()] == ["ds"], "no temporary folders may remain"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"episodes": 0}, "episodes"), ({"episodes": -2}, "episodes"), ({"policy": "genius"}, "policy")],
)
def test_bad_arguments_are_rejected(tmp_path, kwargs, field):
    args = {"episodes": 1} | kwargs
    with pytest.raises(ValueError, match=f"{field}="):
        collect("cosmos_robot/PushBlockPoint-v0", out=tmp_path / "x", progress=False, **args)
    assert not (tmp_path / "x").exists()


def assert_same_dataset(a, b) -> None:
    x, y = read_lerobot(a), read_lerobot(b)
    assert sorted(x.data) == sorted(y.data) and x.meta == y.meta and x.tasks == y.tasks
    np.testing.assert_array_equal(x.episode_ends, y.episode_ends)
    for key in x.data:
        np.testing.assert_array_equal(x.data[key], y.data[key], err_msg=key)


POINT = "cosmos_robot/PushBlockPoint-v0"


def test_an_interrupted_collection_keeps_its_episodes_and_resumes_to_the_same_dataset(tmp_path, monkeypatch):
    import cosmos_robot.collect as collect_module

    collect(POINT, 3, tmp_path / "whole", noise=0.3, progress=False)
    calls = {"n": 0}
    original = collect_module._rollout_episode

    def counted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(collect_module, "_rollout_episode", counted)
    with pytest.raises(KeyboardInterrupt):
        collect(POINT, 3, tmp_path / "ds", noise=0.3, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ds.episodes", "whole"]  # 2 episodes kept, no dataset

    with pytest.raises(FileExistsError, match="left 2 complete episodes.*--resume.*--overwrite"):
        collect(POINT, 3, tmp_path / "ds", noise=0.3, progress=False)
    with pytest.raises(ValueError, match="resume: noise=0.5 but the stopped run used 0.3"):
        collect(POINT, 3, tmp_path / "ds", noise=0.5, progress=False, resume=True)
    calls["n"] = 10
    collect(POINT, 3, tmp_path / "ds", noise=0.3, progress=False, resume=True)
    assert calls["n"] == 11, "resume rolled out more than the missing episode"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "whole"]
    assert_same_dataset(tmp_path / "whole", tmp_path / "ds")


def test_a_kill_while_writing_the_dataset_resumes_from_the_kept_episodes(tmp_path, monkeypatch):
    from cosmos_robot.datasets.lerobot_io import LeRobotWriter

    collect(POINT, 2, tmp_path / "whole", progress=False)
    original = LeRobotWriter.save_episode

    def dies_on_second(self):
        if self.dataset.meta.total_episodes == 1:
            raise KeyboardInterrupt
        original(self)

    monkeypatch.setattr(LeRobotWriter, "save_episode", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        collect(POINT, 2, tmp_path / "ds", progress=False)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".ds.episodes", "whole"]
    collect(POINT, 2, tmp_path / "ds", progress=False, resume=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "whole"]
    assert_same_dataset(tmp_path / "whole", tmp_path / "ds")


def test_overwrite_discards_a_stopped_runs_episodes(tmp_path, monkeypatch, capsys):
    import cosmos_robot.collect as collect_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(collect_module, "_rollout_episode", interrupted)
    with pytest.raises(KeyboardInterrupt):
        collect(POINT, 2, tmp_path / "ds", progress=False)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == [".ds.episodes"]
    collect(POINT, 1, tmp_path / "ds", progress=False, overwrite=True)
    assert "0 episodes of an earlier run that was stopped" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


@pytest.mark.slow
def test_the_cli_collects_from_a_third_party_env_named_by_module(tmp_path, capsys):
    from cosmos_robot.cli import main

    out = tmp_path / "slider"
    env = "tests.envs.third_party_env:ThirdPartySlider-v0"
    args = ["collect", "--env", env, "--policy", "random", "--episodes", "2", "--out", str(out)]
    assert main(args) != 0  # the env states no rate: a one-line error names --fps
    assert "states no rate" in capsys.readouterr().err
    assert main([*args, "--fps", "10"]) == 0
    dataset = read_lerobot(out)
    assert dataset.num_episodes == 2 and dataset.data[OBS_STATE].shape[1] == 4 and dataset.data[ACTION].shape[1] == 2
    frames = dataset.data[dataset.image_keys[0]]
    assert frames.shape[1:] == (64, 64, 3) and frames.std() > 0
