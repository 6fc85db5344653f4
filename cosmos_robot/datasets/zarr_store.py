"""A zarr episode store for fast training reads: ``data/<feature key>`` arrays + ``meta/episode_ends``.

Layout (diffusion_policy's replay buffer, with LeRobot's feature keys as array names)::

    store.zarr/
      data/observation.images.top   (N, H, W, 3) uint8
      data/observation.state        (N, S) float32
      data/action                   (N, A) float32
      data/...                      every other feature, same shape as in LeRobot
      data/task_index               (N,) int64
      meta/episode_ends             (E,) int64, exclusive
      attrs: fps, features, tasks, robot_type, meta (provenance)

Chunks along time are about one episode long: appending and reading whole windows then touch one
or two chunks (measured: appending is fastest with episode-length chunks).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import zarr

from cosmos_robot.atomic import atomic_directory
from cosmos_robot.datasets.episodes import EpisodeArrays
from cosmos_robot.json_values import plain

FORMAT_VERSION = 1


def _time_chunk(episodes: EpisodeArrays) -> int:
    lengths = episodes.episode_lengths()
    return int(np.clip(np.median(lengths) if len(lengths) else 1, 16, 256))


def write_zarr(episodes: EpisodeArrays, out: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write ``episodes`` as a zarr store at ``out`` (atomically)."""
    chunk = _time_chunk(episodes)
    with atomic_directory(out, overwrite=overwrite) as work:
        root = zarr.open_group(str(work), mode="w")
        data = root.create_group("data")
        for key, array in episodes.data.items():
            array = np.asarray(array[:])
            data.create_array(key, data=array, chunks=(min(chunk, max(len(array), 1)), *array.shape[1:]))
        root.create_group("meta").create_array("episode_ends", data=episodes.episode_ends)
        root.attrs.update(
            {
                "format": "cosmos_robot.episodes",
                "format_version": FORMAT_VERSION,
                "fps": episodes.fps,
                "features": plain(episodes.features),
                "tasks": list(episodes.tasks),
                "robot_type": episodes.robot_type,
                "meta": plain(episodes.meta),
            }
        )
    return Path(out)


def read_zarr(path: str | os.PathLike, *, in_memory: bool = False) -> EpisodeArrays:
    """Open a store written by :func:`write_zarr`; arrays are read lazily unless ``in_memory``."""
    path = Path(path)
    if not (path / "zarr.json").is_file():
        raise FileNotFoundError(f"store={str(path)!r} is not a zarr store (no zarr.json)")
    root = zarr.open_group(str(path), mode="r")
    attrs = dict(root.attrs)
    if attrs.get("format") != "cosmos_robot.episodes":
        raise ValueError(f"store={str(path)!r} has format={attrs.get('format')!r}; expected 'cosmos_robot.episodes'")
    if attrs.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"store={str(path)!r} has format_version={attrs.get('format_version')!r}; expected {FORMAT_VERSION}"
        )
    data_group = root["data"]
    data = {key: data_group[key] for key in sorted(data_group.array_keys())}
    episodes = EpisodeArrays(
        data=data,
        episode_ends=np.asarray(root["meta/episode_ends"][:]),
        fps=float(attrs["fps"]),
        features={k: {**v, "shape": tuple(v["shape"])} for k, v in attrs["features"].items()},
        tasks=list(attrs["tasks"]),
        robot_type=attrs.get("robot_type"),
        meta=dict(attrs.get("meta") or {}),
    )
    return episodes.to_memory() if in_memory else episodes


def lerobot_to_zarr(src: str | os.PathLike, dst: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Convert a LeRobot dataset into a zarr store (video decoded once, here)."""
    from cosmos_robot.datasets.lerobot_io import read_lerobot

    return write_zarr(read_lerobot(src), dst, overwrite=overwrite)


def zarr_to_lerobot(
    src: str | os.PathLike, dst: str | os.PathLike, *, overwrite: bool = False, video: bool = False
) -> Path:
    """Convert a zarr store back into a LeRobot dataset (lossless images unless ``video``)."""
    from cosmos_robot.datasets.lerobot_io import write_lerobot

    return write_lerobot(read_zarr(src), dst, overwrite=overwrite, video=video)
