"""Atomic writes: build under a temporary path beside the target, rename into place when complete."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path


def check_output_path(out: str | os.PathLike, overwrite: bool, field: str = "out") -> Path:
    """Return ``out`` as a Path, refusing an existing path unless ``overwrite``."""
    path = Path(out)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{field}={str(path)!r} already exists; pass overwrite (--overwrite) to replace it")
    return path


# Inside a staging folder: the pid of the process writing it, so a later run can tell a killed run's
# leftovers from a run still in progress.
OWNER_FILE = ".owner_pid"


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (ours or another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


def remove_stale_staging(target: str | os.PathLike) -> list[Path]:
    """Remove the staging folders a killed earlier write of ``target`` left beside it; say so in one line each.

    A staging folder whose writer is still running is left alone. Returns the folders removed.
    """
    target = Path(target)
    removed = []
    for staging in sorted(target.parent.glob(f".{target.name}.tmp-*")):
        owner = staging / OWNER_FILE
        try:
            pid = int(owner.read_text())
        except (OSError, ValueError):
            continue  # not ours, or being created this instant: leave it
        if pid != os.getpid() and not process_alive(pid):
            shutil.rmtree(staging, ignore_errors=True)
            print(f"removed {staging}: the unfinished output of an earlier run that was killed", file=sys.stderr)
            removed.append(staging)
    return removed


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a fresh temporary path (not yet created) beside ``target``; move it to ``target`` on success.

    On any exception, KeyboardInterrupt included, the temporary path is removed and ``target`` is
    left as it was. A SIGKILL can leave a ``.<name>.tmp-*`` folder beside the target, never a
    half-written ``target``.
    """
    target = check_output_path(target, overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    (staging / OWNER_FILE).write_text(str(os.getpid()))
    work = staging / target.name  # not created: some writers (LeRobot) insist on creating the root
    try:
        yield work
        if target.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.replace(target, trash / target.name)
            os.replace(work, target)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(work, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_file_atomic(target: str | os.PathLike, data: bytes | str) -> Path:
    """Write ``data`` to ``target`` through a temporary file beside it and a rename (parents created)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
