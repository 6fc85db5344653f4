"""Reading videos for labeling: decode an mp4 to uint8 frames, resize to the model's square input.

Aspect: frames that are not square are centre-cropped to a square on their longer side, then
resized (area averaging) to the model's size; a 640x480 video keeps its central 480x480. The crop
keeps the scale of motion uniform in both axes, which inverse dynamics depends on.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image


def read_video(path: str | os.PathLike) -> tuple[np.ndarray, float | None]:
    """(frames (N, H, W, 3) uint8, fps or None when the file does not say) of a video file."""
    import av  # here, not at the top: the learned env and training import this module and need no FFmpeg

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"video={str(path)!r} does not exist")
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise ValueError(f"video={str(path)!r} has no video stream")
            stream = container.streams.video[0]
            rate = stream.average_rate or stream.guessed_rate
            frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(stream)]
    except (av.error.FFmpegError, av.error.InvalidDataError, UnicodeDecodeError) as error:
        raise ValueError(f"video={str(path)!r} cannot be decoded ({error})") from None
    if not frames:
        raise ValueError(f"video={str(path)!r} has zero frames")
    fps = float(rate) if rate else None
    return np.stack(frames), fps


def to_model_size(frames: np.ndarray, size: int) -> np.ndarray:
    """Centre-crop (N, H, W, 3) uint8 frames to a square and resize to (N, size, size, 3)."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"frames has shape {frames.shape} and dtype {frames.dtype}; expected uint8 (N, H, W, 3)")
    h, w = frames.shape[1:3]
    side = min(h, w)
    top, left = (h - side) // 2, (w - side) // 2
    square = frames[:, top : top + side, left : left + side]
    if side == size:
        return np.ascontiguousarray(square)
    return np.stack([np.asarray(Image.fromarray(f).resize((size, size), Image.Resampling.BOX)) for f in square])


def match_fps(frames: np.ndarray, fps: float, model_fps: float) -> np.ndarray:
    """Keep every k-th frame when ``fps`` is k times the model's rate; other rates are an error."""
    from cosmos_robot.datasets.rate import rate_ratio

    return frames[:: rate_ratio(fps, model_fps, "the video", fix="resample the video first")]


def write_video(path: str | os.PathLike, frames: np.ndarray, fps: float, lossless: bool = True) -> Path:
    """Write (N, H, W, 3) uint8 frames as an h264 mp4 (lossless 4:4:4 by default, else crf 18 4:2:0)."""
    from fractions import Fraction

    import av

    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or len(frames) == 0:
        raise ValueError(f"frames has shape {frames.shape} and dtype {frames.dtype}; expected uint8 (N>0, H, W, 3)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "yuv444p" if lossless else "yuv420p"
        stream.options = {"crf": "0" if lossless else "18"}
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    return path
