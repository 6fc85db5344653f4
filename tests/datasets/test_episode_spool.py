"""The episode spool: whole episodes kept on disk, read back exactly, one writer, same settings on resume."""

from __future__ import annotations

import os

import numpy as np
import pytest

from cosmos_robot.atomic import OWNER_FILE
from cosmos_robot.datasets.episode_spool import EpisodeSpool, spool_path


def frames(length: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [
        {
            "pixels": rng.integers(0, 256, (8, 8, 3), dtype=np.uint8),
            "action": rng.normal(size=2).astype(np.float32),
            "done": np.array([t == length - 1]),
            "task": f"task {seed}",
        }
        for t in range(length)
    ]


def test_episodes_read_back_exactly(tmp_path):
    spool = EpisodeSpool(tmp_path / "ds", {"noise": 0.3}, resume=False, overwrite=False)
    assert spool.folder == spool_path(tmp_path / "ds") == tmp_path / ".ds.episodes"
    spool.add(0, frames(3, 0), {"success": True})
    spool.add(1, frames(2, 1))
    assert spool.count() == 2
    back, info = spool.read(0)
    assert info == {"success": True}
    for got, want in zip(back, frames(3, 0), strict=True):
        assert got.keys() == want.keys() and got["task"] == "task 0"
        for key in ("pixels", "action", "done"):
            assert got[key].dtype == want[key].dtype
            np.testing.assert_array_equal(got[key], want[key])
    spool.remove()
    assert not spool.folder.exists()


def test_a_gap_ends_the_count_and_empty_episodes_are_refused(tmp_path):
    spool = EpisodeSpool(tmp_path / "ds", {}, resume=False, overwrite=False)
    spool.add(0, frames(1, 0))
    spool.add(2, frames(1, 2))
    assert spool.count() == 1
    with pytest.raises(ValueError, match="episode 3 has no frames"):
        spool.add(3, [])


def test_a_stopped_runs_spool_needs_resume_or_overwrite(tmp_path, capsys):
    EpisodeSpool(tmp_path / "ds", {"seed": 1}, resume=False, overwrite=False).add(0, frames(1, 0))
    with pytest.raises(FileExistsError, match="left 1 complete episodes.*--resume.*--overwrite"):
        EpisodeSpool(tmp_path / "ds", {"seed": 1}, resume=False, overwrite=False)
    with pytest.raises(ValueError, match="resume: seed=2 but the stopped run used 1"):
        EpisodeSpool(tmp_path / "ds", {"seed": 2}, resume=True, overwrite=False)
    resumed = EpisodeSpool(tmp_path / "ds", {"seed": 1}, resume=True, overwrite=False)
    assert resumed.count() == 1 and "resuming" in capsys.readouterr().err
    fresh = EpisodeSpool(tmp_path / "ds", {"seed": 1}, resume=False, overwrite=True)
    assert fresh.count() == 0 and "1 episodes of an earlier run" in capsys.readouterr().err


def test_a_live_writer_is_never_disturbed(tmp_path):
    spool = EpisodeSpool(tmp_path / "ds", {}, resume=False, overwrite=False)
    (spool.folder / OWNER_FILE).write_text(str(os.getppid()))  # a process that is alive
    with pytest.raises(RuntimeError, match="being written by process"):
        EpisodeSpool(tmp_path / "ds", {}, resume=True, overwrite=True)
