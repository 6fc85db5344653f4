"""Forward-dynamics fidelity against MuJoCo: same seeded start, same actions, open loop.

For each action source (expert, noisy expert, random) and each seeded episode, MuJoCo runs the
source for ``horizon`` steps and records frames, agent states and actions. The learned env
(:class:`ForwardDynamicsVectorEnv`, all episodes in one batch) starts from the same first frame and
state and is fed the same actions. Per horizon: PSNR and SSIM of imagined vs real frames, agent-state
error, and the copy-last-frame baseline (the first frame held). Action following: the same starts
fed another episode's actions (rolled by one across episodes); ``delta_psnr_shuffled`` is the PSNR
lost at horizon 8, and a model that ignores its actions scores ~0.

Object level (:mod:`cosmos_robot.eval.objects`): per horizon, the share of imagined frames where the
effector and the block are found and their error in mm against the detection on the MuJoCo frame,
with the true and with the shuffled actions; the block's error had it stayed where it started (the
copy-last baseline of the block: how far MuJoCo moved it); and the detector's own floor on the real
frames. They read exactly the frames the env returns. Where the model has an autoencoder
(``reconstruct``), the same object metrics of its plain reconstructions of MuJoCo's own frames are beside
them (``autoencoder_floor``): what the decoder alone loses of real frames (the env's frames, which keep the
camera's pixels where little changes, can lose less).

Reward and success are not read here, so the env is given them as functions: it then runs in the
configuration ``benchmarks/bench_fd_env.py`` times for pixel observations (no MoT pass; the frames and
states are those of the full model, which keeps the forward prior's rollout).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.forward_dynamics import ForwardDynamicsVectorEnv
from cosmos_robot.envs.start_sources import FixedStarts, Start
from cosmos_robot.eval.objects import OBJECTS, detector_floor_mm, effector_found_by_place, object_metrics
from cosmos_robot.eval.result import EvalResult, example_field
from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import AGENT_POS, PIXELS
from cosmos_robot.metrics import psnr, ssim
from cosmos_robot.policies.scripted import ScriptedExpert
from cosmos_robot.rollout import run_episode
from cosmos_robot.seeds import FD_SEED

SOURCES = {"expert": 0.0, "noisy": 0.5, "random": 1.0}
# Per-horizon metrics averaged over the sources for the headline numbers.
POOLED = (
    "psnr",
    "ssim",
    "psnr_copy_last",
    "state_error",
    "psnr_shuffled",
    "effector_visible",
    "effector_error_mm",
    "block_error_mm",
    "block_error_mm_copy_last",
    "effector_error_mm_shuffled",
)
# Shares pooled as one count over the sources: share -> (the MuJoCo visibility it is a share of,
# whether of the frames that show the object or of those that do not).
SHARES = {
    "effector_found": ("effector_visible", True),
    "effector_spurious": ("effector_visible", False),
    "block_found": ("block_visible", True),
    "effector_found_shuffled": ("effector_visible", True),
}
SHUFFLED_AT = 8


@dataclass
class FDResult(EvalResult):
    """Fidelity of the learned env against MuJoCo, per horizon (pooled over the action sources).

    Attributes:
        embodiment: the embodiment evaluated.
        horizon: 1..H.
        psnr, ssim: of the imagined frames against MuJoCo's, per horizon.
        psnr_copy_last: of the start frame against MuJoCo's, per horizon (the baseline).
        state_error: agent_pos error per horizon (raw units).
        psnr_shuffled: PSNR with another episode's actions from the same starts.
        delta_psnr_shuffled: PSNR lost at horizon 8 with shuffled actions (0 = the env ignores actions).
        beats_copy_last_at: horizons where the learned env's PSNR beats copy-last.
        effector_visible: share of MuJoCo's frames that show the effector, per horizon (arm2's
            fingertip can leave the camera's view; the block does not).
        effector_found, block_found: per horizon, the share of the frames where MuJoCo shows the object
            whose imagined frame shows it too.
        effector_spurious: the share of the other frames whose imagined frame shows the effector anyway
            (None where MuJoCo shows it in every frame).
        effector_error_mm, block_error_mm: its mean error against the MuJoCo frame's detection (None
            where it is found in no imagined frame).
        block_error_mm_copy_last: the block's error in the start frame against each MuJoCo frame (what an
            env whose block never moves scores).
        effector_found_shuffled, effector_error_mm_shuffled: the same with shuffled actions.
        effector_found_by_place: over all sources and horizons, the frames where MuJoCo shows the effector
            over the goal disc and elsewhere (``shown``), and how many of each the imagined frame shows it in
            (``found``): :func:`cosmos_robot.eval.objects.effector_found_by_place`.
        detector_floor_mm: per object, the detector's mean error on the real frames against MuJoCo's
            true positions (what the errors above cannot go below).
        autoencoder_floor: per horizon, ``effector_found``, ``block_found``, ``effector_error_mm`` and
            ``block_error_mm`` of the model's own reconstructions of MuJoCo's frames (pooled as above); None for
            a model without ``reconstruct`` (MuJoCo itself, a backend without an autoencoder).
        per_source: the same metrics for each action source (expert, noisy, random).
        episodes_per_source, sources, sampling_steps, seeds: the settings.
        example: one episode's real and imagined frames, for the frame strip (not in the JSON).
    """

    embodiment: str
    horizon: list[int]
    psnr: list[float]
    ssim: list[float]
    psnr_copy_last: list[float]
    state_error: list[float]
    psnr_shuffled: list[float]
    delta_psnr_shuffled: float
    beats_copy_last_at: list[int]
    effector_visible: list[float]
    effector_found: list[float | None]
    effector_spurious: list[float | None]
    effector_error_mm: list[float | None]
    block_found: list[float | None]
    block_error_mm: list[float | None]
    block_error_mm_copy_last: list[float | None]
    effector_found_shuffled: list[float | None]
    effector_error_mm_shuffled: list[float | None]
    effector_found_by_place: dict[str, dict[str, int]]
    detector_floor_mm: dict[str, float | None]
    autoencoder_floor: dict[str, list[float | None]] | None
    per_source: dict[str, dict[str, Any]]
    episodes_per_source: int
    sources: dict[str, float]
    sampling_steps: int
    seeds: list[int]
    example: dict[str, np.ndarray] | None = example_field()


def record_mujoco(env_id: str, noise: float, seeds: list[int], horizon: int) -> dict[str, np.ndarray]:
    """Run a scripted source in MuJoCo: frames (E, H+1, ...), states (E, H+1, S), actions (E, H, A), the
    true effector and block positions (E, H+1, 2) and the block's pose with its yaw (E, H+1, 3)."""
    env = gym.make(env_id)
    episodes = []
    try:
        for seed in seeds:
            policy = ScriptedExpert.for_env(env, noise=noise, seed=seed)
            # A success before the horizon must not end the recording.
            episodes.append(run_episode(env, policy.act, seed, max_steps=horizon, ignore_episode_end=True))
    finally:
        env.close()
    block_pose = np.stack([[info["block_pose"] for info in e.infos] for e in episodes])
    return {
        "frames": np.stack([e.frames() for e in episodes]),
        "states": np.stack([e.states() for e in episodes]),
        "actions": np.stack([np.stack(e.actions) for e in episodes]),
        "effector": np.stack([[info["effector_pos"] for info in e.infos] for e in episodes]),
        "block": block_pose[..., :2],
        "block_pose": block_pose,
    }


def open_loop_envs(
    model: WorldModel, embodiment: str, starts: FixedStarts, horizon: int, sampling_steps: int = 4
) -> ForwardDynamicsVectorEnv:
    """One learned env per start, for open-loop rollouts of ``horizon`` steps (:func:`imagine`): no
    learned success resets a sub-env mid-rollout, and reward and success are not computed."""
    return ForwardDynamicsVectorEnv(
        len(starts.starts),
        model,
        embodiment,
        start=starts,
        sampling_steps=sampling_steps,
        max_episode_steps=horizon + 1,
        terminate_on_success=False,
        reward_fn=_no_reward,
        success_fn=_never,
    )


def imagine(
    envs: ForwardDynamicsVectorEnv, starts: FixedStarts, actions: np.ndarray, seed: int
) -> dict[str, np.ndarray]:
    """Open-loop rollout of ``actions`` (E, H, A) in the learned env from the fixed starts."""
    starts.rewind()
    obs, _ = envs.reset(seed=seed)
    frames, states = [obs[PIXELS]], [obs[AGENT_POS]]
    for h in range(actions.shape[1]):
        obs, _, _, _, _ = envs.step(actions[:, h])
        frames.append(obs[PIXELS])
        states.append(obs[AGENT_POS])
    return {"frames": np.stack(frames, 1), "states": np.stack(states, 1)}


def _per_horizon(real: dict[str, np.ndarray], pred: dict[str, np.ndarray]) -> dict[str, list[Any]]:
    e, h1 = real["frames"].shape[:2]
    hs = range(1, h1)
    return object_metrics(real["frames"][:, 1:], pred["frames"][:, 1:]) | {
        "psnr": [float(np.mean([psnr(pred["frames"][i, h], real["frames"][i, h]) for i in range(e)])) for h in hs],
        "ssim": [float(np.mean([ssim(pred["frames"][i, h], real["frames"][i, h]) for i in range(e)])) for h in hs],
        "psnr_copy_last": [
            float(np.mean([psnr(real["frames"][i, 0], real["frames"][i, h]) for i in range(e)])) for h in hs
        ],
        "state_error": [float(np.linalg.norm(pred["states"][:, h] - real["states"][:, h], axis=-1).mean()) for h in hs],
    }


def _mean_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def _mean_over_sources(per_source: list[list[float | None]]) -> list[float | None]:
    """Per horizon, the mean over the sources that have a value there (None where none has)."""
    return [_mean_or_none(list(at)) for at in zip(*per_source, strict=True)]


def _pooled_share(per_source: list[dict[str, Any]], share: str, visible: str, shown: bool) -> list[float | None]:
    """Per horizon, ``share`` over all sources' frames at once: each source's share weighted by the frames
    it is a share of (every source has the same episodes), so the result is a count over the total."""
    pooled = []
    for h in range(len(per_source[0][visible])):
        weights = [m[visible][h] if shown else 1.0 - m[visible][h] for m in per_source]
        hits = sum(w * m[share][h] for w, m in zip(weights, per_source, strict=True) if m[share][h] is not None)
        pooled.append(hits / sum(weights) if sum(weights) > 0 else None)
    return pooled


def _pooled_floor(per_source: list[dict[str, Any]]) -> dict[str, list[float | None]]:
    """The reconstructions' object metrics over all sources: shares pooled by frames, errors averaged."""
    return {
        "effector_found": _pooled_share(per_source, "effector_found", "effector_visible", True),
        "block_found": _pooled_share(per_source, "block_found", "block_visible", True),
        "effector_error_mm": _mean_over_sources([m["effector_error_mm"] for m in per_source]),
        "block_error_mm": _mean_over_sources([m["block_error_mm"] for m in per_source]),
    }


def _no_reward(obs: dict[str, np.ndarray], action: np.ndarray, next_obs: dict[str, np.ndarray]) -> float:
    return 0.0


def _never(obs: dict[str, np.ndarray]) -> bool:
    return False


def check_open_loop_settings(embodiment: str, episodes: int, horizon: int) -> None:
    """Refuse settings an open-loop harness cannot read: an embodiment without a MuJoCo env, a horizon short of
    the one action following is read at, fewer than two episodes to shuffle actions between."""
    if embodiment not in PUSH_BLOCK_IDS:
        raise ValueError(f"embodiment={embodiment!r}; expected one of {sorted(PUSH_BLOCK_IDS)}")
    if horizon < SHUFFLED_AT:
        raise ValueError(f"horizon={horizon}; expected at least {SHUFFLED_AT} (action following is read there)")
    if episodes < 2:
        raise ValueError(f"episodes={episodes}; expected at least 2 (shuffling swaps actions between episodes)")


def evaluate_fd(
    model: WorldModel,
    embodiment: str = "point",
    episodes: int = 8,
    horizon: int = 16,
    sampling_steps: int = 4,
    seed: int = FD_SEED,
    progress: bool = True,
) -> FDResult:
    """Fidelity of the learned env against MuJoCo (see the module docstring)."""
    check_open_loop_settings(embodiment, episodes, horizon)
    env_id = PUSH_BLOCK_IDS[embodiment]
    seeds = [seed + i for i in range(episodes)]
    per_source: dict[str, Any] = {}
    pooled: dict[str, list[list[float]]] = {}
    example = None
    for name, noise in tqdm(SOURCES.items(), desc=f"eval fd {embodiment}", disable=not progress):
        real = record_mujoco(env_id, noise, seeds, horizon)
        starts = FixedStarts([Start(real["frames"][i, 0], real["states"][i, 0]) for i in range(episodes)])
        envs = open_loop_envs(model, embodiment, starts, horizon, sampling_steps)
        pred = imagine(envs, starts, real["actions"], seed)
        shuffled = imagine(envs, starts, np.roll(real["actions"], 1, axis=0), seed)
        envs.close()
        metrics = _per_horizon(real, pred)
        wrong = _per_horizon(real, shuffled)
        metrics["psnr_shuffled"] = wrong["psnr"]
        metrics["effector_found_shuffled"] = wrong["effector_found"]
        metrics["effector_error_mm_shuffled"] = wrong["effector_error_mm"]
        held = np.repeat(real["frames"][:, :1], horizon, axis=1)
        metrics["effector_found_by_place"] = effector_found_by_place(real["frames"][:, 1:], pred["frames"][:, 1:])
        metrics["block_error_mm_copy_last"] = object_metrics(real["frames"][:, 1:], held)["block_error_mm"]
        metrics["detector_floor_mm"] = detector_floor_mm(
            real["frames"], {"effector": real["effector"], "block": real["block"]}
        )
        if hasattr(model, "reconstruct"):
            metrics["autoencoder_floor"] = object_metrics(
                real["frames"][:, 1:], model.reconstruct(real["frames"][:, 1:])
            )
        metrics["delta_psnr_shuffled"] = metrics["psnr"][SHUFFLED_AT - 1] - metrics["psnr_shuffled"][SHUFFLED_AT - 1]
        per_source[name] = metrics
        for key in POOLED:
            pooled.setdefault(key, []).append(metrics[key])
        if example is None:
            example = {"real": real["frames"][0], "imagined": pred["frames"][0]}
    mean = {key: _mean_over_sources(values) for key, values in pooled.items()}
    source_metrics = list(per_source.values())
    mean |= {key: _pooled_share(source_metrics, key, *of) for key, of in SHARES.items()}
    floors = [m["detector_floor_mm"] for m in per_source.values()]
    places = [m["effector_found_by_place"] for m in per_source.values()]
    by_place = {
        place: {count: sum(p[place][count] for p in places) for count in ("shown", "found")} for place in places[0]
    }
    return FDResult(
        embodiment=embodiment,
        horizon=list(range(1, horizon + 1)),
        psnr=mean["psnr"],
        ssim=mean["ssim"],
        psnr_copy_last=mean["psnr_copy_last"],
        state_error=mean["state_error"],
        psnr_shuffled=mean["psnr_shuffled"],
        delta_psnr_shuffled=mean["psnr"][SHUFFLED_AT - 1] - mean["psnr_shuffled"][SHUFFLED_AT - 1],
        effector_visible=mean["effector_visible"],
        effector_found=mean["effector_found"],
        effector_spurious=mean["effector_spurious"],
        effector_error_mm=mean["effector_error_mm"],
        block_found=mean["block_found"],
        block_error_mm=mean["block_error_mm"],
        block_error_mm_copy_last=mean["block_error_mm_copy_last"],
        effector_found_shuffled=mean["effector_found_shuffled"],
        effector_error_mm_shuffled=mean["effector_error_mm_shuffled"],
        effector_found_by_place=by_place,
        detector_floor_mm={name: _mean_or_none([f[name] for f in floors]) for name in OBJECTS},
        autoencoder_floor=_pooled_floor([m["autoencoder_floor"] for m in source_metrics])
        if "autoencoder_floor" in source_metrics[0]
        else None,
        beats_copy_last_at=[
            h for h, (a, b) in enumerate(zip(mean["psnr"], mean["psnr_copy_last"], strict=True), 1) if a > b
        ],
        per_source=per_source,
        episodes_per_source=episodes,
        sources=SOURCES,
        sampling_steps=sampling_steps,
        seeds=[seeds[0], seeds[-1]],
        example=example,
    )


def plot_fd(result: FDResult, path: str | Path) -> Path:
    """PSNR per horizon (ours, copy-last, shuffled actions) and state error, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    h = result.horizon
    left.plot(h, result.psnr, "o-", label="learned env")
    left.plot(h, result.psnr_copy_last, "s--", label="copy-last frame")
    left.plot(h, result.psnr_shuffled, "x:", label="learned env, shuffled actions")
    left.set_xlabel("horizon (steps)")
    left.set_ylabel("PSNR vs MuJoCo (dB)")
    left.legend()
    left.set_title(f"{result.embodiment}: frame fidelity")
    right.plot(h, result.state_error, "o-")
    right.set_xlabel("horizon (steps)")
    right.set_ylabel("agent_pos error (raw units)")
    right.set_title("state error")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def frame_strip(real: np.ndarray, imagined: np.ndarray, path: str | Path, every: int = 2) -> Path:
    """Real (top row) and imagined (bottom row) frames side by side, upscaled 2x, as a PNG."""
    import imageio.v3 as iio

    picks = list(range(0, len(real), every))
    top = np.concatenate([real[i] for i in picks], 1)
    bottom = np.concatenate([imagined[i] for i in picks], 1)
    strip = np.concatenate([top, bottom], 0).repeat(2, 0).repeat(2, 1)
    path = Path(path)
    iio.imwrite(path, strip)
    return path
