"""Object-level fidelity on an oracle (MuJoCo's own frames), a broken model (blank frames) and a shifted one."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from cosmos_robot.eval.objects import detector_floor_mm, effector_found_by_place, locate, object_metrics
from cosmos_robot.policies.scripted import ScriptedExpert
from cosmos_robot.rollout import run_episode


@pytest.fixture(scope="module", params=["cosmos_robot/PushBlockPoint-v0", "cosmos_robot/PushBlockArm2-v0"])
def episodes(request):
    env = gym.make(request.param)
    runs = [run_episode(env, ScriptedExpert.for_env(env, seed=s).act, s, max_steps=8) for s in (1, 2, 3)]
    env.close()
    frames = np.stack([r.frames()[1:] for r in runs])  # (E, H, 64, 64, 3)
    truth = {
        "effector": np.stack([[i["effector_pos"] for i in r.infos[1:]] for r in runs]),
        "block": np.stack([[i["block_pose"][:2] for i in r.infos[1:]] for r in runs]),
    }
    return frames, truth


def test_the_oracle_scores_perfectly(episodes):
    frames, _ = episodes
    metrics = object_metrics(frames, frames)
    for name in ("effector", "block"):
        assert metrics[f"{name}_found"] == [1.0] * frames.shape[1], name
        assert metrics[f"{name}_error_mm"] == [0.0] * frames.shape[1], name
        assert metrics[f"{name}_error_mm_ci95"] == [[0.0, 0.0]] * frames.shape[1], name


def test_a_model_that_erases_objects_finds_nothing(episodes):
    frames, _ = episodes
    blank = np.broadcast_to(np.full(3, 200, np.uint8), frames.shape)
    metrics = object_metrics(frames, blank)
    assert metrics["effector_found"] == [0.0] * frames.shape[1] and metrics["effector_error_mm"][0] is None


def test_an_object_mujoco_does_not_show_is_not_missed_when_the_imagined_frame_omits_it(episodes):
    # arm2's fingertip can leave the camera's view: where MuJoCo's frame does not show an object, an
    # imagined frame without it is right (not "not found"), and one that draws it is spurious.
    frames, _ = episodes
    real = frames.copy()
    real[0] = 200  # episode 0: nothing in view
    horizon = frames.shape[1]
    right = object_metrics(real, real)
    assert right["effector_found"] == [1.0] * horizon and right["effector_spurious"] == [0.0] * horizon
    assert right["effector_visible"] == pytest.approx([2 / 3] * horizon)
    drawn = object_metrics(real, frames)
    assert drawn["effector_found"] == [1.0] * horizon and drawn["effector_spurious"] == [1.0] * horizon
    assert object_metrics(frames, frames)["effector_spurious"] == [None] * horizon  # always in view


def test_a_shifted_frame_reads_as_the_shift_in_mm(episodes):
    frames, _ = episodes
    shifted = np.roll(frames, 3, axis=-2)  # 3 pixels to the right: 3 * 6.9 mm
    errors = object_metrics(frames, shifted)["block_error_mm"]
    assert all(e == pytest.approx(3 * 2 * 220 / 64, abs=1.0) for e in errors)


def test_the_detector_floor_on_real_frames_is_a_few_mm(episodes):
    frames, truth = episodes
    floor = detector_floor_mm(frames, truth)
    assert 0 < floor["effector"] < 10 and 0 < floor["block"] < 10
    assert locate(frames)["block"].shape == (*frames.shape[:2], 2)


def test_the_error_interval_spans_the_episodes_spread(episodes):
    # One episode shifted 3 pixels, the others exact: the mean is a third of the shift, and the interval
    # runs from a resample without that episode (0) to one made only of it.
    frames, _ = episodes
    imagined = frames.copy()
    imagined[0] = np.roll(frames[0], 3, axis=-2)
    metrics = object_metrics(frames, imagined)
    shift = 3 * 2 * 220 / 64
    for mean, (low, high) in zip(metrics["block_error_mm"], metrics["block_error_mm_ci95"], strict=True):
        assert mean == pytest.approx(shift / 3, abs=0.5)
        assert low == pytest.approx(0.0, abs=1e-9) and shift / 3 < high <= shift + 1.0


def test_an_effector_lost_over_the_goal_is_counted_there(episodes):
    # The real frame gets the effector moved onto the goal disc; the imagined frame paints it goal-green.
    from cosmos_robot.policies.pixel_expert import _mask

    frames, _ = episodes
    real = frames[:1, :1].copy()
    frame = real[0, 0]
    blue, green = _mask(frame, "blue"), _mask(frame, "green")
    rows, cols = np.nonzero(blue)
    goal_rows, goal_cols = np.nonzero(green)
    shift = (int(round(goal_rows.mean() - rows.mean())), int(round(goal_cols.mean() - cols.mean())))
    colour, goal_colour = frame[blue][0].copy(), frame[green][0].copy()
    frame[blue] = frame[~(blue | green | _mask(frame, "red"))][0]
    frame[np.roll(blue, shift, axis=(0, 1))] = colour
    imagined = real.copy()
    imagined[0, 0][_mask(imagined[0, 0], "blue")] = goal_colour
    counts = effector_found_by_place(real, imagined)
    assert counts == {"over_goal": {"shown": 1, "found": 0}, "elsewhere": {"shown": 0, "found": 0}}
    # MuJoCo's own frames: every effector found, wherever it is.
    oracle = effector_found_by_place(frames, frames)
    assert (
        sum(c["found"] for c in oracle.values())
        == sum(c["shown"] for c in oracle.values())
        == frames.shape[0] * frames.shape[1]
    )
