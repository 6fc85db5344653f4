"""Does the learned env need the forward prior's second stage (its rollouts of 8 steps)?

With the block carried, the env's frames are the drawer's and its states the agent heads': the forward
prior itself runs only in the ablation ``--forward-path prior`` and in the MoT's forward-dynamics samples,
and the drawer starts as a copy of it. This probe takes a trained checkpoint that carries the block, replaces
its prior by a fresh one trained on the first stage alone (``--stage-steps`` on ``--stage-rollout``-step
rollouts, then its state head), draws the drawer anew from it (``--drawer-steps`` on ``--drawer-rollout``-step
rollouts) and fits the decoder to that drawer's rollouts (``--decoder-steps``), every other part kept, with the
seeds ``train`` gives these phases. It writes the checkpoint to ``--out``; score it and the original with
``cosmos-robot eval fd`` (docs/results.md, "The recipe run end to end"; ~16 minutes on 2 cores at the
defaults, the recipe's settings):

    .venv/bin/python benchmarks/probe_prior_stages.py --checkpoint out/default --data-dir data --out out/stage1 \
        --json out/stage1.json
    .venv/bin/python -c "from cosmos_robot.train import export_inference as e; e('out/stage1', 'out/stage1_x')"
    .venv/bin/cosmos-robot eval fd --checkpoint out/stage1_x --embodiment arm2
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time

import torch

from cosmos_robot.atomic import write_file_atomic
from cosmos_robot.checkpoint import load_checkpoint, save_checkpoint
from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.forward_prior_training import fit_state_head, rollout_error, train_forward_prior
from cosmos_robot.model.forward_prior import ROLLOUT_STEPS
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.object_pose_training import fit_drawer
from cosmos_robot.recipes import get_recipe, prepare_data
from cosmos_robot.rollout_decoder_training import fit_decoder_to_rollouts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a full training checkpoint that carries the block")
    parser.add_argument("--recipe", default="default", help="the recipe whose data the checkpoint was trained on")
    parser.add_argument("--data-dir", default="data", help="where that recipe's datasets are")
    parser.add_argument("--out", required=True, help="checkpoint folder to write")
    parser.add_argument("--stage-steps", type=int, default=1600, help="steps of the prior's first stage")
    parser.add_argument("--stage-rollout", type=int, default=4, help="actions per sequence of that stage")
    parser.add_argument("--batch", type=int, default=128, help="sequences per step of the prior")
    parser.add_argument("--state-steps", type=int, default=3000, help="steps of the prior's state head fit")
    parser.add_argument("--drawer-steps", type=int, default=800, help="steps of the drawer drawn anew")
    parser.add_argument("--drawer-rollout", type=int, default=8, help="actions per sequence of the drawer")
    parser.add_argument("--decoder-steps", type=int, default=700, help="steps of the decoder's fit (0: none)")
    parser.add_argument("--seed", type=int, default=0, help="the training config's seed: each phase adds its own")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args()
    for name in ("stage_steps", "stage_rollout", "batch", "state_steps", "drawer_steps", "drawer_rollout"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)}: expected a positive integer")
    if args.decoder_steps < 0:
        parser.error(f"--decoder-steps={args.decoder_steps}: expected 0 or more")
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    checkpoint = load_checkpoint(args.checkpoint)
    network = checkpoint.network.float()
    if network.object_pose is None or network.forward_prior is None:
        parser.error(f"--checkpoint={args.checkpoint}: its model carries no block (nothing draws with the prior)")
    recipe = get_recipe(args.recipe)
    data = TrainingSet(prepare_data(recipe, args.data_dir), network.config, checkpoint.window["num_frames"])
    data.prepare(checkpoint.autoencoder.eval())
    val = data.transitions("val", steps=ROLLOUT_STEPS)
    report: dict[str, object] = {"old_prior": dataclasses.asdict(rollout_error(network, val))}

    # A fresh prior of the same shape, trained as train's first stage trains it (seed offsets as there).
    torch.manual_seed(args.seed + 1)
    network.forward_prior.load_state_dict(WorldActionNetwork(network.config).forward_prior.state_dict())
    network.forward_prior.requires_grad_(True)
    train_forward_prior(
        network,
        data.transitions(steps=args.stage_rollout),
        steps=args.stage_steps,
        batch_size=args.batch,
        lr=2e-3,
        seed=args.seed + 3,
    )
    report["state_head"] = fit_state_head(
        network, data.transitions(steps=1), data.transitions("val", steps=1), args.state_steps, seed=args.seed + 17
    )
    network.forward_prior.requires_grad_(False)
    report["new_prior"] = dataclasses.asdict(rollout_error(network, val))
    # The drawer is a copy of the prior: drawn anew from the new one (train's seed: + 11 for the object, + 3).
    report["drawer_loss"] = fit_drawer(network, data, args.drawer_steps, args.drawer_rollout, seed=args.seed + 14)
    network.eval()
    if args.decoder_steps:
        report["decoder_on_drawer"] = fit_decoder_to_rollouts(
            checkpoint.autoencoder.requires_grad_(False).eval(),
            copy.deepcopy(network).eval(),
            data,
            rollout=args.drawer_rollout,
            steps=args.decoder_steps,
            object_weight=10.0,  # the recipes' ae_object_weight
            seed=args.seed + 7,
            drawer=True,
        )
    checkpoint.network = network.eval()
    checkpoint.training = None
    save_checkpoint(checkpoint, args.out)
    report["seconds"] = time.perf_counter() - started
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        write_file_atomic(args.json, text)


if __name__ == "__main__":
    main()
