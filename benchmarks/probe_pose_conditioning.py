"""Would the pushed block stop drifting if the forward prior knew where the block is?

The shipped prior keeps the block only in the latent grid, and a push drifts there: more training,
longer rollouts and losses on decoded frames or on the block's position read from the grid did not
take the drift down (docs/results.md). This probe asks the question underneath: given the block's pose
as maps beside the grid (a Gaussian round the block's cell with its sub-cell offset and its yaw, now
and after the step), can the prior draw the block where the pose says, step after step?

It fine-tunes two copies of the checkpoint's prior on the recipe's 8-step rollouts, teacher-forced:
one given the recorded poses (``ForwardPrior.add_inputs``), a control given the same number of maps
left at zero (the same training without the information). Then, on held-out 16-step windows whose
block moves more than ``--moved-mm``, it decodes the rollouts and finds the block with the project's
colour detector (``policies.pixel_expert.perceive``), against MuJoCo's recorded pose:

- the prior as shipped, and the control;
- the pose-conditioned prior given the recorded poses (how well it draws a block it is told about);
- the same prior given poses rolled open loop by the block-dynamics MLP of
  ``cosmos_robot.eval.block_oracle`` from the window's first pose (what a prior that carried the
  block's pose and predicted its push could reach);
- the autoencoder's reconstruction of the real frame (the detector's and decoder's floor).

The same five rows are then scored on the expert episodes `eval fd` records in MuJoCo (``--fd-episodes``
from ``--fd-seed``), rolled from the encoded first frame: `eval fd` reads the env's frames (the pixel
residual over the plain decode used here), so its shipped row is the comparable one, not its number.

The poses come from ``observation.environment_state`` (block x, y, yaw first) and the oracle's effector
from the robot's kinematics. The shipped env now carries the pose this way (``model/object_pose.py``:
its readout, maps and push MLP are the ones used here); this probe measures the design's parts one at a
time, on a prior fine-tuned here.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import time
from dataclasses import dataclass

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from cosmos_robot.atomic import write_file_atomic  # noqa: E402
from cosmos_robot.datasets.training_set import TrainingSet  # noqa: E402
from cosmos_robot.envs import PUSH_BLOCK_IDS  # noqa: E402
from cosmos_robot.envs.push_block import effector_from_state  # noqa: E402
from cosmos_robot.envs.push_block_scene import TABLE_HALF  # noqa: E402
from cosmos_robot.eval.block_oracle import BlockDynamics, BlockEpisode, fit_block_dynamics  # noqa: E402
from cosmos_robot.eval.fd_fidelity import record_mujoco  # noqa: E402
from cosmos_robot.keys import ACTION, OBS_ENV_STATE, OBS_STATE  # noqa: E402
from cosmos_robot.model.config import ModelConfig  # noqa: E402
from cosmos_robot.model.forward_prior import ForwardPrior, rollout_loss  # noqa: E402
from cosmos_robot.model.object_pose import MAPS_PER_POSE, PoseReadout, pose_maps  # noqa: E402
from cosmos_robot.model.stems import grid_tokens, latent_grids  # noqa: E402
from cosmos_robot.object_pose_training import fit_readout  # noqa: E402
from cosmos_robot.part_training import train_part  # noqa: E402
from cosmos_robot.policies.pixel_expert import perceive  # noqa: E402
from cosmos_robot.seeds import FD_SEED  # noqa: E402
from cosmos_robot.world_model import WorldActionModel  # noqa: E402

HORIZONS = (1, 8, 16)


def step_maps(poses: torch.Tensor, side: int, sigma: float) -> torch.Tensor:
    """Pose sequences (B, R + 1, 3) -> each step's maps (B, R, 10, side, side): the pose now and next."""
    b, r = poses.shape[0], poses.shape[1] - 1
    maps = pose_maps(poses.flatten(0, 1), side, TABLE_HALF, sigma).view(b, r + 1, MAPS_PER_POSE, side, side)
    return torch.cat([maps[:, :-1], maps[:, 1:]], 2)


def block_poses(data: TrainingSet, split: str) -> torch.Tensor:
    """Every frame's block pose (N, 3) of a split, in the order of ``data.transitions(split)``'s rows."""
    parts = []
    for name in sorted(data.data):
        episodes = getattr(data.data[name], split).episodes
        if OBS_ENV_STATE not in episodes.data:
            raise ValueError(f"embodiment={name!r} has no {OBS_ENV_STATE}; expected PushBlock datasets")
        parts.append(np.asarray(episodes.data[OBS_ENV_STATE])[:, :3])
    return torch.from_numpy(np.concatenate(parts)).float()


def block_episodes(data: TrainingSet, name: str, split: str) -> tuple[list[BlockEpisode], np.ndarray]:
    """One embodiment's episodes of a split as the block oracle's, and each one's first row."""
    episodes = getattr(data.data[name], split).episodes
    states, actions, poses = (np.asarray(episodes.data[k]) for k in (OBS_STATE, ACTION, OBS_ENV_STATE))
    effector = effector_from_state(name, states)
    ends = episodes.episode_ends
    starts = np.concatenate([[0], ends[:-1]])
    return [
        BlockEpisode(states[a:b], actions[a:b], poses[a:b, :3].astype(np.float64), effector[a:b])
        for a, b in zip(starts, ends, strict=True)
    ], starts


def recorded_episodes(name: str, states: np.ndarray, actions: np.ndarray, poses: np.ndarray) -> list[BlockEpisode]:
    """Episodes of states (E, H + 1, S), actions (E, H, A) and block poses (E, H + 1, 3) as the block
    oracle's (one action per state, the effector by ``name``'s kinematics)."""
    padded = np.concatenate([actions, np.zeros_like(actions[:, :1])], 1)
    effector = effector_from_state(name, states)
    return [
        BlockEpisode(states[e], padded[e], np.asarray(poses[e], np.float64), effector[e]) for e in range(len(states))
    ]


def rolled_poses(
    dynamics: BlockDynamics, episodes: list[BlockEpisode], starts: list[int], horizon: int
) -> torch.Tensor:
    """Block poses (E, horizon + 1, 3) rolled open loop by ``dynamics`` from each episode's recorded pose at
    its start step (the pose a step earlier as the block's last motion; none at an episode's first step)."""
    out = torch.zeros(len(episodes), horizon + 1, 3)
    for e, (episode, t) in enumerate(zip(episodes, starts, strict=True)):
        pose, before = episode.poses[[t]].copy(), episode.poses[[max(t - 1, 0)]].copy()
        out[e, 0] = torch.from_numpy(pose[0]).float()
        for k in range(horizon):
            pose, before = dynamics.step(episode, np.array([t + k]), pose, before), pose
            out[e, k + 1] = torch.from_numpy(pose[0]).float()
    return out


def fit_pose_readout(grids: torch.Tensor, poses: torch.Tensor, steps: int, seed: int) -> PoseReadout:
    """Fit :class:`PoseReadout` to latent grids (N, C, h, w) and their recorded poses (N, 3)."""
    readout = PoseReadout(grids.shape[1], TABLE_HALF)
    fit_readout(readout, grids, poses, steps, seed)
    return readout


@dataclass
class Starts:
    """Where every prior's rollout starts: the first grids (B, C, h, w), the masked normalised state (B, S),
    the masked normalised actions (B, R, W), the embodiment ids (B,) and the real state channels (B, S)."""

    grid: torch.Tensor
    state: torch.Tensor
    actions: torch.Tensor
    domain: torch.Tensor
    state_channels: torch.Tensor

    @classmethod
    def of(
        cls,
        config: ModelConfig,
        tokens: torch.Tensor,
        state: torch.Tensor,
        actions: torch.Tensor,
        domain: torch.Tensor,
        action_channels: torch.Tensor,
        state_channels: torch.Tensor,
    ) -> Starts:
        """From the first frame's tokens (B, 1, GG, Cf), its state and the actions, padded channels zeroed."""
        grid = latent_grids(tokens, config)[:, 0]
        return cls(grid, state * state_channels, actions * action_channels[:, None], domain, state_channels)

    @torch.no_grad()
    def roll(self, prior: ForwardPrior, maps: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``prior``'s grids (B, R, C, h, w) and states (B, R, S) from these starts, reading ``maps``."""
        return prior.rollout(self.grid, self.state, self.actions, self.domain, self.state_channels, maps)


def prior_runs(
    starts: Starts,
    shipped_grids: torch.Tensor,
    control: ForwardPrior,
    informed: ForwardPrior,
    sigma: float,
    true_poses: torch.Tensor,
    oracle_poses: torch.Tensor,
    real_grids: torch.Tensor,
) -> dict[str, torch.Tensor]:
    """Each row's grids (B, R, C, h, w): the shipped prior's rollout, the control's, the pose-conditioned
    prior's told the recorded and the MLP's poses (B, R + 1, 3), and the real frames' latents."""
    side = starts.grid.shape[-1]
    zeros = torch.zeros(*starts.actions.shape[:2], 2 * MAPS_PER_POSE, side, side)
    return {
        "shipped prior": shipped_grids,
        "control (same fine-tuning, maps at zero)": starts.roll(control, zeros)[0],
        "pose-conditioned, recorded poses": starts.roll(informed, step_maps(true_poses, side, sigma))[0],
        "pose-conditioned, block-dynamics MLP's poses": starts.roll(informed, step_maps(oracle_poses, side, sigma))[0],
        "autoencoder's reconstruction of the real frame": real_grids,
    }


def score_runs(
    model: WorldActionModel,
    config: ModelConfig,
    runs: dict[str, torch.Tensor],
    true_poses: torch.Tensor,
    names: list[str],
) -> dict[str, dict]:
    """Block error (mm: mean, median, share missing) of each run's decoded frames at :data:`HORIZONS`,
    by robot, against the recorded poses (B, R + 1, 3); ``names`` is each row's robot."""
    report: dict[str, dict] = {}
    for label, grids in runs.items():
        report[label] = {}
        for h in HORIZONS:
            frames = model._decode(grid_tokens(grids[:, h - 1 : h], config), False)[:, 0]
            errors = []
            for frame, pose in zip(frames, true_poses[:, h], strict=True):
                seen = perceive(frame)["block"]
                errors.append(np.nan if seen is None else float(np.linalg.norm(seen - pose[:2].numpy()) * 1000.0))
            errors = np.asarray(errors)
            for name in sorted(set(names)):
                mine = errors[np.asarray(names) == name]
                report[label].setdefault(name, {})[f"h{h}"] = {
                    "mean_mm": float(np.nanmean(mine)),
                    "median_mm": float(np.nanmedian(mine)),
                    "missing": float(np.isnan(mine).mean()),
                }
    return report


def print_runs(report: dict[str, dict]) -> None:
    """One line per run: mean (median) block error at each horizon, by robot."""
    for label, by_name in report.items():
        cells = "; ".join(
            f"{name} " + " / ".join(f"{v['mean_mm']:.1f} ({v['median_mm']:.1f})" for v in by_h.values())
            for name, by_h in sorted(by_name.items())
        )
        print(f"  {label}: block error h{' / h'.join(map(str, HORIZONS))} mean (median) mm: {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", required=True, help="PushBlock LeRobot datasets (the recipe's)")
    parser.add_argument("--checkpoint", default="default", help="a model folder, or 'default'")
    parser.add_argument("--steps", type=int, default=800, help="fine-tuning steps of each copy of the prior")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch", type=int, default=64, help="8-step sequences per fine-tuning step")
    parser.add_argument("--sigma", type=float, default=0.6, help="width of the pose maps' Gaussian, in cells")
    parser.add_argument("--windows", type=int, default=100, help="held-out windows per embodiment")
    parser.add_argument("--moved-mm", type=float, default=10.0, help="windows whose block moves more than this")
    parser.add_argument("--oracle-steps", type=int, default=4000, help="fit steps of the block-dynamics MLP")
    parser.add_argument("--seed", type=int, default=0, help="seeds the fine-tuning, the fit and the windows")
    parser.add_argument("--fd-episodes", type=int, default=8, help="expert episodes as `eval fd` records them")
    parser.add_argument("--fd-seed", type=int, default=FD_SEED, help="their first seed (`eval fd --seed`)")
    parser.add_argument("--readout-steps", type=int, default=5000, help="fit steps of the pose readout")
    parser.add_argument("--priors", default=None, help="keep the two fine-tuned priors here (reused when present)")
    parser.add_argument("--json", default=None, help="write the numbers here")
    args = parser.parse_args()
    if (
        min(args.steps, args.batch, args.windows, args.oracle_steps, args.fd_episodes, args.readout_steps) < 1
        or not args.sigma > 0
    ):
        parser.error(
            f"--steps {args.steps} --batch {args.batch} --windows {args.windows} --oracle-steps "
            f"{args.oracle_steps} --fd-episodes {args.fd_episodes} --sigma {args.sigma}; expected positive numbers"
        )
    torch.manual_seed(args.seed)
    model = WorldActionModel.from_pretrained(args.checkpoint)
    network, config = model.network, model.network.config
    if network.forward_prior is None:
        raise SystemExit(f"--checkpoint {args.checkpoint}: the model has no forward prior")
    data = TrainingSet(args.data, config, num_frames=5, seed=0)
    data.prepare(model.autoencoder)
    poses = {split: block_poses(data, split) for split in ("train", "val")}
    shipped = network.forward_prior.eval()
    train = data.transitions("train", 8)
    side = latent_grids(train.latents[:1, None], config).shape[-1]

    def fine_tune(informed: bool) -> ForwardPrior:
        prior = copy.deepcopy(shipped)
        prior.add_inputs(2 * MAPS_PER_POSE)
        prior.train()

        def step_loss(rng: torch.Generator) -> torch.Tensor:
            index = torch.randint(len(train), (args.batch,), generator=rng)
            batch = train.take_sequences(index)
            rows = train.first[index][:, None] + torch.arange(train.steps + 1)
            maps = step_maps(poses["train"][rows], side, args.sigma) * float(informed)
            grids = latent_grids(batch.frames, config)
            actions = batch.actions * batch.action_channels[:, None]
            state = batch.states[:, 0] * batch.state_channels
            rolled, states = prior.rollout(grids[:, 0], state, actions, batch.domain, batch.state_channels, maps)
            return rollout_loss(rolled, states, grids, batch.states, batch.state_channels)

        started = time.perf_counter()
        label = "pose-conditioned prior" if informed else "control (maps at zero)"
        train_part(prior, step_loss, args.steps, args.lr, args.seed, label, True, None)
        print(f"{label}: {args.steps} steps in {time.perf_counter() - started:.0f} s", flush=True)
        return prior.eval()

    if args.priors and os.path.exists(args.priors):
        saved = torch.load(args.priors)
        informed, control = copy.deepcopy(shipped), copy.deepcopy(shipped)
        for prior, key in ((informed, "informed"), (control, "control")):
            prior.add_inputs(2 * MAPS_PER_POSE)
            prior.load_state_dict(saved[key])
        print(f"fine-tuned priors read from {args.priors}")
    else:
        informed, control = fine_tune(True), fine_tune(False)
        if args.priors:
            buffer = io.BytesIO()
            torch.save({"informed": informed.state_dict(), "control": control.state_dict()}, buffer)
            write_file_atomic(args.priors, buffer.getvalue())

    horizon = max(HORIZONS)
    held_out = data.transitions("val", horizon)
    rows = held_out.first[:, None] + torch.arange(horizon + 1)
    true_poses = poses["val"][rows]
    moved = (true_poses[:, -1, :2] - true_poses[:, 0, :2]).norm(dim=-1) * 1000.0 > args.moved_mm
    rng = torch.Generator().manual_seed(args.seed)
    picked, first_row = [], 0
    oracle_parts: list[torch.Tensor] = []
    dynamics_of: dict[str, BlockDynamics] = {}
    for name in sorted(data.data):
        count = int(data.data[name].val.episodes.episode_ends[-1])
        mine = (moved & (held_out.first >= first_row) & (held_out.first < first_row + count)).nonzero().squeeze(1)
        mine = mine[torch.randperm(len(mine), generator=rng)[: args.windows]]
        train_episodes, _ = block_episodes(data, name, "train")
        dynamics_of[name] = fit_block_dynamics(train_episodes, steps=args.oracle_steps, seed=args.seed)
        val_episodes, episode_rows = block_episodes(data, name, "val")
        window_rows = held_out.first[mine].numpy() - first_row
        which = np.searchsorted(episode_rows, window_rows, side="right") - 1
        episodes = [val_episodes[e] for e in which]
        steps_in = list(window_rows - episode_rows[which])
        oracle_parts.append(rolled_poses(dynamics_of[name], episodes, steps_in, horizon))
        picked.append(mine)
        first_row += count
    picked = torch.cat(picked)
    if not len(picked):
        raise SystemExit(f"no held-out window moves the block more than {args.moved_mm} mm in {horizon} steps")
    true_poses, oracle_poses = true_poses[picked], torch.cat(oracle_parts)
    batch = held_out.take_sequences(picked)
    names = {data.data[n].embodiment.domain_id: n for n in data.data}
    starts = Starts.of(
        config,
        batch.frames[:, :1],
        batch.states[:, 0],
        batch.actions,
        batch.domain,
        batch.action_channels,
        batch.state_channels,
    )
    runs = prior_runs(
        starts,
        starts.roll(shipped)[0],
        control,
        informed,
        args.sigma,
        true_poses,
        oracle_poses,
        latent_grids(batch.frames[:, 1:], config),
    )
    report: dict[str, dict] = {
        "windows": {names[int(d)]: int((batch.domain == d).sum()) for d in batch.domain.unique()}
    }
    pose_error = (oracle_poses[:, -1, :2] - true_poses[:, -1, :2]).norm(dim=-1) * 1000.0
    report["block-dynamics MLP pose error at h16 (mm)"] = {
        names[int(d)]: float(pose_error[batch.domain == d].mean()) for d in batch.domain.unique()
    }
    report["held-out windows"] = score_runs(model, config, runs, true_poses, [names[int(d)] for d in batch.domain])
    print(f"held-out windows moving the block > {args.moved_mm:g} mm in {horizon} steps: {report['windows']}")
    print(f"block-dynamics MLP pose error at h{horizon} (mm): {report['block-dynamics MLP pose error at h16 (mm)']}")
    print_runs(report["held-out windows"])

    readout = fit_pose_readout(
        latent_grids(train.latents[:, None], config)[:, 0], poses["train"], args.readout_steps, args.seed
    )
    val_grids = latent_grids(data.transitions("val", 1).latents[:, None], config)[:, 0]
    with torch.no_grad():
        read = torch.cat([readout.poses(val_grids[i : i + 1024]) for i in range(0, len(val_grids), 1024)])
    place_mm = (read[:, :2] - poses["val"][:, :2]).norm(dim=-1) * 1000.0
    turn = (read[:, 2] - poses["val"][:, 2]) * 4.0
    report["pose readout on held-out frames"] = {
        "place_mm_mean": float(place_mm.mean()),
        "place_mm_median": float(place_mm.median()),
        "yaw_deg_mean": float(torch.atan2(turn.sin(), turn.cos()).abs().mean() / 4.0 * 180.0 / np.pi),
    }
    print(f"pose readout on held-out frames: {report['pose readout on held-out frames']}")

    # The expert episodes `eval fd` scores, recorded in MuJoCo: the start frame encoded, the rest rolled.
    report["eval fd episodes"] = {}
    for name in sorted(data.data):
        if name not in PUSH_BLOCK_IDS:
            continue
        embodiment = data.data[name].embodiment
        seeds = [args.fd_seed + i for i in range(args.fd_episodes)]
        real = record_mujoco(PUSH_BLOCK_IDS[name], 0.0, seeds, horizon)
        states = torch.from_numpy(data.processor.states_in(name, real["states"][:, 0]))
        actions = torch.from_numpy(np.stack([data.processor.actions_in(name, a) for a in real["actions"]]))
        n = len(seeds)
        domain = torch.full((n,), embodiment.domain_id)
        action_channels = (torch.arange(config.action_width) < embodiment.action_dim).expand(n, -1)
        state_channels = (torch.arange(config.state_width) < embodiment.state_dim).expand(n, -1)
        true_fd = torch.from_numpy(real["block_pose"]).float()
        tokens = model._encode(real["frames"])
        starts = Starts.of(config, tokens[:, :1], states, actions, domain, action_channels, state_channels)
        shipped_grids, predicted = starts.roll(shipped)
        episodes = recorded_episodes(name, real["states"], real["actions"], real["block_pose"])
        runs = prior_runs(
            starts,
            shipped_grids,
            control,
            informed,
            args.sigma,
            true_fd,
            rolled_poses(dynamics_of[name], episodes, [0] * n, horizon),
            latent_grids(tokens[:, 1:], config),
        )
        # The block-dynamics MLP reads the effector from the states the shipped prior predicts (what a model
        # that carries the pose would have to go on), from the recorded first pose or one read from the frame.
        own_states = np.concatenate([real["states"][:, :1], data.processor.states_out(name, predicted.numpy())], 1)
        read_start = real["block_pose"].copy()
        with torch.no_grad():
            read_start[:, 0] = readout.poses(starts.grid).numpy()
        for label, first in (("", real["block_pose"]), (", the first pose read from the frame", read_start)):
            poses_rolled = rolled_poses(
                dynamics_of[name], recorded_episodes(name, own_states, real["actions"], first), [0] * n, horizon
            )
            maps = step_maps(poses_rolled, starts.grid.shape[-1], args.sigma)
            runs[f"pose-conditioned, the MLP's poses from the prior's own states{label}"] = starts.roll(informed, maps)[
                0
            ]
        for label, by_name in score_runs(model, config, runs, true_fd, [name] * n).items():
            report["eval fd episodes"].setdefault(label, {}).update(by_name)
    print(f"expert episodes of `eval fd` ({args.fd_episodes} per robot from seed {args.fd_seed}):")
    print_runs(report["eval fd episodes"])
    if args.json:
        write_file_atomic(args.json, json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
