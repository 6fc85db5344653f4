"""Object-level fidelity: where the effector and the block are in imagined frames, against MuJoCo's frames.

PSNR charges a misplaced object twice and a missing one once, so a model that erases a small moving
object can beat one that draws it slightly off. These metrics read object positions instead: the
colour detector of :func:`cosmos_robot.policies.pixel_expert.perceive` finds the effector (the blue
pusher or fingertip) and the red block in each frame, and an imagined frame is judged against the
MuJoCo frame of the same step: is the object drawn where MuJoCo shows it, and how far from MuJoCo's
detection (not from MuJoCo's state: the detector's own error, its floor, is reported separately
against the true positions).
"""

from __future__ import annotations

import numpy as np

from cosmos_robot.envs.push_block_scene import GOAL_RADIUS, PUSHER_RADIUS
from cosmos_robot.metrics import bootstrap_interval
from cosmos_robot.policies.pixel_expert import perceive

OBJECTS = ("effector", "block")
# What :func:`locate` reads: the scored objects and the goal disc (where the effector overlaps it).
LOCATED = (*OBJECTS, "goal")
# The effector's centre within this of the goal disc's: the two overlap in the frame (table metres).
OVER_GOAL = GOAL_RADIUS + PUSHER_RADIUS


def locate(frames: np.ndarray) -> dict[str, np.ndarray]:
    """Detected (x, y) table positions in metres of each of :data:`LOCATED` in frames (..., H, W, 3):
    (..., 2), NaN where unseen."""
    frames = np.asarray(frames)
    flat = frames.reshape(-1, *frames.shape[-3:])
    out = {name: np.full((len(flat), 2), np.nan) for name in LOCATED}
    for i, frame in enumerate(flat):
        seen = perceive(frame)
        for name in LOCATED:
            if seen[name] is not None:
                out[name][i] = seen[name]
    return {name: positions.reshape(*frames.shape[:-3], 2) for name, positions in out.items()}


def object_metrics(real: np.ndarray, imagined: np.ndarray) -> dict[str, list[float | None]]:
    """Per horizon, for each object: how often the imagined frames show it where MuJoCo's do, and its error (mm).

    An object can leave MuJoCo's own frame (arm2's fingertip swings past the camera's edge in about a
    fifth of the noisy and random frames): an imagined frame that does not show it there is right, so
    ``found`` counts only the frames where MuJoCo shows the object, and ``spurious`` the others.

    Args:
        real: (E, H, height, width, 3) MuJoCo frames of steps 1..H.
        imagined: the learned env's frames of the same steps.

    Returns:
        per object and horizon: ``{object}_visible`` (share of the E MuJoCo frames that show it),
        ``{object}_found`` (share of those whose imagined frame shows it too), ``{object}_spurious`` (share
        of the others whose imagined frame shows it anyway), ``{object}_error_mm`` (mean distance to
        the detection on the MuJoCo frame where both show it) and ``{object}_error_mm_ci95`` (its 95 %
        bootstrap interval over the episodes); None where a share or mean has no frames.
    """
    real_at, imagined_at = locate(real), locate(imagined)
    metrics: dict[str, list[float | None]] = {}
    for name in OBJECTS:
        drawn = ~np.isnan(imagined_at[name][..., 0])  # (E, H)
        visible = ~np.isnan(real_at[name][..., 0])
        error = np.linalg.norm(imagined_at[name] - real_at[name], axis=-1) * 1000.0
        metrics[f"{name}_visible"] = visible.mean(0).tolist()
        metrics[f"{name}_found"] = _column_means(drawn, visible)
        metrics[f"{name}_spurious"] = _column_means(drawn, ~visible)
        metrics[f"{name}_error_mm"] = _column_means(error, drawn & visible)
        metrics[f"{name}_error_mm_ci95"] = [
            list(bootstrap_interval(error[both, h])) if both.any() else None
            for h, both in enumerate((drawn & visible).T)
        ]
    return metrics


def effector_found_by_place(real: np.ndarray, imagined: np.ndarray) -> dict[str, dict[str, int]]:
    """Where MuJoCo's frames show the effector, split by whether it overlaps the goal disc there: per place
    (``"over_goal"``, ``"elsewhere"``), how many frames show it (``shown``) and in how many of them the
    imagined frame shows it too (``found``).

    Overlaps are where a learned env loses the effector most (two colours in the same latent cells), and
    they are a few percent of the frames, so a per-horizon share hides them.

    Args:
        real: (..., height, width, 3) MuJoCo frames.
        imagined: the learned env's frames of the same steps.
    """
    real_at, imagined_at = locate(real), locate(imagined)
    shown = ~np.isnan(real_at["effector"][..., 0])
    drawn = ~np.isnan(imagined_at["effector"][..., 0])
    # A hidden goal (under the block) reads as NaN: the comparison is then False, "elsewhere".
    with np.errstate(invalid="ignore"):
        over = np.linalg.norm(real_at["effector"] - real_at["goal"], axis=-1) < OVER_GOAL
    return {
        place: {"shown": int((shown & where).sum()), "found": int((shown & where & drawn).sum())}
        for place, where in (("over_goal", over), ("elsewhere", ~over))
    }


def _column_means(values: np.ndarray, where: np.ndarray) -> list[float | None]:
    """Per column of (E, H) arrays: the mean of ``values`` over the rows ``where`` holds (None where none does);
    of a boolean array, that is a share."""
    return [float(values[where[:, h], h].mean()) if where[:, h].any() else None for h in range(values.shape[1])]


def detector_floor_mm(frames: np.ndarray, true_positions: dict[str, np.ndarray]) -> dict[str, float | None]:
    """Mean error (mm) of the detector on real frames against MuJoCo's true positions, per object.

    Args:
        frames: (..., H, W, 3) real frames.
        true_positions: per object, the (..., 2) true table positions at those frames.
    """
    seen = locate(frames)
    floor: dict[str, float | None] = {}
    for name in OBJECTS:
        error = np.linalg.norm(seen[name] - np.asarray(true_positions[name]), axis=-1) * 1000.0
        valid = ~np.isnan(error)
        floor[name] = float(error[valid].mean()) if valid.any() else None
    return floor
