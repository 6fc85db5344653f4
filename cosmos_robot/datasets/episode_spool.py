"""Completed episodes kept on disk until the dataset they belong to is written.

A LeRobot v3 dataset cannot be appended to after a kill: its parquet and video files are complete
only once ``finalize`` has run. So ``collect`` and ``label`` first put every finished episode in a
spool beside the output, ``.<out>.episodes/`` (one compressed ``.npz`` per episode, each written to a
temporary name and renamed), then write the dataset from the spool in one go and remove it. A run
killed at any moment leaves whole episodes only; ``resume=True`` continues after the last one with
the same arguments (``settings.json`` says which), and the dataset it writes is the one an
uninterrupted run writes: both are written from the same spooled arrays.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from cosmos_robot.atomic import OWNER_FILE, process_alive, write_file_atomic
from cosmos_robot.datasets.lerobot_io import LeRobotWriter
from cosmos_robot.json_values import plain

SETTINGS_FILE = "settings.json"
TASK = "task"  # the one per-frame value that is a string


def spool_path(out: str | os.PathLike) -> Path:
    """The spool folder of an output path."""
    out = Path(out)
    return out.parent / f".{out.name}.episodes"


class EpisodeSpool:
    """The spooled episodes of one output.

    Args:
        out: the dataset the episodes are for.
        settings: what determines the episodes (the job's arguments), JSON-ready; a resume with other
            settings is refused, naming the first field that differs.
        resume: continue the spool an earlier, stopped run left (start empty if there is none).
        overwrite: without ``resume``, discard such a spool and start again.

    Raises:
        FileExistsError: a stopped run's spool is there and neither ``resume`` nor ``overwrite`` is set.
        RuntimeError: another live process is writing the same spool.
        ValueError: ``resume`` with settings that differ from the spooled ones.
    """

    def __init__(self, out: str | os.PathLike, settings: dict[str, Any], resume: bool, overwrite: bool) -> None:
        self.out = Path(out)
        self.folder = spool_path(out)
        self.settings = json.loads(json.dumps(plain(settings)))  # as it reads back from disk
        if self.folder.exists():
            self._adopt(resume, overwrite)
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / OWNER_FILE).write_text(str(os.getpid()))
        write_file_atomic(self.folder / SETTINGS_FILE, json.dumps(self.settings, indent=2))

    def _adopt(self, resume: bool, overwrite: bool) -> None:
        owner = self.folder / OWNER_FILE
        pid = int(owner.read_text()) if owner.is_file() else None
        if pid is not None and pid != os.getpid() and process_alive(pid):
            raise RuntimeError(f"{self.folder} is being written by process {pid}; expected one writer per output")
        done = self.count()
        if not resume:
            if not overwrite:
                raise FileExistsError(
                    f"out={str(self.out)!r}: a stopped earlier run left {done} complete episodes in {self.folder}; "
                    "pass --resume to continue it or --overwrite to start again"
                )
            shutil.rmtree(self.folder)
            print(f"removed {self.folder}: {done} episodes of an earlier run that was stopped", file=sys.stderr)
            return
        saved_file = self.folder / SETTINGS_FILE
        saved = json.loads(saved_file.read_text()) if saved_file.is_file() else {}
        for key in sorted(set(saved) | set(self.settings)):
            if saved.get(key) != self.settings.get(key):
                raise ValueError(
                    f"resume: {key}={self.settings.get(key)!r} but the stopped run used {saved.get(key)!r}; "
                    "expected the same arguments (or --overwrite to start again)"
                )
        print(f"resuming {self.out} after episode {done} (kept in {self.folder})", file=sys.stderr)

    def _file(self, index: int) -> Path:
        return self.folder / f"episode_{index:06d}.npz"

    def count(self) -> int:
        """Complete episodes, counted from 0 without a gap."""
        n = 0
        while self._file(n).is_file():
            n += 1
        return n

    def add(self, index: int, frames: list[dict[str, Any]], info: dict[str, float] | None = None) -> None:
        """Keep episode ``index``: its frames (dicts of arrays, plus a ``"task"`` string) and scalar ``info``."""
        if not frames:
            raise ValueError(f"episode {index} has no frames; expected at least one")
        arrays = {f"frame.{key}": np.stack([np.asarray(f[key]) for f in frames]) for key in frames[0] if key != TASK}
        if TASK in frames[0]:
            arrays[f"frame.{TASK}"] = np.array([f[TASK] for f in frames], dtype=str)
        arrays |= {f"info.{key}": np.asarray(value) for key, value in (info or {}).items()}
        with tempfile.NamedTemporaryFile(dir=self.folder, prefix=".episode-", suffix=".npz", delete=False) as handle:
            np.savez_compressed(handle, **arrays)
        os.replace(handle.name, self._file(index))

    def read(self, index: int) -> tuple[list[dict[str, Any]], dict[str, float]]:
        """(frames, info) of episode ``index``, as they were added."""
        with np.load(self._file(index), allow_pickle=False) as stored:
            columns = {k.removeprefix("frame."): stored[k] for k in stored.files if k.startswith("frame.")}
            info = {k.removeprefix("info."): stored[k].item() for k in stored.files if k.startswith("info.")}
        length = len(next(iter(columns.values())))
        frames = [{k: (str(v[t]) if k == TASK else v[t]) for k, v in columns.items()} for t in range(length)]
        return frames, info

    def write_to(self, writer: LeRobotWriter, count: int, progress: bool = False) -> list[tuple[int, dict[str, float]]]:
        """Add episodes ``0 .. count - 1`` to an open ``writer``; returns each one's (length, info)."""
        written = []
        for index in tqdm(range(count), desc=f"write {self.out.name}", unit="ep", disable=not progress):
            frames, info = self.read(index)
            for frame in frames:
                writer.add_frame(frame)
            writer.save_episode()
            written.append((len(frames), info))
        return written

    def remove(self) -> None:
        """Delete the spool (after its dataset is written)."""
        shutil.rmtree(self.folder, ignore_errors=True)
