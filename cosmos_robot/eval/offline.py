"""Held-out metrics of a model on a recorded dataset, one number set per mode.

- Forward dynamics: from frame ``s`` and the true actions ``s .. s+H-1``, predict ``H`` frames and
  compare with the true ones (PSNR per horizon), next to the copy-last-frame baseline.
- Inverse dynamics: label the whole episode video; R^2 and MSE against the true actions.
- Policy: from frame ``s`` and state ``s``, the first chunk of actions against the recorded ones
  (meaningful on expert data), next to always predicting the dataset's mean action.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from cosmos_robot.datasets.for_model import episodes_for_model
from cosmos_robot.eval.result import EvalResult
from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import ACTION, OBS_STATE
from cosmos_robot.metrics import psnr


@dataclass
class OfflineResult(EvalResult):
    """Held-out metrics of a model on a recorded dataset, one set per mode.

    Attributes:
        dataset, embodiment, episodes: what was scored.
        horizon: 1..H.
        fd_psnr, fd_psnr_copy_last: forward-dynamics PSNR per horizon and the copy-last baseline's.
        fd_windows: forward-dynamics rollouts scored.
        id_r2, id_r2_per_dim, id_mse: inverse dynamics against the recorded actions.
        policy_action_mse, policy_action_mse_mean_baseline: the policy's first chunks against the
            recorded actions, and always predicting the dataset's mean action.
        steps, pixel_residual: the settings (pixel_residual None: the model's default).
    """

    dataset: str
    embodiment: str
    episodes: int
    horizon: list[int]
    fd_psnr: list[float | None]
    fd_psnr_copy_last: list[float | None]
    fd_windows: int
    id_r2: float
    id_r2_per_dim: list[float]
    id_mse: float
    policy_action_mse: float
    policy_action_mse_mean_baseline: float
    steps: int
    pixel_residual: bool | None


def r2_per_dim(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Coefficient of determination of each column of (N, A) predictions."""
    ss_res = ((true - pred) ** 2).sum(0)
    ss_tot = ((true - true.mean(0)) ** 2).sum(0)
    return 1.0 - ss_res / np.maximum(ss_tot, 1e-12)


def policy_chunks(
    model: WorldModel,
    embodiment: str,
    frames: np.ndarray,
    states: np.ndarray,
    actions: np.ndarray,
    **policy_options: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """The policy's first chunk from every ``chunk``-th step of one episode, against the recorded actions.

    Returns (predicted, true), each (N, A): the chunks end to end, cut at the episode's end.
    ``policy_options`` go to :meth:`WorldModel.policy` (steps, seed, guidance_scale, ...)."""
    chunk, length = model.future_frames, len(frames)
    starts = np.arange(0, max(1, length - chunk), chunk)
    out = model.policy(frames[starts], embodiment, state=states[starts], **policy_options)
    cut = [min(chunk, length - s) for s in starts]
    predicted = np.concatenate([out.actions[i, :n] for i, n in enumerate(cut)])
    true = np.concatenate([actions[s : s + n] for s, n in zip(starts, cut, strict=True)])
    return predicted, true


def evaluate_offline(
    model: WorldModel,
    dataset: str | os.PathLike,
    episodes: int | None = None,
    horizon: int = 8,
    fd_starts_per_episode: int = 2,
    steps: int = 10,
    seed: int = 0,
    progress: bool = True,
    pixel_residual: bool | None = None,
) -> OfflineResult:
    """Forward dynamics, inverse dynamics and policy metrics on (the first ``episodes`` of) ``dataset``.

    ``pixel_residual``, unless None (the model's own default), is passed to
    :meth:`WorldModel.forward_dynamics`: predicted frames as the observed frame plus the decoded
    change (True), or the plain decode of the predicted latents (False)."""
    fd_options = {} if pixel_residual is None else {"pixel_residual": pixel_residual}
    data, embodiment = episodes_for_model(dataset, model)
    camera = data.image_keys[0]
    count = data.num_episodes if episodes is None else min(episodes, data.num_episodes)
    if count < 1:
        raise ValueError(f"episodes={episodes!r}; expected at least 1")
    fd_pred = [[] for _ in range(horizon)]
    fd_copy = [[] for _ in range(horizon)]
    id_pred, id_true, pol_pred, pol_true = [], [], [], []
    mean_action = data.data[ACTION].mean(0)
    for ep in tqdm(range(count), desc=f"eval {embodiment}", disable=not progress):
        start, stop = data.episode_bounds(ep)
        frames, actions = data.data[camera][start:stop], data.data[ACTION][start:stop]
        states = data.data[OBS_STATE][start:stop]
        length = stop - start
        # forward dynamics, open loop over the horizon
        fd_starts = (
            np.unique(np.linspace(0, length - horizon - 1, fd_starts_per_episode).round().astype(int))
            if length > horizon
            else []
        )
        for s in fd_starts:
            pred = model.forward_dynamics(
                frames[s : s + 1],
                actions[s : s + horizon],
                embodiment,
                states=states[s],
                steps=steps,
                seed=seed,
                **fd_options,
            ).frames[0]
            for h in range(horizon):
                fd_pred[h].append(psnr(pred[h], frames[s + h + 1]))
                fd_copy[h].append(psnr(frames[s], frames[s + h + 1]))
        # inverse dynamics over the whole video (the last action leads into a frame that was not recorded)
        if length >= 2:
            id_pred.append(model.inverse_dynamics(frames, embodiment, fps=data.fps, steps=steps, seed=seed)[0])
            id_true.append(actions[: length - 1])
        predicted, true = policy_chunks(model, embodiment, frames, states, actions, steps=steps, seed=seed)
        pol_pred.append(predicted)
        pol_true.append(true)
    id_pred_all, id_true_all = np.concatenate(id_pred), np.concatenate(id_true)
    pol_pred_all, pol_true_all = np.concatenate(pol_pred), np.concatenate(pol_true)
    r2 = r2_per_dim(id_pred_all, id_true_all)
    return OfflineResult(
        dataset=str(dataset),
        embodiment=embodiment,
        episodes=count,
        horizon=list(range(1, horizon + 1)),
        fd_psnr=[float(np.mean(v)) if v else None for v in fd_pred],
        fd_psnr_copy_last=[float(np.mean(v)) if v else None for v in fd_copy],
        fd_windows=len(fd_pred[0]),
        id_r2=float(r2.mean()),
        id_r2_per_dim=r2.tolist(),
        id_mse=float(((id_pred_all - id_true_all) ** 2).mean()),
        policy_action_mse=float(((pol_pred_all - pol_true_all) ** 2).mean()),
        policy_action_mse_mean_baseline=float(((mean_action - pol_true_all) ** 2).mean()),
        steps=steps,
        pixel_residual=pixel_residual,
    )
