"""Atomic writes: a failed write leaves the target as it was and no temporary folder behind."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from cosmos_robot.atomic import OWNER_FILE, atomic_directory, check_output_path, write_file_atomic


def test_a_folder_appears_only_when_its_writer_finishes(tmp_path):
    target = tmp_path / "out"
    with atomic_directory(target) as work:
        work.mkdir()
        (work / "a.txt").write_text("a")
        assert not target.exists()
    assert (target / "a.txt").read_text() == "a"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_overwrite_keeps_the_old_folder_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with pytest.raises(RuntimeError, match="writer failed"):
        with atomic_directory(target, overwrite=True) as work:
            work.mkdir()
            (work / "new.txt").write_text("new")
            raise RuntimeError("writer failed")
    assert [p.name for p in target.iterdir()] == ["old.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_an_existing_target_is_refused_without_overwrite(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(FileExistsError, match="dest=.*already exists"):
        check_output_path(tmp_path / "out", overwrite=False, field="dest")
    assert check_output_path(tmp_path / "out", overwrite=True) == tmp_path / "out"


def test_a_file_is_replaced_whole(tmp_path):
    path = write_file_atomic(tmp_path / "deep" / "f.json", "{}")
    write_file_atomic(path, b"[1]")
    assert path.read_bytes() == b"[1]" and [p.name for p in path.parent.iterdir()] == ["f.json"]


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_writers_staging_folder_is_removed_with_one_line_and_a_live_ones_kept(tmp_path, capsys):
    killed = tmp_path / ".out.tmp-killed"
    killed.mkdir()
    (killed / OWNER_FILE).write_text(str(dead_pid()))
    running = tmp_path / ".out.tmp-running"
    running.mkdir()
    (running / OWNER_FILE).write_text(str(os.getppid()))  # alive: the test runner's parent
    with atomic_directory(tmp_path / "out") as work:
        work.mkdir()
    assert not killed.exists() and running.exists() and (tmp_path / "out").is_dir()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ".out.tmp-killed" in err[0] and "killed" in err[0]
    assert not (tmp_path / "out" / OWNER_FILE).exists()
