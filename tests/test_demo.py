"""The main job in a reduced size: datasets, stores, windows, report and strips are all produced."""

from __future__ import annotations

import json

from cosmos_robot.datasets.lerobot_io import load_lerobot
from cosmos_robot.demo import run_demo


def test_demo_writes_datasets_stores_and_a_report(tmp_path, capsys):
    report = run_demo(tmp_path, episodes=2)
    assert len(report["datasets"]) == 4
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved == json.loads(json.dumps(report))
    for entry in report["datasets"]:
        assert load_lerobot(entry["out"]).meta.total_episodes == 2
        assert entry["windows"] > 0 and (tmp_path / entry["zarr"].split("/")[-1]).is_dir()
    assert (tmp_path / "point_strip.png").stat().st_size > 0 and (tmp_path / "arm2_strip.png").stat().st_size > 0
    assert "point_noise0.0" in capsys.readouterr().out
