"""Where the learned env's block error at h16 lives: the few steps that throw the block, and the rest.

arm2's velocity actuators hold their commanded speed with whatever force it takes, and its fingertip sweeps
up to ~8 cm in one control step, so now and then a step throws the block several centimetres and turns it
tens of degrees (a "throw": the block moves more than ``--throw-mm`` in one step; point's pusher, slower,
never does on its expert episodes). A throw depends on where inside the step the fingertip meets the block,
which no one-step model sees exactly, and one missed throw leaves the block centimetres off for the rest of
the window: so this probe splits each error at the horizon between the expert episodes that hold a throw
and those that do not, for four ways of carrying the block, each closer to the learned env:

- ``mujoco_states``: the push MLP stepped on MuJoCo's agent states from the true start pose (the push
  MLP's own error);
- ``agent_heads``: the agent heads roll the states, as the state-only env does;
- ``read_start``: the same from the pose the readout reads off the first frame;
- ``drawn``: the learned env's frames, the block read by the colour detector against MuJoCo's frame
  (``eval fd``'s block error).

    .venv/bin/python benchmarks/probe_block_throws.py --embodiment arm2 --episodes 32 --seed 4242
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
from cosmos_robot.eval.fd_fidelity import imagine, open_loop_envs, record_mujoco  # noqa: E402
from cosmos_robot.eval.objects import locate  # noqa: E402
from cosmos_robot.model.stems import latent_grids  # noqa: E402
from cosmos_robot.seeds import FD_SEED  # noqa: E402
from cosmos_robot.world_model import WorldActionModel, load_world_model  # noqa: E402

HORIZON = 16
CARRIED = ("mujoco_states", "agent_heads", "read_start")


def carried_errors(model: WorldActionModel, embodiment: str, real: dict[str, np.ndarray], mode: str) -> np.ndarray:
    """Per episode, the carried block's error (mm) at the last step of ``real``'s recording, carried as
    ``mode`` (one of :data:`CARRIED`) says."""
    objects = model.network.object_pose
    entry = model.processor.entry(embodiment)
    domain = entry.embodiment.domain_id
    states = torch.from_numpy(model.processor.states_in(embodiment, real["states"])).float()
    actions = torch.from_numpy(model.processor.actions_in(embodiment, real["actions"])).float()
    poses = torch.from_numpy(real["block_pose"]).float()
    channels = (torch.arange(states.shape[-1]) < entry.embodiment.state_dim).float()
    state = states[:, 0]
    effector = objects.effector_of(state, domain)
    if mode == "read_start":
        tokens = model.autoencoder.frames_to_tokens(torch.from_numpy(real["frames"][:, 0]))
        grid = latent_grids(tokens.view(len(state), 1, model.config.tokens_per_frame, -1), model.config)[:, 0]
        memory = objects.start(grid.float(), state, domain)
    else:
        start = poses[:, 0]
        memory = torch.cat([start, start, effector, torch.zeros(len(state), 2)], 1)
    for k in range(actions.shape[1]):
        if mode == "mujoco_states":
            after = states[:, k + 1]
        else:
            after = objects.agent_step(state, memory, effector, actions[:, k], domain, channels)
        memory, effector = objects.advance(memory, state, after, effector, actions[:, k], domain)
        state = after
    return ((memory[:, 3:5] - poses[:, -1, :2]).norm(dim=-1) * 1000.0).numpy()


def drawn_errors(model: WorldActionModel, embodiment: str, real: dict[str, np.ndarray], seed: int) -> np.ndarray:
    """Per episode, the detected block's distance (mm) between the learned env's last frame and MuJoCo's (NaN
    where either does not show it)."""
    episodes = len(real["frames"])
    starts = FixedStarts([Start(real["frames"][i, 0], real["states"][i, 0]) for i in range(episodes)])
    envs = open_loop_envs(model, embodiment, starts, real["actions"].shape[1])
    try:
        imagined = imagine(envs, starts, real["actions"], seed)
    finally:
        envs.close()
    drawn, seen = locate(imagined["frames"][:, -1])["block"], locate(real["frames"][:, -1])["block"]
    return np.linalg.norm(drawn - seen, axis=-1) * 1000.0


def _split(errors: np.ndarray, thrown: np.ndarray) -> dict[str, float | None]:
    def mean(values: np.ndarray) -> float | None:
        values = values[~np.isnan(values)]
        return float(values.mean()) if len(values) else None

    return {"all": mean(errors), "thrown": mean(errors[thrown]), "not_thrown": mean(errors[~thrown])}


def _mm(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--embodiment", default="arm2", choices=sorted(PUSH_BLOCK_IDS))
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--seed", type=int, default=FD_SEED, help="MuJoCo seed of the first episode")
    parser.add_argument("--throw-mm", type=float, default=30.0, help="a step that moves the block more is a throw")
    parser.add_argument("--json", default=None, help="also write the numbers here")
    args = parser.parse_args()
    if args.episodes < 1 or args.throw_mm <= 0:
        parser.error(f"--episodes={args.episodes}, --throw-mm={args.throw_mm}; expected >= 1 and > 0")
    torch.set_grad_enabled(False)
    model = load_world_model(args.checkpoint)
    if model.network.object_pose is None or not model.network.object_pose.has_agent:
        raise SystemExit(f"--checkpoint={args.checkpoint!r} carries no block with agent heads; nothing to split")
    seeds = list(range(args.seed, args.seed + args.episodes))
    real = record_mujoco(PUSH_BLOCK_IDS[args.embodiment], 0.0, seeds, HORIZON)
    steps = np.linalg.norm(np.diff(real["block_pose"][:, :, :2], axis=1), axis=-1) * 1000.0
    thrown = (steps > args.throw_mm).any(1)
    report: dict[str, object] = {
        "embodiment": args.embodiment,
        "episodes": args.episodes,
        "seeds": [seeds[0], seeds[-1]],
        "throw_mm": args.throw_mm,
        "episodes_thrown": int(thrown.sum()),
        "largest_step_mm": float(steps.max()),
    }
    errors = {mode: carried_errors(model, args.embodiment, real, mode) for mode in CARRIED}
    errors["drawn"] = drawn_errors(model, args.embodiment, real, args.seed)
    for mode, values in errors.items():
        report[f"h{HORIZON}_{mode}_mm"] = _split(values, thrown)
    print(
        f"{args.embodiment}: {int(thrown.sum())} of {args.episodes} expert episodes hold a throw "
        f"(largest step {steps.max():.0f} mm)"
    )
    for mode in errors:
        split = report[f"h{HORIZON}_{mode}_mm"]
        print(f"block_h{HORIZON}_{mode}_mm= " + " ".join(f"{part} {_mm(value)}" for part, value in split.items()))
    if args.json:
        write_file_atomic(args.json, json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
