"""The main job, as far as it goes today: demonstration data for both PushBlock embodiments.

Collects expert and noisy-expert episodes of ``point`` and ``arm2`` as LeRobot v3 datasets,
converts each to a zarr store, cuts time-aligned training windows, and saves a frame strip of
each embodiment. The demo issue replaces this with model-based fidelity, labeling and policy runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from cosmos_robot.datasets.collect import collect, summary_dict
from cosmos_robot.datasets.windows import TimeAlignedWindows, WindowSpec
from cosmos_robot.datasets.zarr_store import lerobot_to_zarr, read_zarr
from cosmos_robot.envs import PUSH_BLOCK_IDS

NOISE_LEVELS = (0.0, 0.3)


def run_demo(out: Path, episodes: int = 20) -> dict:
    """Run the demo into ``out`` and print a summary table; returns the report."""
    if episodes <= 0:
        raise ValueError(f"episodes={episodes!r}; expected a positive integer")
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {"datasets": []}
    for embodiment, env_id in PUSH_BLOCK_IDS.items():
        for noise in NOISE_LEVELS:
            name = f"{embodiment}_noise{noise:.1f}"
            summary = collect(env_id, episodes, out / name, noise=noise, seed=0, overwrite=True)
            store = lerobot_to_zarr(out / name, out / f"{name}.zarr", overwrite=True)
            windows = TimeAlignedWindows(read_zarr(store), WindowSpec(num_frames=4))
            entry = summary_dict(summary) | {"zarr": str(store), "windows": len(windows)}
            report["datasets"].append(entry)
            if noise == 0.0:
                _save_strip(windows, out / f"{embodiment}_strip.png")
    (out / "report.json").write_text(json.dumps(report, indent=2))
    _print_table(report, out)
    return report


def _save_strip(windows: TimeAlignedWindows, path: Path) -> None:
    """Frames of the first window, side by side, scaled up 4x."""
    import imageio.v3 as iio

    frames = windows[0]["frames"].numpy()  # (T, H, W, 3)
    strip = np.concatenate(list(frames), axis=1)
    iio.imwrite(path, np.kron(strip, np.ones((4, 4, 1), dtype=np.uint8)))


def _print_table(report: dict, out: Path) -> None:
    print(f"\n{'dataset':<24}{'episodes':>9}{'frames':>8}{'success':>9}{'frames/s':>10}{'windows':>9}")
    for d in report["datasets"]:
        name = Path(d["out"]).name
        print(
            f"{name:<24}{d['episodes']:>9}{d['frames']:>8}{d['success_rate']:>9.2f}"
            f"{d['frames_per_second']:>10.0f}{d['windows']:>9}"
        )
    print(f"\nwrote {out}/report.json, LeRobot datasets, zarr stores and frame strips (*_strip.png)")
