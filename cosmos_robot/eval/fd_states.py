"""Forward-dynamics fidelity of a state-only learned env: agent_pos against MuJoCo, open loop.

A learned env with ``observation="state"`` returns ``agent_pos`` and no frame, so the object metrics of
:mod:`cosmos_robot.eval.fd_fidelity` (which read frames) cannot judge it; this harness reads what it returns.
Same protocol: per action source (expert, noisy expert, random) and seeded episode, MuJoCo records the
source's actions and states; the learned env (:class:`ForwardDynamicsVectorEnv`, state-only, reward and
success given as functions: the configuration ``benchmarks/bench_fd_env.py`` times for state-only
observations) starts from the same frame and state and is fed the same actions, and the same starts are
fed another episode's actions (rolled by one) to show that the states follow the actions.

``agent_heads`` picks what steps the states where the checkpoint has a choice: the object's agent heads
(``WorldActionModel.agent_heads``, the default) or the forward prior's convolutions. Any other
:class:`~cosmos_robot.interface.WorldModel` is run as it is (``MuJoCoOracle``: the harness's ceiling, zero error).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from cosmos_robot.envs import PUSH_BLOCK_IDS
from cosmos_robot.envs.forward_dynamics import ForwardDynamicsVectorEnv
from cosmos_robot.envs.start_sources import FixedStarts, Start
from cosmos_robot.eval.fd_fidelity import SHUFFLED_AT, SOURCES, check_open_loop_settings, record_mujoco
from cosmos_robot.eval.result import EvalResult
from cosmos_robot.interface import WorldModel
from cosmos_robot.keys import AGENT_POS
from cosmos_robot.seeds import FD_SEED
from cosmos_robot.world_model import WorldActionModel


@dataclass
class FDStateResult(EvalResult):
    """agent_pos fidelity of the state-only learned env, per horizon (mean over the action sources).

    Attributes:
        embodiment: the embodiment evaluated.
        horizon: 1..H.
        state_error: mean agent_pos error per horizon (raw units: metres for point, radians for arm2).
        state_error_shuffled: the same with another episode's actions from the same starts.
        shuffled_ratio_h8: ``state_error_shuffled / state_error`` at horizon 8 (1: the states ignore the actions;
            None where the error is zero, as MuJoCo's own).
        state_error_copy_last: the error had agent_pos stayed at its start (how far MuJoCo moved it).
        stepped_by: ``"agent heads"`` or ``"forward prior"``: what stepped the states (another model: its class).
        per_source: ``state_error``, ``state_error_shuffled`` and ``state_error_copy_last`` per action source.
        episodes_per_source, sources, seeds: the settings.
    """

    embodiment: str
    horizon: list[int]
    state_error: list[float]
    state_error_shuffled: list[float]
    shuffled_ratio_h8: float | None
    state_error_copy_last: list[float]
    stepped_by: str
    per_source: dict[str, dict[str, list[float]]]
    episodes_per_source: int
    sources: dict[str, float]
    seeds: list[int]


def _no_reward(obs: dict[str, np.ndarray], action: np.ndarray, next_obs: dict[str, np.ndarray]) -> np.ndarray:
    return np.zeros(len(next_obs[AGENT_POS]))


def _never(obs: dict[str, np.ndarray]) -> np.ndarray:
    return np.zeros(len(obs[AGENT_POS]), bool)


def imagine_states(envs: ForwardDynamicsVectorEnv, starts: FixedStarts, actions: np.ndarray, seed: int) -> np.ndarray:
    """agent_pos (E, H + 1, S) of an open-loop rollout of ``actions`` (E, H, A) from the fixed starts."""
    starts.rewind()
    obs, _ = envs.reset(seed=seed)
    states = [obs[AGENT_POS]]
    for h in range(actions.shape[1]):
        obs, *_ = envs.step(actions[:, h])
        states.append(obs[AGENT_POS])
    return np.stack(states, 1)


def _errors(predicted: np.ndarray, real: np.ndarray) -> list[float]:
    """Mean error per horizon 1..H of states (E, H + 1, S) against the real ones."""
    return [float(e) for e in np.linalg.norm(predicted[:, 1:] - real[:, 1:], axis=-1).mean(0)]


def evaluate_fd_states(
    model: WorldModel,
    embodiment: str = "point",
    episodes: int = 8,
    horizon: int = 16,
    seed: int = FD_SEED,
    agent_heads: bool = True,
    progress: bool = True,
) -> FDStateResult:
    """agent_pos fidelity of the state-only learned env against MuJoCo (see the module docstring)."""
    check_open_loop_settings(embodiment, episodes, horizon)
    seeds = [seed + i for i in range(episodes)]
    per_source: dict[str, dict[str, Any]] = {}
    native = isinstance(model, WorldActionModel)
    before = model.agent_heads if native else None
    if native:
        model.agent_heads = agent_heads
    try:
        for name, noise in tqdm(SOURCES.items(), desc=f"eval fd-state {embodiment}", disable=not progress):
            real = record_mujoco(PUSH_BLOCK_IDS[embodiment], noise, seeds, horizon)
            starts = FixedStarts([Start(real["frames"][i, 0], real["states"][i, 0]) for i in range(episodes)])
            envs = ForwardDynamicsVectorEnv(
                episodes,
                model,
                embodiment,
                start=starts,
                observation="state",
                max_episode_steps=horizon + 1,
                terminate_on_success=False,
                reward_fn=_no_reward,
                success_fn=_never,
                batched_fns=True,
            )
            try:
                pred = imagine_states(envs, starts, real["actions"], seed)
                shuffled = imagine_states(envs, starts, np.roll(real["actions"], 1, axis=0), seed)
            finally:
                envs.close()
            held = np.repeat(real["states"][:, :1], horizon + 1, axis=1)
            per_source[name] = {
                "state_error": _errors(pred, real["states"]),
                "state_error_shuffled": _errors(shuffled, real["states"]),
                "state_error_copy_last": _errors(held, real["states"]),
            }
    finally:
        if native:
            model.agent_heads = before
    mean = {
        key: [float(np.mean(at)) for at in zip(*(m[key] for m in per_source.values()), strict=True)]
        for key in ("state_error", "state_error_shuffled", "state_error_copy_last")
    }
    if not native:
        stepped = type(model).__name__
    else:
        stepped = "agent heads" if agent_heads and _has_agent_heads(model, embodiment) else "forward prior"
    return FDStateResult(
        embodiment=embodiment,
        horizon=list(range(1, horizon + 1)),
        state_error=mean["state_error"],
        state_error_shuffled=mean["state_error_shuffled"],
        shuffled_ratio_h8=_ratio(mean["state_error_shuffled"][SHUFFLED_AT - 1], mean["state_error"][SHUFFLED_AT - 1]),
        state_error_copy_last=mean["state_error_copy_last"],
        stepped_by=stepped,
        per_source=per_source,
        episodes_per_source=episodes,
        sources=SOURCES,
        seeds=[seeds[0], seeds[-1]],
    )


def _ratio(shuffled: float, true: float) -> float | None:
    """How many times the true actions' error the shuffled actions' is (None where the true error is zero: below
    a nanometre or nanoradian, float32's rounding of MuJoCo's own states)."""
    return shuffled / true if true > 1e-9 else None


def _has_agent_heads(model: WorldActionModel, embodiment: str) -> bool:
    """Whether ``model`` steps ``embodiment``'s states by its object's agent heads where no frame is read."""
    objects = model.network.object_pose
    domain = model.processor.entry(embodiment).embodiment.domain_id
    return objects is not None and objects.has_agent and objects.carries(domain)
