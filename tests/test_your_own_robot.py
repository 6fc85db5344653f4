"""Your own robot, end to end from the command line: stock gymnasium MuJoCo envs the toolkit does not
register, a third-party env with its own constructor, and a dataset written with LeRobot's own
``LeRobotDataset.create`` at another camera key, image size and rate, through collect -> train ->
eval offline -> label -> ForwardDynamicsEnv -> eval policy (smoke size: the point is that every tool runs
on them, not how well)."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.cli import main
from cosmos_robot.datasets.lerobot_io import read_lerobot
from cosmos_robot.datasets.video_io import to_model_size
from cosmos_robot.envs import FORWARD_DYNAMICS_ID

SLIDER = "tests.envs.third_party_env:ThirdPartySlider-v0"
# env id -> (the robot_type collect records, episodes, extra collect flags)
ROBOTS = {
    "HalfCheetah-v5": ("halfcheetah-v5", 2, []),  # 20 fps: subsampled to the model's 10
    "Ant-v5": ("ant-v5", 3, []),  # a 105-D state: the model's state width grows to fit
    SLIDER: ("thirdpartyslider-v0", 3, ["--fps", "20"]),  # states no rate of its own
}


def _offline(checkpoint, dataset, out) -> dict:
    args = ["eval", "offline", "--checkpoint", str(checkpoint), "--dataset", str(dataset)]
    assert main(args + ["--episodes", "1", "--denoising-steps", "1", "--json", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.slow
def test_stock_and_third_party_envs_go_through_every_tool_from_the_cli(tmp_path):
    from cosmos_robot.envs.gym_adapter import make_env
    from cosmos_robot.world_model import WorldActionModel

    datasets = {}
    for env_id, (name, episodes, flags) in ROBOTS.items():
        out = tmp_path / name
        assert main(["collect", "--env", env_id, "--policy", "random", "--episodes", str(episodes)] + flags
                    + ["--out", str(out)]) == 0  # fmt: skip
        datasets[env_id] = out
    checkpoint = tmp_path / "ckpt"
    # The smoke recipe adds its point and arm2 data: one model, five embodiments.
    args = ["train", "--recipe", "smoke", "--data-dir", str(tmp_path / "data"), "--out", str(checkpoint)]
    assert main(args + ["--datasets"] + [str(d) for d in datasets.values()]) == 0
    model = WorldActionModel.from_pretrained(checkpoint)
    names = [name for name, _, _ in ROBOTS.values()]
    assert sorted(model.embodiments) == sorted(["point", "arm2", *names])
    assert model.fps == 10.0 and model.config.state_width == 112  # Ant's 105-D state, rounded up to 8

    for dataset in [tmp_path / "data" / "point", tmp_path / "data" / "arm2", *datasets.values()]:
        result = _offline(checkpoint, dataset, tmp_path / f"offline_{dataset.name}.json")
        assert result["episodes"] == 1 and math.isfinite(result["id_r2"]) and result["fd_windows"] >= 1

    video = next((datasets["HalfCheetah-v5"] / "videos").rglob("*.mp4"))
    labeled = tmp_path / "labeled"
    assert main(["label", str(video), "--checkpoint", str(checkpoint), "--embodiment", "halfcheetah-v5"]
                + ["--stride", "4", "--denoising-steps", "1", "--out", str(labeled)]) == 0  # fmt: skip
    written = read_lerobot(labeled)
    assert written.robot_type == "halfcheetah-v5" and written.data["action"].shape[1] == 6
    assert written.fps == 10  # the 20 fps video, labeled at the model's rate

    for env_id, (name, _, _) in ROBOTS.items():
        real = make_env(env_id)
        for start in (None, str(datasets[env_id])):  # the env's own reset, or a recorded episode's first frame
            env = gym.make(FORWARD_DYNAMICS_ID, checkpoint=str(checkpoint), embodiment=name, reference=env_id,
                           start=start, sampling_steps=1)  # fmt: skip
            assert env.action_space == real.action_space
            obs, _ = env.reset(seed=0)
            assert (
                obs["pixels"].shape == (64, 64, 3)
                and obs["agent_pos"].shape == real.observation_space["agent_pos"].shape
            )
            obs, reward, *_ = env.step(env.action_space.sample())
            assert env.observation_space.contains(obs) and np.isfinite(reward)
            env.close()
        real.close()
        out = tmp_path / f"policy_{name}.json"
        assert main(["eval", "policy", "--checkpoint", str(checkpoint), "--env", env_id, "--episodes", "1"]
                    + ["--max-steps", "3", "--denoising-steps", "1", "--json", str(out)]) == 0  # fmt: skip
        assert json.loads(out.read_text())["per_episode"][0]["length"] == 3


def _write_with_lerobot(root, fps: int = 30, episodes: int = 3, length: int = 45) -> None:
    """A 7-D arm (6 joint velocities + a gripper) seen by a 96x96 wrist camera and a 480x640 side camera,
    written with LeRobot's own API: a square moves by the first two velocities, its shade is the gripper."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    image = {"dtype": "image", "names": ["height", "width", "channels"]}
    features = {
        "observation.images.wrist": image | {"shape": (96, 96, 3)},
        "observation.images.side": image | {"shape": (480, 640, 3)},
        "observation.state": {"dtype": "float32", "shape": (7,), "names": None},
        "action": {"dtype": "float32", "shape": (7,), "names": None},
    }
    dataset = LeRobotDataset.create("local/my_arm", fps=fps, features=features, root=root, robot_type="my_arm",
                                    use_videos=False)  # fmt: skip
    rng = np.random.default_rng(0)
    for _ in range(episodes):
        state = np.zeros(7, np.float32)
        for _ in range(length):
            action = rng.uniform(-1, 1, 7).astype(np.float32)
            wrist = np.full((96, 96, 3), 30, np.uint8)
            x, y = (np.clip(48 + 30 * np.tanh(state[:2]), 8, 88)).astype(int)
            wrist[y - 8 : y + 8, x - 8 : x + 8] = int(100 + 100 * (state[6] > 0))
            side = np.zeros((480, 640, 3), np.uint8)
            dataset.add_frame({"observation.images.wrist": wrist, "observation.images.side": side,
                               "observation.state": state.copy(), "action": action, "task": "reach"})  # fmt: skip
            state = state + action / fps
        dataset.save_episode()
    dataset.finalize()


@pytest.mark.slow
def test_a_dataset_written_with_lerobot_at_another_camera_size_and_rate_trains(tmp_path):
    from cosmos_robot.world_model import WorldActionModel

    source = tmp_path / "my_arm"
    _write_with_lerobot(source)
    declaration = tmp_path / "robots.json"
    declaration.write_text(json.dumps({"my_arm": {
        "components": [{"kind": "joint_vel", "dim": 6}, {"kind": "gripper", "dim": 1}],
        "camera": "observation.images.wrist",
    }}))  # fmt: skip
    checkpoint = tmp_path / "ckpt"
    args = ["train", "--recipe", "smoke", "--data-dir", str(tmp_path / "data"), "--datasets", str(source)]
    assert main(args + ["--declare", str(declaration), "--out", str(checkpoint)]) == 0
    model = WorldActionModel.from_pretrained(checkpoint)
    entry = model.processor.entry("my_arm")
    assert entry.camera == "observation.images.wrist" and entry.embodiment.rate_hz == 30.0
    assert model.action_names("my_arm")[-1].startswith("gripper") and len(model.action_names("my_arm")) == 7
    result = _offline(checkpoint, source, tmp_path / "offline.json")  # 30 fps read at 10, wrist camera, 64x64
    assert result["embodiment"] == "my_arm" and math.isfinite(result["id_r2"])
    # No env to imitate: the learned env takes its spaces and starts from the recordings.
    env = gym.make(FORWARD_DYNAMICS_ID, checkpoint=str(checkpoint), embodiment="my_arm", start=str(source),
                   sampling_steps=1)  # fmt: skip
    obs, _ = env.reset(seed=0)
    assert obs["pixels"].shape == (64, 64, 3) and obs["agent_pos"].shape == (7,)
    assert env.metadata["render_fps"] == 10.0  # the model's rate, not the 30 fps recording's
    assert env.action_space.shape == (7,) and env.action_space.low.min() >= -1 and env.action_space.high.max() <= 1
    assert env.observation_space.contains(env.step(env.action_space.sample())[0])
    # The wrist camera, not the side one: a start frame is the recorded wrist frame, cropped to the model's size.
    first = read_lerobot(source).data["observation.images.wrist"][0]
    assert np.abs(obs["pixels"].astype(int) - to_model_size(first[None], 64)[0].astype(int)).max() <= 1
