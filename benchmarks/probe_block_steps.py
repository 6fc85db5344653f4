"""Where the learned env's block error comes from: the autoencoder, one step, or the rollout compounding it.

On expert episodes (the pushes), reads the block with the colour detector in four kinds of frame
against MuJoCo's frame of the same step:

- the autoencoder's reconstruction of the real frame (what any model on these latents can reach);
- copy-last: the frame before (the error of a block that never moves);
- one learned-env step from the true previous frame and state, with the recorded action;
- the open-loop rollout from the episode's first frame (what ``eval fd`` scores), at its last step.

and, on the steps where the real block moves (> 2 mm), how far the one-step imagined block moves
along the real displacement (1.0 = the whole way). A one-step error far below the rollout's says the
error compounds; a ratio below 1 says the model under-pushes.

    .venv/bin/python benchmarks/probe_block_steps.py --embodiment arm2 --json out/block_steps_arm2.json
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from cosmos_robot.atomic import write_file_atomic  # noqa: E402
from cosmos_robot.envs import PUSH_BLOCK_IDS  # noqa: E402
from cosmos_robot.envs.start_sources import FixedStarts, Start  # noqa: E402
from cosmos_robot.eval.block_oracle import PUSHED_MM  # noqa: E402
from cosmos_robot.eval.fd_fidelity import imagine, open_loop_envs, record_mujoco  # noqa: E402
from cosmos_robot.eval.objects import locate  # noqa: E402
from cosmos_robot.seeds import FD_SEED  # noqa: E402
from cosmos_robot.world_model import WorldActionModel  # noqa: E402


def _block_mm(frames: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Block distance (mm) between frames and reference frames of the same shape (NaN where unseen)."""
    return np.linalg.norm(locate(frames)["block"] - locate(reference)["block"], axis=-1) * 1000.0


def _imagined(model: WorldActionModel, embodiment: str, frames: np.ndarray, states: np.ndarray, actions: np.ndarray):
    """Open-loop frames (N, H+1, ...) of ``actions`` (N, H, A) from starts (N, ...) in the learned env."""
    starts = FixedStarts([Start(f, s) for f, s in zip(frames, states, strict=True)])
    envs = open_loop_envs(model, embodiment, starts, actions.shape[1])
    try:
        return imagine(envs, starts, actions, 0)["frames"]
    finally:
        envs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--embodiment", default="point", choices=sorted(PUSH_BLOCK_IDS))
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=16)
    parser.add_argument("--seed", type=int, default=FD_SEED)
    parser.add_argument(
        "--forward-path", default=None, choices=["full", "prior", "corrected"], help="default: the model's own"
    )
    parser.add_argument("--json", default=None, help="write the numbers here")
    args = parser.parse_args()
    if args.episodes < 1 or args.horizon < 1:
        parser.error(f"--episodes {args.episodes} --horizon {args.horizon}; expected positive integers")
    model = WorldActionModel.from_pretrained(args.checkpoint)
    if args.forward_path is not None:
        model.forward_path = args.forward_path
    seeds = [args.seed + i for i in range(args.episodes)]
    real = record_mujoco(PUSH_BLOCK_IDS[args.embodiment], 0.0, seeds, args.horizon)
    frames, n, h = real["frames"], args.episodes, args.horizon
    ae = model.autoencoder
    with torch.no_grad():
        flat = torch.from_numpy(frames.reshape(-1, *frames.shape[2:]))
        recon = ae.tokens_to_frames(ae.frames_to_tokens(flat), model.config.latent_grid).numpy()
    step_starts = (frames[:, :-1].reshape(n * h, *frames.shape[2:]), real["states"][:, :-1].reshape(n * h, -1))
    one_step = _imagined(model, args.embodiment, *step_starts, real["actions"].reshape(n * h, 1, -1))[:, 1]
    rollout = _imagined(model, args.embodiment, frames[:, 0], real["states"][:, 0], real["actions"])
    after, before = frames[:, 1:].reshape(n * h, *frames.shape[2:]), step_starts[0]
    real_step = locate(after)["block"] - locate(before)["block"]
    imagined_step = locate(one_step)["block"] - locate(before)["block"]
    pushed = np.linalg.norm(real_step, axis=-1) * 1000.0 > PUSHED_MM
    along = (imagined_step[pushed] * real_step[pushed]).sum(-1) / (real_step[pushed] ** 2).sum(-1)
    one_step_mm, copy_mm = _block_mm(one_step, after), _block_mm(before, after)
    report = {
        "embodiment": args.embodiment,
        "episodes": n,
        "seeds": [seeds[0], seeds[-1]],
        "autoencoder_mm": float(np.nanmean(_block_mm(recon.reshape(frames.shape), frames))),
        "pushed_steps": int(pushed.sum()),
        "one_step_mm_pushed": float(np.nanmean(one_step_mm[pushed])),
        "copy_last_mm_pushed": float(np.nanmean(copy_mm[pushed])),
        "one_step_mm_still": float(np.nanmean(one_step_mm[~pushed])),
        "one_step_push_fraction_median": float(np.nanmedian(along)),
        "rollout_mm_last": float(np.nanmean(_block_mm(rollout[:, -1], frames[:, -1]))),
    }
    print(
        f"{args.embodiment}, {n} expert episodes: block error (mm) autoencoder {report['autoencoder_mm']:.1f}; "
        f"one step on the {report['pushed_steps']} pushed steps {report['one_step_mm_pushed']:.1f} vs copy-last "
        f"{report['copy_last_mm_pushed']:.1f} (still steps {report['one_step_mm_still']:.1f}); one-step push "
        f"fraction {report['one_step_push_fraction_median']:.2f} (1 = the whole way); rollout at h{h} "
        f"{report['rollout_mm_last']:.1f}"
    )
    if args.json:
        write_file_atomic(args.json, json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
