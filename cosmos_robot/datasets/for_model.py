"""A recorded dataset as a trained model reads it: its camera, its rate, its image size.

Training stores, per embodiment, the camera it learned from and the rate of the data it was recorded
at (``Embodiment.rate_hz``); evaluation, the learned env's dataset starts and the labeler read a
dataset through the same three steps, so a model trained on a 30 fps, 480x640
``observation.images.wrist`` dataset is scored on that dataset as it was trained.
"""

from __future__ import annotations

import os

from cosmos_robot.datasets.episodes import EpisodeArrays
from cosmos_robot.datasets.rate import to_model_rate
from cosmos_robot.datasets.training_set import select_camera, to_image_size
from cosmos_robot.datasets.windows import open_episodes
from cosmos_robot.interface import WorldModel
from cosmos_robot.processor import EmbodimentEntry


def model_entry(model: WorldModel, embodiment: str) -> EmbodimentEntry | None:
    """What ``model`` stored about ``embodiment`` (None for backends that store nothing, e.g. Cosmos 3)."""
    processor = getattr(model, "processor", None)
    return None if processor is None else processor.entry(embodiment)


def learned_camera(model: WorldModel, embodiment: str) -> str | None:
    """The camera ``model`` learned ``embodiment`` from (None where it stored none)."""
    entry = model_entry(model, embodiment)
    return None if entry is None else entry.camera


def pick_camera(image_keys: list[str], learned: str | None, source: str) -> str:
    """The camera to read from ``source`` (named in the error): the only one, whatever its key; among
    several, the one the model learned from (``learned``; None: the first)."""
    camera = learned if len(image_keys) > 1 and learned is not None else image_keys[0]
    if camera not in image_keys:
        raise ValueError(f"{source} has no camera {camera!r}; expected one of {image_keys}")
    return camera


def episodes_for_model(
    source: str | os.PathLike, model: WorldModel, embodiment: str | None = None
) -> tuple[EpisodeArrays, str]:
    """(episodes in memory at the model's rate, size and camera, their embodiment) of a dataset.

    ``embodiment`` defaults to the dataset's ``robot_type``; it must be one the model knows.
    """
    episodes = open_episodes(source).to_memory()
    name = embodiment or episodes.robot_type or episodes.meta.get("embodiment")
    if name not in model.embodiments:
        raise ValueError(f"dataset={str(source)!r} is of embodiment={name!r}; the model knows {model.embodiments}")
    if not episodes.image_keys:
        raise ValueError(f"dataset={str(source)!r} has no image feature; expected recorded frames")
    camera = pick_camera(episodes.image_keys, learned_camera(model, name), f"dataset={str(source)!r}")
    select_camera(episodes, camera, str(source))
    episodes = to_model_rate(episodes, model.fps, str(source))
    to_image_size(episodes, model.image_size)
    return episodes, name
