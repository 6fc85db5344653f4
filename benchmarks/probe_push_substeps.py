"""Would a push model stepped inside the control step carry the block closer? A probe with perception taken out.

A control step is ``FRAME_SKIP`` physics steps (0.1 s); arm2's fingertip sweeps up to ~8 cm in one, and a
step that throws the block (``probe_block_throws.py``) depends on where inside it the fingertip meets the
block. One idea is a push model stepped ``--substeps`` times per control step, the effector moved along its
path between two agent states. This probe asks whether that idea can pay before anyone builds it into the
model: on state-only episodes simulated without the camera (the recipe's mix of demonstrators), it fits
the block oracle's MLP (``cosmos_robot.eval.block_oracle``: true poses, the effector by the robot's
kinematics, one step at a time) three ways and rolls each open loop for ``--horizon`` control steps on
held-out episodes:

- ``control_step``: one step per control step, as the learned env's push MLP steps today;
- ``substep_interpolated``: ``--substeps`` steps per control step, the agent state interpolated linearly
  between the control steps' (what a learned env would have: its agent heads give one state per step);
- ``substep_true``: the same with MuJoCo's own agent state at every sub-step (the effector's true path:
  a bound on what interpolating better could buy).

With ``--rollout-steps`` each is then fine-tuned through its own rollouts of ``--rollout-control-steps``
control steps (the loss on the block's place after each control step, the gradient through every sub-step),
as the learned env's push MLPs are after their one-step fit: a one-step fit compounds its error over four
times as many steps when stepped four times as often, which the rollouts can teach it to correct.

Targets are MuJoCo's block poses at the sub-steps (recorded by replaying each control step on a copy of
the simulator's state). Errors are at the horizon, over the windows whose block moves more than
``MOVED_MM``, split by whether the window holds a throw (a control step moving the block more than
``--throw-mm``).

    .venv/bin/python benchmarks/probe_push_substeps.py --embodiment arm2 --rollout-steps 1500 \
        --rollout-control-steps 8 --json out/substeps.json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from tqdm import tqdm  # noqa: E402

from cosmos_robot.atomic import write_file_atomic  # noqa: E402
from cosmos_robot.envs import PUSH_BLOCK_IDS  # noqa: E402
from cosmos_robot.envs import push_block_scene as scene  # noqa: E402
from cosmos_robot.envs.push_block import effector_from_state  # noqa: E402
from cosmos_robot.eval.block_oracle import (  # noqa: E402
    MOVED_MM,
    QUARTER_TURN,
    BlockDynamics,
    BlockEpisode,
    fit_block_dynamics,
)
from cosmos_robot.part_training import train_part  # noqa: E402
from cosmos_robot.policies.scripted import ScriptedExpert  # noqa: E402
from cosmos_robot.push_data import MIX, NOISE_OFFSET, mix_seeds  # noqa: E402

# Seeds of this probe's episodes: their own, clear of the recipe's data and simulated pushes (100_000+),
# the tuning seeds (300_000+) and the evaluations' (500_000+).
TRAIN_SEED, TEST_SEED = 200_000, 250_000
WAYS = ("control_step", "substep_interpolated", "substep_true")


def simulate_substeps(
    embodiment: str, episodes: int, substeps: int, seed: int, progress: bool = True
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``episodes`` episodes of the recipe's mix of demonstrators: per episode (agent states (T * k + 1, S),
    block poses (T * k + 1, 3), actions (T, A)), states and poses at every one of the ``k = substeps``
    sub-steps of each control step."""
    if scene.FRAME_SKIP % substeps:
        raise ValueError(
            f"substeps={substeps}; expected a divisor of the {scene.FRAME_SKIP} physics steps of a control step"
        )
    env = gym.make(PUSH_BLOCK_IDS[embodiment], pixels=False)
    unwrapped = env.unwrapped
    agent = unwrapped._agent_qadr
    block = unwrapped._block_qadr
    levels = mix_seeds(episodes, seed)
    out = []
    bar = tqdm(total=episodes, desc=f"simulate {embodiment} sub-steps", unit="ep", disable=not progress)
    try:
        for noise, seeds in levels:
            actor = ScriptedExpert.for_env(env, noise=noise)
            for episode_seed in seeds:
                actor.reset(seed=episode_seed)
                obs, info = env.reset(seed=episode_seed)
                states, poses, actions = [unwrapped.data.qpos[agent].copy()], [unwrapped.data.qpos[block].copy()], []
                done = False
                while not done:
                    action = np.asarray(actor.act(obs, info), np.float64)
                    # The same control step replayed on a copy, stopping at each sub-step (MuJoCo is
                    # deterministic: the copy ends where the env's own step does).
                    replay = copy.copy(unwrapped.data)
                    replay.ctrl[:] = action
                    for _ in range(substeps):
                        mujoco.mj_step(unwrapped.model, replay, nstep=scene.FRAME_SKIP // substeps)
                        states.append(replay.qpos[agent].copy())
                        poses.append(replay.qpos[block].copy())
                    obs, _, terminated, truncated, info = env.step(action)
                    actions.append(action)
                    done = terminated or truncated
                out.append((np.array(states), np.array(poses), np.array(actions)))
                bar.update()
    finally:
        bar.close()
        env.close()
    return out


def as_block_episode(
    episode: tuple[np.ndarray, np.ndarray, np.ndarray], embodiment: str, substeps: int, way: str
) -> BlockEpisode:
    """One simulated episode as the block oracle's episode for ``way`` (one of :data:`WAYS`)."""
    states, poses, actions = episode
    control_states = states[::substeps]
    if way == "control_step":
        rows, held = control_states, actions
        poses = poses[::substeps]
    else:
        if way == "substep_true":
            rows = states
        else:
            weight = (np.arange(substeps) / substeps)[:, None]
            between = control_states[:-1, None] * (1 - weight) + control_states[1:, None] * weight
            rows = np.concatenate([between.reshape(-1, states.shape[-1]), control_states[-1:]])
        held = np.repeat(actions, substeps, 0)
    held = np.concatenate([held, np.zeros_like(held[:1])])  # one action per row, zero at the last
    return BlockEpisode(rows.astype(np.float32), held.astype(np.float32), poses, effector_from_state(embodiment, rows))


def _turned(vectors: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
    """Table-frame vectors (N, 2) in the frame of a block at ``yaw`` (N,): the oracle's ``_block_frame``."""
    c, s = torch.cos(yaw), torch.sin(yaw)
    return torch.stack([c * vectors[:, 0] + s * vectors[:, 1], c * vectors[:, 1] - s * vectors[:, 0]], -1)


def _step(model: BlockDynamics, effector: torch.Tensor, actions: torch.Tensor, poses, before) -> torch.Tensor:
    """The oracle's step with autograd: poses (N, 3) after one model step, ``effector`` (N, 3, 2) the effector
    a step before, now and after, ``actions`` (N, A)."""
    yaw = (poses[:, 2] + QUARTER_TURN / 2) % QUARTER_TURN - QUARTER_TURN / 2
    features = torch.cat(
        [
            _turned(effector[:, 1] - poses[:, :2], yaw),
            _turned(effector[:, 2] - effector[:, 1], yaw),
            _turned(effector[:, 1] - effector[:, 0], yaw),
            _turned(poses[:, :2] - before[:, :2], yaw),
            poses[:, :2],
            actions,
        ],
        -1,
    )
    change = model(features) / model.scale
    return poses + torch.cat([_turned(change[:, :2], -yaw), change[:, 2:]], -1)


def fit_through_rollouts(
    model: BlockDynamics, episodes: list[BlockEpisode], per_step: int, control_steps: int, steps: int, seed: int = 0
) -> BlockDynamics:
    """Fine-tune ``model`` through its own rollouts of ``control_steps`` control steps (``per_step`` model steps
    each) from the true pose, the loss on the block's place (cm) after every control step: what the learned
    env's push MLPs get after their one-step fit (``fit_push_rollouts``), here for sub-steps too."""
    length = control_steps * per_step
    usable = [e for e in episodes if len(e.poses) > length + per_step]
    effector = [torch.from_numpy(e.effector).float() for e in usable]
    poses = [torch.from_numpy(e.poses).float() for e in usable]
    actions = [torch.from_numpy(e.actions) for e in usable]
    # Windows start at control steps after the first (so the motion a control step earlier is recorded).
    starts = [np.arange(per_step, len(e.poses) - length, per_step) for e in usable]
    windows = torch.from_numpy(np.concatenate([np.stack([np.full(len(s), i), s], 1) for i, s in enumerate(starts)]))

    def loss(rng: torch.Generator) -> torch.Tensor:
        picked = windows[torch.randint(len(windows), (256,), generator=rng)]
        rows = [(int(i), int(t)) for i, t in picked]
        track = torch.stack([poses[i][t - per_step : t + length + 1] for i, t in rows])  # (B, per_step + length + 1, 3)
        path = torch.stack([effector[i][t - 1 : t + length + 1] for i, t in rows])  # (B, length + 2, 2)
        held = torch.stack([actions[i][t : t + length] for i, t in rows])
        now = track[:, per_step]
        before = now - (now - track[:, 0]) / per_step
        total = torch.zeros(())
        for k in range(length):
            now, before = _step(model, path[:, k : k + 3], held[:, k], now, before), now
            if (k + 1) % per_step == 0:
                total = total + ((now[:, :2] - track[:, per_step + k + 1, :2]) * 100.0).pow(2).sum(-1).mean()
        return total / control_steps

    model.requires_grad_(True).train()
    train_part(model, loss, steps, 5e-4, seed, "through rollouts", progress=False)
    return model.requires_grad_(False).eval()


@torch.no_grad()
def rollout_errors(
    model: BlockDynamics, episodes: list[BlockEpisode], per_step: int, horizon: int, stride: int = 4
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(error at the horizon (mm), the block's move over the window (mm), its largest control step (mm)) of
    every window starting at a control step every ``stride``; ``per_step`` model steps per control step.
    The block's motion the step before at a window's start comes from the last control step (spread over
    its sub-steps): a learned env knows no more."""
    errors, moved, largest = [], [], []
    for episode in episodes:
        control = episode.poses[::per_step, :2]
        starts = np.arange(0, len(control) - 1 - horizon, stride)
        if not len(starts):
            continue
        t = starts * per_step
        poses = episode.poses[t].copy()
        previous = episode.poses[np.maximum(t - per_step, 0)]
        before = poses - (poses - previous) / per_step
        for k in range(horizon * per_step):
            poses, before = model.step(episode, t + k, poses, before), poses
        end = episode.poses[t + horizon * per_step, :2]
        errors.append(np.linalg.norm(poses[:, :2] - end, axis=1) * 1000.0)
        moved.append(np.linalg.norm(episode.poses[t, :2] - end, axis=1) * 1000.0)
        step = np.linalg.norm(np.diff(control, axis=0), axis=1) * 1000.0
        largest.append(np.array([step[s : s + horizon].max() for s in starts]))
    return np.concatenate(errors), np.concatenate(moved), np.concatenate(largest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embodiment", default="arm2", choices=sorted(PUSH_BLOCK_IDS))
    parser.add_argument("--episodes", type=int, default=4000, help="training episodes (the recipe simulates 7600)")
    parser.add_argument("--test-episodes", type=int, default=400)
    parser.add_argument("--substeps", type=int, default=4, help="sub-steps per control step")
    parser.add_argument("--fit-steps", type=int, default=4000, help="optimiser steps at control steps (2x sub-stepped)")
    parser.add_argument(
        "--rollout-steps", type=int, default=0, help="then fine-tune each through its rollouts, steps (0: no)"
    )
    parser.add_argument("--rollout-control-steps", type=int, default=4, help="control steps per training rollout")
    parser.add_argument("--horizon", type=int, default=16)
    parser.add_argument(
        "--throw-mm", type=float, default=30.0, help="a control step that moves the block more is a throw"
    )
    parser.add_argument("--seed", type=int, default=TRAIN_SEED, help="seed of the first training episode")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    args = parser.parse_args()
    if (
        min(args.episodes, args.test_episodes, args.substeps, args.fit_steps, args.horizon, args.rollout_control_steps)
        < 1
    ):
        parser.error(
            "--episodes, --test-episodes, --substeps, --fit-steps, --horizon, --rollout-control-steps: expected >= 1"
        )
    if args.rollout_steps < 0:
        parser.error(f"--rollout-steps={args.rollout_steps}; expected 0 or more")
    try:  # each demonstrator of the mix runs its own block of NOISE_OFFSET seeds
        mix_seeds(max(args.episodes, args.test_episodes), args.seed)
    except ValueError as error:
        parser.error(str(error))
    if not 0 <= args.seed <= TEST_SEED - len(MIX) * NOISE_OFFSET:
        parser.error(
            f"--seed={args.seed}: expected 0..{TEST_SEED - len(MIX) * NOISE_OFFSET}, clear of the held-out seeds"
        )
    torch.set_num_threads(min(2, torch.get_num_threads()))
    started = time.perf_counter()
    train = simulate_substeps(args.embodiment, args.episodes, args.substeps, args.seed)
    test = simulate_substeps(args.embodiment, args.test_episodes, args.substeps, TEST_SEED)
    report: dict[str, object] = {
        "embodiment": args.embodiment,
        "episodes": args.episodes,
        "test_episodes": args.test_episodes,
        "substeps": args.substeps,
        "horizon": args.horizon,
        "throw_mm": args.throw_mm,
        "rollout_steps": args.rollout_steps,
        "rollout_control_steps": args.rollout_control_steps,
    }
    for way in WAYS:
        per_step = 1 if way == "control_step" else args.substeps
        trained = [as_block_episode(e, args.embodiment, args.substeps, way) for e in train]
        model = fit_block_dynamics(trained, steps=args.fit_steps * (1 if per_step == 1 else 2), seed=0)
        if args.rollout_steps:
            fit_through_rollouts(model, trained, per_step, args.rollout_control_steps, args.rollout_steps)
        held_out = [as_block_episode(e, args.embodiment, args.substeps, way) for e in test]
        errors, moved, largest = rollout_errors(model, held_out, per_step, args.horizon)
        kept = moved > MOVED_MM
        thrown = largest > args.throw_mm
        report[way] = {
            "windows": int(kept.sum()),
            "windows_thrown": int((kept & thrown).sum()),
            "all_mm": float(errors[kept].mean()),
            "thrown_mm": float(errors[kept & thrown].mean()) if (kept & thrown).any() else None,
            "not_thrown_mm": float(errors[kept & ~thrown].mean()) if (kept & ~thrown).any() else None,
            "copy_mm": float(moved[kept].mean()),
        }
        line = report[way]
        print(
            f"{way}_h{args.horizon}_mm= {line['all_mm']:.1f} (thrown {line['thrown_mm'] or float('nan'):.1f}, "
            f"not {line['not_thrown_mm'] or float('nan'):.1f}; {line['windows']} windows, "
            f"{line['windows_thrown']} thrown; a block left still {line['copy_mm']:.1f})",
            flush=True,
        )
    report["seconds"] = time.perf_counter() - started
    if args.json:
        write_file_atomic(args.json, json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
