"""LeRobot v3 datasets: write through LeRobot's own API, atomically; read back into :class:`EpisodeArrays`."""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
from pathlib import Path
from types import TracebackType
from typing import Any

import av
import datasets
import numpy as np

# Nothing is fetched at run time: a local root must never turn into a hub download.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from lerobot.configs.video import RGBEncoderConfig  # noqa: E402
from lerobot.datasets.lerobot_dataset import LeRobotDataset  # noqa: E402
from lerobot.datasets.video_utils import decode_video_frames  # noqa: E402

from cosmos_robot.atomic import atomic_directory  # noqa: E402
from cosmos_robot.datasets.episodes import EpisodeArrays  # noqa: E402
from cosmos_robot.json_values import plain  # noqa: E402
from cosmos_robot.keys import LEROBOT_INDEX_KEYS, META_FILE  # noqa: E402

VIDEO_BACKEND = "pyav"  # torchcodec needs system FFmpeg libraries these machines lack


def video_encoder() -> RGBEncoderConfig:
    """H.264, constant quality 0, full-resolution chroma.

    LeRobot's default (AV1, CRF 30, 4:2:0) decodes our 64x64 frames at ~31 dB PSNR: halving the
    chroma resolution smears 6-pixel coloured objects. This setting decodes at ~50 dB (only the
    RGB->YUV rounding is lost), with files about the same size at this resolution.
    """
    return RGBEncoderConfig(vcodec="h264", crf=0, pix_fmt="yuv444p", g=10)


def repo_id_for(root: str | os.PathLike) -> str:
    """A local repo id for a dataset root (LeRobot wants one; nothing is pushed)."""
    return f"local/{Path(root).name}"


def _quiet_lerobot() -> None:
    # LeRobot logs every encoded video at INFO; the CLI shows its own progress instead.
    for name in ("lerobot", "libav", "datasets"):
        logging.getLogger(name).setLevel(logging.WARNING)
    datasets.disable_progress_bars()  # one "Map" bar per saved episode otherwise
    _quiet_ffmpeg()


def _quiet_ffmpeg() -> None:
    """Raise FFmpeg's own log threshold to errors.

    LeRobot restores FFmpeg's default log callback after each encode, and libx264 then prints a
    dozen statistics lines per episode to stderr; PyAV's ``set_level`` only filters its Python
    bridge, so set the threshold in PyAV's bundled libavutil itself.
    """
    libs = Path(av.__file__).parent.parent / "av.libs"
    for lib in sorted(libs.glob("libavutil*.so*")):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(str(lib)).av_log_set_level(16)  # AV_LOG_ERROR


class LeRobotWriter:
    """Write episodes as a LeRobot v3 dataset at ``out``, which appears only once it is complete.

    Use as a context manager: ``add_frame`` for every step, ``save_episode`` at each episode end;
    leaving the block normally finalises the dataset, writes our sidecar metadata and renames it
    into place; an exception (Ctrl-C included) leaves ``out`` untouched.

    Args:
        out: the dataset root to create.
        fps: frames per second.
        features: LeRobot features (without LeRobot's own index columns).
        robot_type: stored in ``info.json``; we use the embodiment name.
        meta: provenance written to ``meta/cosmos_robot.json``.
        overwrite: replace an existing ``out``.
        video: encode camera streams as mp4 (else lossless PNG images in parquet).
    """

    def __init__(
        self,
        out: str | os.PathLike,
        *,
        fps: int,
        features: dict[str, dict[str, Any]],
        robot_type: str | None,
        meta: dict[str, Any],
        overwrite: bool = False,
        video: bool = True,
    ) -> None:
        self.out = Path(out)
        self.fps = int(fps)
        self.video = video
        self.robot_type = robot_type
        self.meta = meta
        self.features = {k: _writable_feature(v, video) for k, v in features.items() if k not in LEROBOT_INDEX_KEYS}
        self._atomic = atomic_directory(self.out, overwrite=overwrite)
        self.dataset: LeRobotDataset | None = None
        self.root: Path | None = None

    def __enter__(self) -> LeRobotWriter:
        _quiet_lerobot()
        self.root = self._atomic.__enter__()
        self.dataset = LeRobotDataset.create(
            repo_id_for(self.out),
            fps=self.fps,
            features=self.features,
            root=self.root,
            robot_type=self.robot_type,
            use_videos=self.video,
            video_backend=VIDEO_BACKEND,
            rgb_encoder=video_encoder() if self.video else None,
        )
        return self

    def add_frame(self, frame: dict[str, Any]) -> None:
        """Add one step: every feature key plus ``"task"``."""
        self.dataset.add_frame(frame)

    def save_episode(self) -> None:
        """Close the current episode (encodes its video)."""
        self.dataset.save_episode()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if exc_type is None:
            self.dataset.finalize()
            (self.root / META_FILE).write_text(json.dumps(plain(self.meta), indent=2))
        elif self.dataset is not None:
            # LeRobot's writers flush in __del__: close them now, into the staging folder about to be
            # removed, rather than at garbage collection, when they would re-create it.
            with contextlib.suppress(Exception):
                self.dataset.finalize()
                self.dataset.meta.finalize()
        self.dataset = None
        return self._atomic.__exit__(exc_type, exc, tb)


def _writable_feature(spec: dict[str, Any], video: bool) -> dict[str, Any]:
    """A feature spec as ``create`` takes it: camera dtype chosen here, LeRobot's own codec info dropped."""
    spec = {k: v for k, v in spec.items() if k != "info"}
    if spec["dtype"] in ("video", "image"):
        spec["dtype"] = "video" if video else "image"
    spec["shape"] = tuple(spec["shape"])
    return spec


def load_lerobot(root: str | os.PathLike, **kwargs: Any) -> LeRobotDataset:
    """Open a local LeRobot dataset offline, with the pyav video backend."""
    root = Path(root)
    if not (root / "meta" / "info.json").is_file():
        raise FileNotFoundError(f"dataset={str(root)!r} is not a LeRobot dataset (no meta/info.json)")
    _quiet_lerobot()
    return LeRobotDataset(repo_id_for(root), root=root, video_backend=VIDEO_BACKEND, **kwargs)


def read_sidecar(root: str | os.PathLike) -> dict[str, Any]:
    """Our provenance metadata of a dataset root, or {} if it has none (a dataset made elsewhere)."""
    path = Path(root) / META_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def read_lerobot(root: str | os.PathLike) -> EpisodeArrays:
    """Read a whole LeRobot dataset into memory as :class:`EpisodeArrays` (video decoded to uint8)."""
    dataset = load_lerobot(root)
    meta = dataset.meta
    features = {k: v for k, v in meta.features.items() if k not in LEROBOT_INDEX_KEYS}
    table = dataset.hf_dataset.with_format(None)
    episode_index = np.asarray(table["episode_index"], dtype=np.int64)
    episode_ends = grouped_episode_ends(episode_index, root)

    data: dict[str, np.ndarray] = {}
    for key, spec in features.items():
        if spec["dtype"] == "video":
            data[key] = _decode_episodes(dataset, key, episode_index)
        elif spec["dtype"] == "image":
            data[key] = np.stack([np.asarray(img.convert("RGB"), dtype=np.uint8) for img in table[key]])
        else:
            data[key] = np.asarray(table[key], dtype=np.dtype(spec["dtype"])).reshape(-1, *spec["shape"])
    data["task_index"] = np.asarray(table["task_index"], dtype=np.int64)
    tasks = meta.tasks.sort_values("task_index").index.tolist()
    return EpisodeArrays(
        data=data,
        episode_ends=episode_ends,
        fps=float(meta.fps),
        features=features,
        tasks=tasks,
        robot_type=meta.robot_type,
        meta=read_sidecar(root),
    )


def grouped_episode_ends(episode_index: np.ndarray, root: str | os.PathLike) -> np.ndarray:
    """Exclusive end row of each episode of a dataset whose rows are grouped by ``episode_index``."""
    episode_index = np.asarray(episode_index)
    if np.any(np.diff(episode_index) < 0):
        raise ValueError(f"dataset={str(root)!r}: rows are not grouped by episode; expected LeRobot's layout")
    return np.flatnonzero(np.diff(np.concatenate([episode_index, [-1]])) != 0) + 1


def _decode_episodes(dataset: LeRobotDataset, key: str, episode_index: np.ndarray) -> np.ndarray:
    """All frames of one camera, decoded episode by episode as (N, H, W, 3) uint8."""
    chunks = []
    for ep in np.unique(episode_index):
        ep_meta = dataset.meta.episodes[int(ep)]
        length = int(np.sum(episode_index == ep))
        start = ep_meta[f"videos/{key}/from_timestamp"]
        timestamps = [start + i / dataset.meta.fps for i in range(length)]
        path = dataset.root / dataset.meta.get_video_file_path(int(ep), key)
        frames = decode_video_frames(path, timestamps, dataset.tolerance_s, VIDEO_BACKEND, return_uint8=True)
        chunks.append(frames.permute(0, 2, 3, 1).numpy())  # (T, C, H, W) -> (T, H, W, C)
    return np.concatenate(chunks)


def write_lerobot(
    episodes: EpisodeArrays, out: str | os.PathLike, *, overwrite: bool = False, video: bool = False
) -> Path:
    """Write :class:`EpisodeArrays` as a LeRobot dataset (lossless PNG images unless ``video``)."""
    tasks = np.asarray(episodes.data["task_index"][:])
    with LeRobotWriter(
        out,
        fps=int(round(episodes.fps)),
        features=episodes.features,
        robot_type=episodes.robot_type,
        meta=episodes.meta,
        overwrite=overwrite,
        video=video,
    ) as writer:
        keys = list(episodes.features)
        for ep in range(episodes.num_episodes):
            start, stop = episodes.episode_bounds(ep)
            columns = {k: np.asarray(episodes.data[k][start:stop]) for k in keys}
            for i in range(stop - start):
                frame = {k: columns[k][i] for k in keys}
                frame["task"] = episodes.tasks[int(tasks[start + i])]
                writer.add_frame(frame)
            writer.save_episode()
    return Path(out)
