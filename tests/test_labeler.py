"""Labeling: mp4 folders and action-less LeRobot datasets in, a new LeRobot dataset with actions out;
the source untouched, nothing half-written, clear errors, and the latent-space decoder."""

from __future__ import annotations

import hashlib
import json

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.cli import main
from cosmos_robot.datasets.lerobot_io import LeRobotWriter, read_lerobot
from cosmos_robot.datasets.video_io import write_video
from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.keys import ACTION
from cosmos_robot.labeler import SPREAD, fit_action_decoder, label, read_clips
from cosmos_robot.policies.scripted import ScriptedExpert
from cosmos_robot.world_model import WorldActionModel


def rollout_frames(seed: int, steps: int = 12) -> np.ndarray:
    env = gym.make(PUSH_BLOCK_IDS["point"])
    obs, info = env.reset(seed=seed)
    policy = ScriptedExpert.for_env(env, noise=0.3, seed=seed)
    frames = [obs["pixels"]]
    for _ in range(steps):
        obs, _, _, _, info = env.unwrapped.step(policy.act(obs, info))
        frames.append(obs["pixels"])
    env.close()
    return np.stack(frames)


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("videos")
    for seed in (1, 2):
        write_video(folder / f"episode_{seed}.mp4", rollout_frames(seed), fps=10)
    return folder


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


def checksum(folder) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_labels_a_folder_of_mp4s(model, videos, tmp_path):
    before = checksum(videos)
    out = label(videos, model, "point", tmp_path / "labeled", steps=2, progress=False)
    data = read_lerobot(out)
    assert data.num_episodes == 2 and data.num_frames == 2 * 13
    assert data.data[ACTION].shape == (26, 2) and data.data[SPREAD].shape == (26, 2)
    assert np.all(np.isfinite(data.data[ACTION])) and np.all(data.data[SPREAD] >= 0)
    meta = json.loads((out / "meta" / "cosmos_robot.json").read_text())
    assert meta["embodiment"] == "point" and meta["source"].endswith(videos.name) and len(meta["clips"]) == 2
    stats = json.loads((out / "meta" / "stats.json").read_text())
    assert ACTION in stats  # LeRobot recomputed the statistics
    assert checksum(videos) == before  # the source is never modified


def test_labels_an_action_less_lerobot_dataset_from_the_cli(smoke_checkpoint, tmp_path):
    source = tmp_path / "unlabeled"
    features = {"observation.images.top": {"dtype": "video", "shape": (64, 64, 3), "names": ["h", "w", "c"]}}
    with LeRobotWriter(source, fps=10, features=features, robot_type=None, meta={}) as writer:
        for frame in rollout_frames(3, steps=7):
            writer.add_frame({"observation.images.top": frame, "task": "push it"})
        writer.save_episode()
    before = checksum(source)
    out = tmp_path / "labeled"
    args = [str(source), "--checkpoint", str(smoke_checkpoint), "--embodiment", "arm2", "--denoising-steps", "1"]
    assert main(["label", *args, "--out", str(out)]) == 0
    data = read_lerobot(out)
    assert data.num_frames == 8 and data.tasks == ["push it"] and data.robot_type == "arm2"
    assert checksum(source) == before


def test_a_dataset_with_several_cameras_is_read_from_the_one_named(tmp_path):
    source = tmp_path / "two_cameras"
    image = {"dtype": "image", "shape": (64, 64, 3), "names": ["h", "w", "c"]}
    features = {"observation.images.side": image, "observation.images.wrist": image}
    frames = rollout_frames(3, steps=5)
    with LeRobotWriter(source, fps=10, features=features, robot_type=None, meta={}, video=False) as writer:
        for frame in frames:
            writer.add_frame({"observation.images.side": np.zeros_like(frame), "observation.images.wrist": frame,
                              "task": "push it"})  # fmt: skip
        writer.save_episode()
    wrist, _ = read_clips(source, 10.0, 64, camera="observation.images.wrist")
    np.testing.assert_array_equal(wrist[0].frames, frames)
    assert not read_clips(source, 10.0, 64)[0][0].frames.any()  # no camera named: the first, the black one
    with pytest.raises(ValueError, match="has no camera 'observation.images.top'"):
        read_clips(source, 10.0, 64, camera="observation.images.top")


def test_cli_label_and_one_line_errors(smoke_checkpoint, videos, tmp_path, capsys):
    out = tmp_path / "cli_labeled"
    args = [
        "label",
        str(videos),
        "--checkpoint",
        str(smoke_checkpoint),
        "--embodiment",
        "point",
        "--denoising-steps",
        "1",
    ]
    assert main([*args, "--out", str(out)]) == 0 and (out / "meta" / "info.json").is_file()
    capsys.readouterr()
    cases = {
        "unknown embodiment": (["--embodiment", "cartpole"], "cartpole"),
        "stride": (["--overwrite", "--stride", "9"], "stride=9"),
        "existing out": ([], "already exists"),
    }
    for extra, expected in cases.values():
        assert main([*args, "--out", str(out), *extra]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0]


def test_bad_inputs(model, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.mp4").write_text("not a video")
    with pytest.raises(ValueError, match="cannot be decoded"):
        label(bad, model, "point", tmp_path / "o1", progress=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="without .mp4"):
        label(empty, model, "point", tmp_path / "o2", progress=False)
    short = tmp_path / "short"
    write_video(short / "s.mp4", rollout_frames(4, steps=2), fps=10)
    with pytest.raises(ValueError, match="longer than the video"):
        label(short, model, "point", tmp_path / "o3", progress=False)
    odd = tmp_path / "odd"
    write_video(odd / "s.mp4", rollout_frames(4, steps=8), fps=25)
    with pytest.raises(ValueError, match="fps=25"):
        label(odd, model, "point", tmp_path / "o4", progress=False)
    with pytest.raises(ValueError, match="inside the source"):
        label(odd, model, "point", odd / "labeled", progress=False)


def test_an_interrupted_run_keeps_its_clips_and_resumes_to_the_same_dataset(model, videos, tmp_path, monkeypatch):
    whole = label(videos, model, "point", tmp_path / "whole", steps=1, progress=False)
    calls = {"n": 0}
    real = model.inverse_dynamics

    def counted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "inverse_dynamics", counted)
    with pytest.raises(KeyboardInterrupt):
        label(videos, model, "point", tmp_path / "partial", steps=1, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".partial.episodes", "whole"]  # clip 1 kept
    with pytest.raises(ValueError, match="resume: steps=2 but the stopped run used 1"):
        label(videos, model, "point", tmp_path / "partial", steps=2, progress=False, resume=True)
    label(videos, model, "point", tmp_path / "partial", steps=1, progress=False, resume=True)
    assert calls["n"] == 3, "resume labeled more than the missing clip"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["partial", "whole"]
    a, b = read_lerobot(whole), read_lerobot(tmp_path / "partial")
    for key in a.data:
        np.testing.assert_array_equal(a.data[key], b.data[key], err_msg=key)


def test_latent_labels_and_the_fitted_decoder(model, videos, tmp_path):
    out = label(videos, model, "latent", tmp_path / "latent", steps=1, progress=False)
    data = read_lerobot(out)
    assert (
        data.data[ACTION].shape[1] == 2
        and json.loads((out / "meta" / "cosmos_robot.json").read_text())["latent_reference"] in model.embodiments
    )
    # The decoder recovers an affine map exactly from enough labeled steps.
    rng = np.random.default_rng(0)
    latent = rng.normal(size=(50, 2))
    weight, bias = np.array([[0.5, -1.0], [2.0, 0.3]]), np.array([0.1, -0.2])
    decoder = fit_action_decoder(latent, latent @ weight + bias)
    np.testing.assert_allclose(decoder(latent), latent @ weight + bias, atol=1e-4)
    with pytest.raises(ValueError, match="same N"):
        fit_action_decoder(latent, latent[:10])


@pytest.mark.slow
def test_sigkill_during_labeling_then_resume_equals_an_uninterrupted_run(smoke_checkpoint, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    videos = tmp_path / "videos"
    for seed in range(12):
        write_video(videos / f"episode_{seed:02d}.mp4", rollout_frames(seed, steps=30), fps=10)
    args = ["label", str(videos), "--checkpoint", str(smoke_checkpoint), "--embodiment", "point"]
    spool = tmp_path / ".partial.episodes"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cosmos_robot.cli", *args, "--out", str(tmp_path / "partial")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while not list(spool.glob("episode_*.npz")):  # one clip is labeled and kept
        assert time.time() < deadline and proc.poll() is None, "label never kept a clip"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert not (tmp_path / "partial").exists()
    assert main([*args, "--out", str(tmp_path / "partial"), "--resume"]) == 0
    assert main([*args, "--out", str(tmp_path / "whole")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["partial", "videos", "whole"]
    a, b = read_lerobot(tmp_path / "whole"), read_lerobot(tmp_path / "partial")
    for key in a.data:
        # The killed child labeled its clips with its own torch thread count: sums may differ in the last bit.
        if key.endswith("spread"):
            # A spread near zero is the root of a variance made of such bits, which the root magnifies
            # (measured: 0 vs 9.4e-7), and the sampler's Euler steps carry the bits into the samples (two
            # variances 3.0e-10 (3.9 %) apart, measured with the smoke model's priors trained alone): compare
            # the variances, to a spread of ~3e-5 where it is zero.
            np.testing.assert_allclose(np.square(a.data[key]), np.square(b.data[key]), rtol=0, atol=1e-9, err_msg=key)
        else:
            np.testing.assert_allclose(a.data[key], b.data[key], rtol=0, atol=1e-6, err_msg=key)
