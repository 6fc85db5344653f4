"""Labeling unlabeled video with actions: inverse dynamics written as a NEW LeRobot dataset.

Input: an mp4 file, a folder of mp4 files, or a LeRobot dataset with video but no ``action``.
Frames are centre-cropped to a square and resized to the model's input (``datasets/video_io.py``);
a video at an integer multiple of the model's frame rate is subsampled to it. Overlapping inverse-
dynamics windows are averaged (temporal ensemble) and their spread is kept per step as
``action_spread`` (standard deviation across the windows that cover a step; lower is more confident).

Output: a LeRobot v3 dataset with the frames (``observation.images.top``), ``action`` in the
embodiment's raw units, ``action_spread``, the task string, provenance in ``meta/cosmos_robot.json``
and LeRobot's recomputed statistics. A video of N frames has N - 1 inferred actions; the last frame
repeats the last action (as a held command) with its spread. The source is only read; the output
appears at ``out`` only when complete.

``embodiment="latent"`` labels in the shared action space (the normalised values a reference
embodiment's projection decodes); :func:`fit_action_decoder` maps those to a new robot's units from
a few labeled episodes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from cosmos_robot.atomic import check_output_path
from cosmos_robot.datasets.episode_spool import EpisodeSpool
from cosmos_robot.datasets.for_model import learned_camera, pick_camera
from cosmos_robot.datasets.lerobot_io import LeRobotWriter
from cosmos_robot.datasets.video_io import match_fps, read_video, to_model_size
from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import ACTION, DEFAULT_CAMERA, OBS_IMAGES_PREFIX
from cosmos_robot.world_model import load_world_model

LATENT = "latent"
SPREAD = "action_spread"
DEFAULT_TASK = "unlabeled video"


@dataclass
class Clip:
    """One video to label: model-size frames at the model's fps."""

    name: str
    frames: np.ndarray
    task: str


def _mp4s(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".mp4")
    if not files:
        raise ValueError(f"input={str(folder)!r} is a folder without .mp4 files; expected videos to label")
    return files


def read_clips(
    source: str | os.PathLike,
    model_fps: float,
    size: int,
    fps: float | None = None,
    task: str | None = None,
    camera: str | None = None,
) -> tuple[list[Clip], float]:
    """The clips of ``source`` at the model's size and rate (a dataset's ``camera`` where it has several;
    None: its first); returns (clips, the source's fps)."""
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(f"input={str(source)!r} does not exist")
    if (source / "meta" / "info.json").is_file():
        from cosmos_robot.datasets.lerobot_io import read_lerobot

        episodes = read_lerobot(source)
        if ACTION in episodes.data:
            raise ValueError(f"input={str(source)!r} already has {ACTION!r}; expected a dataset without actions")
        if not episodes.image_keys:
            raise ValueError(f"input={str(source)!r} has no camera feature; expected video")
        source_fps = float(fps or episodes.fps)
        camera = pick_camera(episodes.image_keys, camera, f"input={str(source)!r}")
        clips = []
        for ep in range(episodes.num_episodes):
            start, stop = episodes.episode_bounds(ep)
            tasks = episodes.data.get("task_index")
            ep_task = task or (episodes.tasks[int(tasks[start])] if tasks is not None else DEFAULT_TASK)
            frames = to_model_size(np.asarray(episodes.data[camera][start:stop]), size)
            frames = match_fps(frames, source_fps, model_fps)
            clips.append(Clip(f"episode {ep}", frames, ep_task))
        return clips, source_fps
    files = _mp4s(source) if source.is_dir() else [source]
    clips, rates = [], set()
    for path in files:
        frames, file_fps = read_video(path)
        rate = fps or file_fps
        if rate is None:
            raise ValueError(f"video={str(path)!r} does not state its fps; pass --fps")
        rates.add(float(rate))
        frames = match_fps(to_model_size(frames, size), float(rate), model_fps)
        clips.append(Clip(path.name, frames, task or DEFAULT_TASK))
    if len(rates) > 1:
        raise ValueError(f"input={str(source)!r} mixes frame rates {sorted(rates)}; expected one")
    return clips, rates.pop()


def label(
    source: str | os.PathLike,
    checkpoint: str | os.PathLike | WorldModel,
    embodiment: str,
    out: str | os.PathLike,
    *,
    fps: float | None = None,
    stride: int = 1,
    steps: int = 10,
    seed: int = 0,
    task: str | None = None,
    latent_reference: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    resume: bool = False,
) -> Path:
    """Label ``source`` with ``checkpoint``'s inverse dynamics and write a new LeRobot dataset at ``out``.

    Args:
        source: an mp4 file, a folder of mp4 files, or a LeRobot dataset without actions.
        checkpoint: a checkpoint folder, ``"default"``, or a loaded model.
        embodiment: one of the model's embodiments, or ``"latent"`` for shared-space actions.
        out: the new dataset's root (must not exist unless ``overwrite``).
        fps: the source's frame rate when the file does not say (or to override it).
        stride: frames between window starts (1 = every window, the most averaging).
        steps: denoising steps.
        seed: seeds the sampling noise.
        task: the task string written with every frame (default: the source's, else "unlabeled video").
        latent_reference: with ``embodiment="latent"``, the known embodiment whose projection decodes
            the shared space (default: the model's first).
        overwrite: replace an existing ``out``.
        progress: show a progress bar.
        resume: continue a stopped run with the same arguments from its last complete clip (finished
            clips wait in ``.<out>.episodes/`` until the dataset is written).
    """
    model = load_world_model(checkpoint)
    if not isinstance(stride, int) or not 1 <= stride < model.num_frames:
        raise ValueError(f"stride={stride!r}; expected an integer in 1..{model.num_frames - 1}")
    source, out = Path(source), Path(out)
    if out.resolve() == source.resolve() or source.resolve() in out.resolve().parents:
        raise ValueError(f"out={str(out)!r} is inside the source; expected a new folder (the source is never modified)")
    if embodiment == LATENT:
        reference = latent_reference or model.embodiments[0]
        if reference not in model.embodiments:
            raise ValueError(f"latent_reference={reference!r}; expected one of {model.embodiments}")
    elif embodiment not in model.embodiments:
        raise ValueError(f"embodiment={embodiment!r} is unknown; expected one of {model.embodiments} or 'latent'")
    else:
        reference = embodiment
    check_output_path(out, overwrite)
    camera = learned_camera(model, reference)
    clips, source_fps = read_clips(source, model.fps, model.image_size, fps=fps, task=task, camera=camera)
    for clip in clips:
        if len(clip.frames) < model.num_frames:
            raise ValueError(
                f"{clip.name} has {len(clip.frames)} frames at {model.fps:g} fps; the window is "
                f"{model.num_frames} frames (longer than the video)"
            )
    names = model.action_names(reference)
    action_dim = len(names)
    size = model.image_size
    if embodiment == LATENT:
        names = [f"{LATENT}_{i}" for i in range(action_dim)]
    features: dict[str, dict[str, Any]] = {
        f"{OBS_IMAGES_PREFIX}{DEFAULT_CAMERA}": {
            "dtype": "video",
            "shape": (size, size, 3),
            "names": ["height", "width", "channels"],
        },
        ACTION: {"dtype": "float32", "shape": (action_dim,), "names": names},
        SPREAD: {"dtype": "float32", "shape": (action_dim,), "names": [f"{n}_spread" for n in names]},
    }
    meta = {
        "labeled_by": "cosmos_robot.label",
        "checkpoint": str(checkpoint) if isinstance(checkpoint, str | os.PathLike) else "<in-memory model>",
        "source": str(source.resolve()),
        "source_fps": source_fps,
        "embodiment": embodiment,
        "latent_reference": reference if embodiment == LATENT else None,
        "window": model.num_frames,
        "stride": stride,
        "steps": steps,
        "clips": [c.name for c in clips],
    }
    spool = EpisodeSpool(out, meta | {"seed": seed, "task": task}, resume=resume, overwrite=overwrite)
    first = spool.count()
    for index in tqdm(range(first, len(clips)), initial=first, total=len(clips), desc="label", disable=not progress):
        clip = clips[index]
        actions, spread = model.inverse_dynamics(
            clip.frames,
            reference,
            steps=steps,
            seed=seed,
            return_spread=True,
            stride=stride,
            normalized=embodiment == LATENT,
        )
        actions = np.concatenate([actions[0], actions[0, -1:]])  # the last frame holds the last command
        spread = np.concatenate([spread[0], spread[0, -1:]])
        frames = [
            {
                f"{OBS_IMAGES_PREFIX}{DEFAULT_CAMERA}": frame,
                ACTION: actions[i].astype(np.float32),
                SPREAD: spread[i].astype(np.float32),
                "task": clip.task,
            }
            for i, frame in enumerate(clip.frames)
        ]
        spool.add(index, frames)
    # Written from the spool, resumed or not: an interrupted run's dataset is an uninterrupted one's.
    with LeRobotWriter(
        out,
        fps=int(round(model.fps)),
        features=features,
        robot_type=None if embodiment == LATENT else embodiment,
        meta=meta,
        overwrite=overwrite,
        video=True,
    ) as writer:
        spool.write_to(writer, len(clips))
    spool.remove()
    return out


@dataclass
class ActionDecoder:
    """Affine map from shared-space (latent) labels to a robot's raw actions: ``raw = latent @ weight + bias``."""

    weight: np.ndarray
    bias: np.ndarray

    def __call__(self, latent: np.ndarray) -> np.ndarray:
        """Raw actions (..., A) of latent labels (..., L)."""
        return (np.asarray(latent, np.float64) @ self.weight + self.bias).astype(np.float32)

    def to_dict(self) -> dict[str, list]:
        """JSON-ready form."""
        return {"weight": self.weight.tolist(), "bias": self.bias.tolist()}


def fit_action_decoder(latent: np.ndarray, true: np.ndarray, ridge: float = 1e-6) -> ActionDecoder:
    """Least squares (with a bias and a tiny ridge) from latent labels (N, L) to true raw actions (N, A)."""
    latent, true = np.asarray(latent, np.float64), np.asarray(true, np.float64)
    if latent.ndim != 2 or true.ndim != 2 or len(latent) != len(true):
        raise ValueError(f"latent {latent.shape} and true {true.shape}; expected (N, L) and (N, A) with the same N")
    if len(latent) <= latent.shape[1]:
        raise ValueError(f"{len(latent)} labeled steps for {latent.shape[1]} latent dims; expected more steps")
    x = np.concatenate([latent, np.ones((len(latent), 1))], 1)
    solution = np.linalg.solve(x.T @ x + ridge * np.eye(x.shape[1]), x.T @ true)
    return ActionDecoder(solution[:-1], solution[-1])
