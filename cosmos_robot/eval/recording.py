"""Rerun recordings of closed-loop policy episodes: the real camera and the imagined one, side by side.

One ``.rrd`` holds every episode on one ``step`` timeline (and ``sim_time``, seconds), so scrubbing
runs through them in order. Entities:

- ``camera/real``: the MuJoCo frame observed at each step;
- ``camera/imagined``: each chunk's predicted frames, logged at the steps they predict (frame ``i``
  of a chunk planned at step ``s`` at step ``s + i + 1``); a later replan overwrites the older
  prediction for the same step, so the view shows the newest prediction the policy acted on;
- ``action/<i>``, ``state/<i>``: scalar plots; ``success``: 0/1 per step; ``episodes``: a text log
  with each episode's seed, return and outcome.

The default blueprint lays these out; the file is written headless (no viewer) to a temporary path
and renamed when :meth:`PolicyRecorder.close` is called. Open it with ``rerun FILE.rrd``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from cosmos_robot.keys import AGENT_POS, PIXELS


def default_blueprint() -> Any:
    """Real and imagined cameras side by side, action/state/success plots and the episode log."""
    import rerun.blueprint as rrb

    return rrb.Blueprint(
        rrb.Horizontal(
            rrb.Vertical(
                rrb.Horizontal(
                    rrb.Spatial2DView(origin="camera/real", name="real (MuJoCo)"),
                    rrb.Spatial2DView(origin="camera/imagined", name="imagined (world model)"),
                ),
                rrb.TextLogView(origin="episodes", name="episodes"),
                row_shares=[3, 1],
            ),
            rrb.Vertical(
                rrb.TimeSeriesView(origin="action", name="actions"),
                rrb.TimeSeriesView(origin="state", name="state"),
                rrb.TimeSeriesView(origin="success", name="success"),
            ),
            column_shares=[3, 2],
        ),
        collapse_panels=True,
    )


class PolicyRecorder:
    """Writes closed-loop episodes to one ``.rrd`` file (atomically, on :meth:`close`).

    Args:
        path: the ``.rrd`` file to write.
        fps: control rate, for the ``sim_time`` timeline.
        application_id: rerun's application id.
    """

    def __init__(self, path: str | os.PathLike, fps: float, application_id: str = "cosmos_robot_policy") -> None:
        import rerun as rr

        self.path = Path(path)
        if self.path.suffix != ".rrd":
            raise ValueError(f"rerun path={str(path)!r}; expected a file name ending in .rrd")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f".{self.path.name}.tmp")
        self.fps = float(fps)
        self._rr = rr
        self.stream = rr.RecordingStream(application_id)
        self.stream.save(self._tmp, default_blueprint=default_blueprint())
        self._start = 0  # global step of the current episode's first frame
        self._length = 0

    def _at(self, global_step: int) -> None:
        self.stream.set_time("step", sequence=global_step)
        self.stream.set_time("sim_time", duration=global_step / self.fps)

    def start_episode(self, episode: int, seed: int) -> None:
        """Mark the start of an episode (its frames follow the previous episode's on the timeline)."""
        self._start += self._length
        self._length = 0
        self._at(self._start)
        self.stream.log("episodes", self._rr.TextLog(f"episode {episode} (seed {seed}) starts", level="INFO"))

    def log_step(self, obs: dict[str, np.ndarray], action: np.ndarray, success: bool) -> None:
        """The observation an action was chosen from, the action, and whether the task is solved yet."""
        rr = self._rr
        self._at(self._start + self._length)
        self.stream.log("camera/real", rr.Image(np.asarray(obs[PIXELS])))
        for i, value in enumerate(np.asarray(action, np.float64).ravel()):
            self.stream.log(f"action/{i}", rr.Scalars(value))
        if AGENT_POS in obs:
            for i, value in enumerate(np.asarray(obs[AGENT_POS], np.float64).ravel()):
                self.stream.log(f"state/{i}", rr.Scalars(value))
        self.stream.log("success", rr.Scalars(float(success)))
        self._length += 1

    def log_predictions(self, chunks: list[Any]) -> None:
        """Each chunk's predicted frames at the steps they predict (within the episode logged so far)."""
        rr = self._rr
        for chunk in chunks:
            for i, frame in enumerate(chunk.frames):
                step = chunk.step + i + 1
                if step > self._length:  # past the episode's last observation
                    break
                self._at(self._start + step)
                self.stream.log("camera/imagined", rr.Image(np.asarray(frame)))

    def end_episode(self, obs: dict[str, np.ndarray], episode: int, success: bool, episode_return: float) -> None:
        """The final observation and the outcome marker."""
        rr = self._rr
        self._at(self._start + self._length)
        self.stream.log("camera/real", rr.Image(np.asarray(obs[PIXELS])))
        self.stream.log("success", rr.Scalars(float(success)))
        outcome = "SUCCESS" if success else "failure"
        self.stream.log(
            "episodes",
            rr.TextLog(
                f"episode {episode}: {outcome}, return {episode_return:.2f}, {self._length} steps",
                level="INFO" if success else "WARN",
            ),
        )
        self._length += 1

    def close(self) -> Path:
        """Flush and move the recording into place; returns its path."""
        self.stream.flush()
        self.stream.disconnect()
        os.replace(self._tmp, self.path)
        return self.path
