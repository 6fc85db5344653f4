"""Give a trained checkpoint the parts a fast learned env needs, without retraining its MoT.

- a fast decoder (``model.tokenizers.FastDecoder``), trained on the frozen autoencoder's latents of the
  recipe's frames (``fast_decoder_training``; ``--fast-decoder-steps 0`` keeps the checkpoint's own);
- optionally a smaller forward prior (``--forward-width`` / ``--forward-blocks``), retrained on the
  frozen latents exactly as ``train`` trains it (``forward_prior_training``), replacing the old one;
  or the checkpoint's own prior trained further (``--forward-finetune``), e.g. on longer rollouts of
  itself (``--forward-rollout``);
- the block's pose carried beside the grid (``--object-fit-steps``, ``--object-prior-steps``;
  ``object_pose_training``), as ``train`` does with ``object_fit_steps``: the pose readout, the effector
  maps and push MLPs fitted (``--object-push-rollout-steps``: then on rollouts of their own poses), the
  prior taught to draw the pose (``--forward-rollout`` actions per sequence);
- the block's push MLPs alone fitted anew (``--push-steps``, ``--push-rollout-steps``;
  ``object_pose_training.fit_pushes``), reading the effector's path inside each step with ``--push-path``
  (``ModelConfig.object_push_path``) and learning from ``--push-simulated-episodes`` state-only episodes per
  robot beside the data's; the readout, effector maps and drawer kept (the agent heads, which roll the block,
  want ``--agent-steps`` after it);
- the block's reward head (``--object-reward-steps``; ``object_reward_training``), as ``train`` does with
  ``object_reward_steps``: a goal readout and a reward and success head per robot, which the learned
  env's reward and success then come from;
- the forward prior's state head refitted with a term linear in the action (``--forward-state-steps``;
  ``forward_prior_training.fit_state_head``), as ``train`` does with ``forward_state_steps``;
- the block's agent heads (``--agent-steps``, ``--agent-rollout-steps``; ``agent_dynamics_training``), as
  ``train`` does with ``object_agent_steps``: the agent state stepped by MLPs, not by the forward prior (a
  block fitted anew with ``--object-fit-steps`` comes without them: pass ``--agent-steps`` too);
- the block's drawer alone drawn anew (``--drawer-steps``; ``object_pose_training.fit_drawer``): a fresh copy
  of the prior trained to draw the carried pose, told the effector's places too with ``--drawer-effector``
  (``ModelConfig.object_effector_maps``), the block's other parts kept;
- the decoder fitted to the (final) prior's rollouts (``--rollout-decoder-steps``;
  ``rollout_decoder_training``), as ``train`` does after the prior with ``rollout_decoder_steps``;
- the decoder fitted to the block's drawer's rollouts (``--rollout-decoder-drawer-steps``), as ``train``
  does after the block's parts with ``rollout_decoder_drawer``;
- last, the block's effector painter fitted anew to what the decoder draws of the drawer's rollouts
  (``--painter-steps``; ``painter_training``), as ``train`` does with ``object_painter_steps``.

The MoT is kept: at inference it reads the prior's rollout only for the learned reward and success, so
re-check ``eval rank`` (which reads them) after replacing the prior. This is how the previous default
got its fast parts (docs/model.md, "Fast parts"; today's ``--recipe default`` trains them in ``train``),
``out/default`` being ``cosmos-robot train --recipe previous_default``'s checkpoint (the second step
started from the float16 export of ``out/fast_default``):

    .venv/bin/python scripts/refit_fast_parts.py --checkpoint out/default --recipe previous_default --data-dir data \
        --fast-decoder-steps 3000 --forward-width 32 --forward-steps 1600 --out out/fast_default
    .venv/bin/python scripts/refit_fast_parts.py --checkpoint out/fast_default --recipe previous_default \
        --data-dir data --fast-decoder-steps 0 --forward-finetune --forward-rollout 8 --forward-steps 800 \
        --forward-lr 1e-3 --out out/fast_default_r8
    .venv/bin/python scripts/refit_fast_parts.py --checkpoint out/fast_default_r8 --recipe previous_default \
        --data-dir data --fast-decoder-steps 0 --forward-finetune --forward-rollout 8 --forward-steps 2000 \
        --forward-lr 1e-3 --out out/shipped_fp32

followed by ``cosmos_robot.train.export_inference("out/shipped_fp32", "out/shipped")`` (float16 weights).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time

import torch

from cosmos_robot.agent_dynamics_training import attach_agent_dynamics, fit_agent_dynamics
from cosmos_robot.checkpoint import load_checkpoint, save_checkpoint
from cosmos_robot.datasets.training_set import TrainingSet
from cosmos_robot.fast_decoder_training import fast_reconstruction_psnr, train_fast_decoder
from cosmos_robot.forward_prior_training import fit_state_head, rollout_error, train_forward_prior
from cosmos_robot.model.config import OBJECT_SWITCHES, ModelConfig
from cosmos_robot.model.forward_prior import ROLLOUT_STEPS
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.painter import EffectorPainter
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.object_pose_training import (
    attach_object_pose,
    fit_drawer,
    fit_object_pose,
    fit_pushes,
    object_embodiments,
)
from cosmos_robot.object_reward_training import attach_object_reward, fit_object_reward
from cosmos_robot.painter_training import fit_painter
from cosmos_robot.recipes import get_recipe, prepare_data
from cosmos_robot.rollout_decoder_training import fit_decoder_to_rollouts
from cosmos_robot.world_model import default_checkpoint_path

# A config without the block (its parts are fitted anew, or go with the prior they copied).
# The model without its block: the object's parts and switches go with it (a drawer told the effector, pushes
# reading the effector's path); a block fitted anew takes --drawer-steps --drawer-effector / --push-path again.
NO_OBJECT = {
    "object_pose_domains": [],
    "object_reward": False,
    "object_agent": False,
    "object_painter": False,
} | dict.fromkeys(OBJECT_SWITCHES, False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="default", help="checkpoint folder or 'default'")
    parser.add_argument("--recipe", default="default", help="the recipe whose data trained the checkpoint")
    parser.add_argument("--data-dir", default="data", help="where the recipe's datasets are (collected if missing)")
    parser.add_argument("--out", required=True, help="checkpoint folder to write")
    parser.add_argument("--fast-decoder-steps", type=int, default=3000, help="0 keeps the checkpoint's own")
    parser.add_argument("--forward-width", type=int, help="retrain the forward prior at this width")
    parser.add_argument("--forward-blocks", type=int, help="... and this many blocks (default: the current)")
    parser.add_argument("--forward-finetune", action="store_true", help="train the checkpoint's own prior further")
    parser.add_argument("--forward-steps", type=int, default=1600, help="steps of the retrained prior")
    parser.add_argument("--forward-rollout", type=int, default=ROLLOUT_STEPS, help="actions per training rollout")
    parser.add_argument("--forward-lr", type=float, default=2e-3, help="peak learning rate of the prior")
    parser.add_argument(
        "--forward-state-steps", type=int, default=0, help="refit the prior's state head, steps (0: no)"
    )
    parser.add_argument(
        "--rollout-decoder-steps", type=int, default=0, help="fit the decoder to the prior's rollouts (0: no)"
    )
    parser.add_argument(
        "--rollout-decoder-rollout", type=int, default=8, help="actions per rollout the decoder is fitted on"
    )
    parser.add_argument(
        "--rollout-decoder-drawer-steps",
        type=int,
        default=0,
        help="last, fit the decoder to the block's drawer's rollouts (0: no)",
    )
    parser.add_argument(
        "--object-fit-steps", type=int, default=0, help="give the model the block's pose: fit steps per part (0: no)"
    )
    parser.add_argument(
        "--object-prior-steps", type=int, default=800, help="steps of the prior learning to draw the block's pose"
    )
    parser.add_argument(
        "--object-push-rollout-steps", type=int, default=0, help="steps of the push MLPs on 16-step rollouts"
    )
    parser.add_argument("--push-steps", type=int, default=0, help="fit the block's push MLPs anew, steps (0: no)")
    parser.add_argument("--push-rollout-steps", type=int, default=0, help="... then on 16-step rollouts, steps")
    parser.add_argument(
        "--push-simulated-episodes", type=int, default=0, help="... from this many more state-only episodes per robot"
    )
    parser.add_argument("--push-path", action="store_true", help="... reading the effector's path inside a step")
    parser.add_argument("--object-reward-steps", type=int, default=0, help="fit the block's reward head, steps (0: no)")
    parser.add_argument("--agent-steps", type=int, default=0, help="fit the block's agent heads, steps (0: no)")
    parser.add_argument("--agent-rollout-steps", type=int, default=0, help="... then on 16-step rollouts, steps")
    parser.add_argument(
        "--agent-simulated-episodes", type=int, default=0, help="... from this many more state-only episodes per robot"
    )
    parser.add_argument("--drawer-steps", type=int, default=0, help="draw the block anew, steps (0: no)")
    parser.add_argument(
        "--drawer-effector", action="store_true", help="... telling the drawer the effector's places too"
    )
    parser.add_argument(
        "--painter-steps", type=int, default=0, help="last, fit the block's effector painter anew, steps (0: no)"
    )
    parser.add_argument("--ae-object-weight", type=float, default=10.0, help="the autoencoder's object weight")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    bounds = (("fast_decoder_steps", 0), ("forward_steps", 1), ("forward_rollout", 1), ("rollout_decoder_steps", 0))
    for name, least in (
        *bounds,
        ("rollout_decoder_rollout", 1),
        ("object_fit_steps", 0),
        ("object_prior_steps", 0),
        ("object_push_rollout_steps", 0),
        ("object_reward_steps", 0),
        ("forward_state_steps", 0),
        ("agent_steps", 0),
        ("drawer_steps", 0),
        ("agent_rollout_steps", 0),
        ("push_steps", 0),
        ("push_rollout_steps", 0),
        ("push_simulated_episodes", 0),
        ("agent_simulated_episodes", 0),
        ("rollout_decoder_drawer_steps", 0),
        ("painter_steps", 0),
    ):
        if getattr(args, name) < least:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)}; expected an integer >= {least}")
    if args.drawer_effector and not args.drawer_steps:
        parser.error("--drawer-effector needs --drawer-steps (the drawer is drawn anew)")
    if (args.push_rollout_steps or args.push_simulated_episodes or args.push_path) and not args.push_steps:
        parser.error("--push-rollout-steps, --push-simulated-episodes and --push-path need --push-steps (the fit)")
    if args.agent_rollout_steps and not args.agent_steps:
        parser.error(
            f"--agent-rollout-steps={args.agent_rollout_steps} needs --agent-steps (the one-step fit comes first)"
        )
    if args.agent_simulated_episodes and not args.agent_steps:
        parser.error(f"--agent-simulated-episodes={args.agent_simulated_episodes} needs --agent-steps (the fit)")
    refit_prior = args.forward_width is not None or args.forward_blocks is not None
    if refit_prior and args.forward_finetune:
        parser.error(
            "--forward-finetune keeps the prior's width and blocks; expected no --forward-width/--forward-blocks"
        )
    torch.set_num_threads(args.threads)
    checkpoint = load_checkpoint(default_checkpoint_path() if args.checkpoint == "default" else args.checkpoint)
    recipe = get_recipe(args.recipe)
    started = time.perf_counter()
    data = TrainingSet(prepare_data(recipe, args.data_dir), checkpoint.network.config, checkpoint.window["num_frames"])
    data.prepare(checkpoint.autoencoder.eval())
    report: dict[str, object] = {}

    if args.fast_decoder_steps:
        old = checkpoint.autoencoder
        autoencoder = FrameAutoencoder(
            old.latent_channels, old.patch_merge, fast_decoder=True, full_resolution_width=old.full_resolution_width
        )
        autoencoder.load_state_dict(old.state_dict(), strict=False)
        autoencoder.requires_grad_(False)
        autoencoder.fast_decoder.requires_grad_(True)
        train_fast_decoder(
            autoencoder, data.frames(), steps=args.fast_decoder_steps, object_weight=args.ae_object_weight
        )
        autoencoder.requires_grad_(False).eval()
        held_out = data.frames("val")[:2048]
        with torch.no_grad():
            report["fast_decoder_psnr"] = fast_reconstruction_psnr(autoencoder, held_out)
        checkpoint.autoencoder = autoencoder
        checkpoint.autoencoder_config = dict(checkpoint.autoencoder_config) | {"fast_decoder": True}

    if refit_prior or args.forward_finetune:
        network = checkpoint.network
        val = data.transitions("val", steps=ROLLOUT_STEPS)
        report["old_prior"] = dataclasses.asdict(rollout_error(network, val))
        # The block's drawer is a copy of the old prior: it goes with it (--object-fit-steps fits a new one).
        config = ModelConfig.from_dict(network.config.to_dict() | NO_OBJECT)
        if refit_prior:
            changes = {
                "forward_width": args.forward_width or config.forward_width,
                "forward_blocks": args.forward_blocks or config.forward_blocks,
            }
            config = ModelConfig.from_dict(config.to_dict() | changes)
        torch.manual_seed(1)
        refit = WorldActionNetwork(config)
        # A fresh prior keeps everything but the old prior; a fine-tuned one starts from it too.
        kept = {
            k: v
            for k, v in network.state_dict().items()
            if (args.forward_finetune or not k.startswith("forward_prior.")) and not k.startswith("object_pose.")
        }
        refit.load_state_dict(kept, strict=False)
        train_forward_prior(
            refit,
            data.transitions(steps=args.forward_rollout),
            steps=args.forward_steps,
            lr=args.forward_lr,
            seed=3,
        )
        refit.forward_prior.requires_grad_(False)
        report["new_prior"] = dataclasses.asdict(rollout_error(refit, val))
        checkpoint.network = refit.eval()

    if args.forward_state_steps:
        network = checkpoint.network.float()
        if network.forward_prior is None:
            raise SystemExit("--forward-state-steps: the model has no forward prior")
        if network.forward_prior.state_action is None:  # give it the linear action term (zero: unchanged)
            config = ModelConfig.from_dict(network.config.to_dict() | {"forward_state_action": True})
            wider = WorldActionNetwork(config)
            missing, unexpected = wider.load_state_dict(network.state_dict(), strict=False)
            if unexpected or any(not k.endswith("state_action") for k in missing):
                raise SystemExit(f"--forward-state-steps: unexpected weights {unexpected}, missing {missing}")
            network = wider
        # The seed ``train`` gives this step (its config seed 0, plus 17).
        report["state_head"] = fit_state_head(
            network, data.transitions(steps=1), data.transitions("val", steps=1), args.forward_state_steps, seed=17
        )
        checkpoint.network = network.eval()

    def fit_decoder(network: WorldActionNetwork, steps: int, drawer: bool, name: str) -> None:
        """The decoder fitted to ``network``'s prior's rollouts or its drawer's; the PSNRs reported as ``name``."""
        autoencoder = checkpoint.autoencoder.requires_grad_(False).eval()
        # The seed ``train`` gives this step (its config seed 0, plus 7).
        fitted = fit_decoder_to_rollouts(
            autoencoder,
            network,
            data,
            rollout=args.rollout_decoder_rollout,
            steps=steps,
            object_weight=args.ae_object_weight,
            seed=7,
            drawer=drawer,
        )
        report[f"{name}_psnr_before"], report[f"{name}_psnr_after"] = fitted["psnr_before"], fitted["psnr_after"]

    if args.rollout_decoder_steps:
        fit_decoder(checkpoint.network.eval(), args.rollout_decoder_steps, False, "rollout_decode")

    if args.object_fit_steps:
        network = checkpoint.network.float()
        if network.object_pose is not None:  # fitted anew: drop the checkpoint's own
            config = ModelConfig.from_dict(network.config.to_dict() | NO_OBJECT)
            plain = WorldActionNetwork(config)
            plain.load_state_dict({k: v for k, v in network.state_dict().items() if not k.startswith("object_pose.")})
            network = plain
        carried = object_embodiments(data)
        if not carried:
            raise SystemExit(f"--recipe {args.recipe}: no dataset records the block's pose; nothing to carry")
        attach_object_pose(network, tuple(data.data[n].embodiment.domain_id for n in carried))
        # The seed ``train`` gives this step (its config seed 0, plus 11).
        report["object_pose"] = fit_object_pose(
            network,
            data,
            args.object_fit_steps,
            args.object_prior_steps,
            rollout=args.forward_rollout,
            seed=11,
            push_rollout_steps=args.object_push_rollout_steps,
        )
        checkpoint.network = network.eval()

    if args.push_steps:
        network = checkpoint.network.float()
        if network.object_pose is None:
            raise SystemExit("--push-steps: the model carries no block (give it one: --object-fit-steps)")
        config = network.config
        torch.manual_seed(11)  # the new MLPs' weights
        network.object_pose.set_push(config.state_width, config.action_width, args.push_path)
        network.config = ModelConfig.from_dict(config.to_dict() | {"object_push_path": args.push_path})
        # The seed ``train`` gives the object (its config seed 0, plus 11).
        report["pushes"] = fit_pushes(
            network,
            data,
            args.push_steps,
            args.push_rollout_steps,
            seed=11,
            simulated_episodes=args.push_simulated_episodes,
        )
        checkpoint.network = network.eval()

    if args.object_reward_steps:
        network = checkpoint.network.float()
        if network.object_pose is None:
            raise SystemExit("--object-reward-steps: the model carries no block (give it one: --object-fit-steps)")
        if network.object_pose.has_reward:  # fitted anew
            network.object_pose.goal_readout = network.object_pose.reward = None
            network.config = ModelConfig.from_dict(network.config.to_dict() | {"object_reward": False})
        attach_object_reward(network)
        # The seed ``train`` gives this step (its config seed 0, plus 13).
        report["object_reward"] = fit_object_reward(network, data, args.object_reward_steps, seed=13)
        checkpoint.network = network.eval()
    if args.agent_steps:
        network = checkpoint.network.float()
        if network.object_pose is None:
            raise SystemExit("--agent-steps: the model carries no block (give it one: --object-fit-steps)")
        if network.object_pose.has_agent:  # fitted anew
            network.object_pose.drop_agent()
            network.config = ModelConfig.from_dict(network.config.to_dict() | {"object_agent": False})
        attach_agent_dynamics(network)
        # The seed ``train`` gives this step (its config seed 0, plus 19).
        report["agent_heads"] = fit_agent_dynamics(
            network,
            data,
            args.agent_steps,
            args.agent_rollout_steps,
            seed=19,
            simulated_episodes=args.agent_simulated_episodes,
        )
        checkpoint.network = network.eval()
    if args.drawer_steps:
        network = checkpoint.network.float()
        if network.object_pose is None:
            raise SystemExit("--drawer-steps: the model carries no block (give it one: --object-fit-steps)")
        # fit_drawer draws the drawer anew, of the kind the config names.
        network.config = ModelConfig.from_dict(
            network.config.to_dict() | {"object_effector_maps": args.drawer_effector}
        )
        # The seed ``train`` gives the drawer (its config seed 0, plus 11 for the object, plus 3).
        report["drawer_loss"] = fit_drawer(network, data, args.drawer_steps, args.forward_rollout, seed=14)
        checkpoint.network = network.eval()
    if args.rollout_decoder_drawer_steps:
        if checkpoint.network.object_pose is None:
            raise SystemExit("--rollout-decoder-drawer-steps: the model carries no block (no drawer draws its frames)")
        # The drawer rolls in float32, as the learned env runs it; the saved network is left as it came.
        network = copy.deepcopy(checkpoint.network).float().eval()
        fit_decoder(network, args.rollout_decoder_drawer_steps, True, "drawer_decode")
    if args.painter_steps:
        network = checkpoint.network.float()
        if network.object_pose is None:
            raise SystemExit("--painter-steps: the model carries no block (no effector place to paint round)")
        objects = network.object_pose
        network.object_pose.painter = EffectorPainter(objects.half_extent, bfloat16=objects.drawer.bfloat16)
        network.config = ModelConfig.from_dict(network.config.to_dict() | {"object_painter": True})
        # The seed ``train`` gives this step (its config seed 0, plus 29); the drawer's rollouts as the decoder's.
        report["painter"] = fit_painter(
            network,
            checkpoint.autoencoder.requires_grad_(False).eval(),
            data,
            args.rollout_decoder_rollout,
            args.painter_steps,
            args.ae_object_weight,
            seed=29,
        )
        checkpoint.network = network.eval()
    checkpoint.training = None
    save_checkpoint(checkpoint, args.out)
    report["seconds"] = time.perf_counter() - started
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
