"""``cosmos-robot``: the command line. Bad input prints one line and exits non-zero, never a traceback."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (its default prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def _add_collect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("collect", help="roll out a scripted policy in MuJoCo and write a LeRobot v3 dataset")
    p.add_argument(
        "--env",
        required=True,
        help="env id, e.g. cosmos_robot/PushBlockPoint-v0, "
        "cosmos_robot/PushBlockArm2-v0 or any gymnasium MuJoCo id such as Reacher-v5",
    )
    p.add_argument("--episodes", type=int, required=True, help="number of episodes (> 0)")
    p.add_argument("--policy", default="expert", help="expert (scripted, see --noise) or random")
    p.add_argument("--noise", type=float, default=0.0, help="expert's probability of a random action per step, 0..1")
    p.add_argument("--seed", type=int, default=0, help="episode k is reset with seed + k")
    p.add_argument("--width", type=int, default=64, help="image width, a positive multiple of 8")
    p.add_argument("--height", type=int, default=64, help="image height, a positive multiple of 8")
    p.add_argument("--images", action="store_true", help="store lossless PNG frames instead of mp4 video")
    p.add_argument("--task", help="task string stored with every frame (default: the env's own)")
    p.add_argument("--fps", type=int, help="the env's control rate (default: its metadata render_fps or 1 / dt)")
    p.add_argument("--out", required=True, help="dataset folder to create (refused if it exists)")
    p.add_argument("--overwrite", action="store_true", help="replace --out (and a stopped run's episodes) if there")
    p.add_argument("--resume", action="store_true", help="continue a stopped run from its last complete episode")
    p.add_argument("--json", help="also write the summary as JSON to this path")
    p.set_defaults(run=_run_collect)


def _run_collect(args: argparse.Namespace) -> None:
    from cosmos_robot.atomic import write_file_atomic
    from cosmos_robot.collect import collect, summary_dict

    summary = collect(
        args.env,
        args.episodes,
        args.out,
        policy=args.policy,
        noise=args.noise,
        seed=args.seed,
        width=args.width,
        height=args.height,
        video=not args.images,
        overwrite=args.overwrite,
        task=args.task,
        resume=args.resume,
        fps=args.fps,
    )
    if args.json:
        write_file_atomic(args.json, json.dumps(summary_dict(summary), indent=2))
    print(summary.line())


def _add_convert(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="convert a LeRobot dataset to a zarr episode store, or back")
    p.add_argument("src", help="a LeRobot dataset folder or a zarr store (*.zarr)")
    p.add_argument("dst", help="output: a zarr store when src is LeRobot, a LeRobot dataset when src is zarr")
    p.add_argument("--video", action="store_true", help="zarr -> LeRobot: encode mp4 instead of lossless images")
    p.add_argument("--overwrite", action="store_true", help="replace dst if it exists")
    p.set_defaults(run=_run_convert)


def _run_convert(args: argparse.Namespace) -> None:
    from cosmos_robot.datasets.zarr_store import lerobot_to_zarr, zarr_to_lerobot

    src = Path(args.src)
    started = time.perf_counter()
    if (src / "meta" / "info.json").is_file():
        lerobot_to_zarr(src, args.dst, overwrite=args.overwrite)
        kind = "zarr store"
    elif (src / "zarr.json").is_file():
        zarr_to_lerobot(src, args.dst, overwrite=args.overwrite, video=args.video)
        kind = "LeRobot dataset"
    else:
        raise FileNotFoundError(f"src={args.src!r} is neither a LeRobot dataset nor a zarr store")
    print(f"wrote {kind} {args.dst} in {time.perf_counter() - started:.1f} s")


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train the world-action model (autoencoder first, then the MoT)")
    p.add_argument(
        "--recipe",
        help="a named recipe (default, previous_default, mot_only, smoke): collects its data, sets its hyperparameters",
    )
    p.add_argument("--data-dir", default="data", help="where a recipe's datasets are collected")
    p.add_argument("--datasets", nargs="+", default=[], help="LeRobot dataset folders or zarr stores")
    p.add_argument("--out", required=True, help="checkpoint folder (rewritten atomically during training)")
    p.add_argument("--preset", help="model size: tiny, small, base")
    p.add_argument("--train-steps", type=int, help="optimiser steps of the world model")
    p.add_argument("--batch-size", type=int, help="global batch (split across torchrun processes)")
    p.add_argument("--lr", type=float, help="peak learning rate")
    p.add_argument("--seed", type=int, help="seeds everything")
    p.add_argument("--threads", type=int, help="torch threads per process")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint at --out exactly")
    p.add_argument("--export", help="also write an inference-only float16 copy here (what ships as the default)")
    p.add_argument(
        "--autoencoder", help="reuse the frame autoencoder of this checkpoint instead of training one (saves minutes)"
    )
    p.add_argument(
        "--declare",
        help="JSON file: per robot_type, the action layout and camera of robots the toolkit does not know "
        "(docs/guide.md, 'Your own robot')",
    )
    p.add_argument(
        "--fps",
        type=float,
        help="the model's rate (default 10); datasets at a whole multiple of it are subsampled",
    )
    p.set_defaults(run=_run_train)


def _run_train(args: argparse.Namespace) -> None:
    from cosmos_robot.recipes import get_recipe, prepare_data
    from cosmos_robot.train import TrainConfig, Trainer, export_inference

    settings: dict = {}
    datasets = list(args.datasets)
    if args.recipe:
        recipe = get_recipe(args.recipe)
        settings.update(recipe.train)
        datasets = prepare_data(recipe, args.data_dir) + datasets
    overrides = {
        "preset": args.preset,
        "steps": args.train_steps,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "seed": args.seed,
        "threads": args.threads,
        "autoencoder": args.autoencoder,
        "declarations": args.declare,
        "fps": args.fps,
    }
    settings.update({k: v for k, v in overrides.items() if v is not None})
    trainer = Trainer(TrainConfig(datasets=datasets, out=args.out, **settings), resume=args.resume)
    out = trainer.run()
    if trainer.rank == 0:
        last = trainer.history[-1]
        rate = (trainer.step - trainer.start_step) * trainer.config.batch_size / max(trainer.elapsed, 1e-9)
        print(
            f"trained {trainer.step} steps in {trainer.elapsed / 60:.1f} min ({rate:.1f} samples/s; autoencoder "
            f"PSNR {trainer.ae_psnr:.1f} dB); last loss {last['loss']:.3f}; checkpoint at {out}"
        )
        if args.export:
            export_inference(out, args.export)
            print(f"exported the float16 inference model to {args.export}")


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="evaluate a model")
    kinds = p.add_subparsers(dest="kind", required=True, parser_class=_OneLineParser)
    off = kinds.add_parser("offline", help="held-out FD / ID / policy metrics on a recorded dataset")
    off.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    off.add_argument("--dataset", required=True, help="LeRobot dataset or zarr store (held-out episodes)")
    off.add_argument("--episodes", type=int, help="evaluate the first N episodes (default: all)")
    off.add_argument("--denoising-steps", type=int, default=10, help="Euler steps per model call")
    off.add_argument("--seed", type=int, default=0, help="seeds the sampling noise")
    off.add_argument("--json", required=True, help="write the metrics here")
    off.set_defaults(run=_run_eval_offline)

    fd = kinds.add_parser("fd", help="learned env vs MuJoCo: same starts, same actions, open loop")
    _add_model_args(fd)
    fd.add_argument("--episodes", type=int, default=8, help="seeded episodes per action source")
    fd.add_argument("--horizon", type=int, default=16, help="open-loop steps")
    fd.add_argument(
        "--seed", type=int, help="seed of the first evaluation episode (default: the harness's evaluation seeds)"
    )
    fd.set_defaults(run=_run_eval_fd)

    fds = kinds.add_parser("fd-state", help="the state-only learned env's agent_pos vs MuJoCo, open loop")
    _add_model_args(fds, plot=False)
    fds.add_argument("--episodes", type=int, default=8, help="seeded episodes per action source")
    fds.add_argument("--horizon", type=int, default=16, help="open-loop steps")
    fds.add_argument(
        "--stepped-by",
        default="agent-heads",
        choices=("agent-heads", "forward-prior"),
        help="what steps the states where the checkpoint has agent heads (forward-prior: the ablation)",
    )
    fds.add_argument(
        "--seed", type=int, help="seed of the first evaluation episode (default: the harness's evaluation seeds)"
    )
    fds.set_defaults(run=_run_eval_fd_state)

    rank = kinds.add_parser("rank", help="rank graded scripted policies in MuJoCo and in the learned env")
    _add_model_args(rank)
    rank.add_argument("--episodes", type=int, default=8, help="seeded episodes per policy")
    rank.add_argument(
        "--seed", type=int, help="seed of the first evaluation episode (default: the harness's evaluation seeds)"
    )
    rank.set_defaults(run=_run_eval_rank)

    rl = kinds.add_parser("imagination-rl", help="PPO trained in the learned env vs in MuJoCo, both run in MuJoCo")
    _add_model_args(rl, embodiment=False)
    rl.add_argument("--ppo-steps", type=int, default=200_000, help="PPO environment steps in each world")
    rl.add_argument("--eval-episodes", type=int, default=16, help="MuJoCo episodes per trained policy")
    rl.add_argument("--ppo-seed", type=int, default=0, help="seeds PPO and the learned env's starts")
    rl.add_argument(
        "--seed", type=int, help="seed of the first evaluation episode (default: the harness's evaluation seeds)"
    )
    rl.set_defaults(run=_run_eval_imagination_rl)

    pol = kinds.add_parser("policy", help="a policy closed loop in MuJoCo from seeded starts (optionally recorded)")
    pol.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default' (for --policy model)")
    pol.add_argument(
        "--env",
        default="cosmos_robot/PushBlockPoint-v0",
        help="a PushBlock id, or any gymnasium MuJoCo id ('package.module:EnvId-v0' imports the package first)",
    )
    pol.add_argument(
        "--embodiment", help="the model's embodiment that acts (model; default: the one --env's data is recorded under)"
    )
    pol.add_argument(
        "--success",
        help="'module:function' mapping a step's info to success, for envs that set neither is_success nor success",
    )
    pol.add_argument("--max-steps", type=int, help="cap each episode at this many policy steps")
    pol.add_argument(
        "--policy",
        default="model",
        help="model, expert, pixel-expert, random, or lerobot (--checkpoint: a LeRobot pretrained_model folder)",
    )
    pol.add_argument("--episodes", type=int, default=10, help="seeded episodes")
    pol.add_argument("--seed", type=int, default=None, help="seed of the first episode (default: the eval seeds)")
    pol.add_argument("--denoising-steps", type=int, default=10, help="denoising steps per chunk (model)")
    pol.add_argument("--execute-steps", type=int, help="actions executed per chunk before replanning (model)")
    pol.add_argument("--temporal-ensemble", type=float, help="replan every step, ensemble with this coefficient")
    pol.add_argument(
        "--guidance-scale", type=float, help="classifier-free guidance on the instruction (model; default: the model's)"
    )
    pol.add_argument(
        "--action-estimate",
        choices=("mean", "sample", "prior"),
        help="where the model's actions come from; 'prior' = the action prior alone (default: the model's)",
    )
    pol.add_argument("--rerun", help="write a rerun recording of the episodes here (.rrd)")
    pol.add_argument("--json", required=True, help="write the metrics here")
    pol.set_defaults(run=_run_eval_policy)

    lab = kinds.add_parser("label", help="label rendered MuJoCo episodes; compare with the true actions; replay")
    lab.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    lab.add_argument("--env", default="cosmos_robot/PushBlockPoint-v0", help="a PushBlock id")
    lab.add_argument("--episodes", type=int, default=10, help="seeded episodes (half expert, half noisy)")
    lab.add_argument("--denoising-steps", type=int, default=10, help="denoising steps")
    lab.add_argument("--stride", type=int, default=1, help="frames between window starts")
    lab.add_argument(
        "--seed", type=int, help="seed of the first evaluation episode (default: the harness's evaluation seeds)"
    )
    lab.add_argument("--baseline-data", nargs="*", help="datasets to train the supervised frame-pair baseline on")
    lab.add_argument("--baseline-seconds", type=float, default=120.0, help="CPU seconds for the baseline")
    lab.add_argument("--baseline-seed", type=int, default=0, help="seeds the baseline's initialisation and batches")
    lab.add_argument("--json", required=True, help="write the metrics here (a PNG plot is written beside it)")
    lab.set_defaults(run=_run_eval_label)


def _add_model_args(p: argparse.ArgumentParser, embodiment: bool = True, plot: bool = True) -> None:
    p.add_argument(
        "--checkpoint", default="default", help="checkpoint folder or 'default' ('mujoco': MuJoCo itself, the ceiling)"
    )
    if embodiment:
        p.add_argument("--embodiment", default="point", help="point or arm2")
    p.add_argument("--sampling-steps", type=int, default=None, help="denoising steps per imagined step")
    p.add_argument(
        "--forward-path",
        default="full",
        help="full (the forward prior's rollout; reward and success from the MoT), corrected (plus the MoT's "
        "sampled correction; an ablation) or prior (the prior alone, no reward; an ablation)",
    )
    beside = " (a PNG plot is written beside it)" if plot else ""
    p.add_argument("--json", required=True, help=f"write the metrics here{beside}")


def _write_json(path: str, metrics: dict) -> None:
    from cosmos_robot.atomic import write_file_atomic

    write_file_atomic(path, json.dumps(metrics, indent=2))


def _seed(args: argparse.Namespace) -> dict[str, int]:
    """``seed=`` for a harness when ``--seed`` was given; otherwise the harness keeps its evaluation seeds."""
    return {} if args.seed is None else {"seed": args.seed}


def _learned_env_model(args: argparse.Namespace, first_seed: int, episodes: int, embodiment: str | None = None):
    """The model a learned-env harness runs: a checkpoint, or with ``--checkpoint mujoco`` MuJoCo itself
    (:class:`~cosmos_robot.eval.oracle.MuJoCoOracle`, started from the harness's seeds): the harness's ceiling."""
    if args.checkpoint != "mujoco":
        from cosmos_robot.world_model import WorldActionModel

        model = WorldActionModel.from_pretrained(args.checkpoint)
        model.forward_path = args.forward_path
        return model
    if args.forward_path != "full":
        raise ValueError(f"forward_path={args.forward_path!r} with checkpoint='mujoco'; the oracle has no forward path")
    from cosmos_robot.envs import PUSH_BLOCK_IDS
    from cosmos_robot.eval.oracle import MuJoCoOracle

    embodiment = embodiment or args.embodiment
    if embodiment not in PUSH_BLOCK_IDS:
        raise ValueError(f"embodiment={embodiment!r}; expected one of {sorted(PUSH_BLOCK_IDS)}")
    first = first_seed if args.seed is None else args.seed
    return MuJoCoOracle(PUSH_BLOCK_IDS[embodiment], seeds=range(first, first + episodes))


def _run_eval_fd_state(args: argparse.Namespace) -> None:
    from cosmos_robot.eval.fd_states import evaluate_fd_states
    from cosmos_robot.seeds import FD_SEED

    model = _learned_env_model(args, FD_SEED, args.episodes)
    result = evaluate_fd_states(
        model,
        args.embodiment,
        episodes=args.episodes,
        horizon=args.horizon,
        agent_heads=args.stepped_by == "agent-heads",
        **_seed(args),
    )
    _write_json(args.json, result.to_json())
    # Millimetres for a point's metres, milliradians for an arm's joint angles.
    unit = "mm" if args.embodiment == "point" else "mrad"
    at = [h for h in (1, 4, 8, args.horizon) if h <= args.horizon]
    errors = ", ".join(f"h{h} {1000 * result.state_error[h - 1]:.2f}" for h in at)
    ratio = "-" if result.shuffled_ratio_h8 is None else f"{result.shuffled_ratio_h8:.1f}x"
    print(
        f"fd-state {args.embodiment} ({result.stepped_by}): agent_pos error {unit} {errors}; shuffled actions "
        f"{ratio} the error at h8; {result.episodes_per_source} episodes per source"
    )


def _run_eval_fd(args: argparse.Namespace) -> None:
    from cosmos_robot.eval.fd_fidelity import evaluate_fd, frame_strip, plot_fd
    from cosmos_robot.seeds import FD_SEED

    model = _learned_env_model(args, FD_SEED, args.episodes)
    result = evaluate_fd(
        model,
        args.embodiment,
        episodes=args.episodes,
        horizon=args.horizon,
        sampling_steps=args.sampling_steps or 4,
        **_seed(args),
    )
    _write_json(args.json, result.to_json())
    plot = plot_fd(result, Path(args.json).with_suffix(".png"))
    strip = frame_strip(result.example["real"], result.example["imagined"], Path(args.json).with_suffix(".strip.png"))
    h = args.horizon

    def mm(values: list[float | None], at: int, digits: int = 1) -> str:
        return "-" if values[at - 1] is None else f"{values[at - 1]:.{digits}f}"

    def interval(bounds: list[float] | None) -> str:
        return "-" if bounds is None else f"{bounds[0]:.1f}-{bounds[1]:.1f}"

    def share(counts: dict[str, int]) -> str:
        return "-" if not counts["shown"] else f"{counts['found'] / counts['shown']:.2f} of {counts['shown']}"

    def worst(shares: list[float | None]) -> str:
        present = [v for v in shares if v is not None]
        return "-" if not present else f"{min(present):.3f}"

    floor = ""
    if result.autoencoder_floor is not None:
        # What the decoder alone loses of MuJoCo's own frames, beside the env's worst horizon.
        ae = result.autoencoder_floor
        floor = (
            f"effector found at its worst horizon {worst(result.effector_found)} against "
            f"{worst(ae['effector_found'])} for the autoencoder's reconstructions of MuJoCo's frames (their "
            f"block error h{h} {mm(ae['block_error_mm'], h)} mm, effector {mm(ae['effector_error_mm'], h)} mm); "
        )
    expert = result.per_source["expert"]
    found = "/".join(mm(result.effector_found, at, 2) for at in (1, 8, h))
    places = result.effector_found_by_place
    visible = "/".join(f"{result.effector_visible[at - 1]:.2f}" for at in (1, 8, h))
    print(
        f"{args.embodiment}: effector found h1/h8/h{h} {found} (of the frames where MuJoCo shows it: {visible}; "
        f"all horizons, over the goal disc {share(places['over_goal'])}, elsewhere {share(places['elsewhere'])}), "
        f"error {mm(result.effector_error_mm, 1)}/{mm(result.effector_error_mm, 8)}/"
        f"{mm(result.effector_error_mm, h)} mm (shuffled actions h8 {mm(result.effector_error_mm_shuffled, 8)} mm); "
        f"block error {mm(result.block_error_mm, 1)}/{mm(result.block_error_mm, 8)}/{mm(result.block_error_mm, h)} mm "
        f"(a block that never moves: {mm(result.block_error_mm_copy_last, 8)}/"
        f"{mm(result.block_error_mm_copy_last, h)}), expert episodes h{h} {mm(expert['block_error_mm'], h)} mm "
        f"(95 % interval {interval(expert['block_error_mm_ci95'][h - 1])}, n={result.episodes_per_source}); "
        f"agent_pos error h1/h{h} {result.state_error[0]:.4f}/{result.state_error[-1]:.4f} (its units); "
        f"PSNR h1/h8/h{h} {result.psnr[0]:.1f}/{result.psnr[7]:.1f}/{result.psnr[-1]:.1f} dB vs copy-last "
        f"{result.psnr_copy_last[0]:.1f}/{result.psnr_copy_last[7]:.1f}/{result.psnr_copy_last[-1]:.1f}, "
        f"delta_psnr_shuffled {result.delta_psnr_shuffled:.2f} dB; {floor}written to {args.json}, {plot}, {strip}"
    )


def _run_eval_rank(args: argparse.Namespace) -> None:
    from cosmos_robot.eval.ranking import evaluate_ranking, plot_ranking
    from cosmos_robot.seeds import RANK_SEED

    model = _learned_env_model(args, RANK_SEED, args.episodes)
    result = evaluate_ranking(
        model, args.embodiment, episodes=args.episodes, sampling_steps=args.sampling_steps or 4, **_seed(args)
    )
    _write_json(args.json, result.to_json())
    plot = plot_ranking(result, Path(args.json).with_suffix(".png"))
    print(
        f"{args.embodiment}: spearman {result.spearman:.3f} pearson {result.pearson:.3f} (returns), "
        f"spearman {result.spearman_success:.3f} (success); gap to MuJoCo {result.return_gap:.2f} (return), "
        f"{result.success_rate_gap:.2f} (success rate); written to {args.json}, {plot}"
    )


def _run_eval_label(args: argparse.Namespace) -> None:
    from cosmos_robot.envs import push_block_embodiment
    from cosmos_robot.eval.labeling import evaluate_labeling, plot_labeling
    from cosmos_robot.world_model import WorldActionModel

    embodiment = push_block_embodiment(args.env)  # a clear error before anything loads
    model = WorldActionModel.from_pretrained(args.checkpoint)
    result = evaluate_labeling(
        model,
        embodiment,
        args.env,
        episodes=args.episodes,
        steps=args.denoising_steps,
        stride=args.stride,
        baseline_data=args.baseline_data,
        baseline_seconds=args.baseline_seconds,
        baseline_seed=args.baseline_seed,
        **_seed(args),
    )
    plot = plot_labeling(result, Path(args.json).with_suffix(".png"))
    _write_json(args.json, result.to_json())
    baseline = "n/a" if result.r2_baseline is None else f"{result.r2_baseline:.3f}"
    print(
        f"{args.env}: R2 {result.r2:.3f} (baseline {baseline}); replay success {result.replay_success_rate:.2f}"
        f" vs original {result.original_success_rate:.2f}; written to {args.json}, {plot}"
    )


def _run_eval_imagination_rl(args: argparse.Namespace) -> None:
    from cosmos_robot.eval.imagination_rl import evaluate_imagination_rl
    from cosmos_robot.seeds import IMAGINATION_RL_SEED

    # The reach task's embodiment is point; the oracle registers no seeds up front and continues the
    # starts it draws itself.
    model = _learned_env_model(args, IMAGINATION_RL_SEED, 0, embodiment="point")
    start = model.starts() if args.checkpoint == "mujoco" else None
    result = evaluate_imagination_rl(
        model,
        start=start,
        steps=args.ppo_steps,
        eval_episodes=args.eval_episodes,
        sampling_steps=args.sampling_steps or 2,
        seed=args.ppo_seed,
        **({} if args.seed is None else {"eval_seed": args.seed}),
    )
    _write_json(args.json, result.to_json())
    print(
        f"real return: PPO in imagination {result.real_return_imagination_ppo:.2f}, PPO in MuJoCo "
        f"{result.real_return_mujoco_ppo:.2f}, random {result.real_return_random:.2f}; "
        f"ratio_real_return {result.ratio_real_return:.3f}; PPO trained in {result.train_seconds_imagination:.0f} s "
        f"(imagination) / {result.train_seconds_mujoco:.0f} s (MuJoCo); written to {args.json}"
    )


def _run_eval_policy(args: argparse.Namespace) -> None:
    from cosmos_robot.envs.action_repeat import action_repeat
    from cosmos_robot.envs.gym_adapter import resolve_env_id
    from cosmos_robot.envs.push_block_scene import CONTROL_HZ
    from cosmos_robot.eval.closed_loop import evaluate_policy, load_success_fn, make_policy
    from cosmos_robot.eval.recording import PolicyRecorder
    from cosmos_robot.seeds import EVAL_SEED

    resolve_env_id(args.env)  # a clear error before anything loads
    success_fn = load_success_fn(args.success) if args.success else None
    model_kwargs = {
        "steps": args.denoising_steps,
        "execute_steps": args.execute_steps,
        "temporal_ensemble": args.temporal_ensemble,
        "guidance_scale": args.guidance_scale,
        "action_estimate": args.action_estimate,
    }
    policy = make_policy(
        args.policy,
        args.env,
        args.checkpoint,
        **({**model_kwargs, "embodiment": args.embodiment} if args.policy == "model" else {}),
    )
    model = getattr(policy, "model", None) if args.policy == "model" else None
    recorder = PolicyRecorder(args.rerun, fps=model.fps if model else CONTROL_HZ) if args.rerun else None
    result = evaluate_policy(
        policy,
        args.env,
        args.episodes,
        seed=EVAL_SEED if args.seed is None else args.seed,
        recorder=recorder,
        image_size=model.image_size if model else 64,
        action_repeat=action_repeat(model, policy.embodiment) if model else 1,
        success_fn=success_fn,
        max_steps=args.max_steps,
    )
    if recorder is not None:
        result.rerun = str(recorder.close())
    result.policy = args.policy
    _write_json(args.json, result.to_json())
    where = f"; recording: rerun {result.rerun}" if recorder is not None else ""
    predicted = result.predicted_frames
    if predicted is not None:

        def first_last(values: list[float | None], digits: int) -> str:
            return "/".join("-" if v is None else f"{v:.{digits}f}" for v in (values[0], values[-1]))

        where += (
            f"; predicted frames vs MuJoCo's, h1/h{len(predicted['effector_found'])} ({predicted['chunks']} "
            f"chunks): effector found {first_last(predicted['effector_found'], 2)}, error "
            f"{first_last(predicted['effector_error_mm'], 1)} mm, block error "
            f"{first_last(predicted['block_error_mm'], 1)} mm"
        )
    print(
        f"{args.policy} in {args.env}: success_rate {result.success_rate:.2f} "
        f"(95 % CI {result.success_ci95[0]:.2f}-{result.success_ci95[1]:.2f}), mean return "
        f"{result.mean_return:.2f}, mean length {result.mean_length:.1f} over {args.episodes} episodes; "
        f"written to {args.json}{where}"
    )


def _run_eval_offline(args: argparse.Namespace) -> None:
    from cosmos_robot.eval.offline import evaluate_offline
    from cosmos_robot.world_model import WorldActionModel

    model = WorldActionModel.from_pretrained(args.checkpoint)
    metrics = evaluate_offline(model, args.dataset, episodes=args.episodes, steps=args.denoising_steps, seed=args.seed)
    _write_json(args.json, metrics.to_json())
    fd = ", ".join(f"{p:.1f}/{c:.1f}" for p, c in zip(metrics.fd_psnr, metrics.fd_psnr_copy_last, strict=True))
    print(
        f"{metrics.embodiment}: FD PSNR model/copy-last per horizon {fd}; ID R2 {metrics.id_r2:.3f} "
        f"MSE {metrics.id_mse:.4f}; policy MSE {metrics.policy_action_mse:.4f} vs mean-action "
        f"{metrics.policy_action_mse_mean_baseline:.4f}; written to {args.json}"
    )


def _add_label(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("label", help="write inverse-dynamics actions onto unlabeled video, as a new LeRobot dataset")
    p.add_argument("input", help="an mp4 file, a folder of mp4 files, or a LeRobot dataset without actions")
    p.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    p.add_argument("--embodiment", required=True, help="an embodiment of the model, or 'latent' (shared space)")
    p.add_argument("--out", required=True, help="the new dataset's folder")
    p.add_argument("--fps", type=float, help="frame rate, when the video does not state it")
    p.add_argument("--stride", type=int, default=1, help="frames between window starts")
    p.add_argument("--denoising-steps", type=int, default=10, help="denoising steps")
    p.add_argument("--task", help="task string written with every frame")
    p.add_argument("--overwrite", action="store_true", help="replace --out (and a stopped run's episodes) if there")
    p.add_argument("--resume", action="store_true", help="continue a stopped run from its last complete episode")
    p.set_defaults(run=_run_label)


def _run_label(args: argparse.Namespace) -> None:
    from cosmos_robot.labeler import label

    out = label(
        args.input,
        args.checkpoint,
        args.embodiment,
        args.out,
        fps=args.fps,
        stride=args.stride,
        steps=args.denoising_steps,
        task=args.task,
        overwrite=args.overwrite,
        resume=args.resume,
    )
    print(f"labeled {args.input} with {args.embodiment} actions; wrote {out}")


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="the main job: the default model as a learned env, a labeler and a policy, each against MuJoCo",
    )
    p.add_argument("--out", default="demo_out", help="output folder (report.md, report.json, plots, policy.rrd)")
    p.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    p.add_argument("--embodiment", action="append", help="run only this embodiment (repeatable; default: all)")
    p.add_argument("--quick", action="store_true", help="a reduced run (seconds, for tests)")
    p.set_defaults(run=_run_demo)


def _run_demo(args: argparse.Namespace) -> None:
    from cosmos_robot.demo import run_demo

    run_demo(Path(args.out), checkpoint=args.checkpoint, embodiments=args.embodiment, quick=args.quick)


def build_parser() -> argparse.ArgumentParser:
    """The ``cosmos-robot`` argument parser."""
    parser = _OneLineParser(prog="cosmos-robot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    for add in (_add_collect, _add_convert, _add_train, _add_label, _add_eval, _add_demo):
        add(sub)
    return parser


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = build_parser().parse_args(argv)
    # A kill (SIGTERM) unwinds like Ctrl-C, so atomic writers remove their temporary output.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    run: Callable[[argparse.Namespace], None] = args.run
    try:
        run(args)
    except KeyboardInterrupt:
        print("cosmos-robot: interrupted; nothing was left half-written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ValueError, FileExistsError, FileNotFoundError) as error:
        print(f"cosmos-robot {args.command}: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main())
