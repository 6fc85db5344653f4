"""The block oracle: reads real PushBlock datasets, learns pushes, and its harness tells a good model from a bad one."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.eval.block_oracle import (
    BlockEpisode,
    _features,
    _targets,
    evaluate_block_oracle,
    fit_block_dynamics,
    read_block_episodes,
    score_block_dynamics,
    simulated_block_episodes,
)


class _Replay:
    """A 'model' that returns each step's recorded next pose: the harness must score it zero."""

    def step(self, episode: BlockEpisode, t: np.ndarray, poses: np.ndarray, poses_before: np.ndarray) -> np.ndarray:
        return episode.poses[t + 1]


class _StandStill:
    """A 'model' whose block never moves: the harness must score it as copy-last."""

    def step(self, episode: BlockEpisode, t: np.ndarray, poses: np.ndarray, poses_before: np.ndarray) -> np.ndarray:
        return poses.copy()


def test_reads_block_poses_of_a_collected_dataset(point_images_dataset):
    episodes = read_block_episodes(point_images_dataset)
    assert len(episodes) == 4
    for e in episodes:
        assert len(e.states) == len(e.actions) == len(e.poses) == len(e.effector) > 1
        assert e.poses.shape[1] == 3 and np.all(np.abs(e.poses[:, :2]) < 0.5)  # on the table, metres
        np.testing.assert_allclose(e.effector, e.states[:, :2], atol=1e-6)  # the point robot's state is its place
    # The noisy expert pushes the block in some episode.
    assert max(np.linalg.norm(e.poses[-1, :2] - e.poses[0, :2]) for e in episodes) > 0.01


def test_block_pose_names_in_lerobots_axes_form_are_read(tmp_path, point_images_dataset):
    import json
    import shutil

    root = tmp_path / "axes"
    shutil.copytree(point_images_dataset, root)
    info_path = root / "meta" / "info.json"
    info = json.loads(info_path.read_text())
    spec = info["features"]["observation.environment_state"]
    spec["names"] = {"axes": list(spec["names"])}
    info_path.write_text(json.dumps(info))
    expected = read_block_episodes(point_images_dataset)
    episodes = read_block_episodes(root)
    assert len(episodes) == len(expected)
    np.testing.assert_array_equal(episodes[0].poses, expected[0].poses)


def test_a_dataset_without_block_poses_is_refused_by_name(tmp_path):
    from cosmos_robot.collect import collect

    out = tmp_path / "reacher"
    collect("Reacher-v5", 1, out, seed=0, video=False, progress=False)
    with pytest.raises(ValueError, match="observation.environment_state.*block_x"):
        read_block_episodes(out)


def test_the_harness_scores_a_replay_zero_and_a_still_block_as_copy_last(point_images_dataset):
    episodes = read_block_episodes(point_images_dataset)
    replay = score_block_dynamics(_Replay(), episodes, horizon=4, stride=1, moved_mm=0.0)
    still = score_block_dynamics(_StandStill(), episodes, horizon=4, stride=1, moved_mm=0.0)
    assert replay["one_step_mm_pushed"] < 1e-6 and replay["rollout_mm"] < 1e-6
    assert replay["push_fraction_median"] == pytest.approx(1.0)
    assert still["push_fraction_median"] == 0.0
    assert still["one_step_mm_pushed"] == pytest.approx(still["copy_mm_pushed"])
    assert still["copy_mm_pushed"] > 2.0
    assert still["rollout_mm"] == pytest.approx(still["rollout_copy_mm"])
    assert still["rollout_copy_mm"] > 0.0


def test_a_fitted_oracle_beats_a_still_block_on_its_own_pushes(point_images_dataset):
    episodes = read_block_episodes(point_images_dataset)
    model = fit_block_dynamics(episodes, steps=300, seed=0)
    fitted = score_block_dynamics(model, episodes, horizon=4, stride=1)
    assert fitted["one_step_mm_pushed"] < 0.5 * fitted["copy_mm_pushed"]
    assert 0.5 < fitted["push_fraction_median"] < 1.5


def test_split_and_arguments(point_images_dataset):
    episodes = read_block_episodes(point_images_dataset)
    result, _ = evaluate_block_oracle([episodes], train_fraction=0.5, steps=5, horizon=4)
    assert result.train_episodes == 2  # 4 episodes: 1 held out, half of the other 3 rounded
    with pytest.raises(ValueError, match="train_fraction=0"):
        evaluate_block_oracle([episodes], train_fraction=0.0)
    with pytest.raises(ValueError, match="steps=0"):
        fit_block_dynamics(episodes, steps=0)


def test_simulated_episodes_train_beside_the_datasets_and_leave_the_held_out_split(point_images_dataset):
    episodes = read_block_episodes(point_images_dataset)
    simulated = simulated_block_episodes("point", 6, progress=False)
    assert len(simulated) == 6 and all(len(e.poses) == len(e.states) == len(e.effector) for e in simulated)
    assert any(not np.allclose(e.poses[0], e.poses[-1]) for e in simulated)  # they push the block
    plain, _ = evaluate_block_oracle([episodes], steps=5, horizon=4)
    more, _ = evaluate_block_oracle([episodes], steps=5, horizon=4, extra_train=simulated)
    assert more.train_episodes == plain.train_episodes + 6 and more.windows == plain.windows


def test_a_push_is_learned_once_for_every_place_and_yaw():
    # The oracle reads a push in the block's frame: the same push turned and moved elsewhere has the same
    # inputs and the same block-frame outcome.
    rng = np.random.default_rng(0)
    effector = np.array([[-0.05, 0.0], [-0.04, 0.0]])
    poses = np.array([[0.0, 0.0, 0.1], [0.01, 0.0, 0.1]])
    episode = BlockEpisode(np.zeros((2, 2)), np.zeros((2, 2)), poses, effector)
    t = np.array([0])
    reference = _features(episode, t, poses[:1], poses[:1])
    for _ in range(3):
        turn, shift = rng.uniform(-0.5, 0.5), rng.uniform(-0.05, 0.05, 2)  # the yaw stays within its fold
        rotation = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
        moved_poses = np.concatenate([poses[:, :2] @ rotation.T + shift, poses[:, 2:] + turn], 1)
        moved = BlockEpisode(episode.states, episode.actions, moved_poses, effector @ rotation.T + shift)
        features = _features(moved, t, moved_poses[:1], moved_poses[:1])
        np.testing.assert_allclose(features[:, :8], reference[:, :8], atol=1e-5)  # all but table place, action
        np.testing.assert_allclose(_targets(moved), _targets(episode), atol=1e-4)
