"""Training: the frame autoencoder first (then frozen), the forward prior (then frozen), then the MoT
on mixed modes and embodiments.

One seeded ``torch.Generator`` drives everything after set-up (batches, modes, instruction dropout,
noise), and its state is saved with every checkpoint, so ``resume=True`` continues with exactly
the losses an uninterrupted run would have produced. The two phases before the MoT save their own
loop state (``phase_checkpoint``), so a run killed in any phase resumes there. Under ``torchrun``
every rank draws the global batch and keeps its slice; DDP's gradient average then equals the
single-process gradient.
"""

from __future__ import annotations

import copy
import math
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from tqdm.auto import tqdm

from cosmos_robot.action_prior_training import prior_error, train_action_prior
from cosmos_robot.agent_dynamics_training import fit_agent_dynamics
from cosmos_robot.autoencoder_training import reconstruction_psnr, train_autoencoder
from cosmos_robot.checkpoint import (
    Checkpoint,
    load_autoencoder,
    load_checkpoint,
    load_state,
    save_checkpoint,
)
from cosmos_robot.datasets.declaration import load_declarations
from cosmos_robot.datasets.rate import MODEL_FPS
from cosmos_robot.datasets.training_set import Batch, TrainingSet, source_widths
from cosmos_robot.fast_decoder_training import fast_reconstruction_psnr, train_fast_decoder
from cosmos_robot.forward_prior_training import fit_state_head, rollout_error, train_forward_prior
from cosmos_robot.inverse_prior_training import inverse_r2, train_inverse_prior
from cosmos_robot.keys import OBS_ENV_STATE
from cosmos_robot.model.action_prior import PRIOR_CHUNK
from cosmos_robot.model.batches import PriorBatch, ReasonerInputs, TransitionBatch
from cosmos_robot.model.config import OBJECT_SWITCHES, ModelConfig, preset
from cosmos_robot.model.forward_prior import ROLLOUT_STEPS
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.objective import BatchPlan, TrainingModule, draw_noise, training_loss
from cosmos_robot.model.plan import Mode
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.object_pose_training import fit_object_pose, object_embodiments
from cosmos_robot.object_reward_training import fit_object_reward
from cosmos_robot.painter_training import fit_painter
from cosmos_robot.phase_checkpoint import (
    FORWARD_PHASES,
    PRIOR_PHASES,
    PhaseSaver,
    has_phase,
    load_phase,
    save_phase,
)
from cosmos_robot.rollout_decoder_training import fit_decoder_to_rollouts

MODES = (Mode.FORWARD_DYNAMICS, Mode.INVERSE_DYNAMICS, Mode.POLICY)


@dataclass
class TrainConfig:
    """Everything a training run depends on.

    Attributes:
        datasets: LeRobot dataset folders or zarr stores, any mix of embodiments.
        out: checkpoint folder (rewritten atomically every ``checkpoint_every`` steps).
        preset: model size preset (tiny, small, base).
        steps: optimiser steps of the MoT.
        batch_size: global batch (split across DDP ranks).
        lr: peak learning rate (AdamW).
        weight_decay: AdamW weight decay.
        warmup: linear warm-up steps, then cosine decay to 10 % of ``lr``.
        grad_clip: global gradient-norm clip.
        ema: decay of the exponential moving average of weights (saved for inference), warmed up as
            ``min(ema, (1 + step) / (10 + step))``.
        mode_mix: probabilities of forward dynamics, inverse dynamics, policy.
        num_frames: frames per window.
        context_frames: observed frames in forward dynamics and policy.
        instruction_dropout: probability of dropping the instruction (for classifier-free guidance).
        prior_batch: demonstration windows per step for the action prior's own loss (0 trains no
            prior). Drawn beside the main batch: the prior is a small net and needs more samples than
            the policy share of the main batch gives it.
        prior_steps: steps of the action prior trained alone after the forward prior, on its own
            one-cycle schedule, ``prior_batch`` windows each, and then frozen (0: it trains beside the
            MoT instead, ``prior_batch`` windows per MoT step). A recipe with few MoT steps gives it
            the samples it needs this way at a tenth of a MoT step's cost.
        prior_lr: peak learning rate of the action prior's own schedule (``prior_steps > 0``).
        inverse_batch: consecutive-frame pairs per step for the inverse prior's own loss (0 trains
            no inverse prior), for the same reason.
        inverse_steps: steps of the inverse prior trained alone after the action prior, on its own
            one-cycle schedule at ``prior_lr``, ``inverse_batch`` pairs each, and then frozen (0: it
            trains beside the MoT instead, ``inverse_batch`` pairs per MoT step, so a recipe with few
            MoT steps leaves it short; ``inverse_prior_training``).
        forward_steps: steps of the forward prior, trained alone after the autoencoder and then
            frozen (0 leaves it untrained: forward dynamics is then the MoT's alone).
        forward_batch: sequences per forward-prior step.
        forward_rollout: actions per forward-prior training sequence: the prior is trained on its own
            rollout of that many steps, so a longer one teaches it to correct the drift it compounds
            (its held-out error is read at ``ROLLOUT_STEPS`` whatever this is, so runs compare).
        forward_lr: peak learning rate of the forward prior's one-cycle schedule.
        forward_finetune_steps: steps of a second stage of the forward prior, right after the first:
            a fresh one-cycle schedule on rollouts of ``forward_finetune_rollout`` actions (0: none).
            Short rollouts first learn the step; long ones then teach it to correct its own drift
            (docs/model.md, "Forward prior").
        forward_finetune_rollout: actions per training sequence of the second stage.
        forward_finetune_lr: its peak learning rate.
        forward_state_steps: steps fitting the forward prior's state head, with a term linear in the
            action (``ModelConfig.forward_state_action``, set by this), to one-step state changes after
            the prior's stages, its trunk frozen (``forward_prior_training.fit_state_head``; 0: none).
        object_fit_steps: steps fitting each part of a pushed object's pose (the readout, and per robot the
            effector map and the push MLP; ``object_pose_training``) to the datasets that record it, right
            after the forward prior (0: the learned env carries no object).
        object_prior_steps: steps training the forward prior to draw the object where its pose says.
        object_push_rollout_steps: steps fine-tuning each push MLP on 16-step rollouts of its own poses
            after its one-step fit (``object_pose_training.fit_push_rollouts``; 0: none).
        object_push_steps: one-step steps of each push MLP (0: ``object_fit_steps``): more data want more.
        object_simulated_episodes: state-only episodes per robot simulated in MuJoCo for the push MLPs beside
            the datasets' (``cosmos_robot.push_data``: the recipe's mix of demonstrators, seeds of their own;
            no frames, so ~1 s per 100 episodes; 0: the datasets' episodes only).
        object_reward_steps: steps fitting the object's goal readout and each robot's reward head, after
            the object (``object_reward_training``): the learned env's reward and success then come from
            the carried pose instead of the MoT's heads (0: from the MoT's heads).
        object_agent_steps: steps fitting each robot's agent head on one-step changes of its state, after the
            object (``agent_dynamics_training``): a learned env that returns no frames then steps the agent
            state and the block by MLPs instead of the forward prior's convolutions (0: no agent heads).
        object_agent_rollout_steps: steps fine-tuning each agent head on 16-step rollouts of its own states
            after its one-step fit (0: none).
        object_painter_steps: steps fitting the object's effector painter to the decoded drawer rollouts, last
            of the object's parts (``painter_training``): the learned env's frames are then corrected round the
            effector's place at full resolution (0: no painter).
        rollout_decoder_steps: steps fitting the autoencoder's decoder to the trained forward prior's own
            rollouts (of the last stage's length), right after it (``rollout_decoder_training``; 0: none).
        rollout_decoder_drawer: then fit the decoder as many steps again to the object's drawer's rollouts,
            after the object's parts (a model that carries the block decodes the drawer's grids, not the prior's).
            The decoder then draws the effector where it overlaps another object in an imagined frame.
        rollout_decoder_prior: fit the decoder to the prior's rollouts right after the prior (False: only to the
            drawer's, with ``rollout_decoder_drawer``; a model that carries the block never decodes the prior's
            grids outside the ablation, so that first fit only moves the drawer's fit's starting point).
        drawer_rollout: actions per training sequence of the object's drawer and of the decoder's fits to
            rollouts (0: the forward prior's last stage's). The drawer is what the learned env draws with, so its
            rollouts can be longer than a prior trained on short ones alone.
        time_shift: shift of the logit-normal flow-time sampler.
        ae_steps: autoencoder training steps.
        ae_batch: autoencoder batch.
        ae_object_weight: extra reconstruction weight of pixels far from the background colour
            (``autoencoder_training.object_weights``; 0: plain L1 + MSE).
        ae_full_resolution_width: width of the autoencoder decoder's block at full resolution
            (``FrameAutoencoder``'s ``full_resolution_width``; 0: none).
        fast_decoder_steps: steps of the fast decoder (``model.tokenizers.FastDecoder``), trained on the
            frozen autoencoder's latents right after it; forward dynamics then decodes with it (0: none).
        autoencoder: a checkpoint folder whose trained autoencoder (and token statistics) to reuse
            instead of training one (``ae_steps`` is then ignored); saves minutes per experiment.
        val_every: held-out loss every N steps (0: never).
        checkpoint_every: checkpoint every N steps (and at the end); the phases before the world model
            (autoencoder, forward prior) save their loop state every N of their own steps.
        seed: seeds everything.
        threads: torch threads (per process).
        declarations: a JSON file of embodiment declarations by ``robot_type`` (action layout, camera) for
            robots that are not registered (``cosmos_robot.datasets.declaration``); None: none.
        fps: the model's rate; datasets at a whole multiple of it are subsampled
            (``cosmos_robot.datasets.rate``).
    """

    datasets: list[str]
    out: str
    preset: str = "small"
    steps: int = 3000
    batch_size: int = 16
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup: int = 200
    grad_clip: float = 1.0
    ema: float = 0.999
    mode_mix: tuple[float, float, float] = (0.4, 0.2, 0.4)
    num_frames: int = 5
    context_frames: int = 1
    instruction_dropout: float = 0.1
    prior_batch: int = 64
    prior_steps: int = 0
    prior_lr: float = 1e-3
    inverse_batch: int = 256
    inverse_steps: int = 0
    forward_steps: int = 0
    forward_batch: int = 128
    forward_rollout: int = ROLLOUT_STEPS
    forward_lr: float = 2e-3
    forward_finetune_steps: int = 0
    forward_finetune_rollout: int = 2 * ROLLOUT_STEPS
    forward_finetune_lr: float = 1e-3
    forward_state_steps: int = 0
    rollout_decoder_steps: int = 0
    rollout_decoder_drawer: bool = False
    rollout_decoder_prior: bool = True
    drawer_rollout: int = 0
    object_fit_steps: int = 0
    object_prior_steps: int = 0
    object_push_rollout_steps: int = 0
    object_push_steps: int = 0
    object_simulated_episodes: int = 0
    object_reward_steps: int = 0
    object_agent_steps: int = 0
    object_agent_rollout_steps: int = 0
    object_painter_steps: int = 0
    time_shift: float = 1.0
    ae_steps: int = 1500
    ae_batch: int = 64
    ae_object_weight: float = 0.0
    ae_full_resolution_width: int = 0
    fast_decoder_steps: int = 0
    autoencoder: str | None = None
    val_every: int = 500
    checkpoint_every: int = 500
    seed: int = 0
    threads: int = 2
    declarations: str | None = None
    fps: float = MODEL_FPS
    model_overrides: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.mode_mix = tuple(float(p) for p in self.mode_mix)
        if not self.datasets:
            raise ValueError("datasets=[]; expected at least one dataset")
        counts = (
            "prior_batch",
            "prior_steps",
            "inverse_batch",
            "inverse_steps",
            "forward_steps",
            "forward_finetune_steps",
            "forward_state_steps",
        )
        objects = (
            "object_fit_steps",
            "object_prior_steps",
            "object_push_rollout_steps",
            "object_push_steps",
            "object_simulated_episodes",
            "object_reward_steps",
            "object_agent_steps",
            "object_agent_rollout_steps",
            "object_painter_steps",
        )
        for name in (
            *counts,
            "fast_decoder_steps",
            "rollout_decoder_steps",
            "drawer_rollout",
            "ae_full_resolution_width",
            *objects,
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name}={value!r}; expected a non-negative integer")
        if self.ae_full_resolution_width % 8:
            raise ValueError(
                f"ae_full_resolution_width={self.ae_full_resolution_width!r}; expected 0 or a positive multiple "
                "of 8 (its group norm has 8 groups)"
            )
        positive = ("steps", "batch_size", "num_frames", "ae_batch", "threads", "forward_batch", "forward_rollout")
        for name in positive + ("forward_finetune_rollout",):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a positive integer")
        for name in ("forward_lr", "forward_finetune_lr", "prior_lr"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}={getattr(self, name)!r}; expected a positive number")
        if self.forward_state_steps and not self.forward_steps:
            raise ValueError(
                f"forward_state_steps={self.forward_state_steps} but forward_steps=0; expected a forward prior "
                "(forward_steps > 0) or forward_state_steps=0"
            )
        if self.rollout_decoder_steps and not self.forward_steps:
            raise ValueError(
                f"rollout_decoder_steps={self.rollout_decoder_steps} but forward_steps=0; expected a forward prior "
                "to roll out (forward_steps > 0) or rollout_decoder_steps=0"
            )
        for name in ("rollout_decoder_drawer", "rollout_decoder_prior"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r}; expected True or False")
        if self.rollout_decoder_steps and not (self.rollout_decoder_prior or self.rollout_decoder_drawer):
            raise ValueError(
                f"rollout_decoder_steps={self.rollout_decoder_steps} but rollout_decoder_prior=False and "
                "rollout_decoder_drawer=False; expected one of them True (the rollouts to fit to) or "
                "rollout_decoder_steps=0"
            )
        if self.drawer_rollout and not self.forward_steps:
            raise ValueError(
                f"drawer_rollout={self.drawer_rollout} but forward_steps=0; expected a forward prior to roll out "
                "(forward_steps > 0) or drawer_rollout=0"
            )
        if self.rollout_decoder_drawer and not (self.rollout_decoder_steps and self.object_fit_steps):
            raise ValueError(
                f"rollout_decoder_drawer=True but rollout_decoder_steps={self.rollout_decoder_steps}, "
                f"object_fit_steps={self.object_fit_steps}; expected both > 0 (a decoder fit, an object's drawer)"
            )
        switched = [key for key in OBJECT_SWITCHES if self.model_overrides.get(key)]
        if switched and not self.object_fit_steps:
            raise ValueError(
                f"model_overrides sets {switched[0]}=True but object_fit_steps=0; expected object_fit_steps > 0 "
                f"(the switch is the carried object's) or {switched[0]} left out"
            )
        other_object_steps = (
            self.object_prior_steps
            or self.object_push_rollout_steps
            or self.object_push_steps
            or self.object_simulated_episodes
            or self.object_reward_steps
            or self.object_agent_steps
            or self.object_agent_rollout_steps
            or self.object_painter_steps
        )
        if (self.object_fit_steps or other_object_steps) and not (self.forward_steps and self.object_fit_steps):
            raise ValueError(
                f"object_fit_steps={self.object_fit_steps}, object_prior_steps={self.object_prior_steps}, "
                f"object_push_rollout_steps={self.object_push_rollout_steps}, "
                f"object_push_steps={self.object_push_steps}, "
                f"object_simulated_episodes={self.object_simulated_episodes}, "
                f"object_reward_steps={self.object_reward_steps}, object_agent_steps={self.object_agent_steps}, "
                f"object_agent_rollout_steps={self.object_agent_rollout_steps}, "
                f"object_painter_steps={self.object_painter_steps}, forward_steps={self.forward_steps}; "
                "expected object_fit_steps > 0 and a forward prior (forward_steps > 0) to carry an object, "
                "or every object step 0"
            )
        if self.object_agent_rollout_steps and not self.object_agent_steps:
            raise ValueError(
                f"object_agent_rollout_steps={self.object_agent_rollout_steps} but object_agent_steps=0; expected "
                "the one-step fit first (object_agent_steps > 0) or object_agent_rollout_steps=0"
            )
        if self.inverse_steps and not self.inverse_batch:
            raise ValueError(
                f"inverse_steps={self.inverse_steps} but inverse_batch=0; expected inverse_batch > 0 or inverse_steps=0"
            )
        if self.prior_steps and not self.prior_batch:
            raise ValueError(
                f"prior_steps={self.prior_steps} but prior_batch=0; expected prior_batch > 0 or prior_steps=0"
            )
        if len(self.mode_mix) != 3 or min(self.mode_mix) < 0 or abs(sum(self.mode_mix) - 1.0) > 1e-6:
            raise ValueError(
                f"mode_mix={self.mode_mix}; expected three non-negative numbers summing to 1 (FD, ID, policy)"
            )
        if not 1 <= self.context_frames < self.num_frames:
            raise ValueError(f"context_frames={self.context_frames}; expected 1..num_frames-1 ({self.num_frames - 1})")

    def model_config(self, object_pose_domains: tuple[int, ...] = ()) -> ModelConfig:
        """The preset with overrides applied, its shared action and state widths widened (to a multiple of 8)
        where a dataset's robot is wider: a fresh model fits the robots it is trained on.

        Args:
            object_pose_domains: the embodiments whose block is carried (known once the data are loaded).
                Given, the config carries the object: its reward and agent heads where their steps are set,
                and the object's switches of ``model_overrides`` (:data:`OBJECT_SWITCHES`); empty, it is the
                model before the object, without those switches (they need the object's embodiments).
        """
        config = preset(self.preset).to_dict() | self.model_overrides
        switches = {key: config.pop(key) for key in OBJECT_SWITCHES if key in config}
        widths = [source_widths(d) for d in self.datasets]
        for key, widest in (("action_width", max(w[0] for w in widths)), ("state_width", max(w[1] for w in widths))):
            if key not in self.model_overrides:
                config[key] = max(config[key], -(-widest // 8) * 8)
        if self.forward_state_steps:  # the term that the state head's fit trains
            config["forward_state_action"] = True
        model = ModelConfig.from_dict(config)
        if not object_pose_domains:
            return model
        return replace(
            model,
            object_pose_domains=tuple(object_pose_domains),
            object_reward=bool(self.object_reward_steps),
            object_agent=bool(self.object_agent_steps),
            object_painter=bool(self.object_painter_steps),
            **switches,
        )


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warm-up, then cosine to 10 % of the peak."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


def _distributed() -> tuple[int, int]:
    """(rank, world size), initialising torch.distributed when launched by torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return (dist.get_rank(), dist.get_world_size()) if world > 1 else (0, 1)


def _drop_instructions(reasoner: ReasonerInputs, drop: torch.Tensor) -> ReasonerInputs:
    keep = ~drop[:, None]
    return reasoner.replace(text_ids=reasoner.text_ids * keep, text_valid=reasoner.text_valid & keep)


def _select(batch: Batch, part: slice, device: torch.device) -> Batch:
    """This rank's slice of a batch, on its device."""
    return Batch(
        batch.reasoner.select(part).to(device),
        batch.clean.select(part).to(device),
        batch.rewards[part].to(device),
        batch.successes[part].to(device),
    )


class Trainer:
    """Holds the run's state; :meth:`run` trains to ``config.steps``."""

    def __init__(self, config: TrainConfig, resume: bool = False, progress: bool = True) -> None:
        resume_world_model = resume and (Path(config.out) / "training" / "trainer.json").is_file()
        if resume and not resume_world_model and not has_phase(config.out):
            raise FileNotFoundError(
                f"resume=True but out={config.out!r} holds no training checkpoint to resume from (nothing was "
                "saved yet: the first save comes after checkpoint_every steps of the autoencoder); "
                "run without --resume to start fresh"
            )
        self.config = config
        self.progress = progress
        self.rank, self.world = _distributed()
        if config.batch_size % self.world or config.prior_batch % self.world or config.inverse_batch % self.world:
            raise ValueError(
                f"batch_size={config.batch_size}, prior_batch={config.prior_batch}, "
                f"inverse_batch={config.inverse_batch}: expected all divisible by the {self.world} processes"
            )
        torch.set_num_threads(config.threads)
        self.device = (
            torch.device("cuda", self.rank % torch.cuda.device_count())
            if torch.cuda.is_available()
            else torch.device("cpu")
        )
        model_config = config.model_config()
        self.data = TrainingSet(
            config.datasets,
            model_config,
            config.num_frames,
            seed=config.seed,
            declarations=load_declarations(config.declarations),
            fps=config.fps,
        )
        previous = load_checkpoint(config.out, with_training=True) if resume_world_model else None
        # Killed before the world model's first checkpoint: the phase that was running continues.
        phase = load_phase(config.out) if resume and not resume_world_model else None

        torch.manual_seed(config.seed)
        fast = config.fast_decoder_steps > 0
        # A reused autoencoder brings its decoder's shape (``ae_full_resolution_width`` is then ignored, as
        # ``ae_steps`` is), also when a run that reused one resumes.
        reused = load_autoencoder(config.autoencoder) if config.autoencoder is not None else None
        self.autoencoder = FrameAutoencoder(
            model_config.latent_channels,
            model_config.patch_merge,
            fast_decoder=fast,
            full_resolution_width=reused.full_resolution_width if reused else config.ae_full_resolution_width,
        )
        # Whether the fast decoder still needs training: not when it comes with a finished autoencoder.
        train_fast = fast
        if previous is not None:
            self.autoencoder.load_state_dict(previous.autoencoder.state_dict())
            self.ae_psnr = previous.training["ae_psnr"]
            self.fast_decoder_psnr = previous.training.get("fast_decoder_psnr")
            train_fast = False
        elif phase is not None and phase["phase"] in PRIOR_PHASES:
            self.autoencoder.load_state_dict(phase["autoencoder"])
            self.ae_psnr = float(phase["ae_psnr"])
            self.fast_decoder_psnr = phase.get("fast_decoder_psnr")
            train_fast = False
        elif reused is not None:
            # A reused autoencoder brings its fast decoder where it has one; else that one is trained here.
            train_fast = fast and reused.fast_decoder is None
            state = reused.state_dict()
            if not fast:
                state = {k: v for k, v in state.items() if not k.startswith("fast_decoder.")}
            self.autoencoder.load_state_dict(state, strict=not train_fast)
            self.ae_psnr = reconstruction_psnr(self.autoencoder, self.data.frames("val")[:2048])
            if fast and not train_fast:
                self.fast_decoder_psnr = fast_reconstruction_psnr(self.autoencoder, self.data.frames("val")[:2048])
        else:
            frames = self.data.frames()
            train_autoencoder(
                self.autoencoder,
                frames,
                steps=config.ae_steps,
                batch_size=config.ae_batch,
                object_weight=config.ae_object_weight,
                seed=config.seed,
                progress=progress and self.rank == 0,
                saver=PhaseSaver(
                    lambda loop: self._save_phase({"phase": "autoencoder", "loop": loop}),
                    config.checkpoint_every,
                    phase["loop"] if phase is not None else None,
                ),
            )
            # Measured on held-out frames: a reconstruction score on training frames flatters it.
            self.ae_psnr = reconstruction_psnr(self.autoencoder, self.data.frames("val")[:2048])
            self.autoencoder.fit_token_statistics(
                frames[torch.randperm(len(frames), generator=torch.Generator().manual_seed(config.seed))[:4096]]
            )
        if train_fast:
            # Killed here, a resumed run redoes only this short phase: the autoencoder's is complete.
            self.autoencoder.requires_grad_(False)
            self.autoencoder.fast_decoder.requires_grad_(True)
            train_fast_decoder(
                self.autoencoder,
                self.data.frames(),
                steps=config.fast_decoder_steps,
                object_weight=config.ae_object_weight,
                seed=config.seed + 4,
                progress=progress and self.rank == 0,
            )
            self.fast_decoder_psnr = fast_reconstruction_psnr(self.autoencoder, self.data.frames("val")[:2048])
        elif not fast:
            self.fast_decoder_psnr = None
        self.autoencoder.requires_grad_(False).eval()
        self.data.prepare(self.autoencoder)
        if config.object_fit_steps and model_config.forward_prior:  # (without a prior: refused below)
            carried = object_embodiments(self.data)
            if not carried:
                raise ValueError(
                    f"object_fit_steps={config.object_fit_steps} but no dataset records a PushBlock block's pose "
                    f"({OBS_ENV_STATE}); expected point or arm2 datasets, or object_fit_steps=0"
                )
            model_config = config.model_config(tuple(self.data.data[n].embodiment.domain_id for n in carried))

        torch.manual_seed(config.seed + 1)
        self.network = WorldActionNetwork(model_config).to(self.device)
        self.forward_prior = previous.training.get("forward_prior") if previous is not None else None
        if config.forward_steps and self.network.forward_prior is None:
            raise ValueError(
                f"forward_steps={config.forward_steps} but the model has no forward prior; expected "
                'model_overrides={"forward_prior": true} or forward_steps=0'
            )
        # The forward prior came before these phases, the action prior before the inverse prior's.
        finished = phase is not None and phase["phase"] in ("action_prior", "inverse_prior")
        if previous is None and config.forward_steps and finished:
            self.network.forward_prior.load_state_dict(phase["forward_prior_weights"])
            if self.network.object_pose is not None:
                self.network.object_pose.load_state_dict(phase["object_pose_weights"])
            self.forward_prior = phase["forward_prior"]
        elif previous is None and config.forward_steps:
            self._train_forward_prior(phase)
        self.action_prior = previous.training.get("action_prior") if previous is not None else None
        if previous is None and config.prior_steps and phase is not None and phase["phase"] == "inverse_prior":
            self.network.action_prior.load_state_dict(phase["action_prior_weights"])
            self.action_prior = phase["action_prior"]
        elif previous is None and config.prior_steps:
            self._train_action_prior(phase)
        self.inverse_prior = previous.training.get("inverse_prior") if previous is not None else None
        if previous is None and config.inverse_steps:
            self._train_inverse_prior(phase)
        # Frozen from here on: the MoT learns its correction against the rollout it will be given.
        if self.network.forward_prior is not None:
            self.network.forward_prior.requires_grad_(False)
        if self.network.object_pose is not None:  # trained with the prior; the MoT never reads it
            self.network.object_pose.requires_grad_(False)
        if config.prior_steps:  # trained alone: the MoT's steps draw no prior batch
            self.network.action_prior.requires_grad_(False)
        if config.inverse_steps:  # likewise
            self.network.inverse_prior.requires_grad_(False)
        self.ema = copy.deepcopy(self.network).requires_grad_(False)
        self.optimizer = torch.optim.AdamW(
            [p for p in self.network.parameters() if p.requires_grad], lr=config.lr, weight_decay=config.weight_decay
        )
        self.rng = torch.Generator().manual_seed(config.seed + 2)
        self.step = 0
        self.history: list[dict[str, float]] = []
        if previous is not None:
            self._restore(previous)
        # The last block's reasoner output feeds nothing (the generator reads only its keys and values),
        # so those weights get no gradient: DDP must be told to expect unused parameters.
        module = TrainingModule(self.network)
        self.model = (
            torch.nn.parallel.DistributedDataParallel(module, find_unused_parameters=True) if self.world > 1 else module
        )

    # -- the priors' phases ---------------------------------------------------------------------------------
    def _phase_saver(self, stage: str, phase: dict[str, Any] | None, started: float, **finished: Any) -> PhaseSaver:
        """Checkpoints the loop of ``stage`` (resuming it from ``phase`` where that is its saved state);
        the finished autoencoder and ``finished`` parts travel with it, so resuming skips their phases."""

        def save(loop: dict[str, Any]) -> None:
            self._save_phase(
                {
                    "phase": stage,
                    "loop": loop,
                    "autoencoder": self.autoencoder.state_dict(),
                    "ae_psnr": float(self.ae_psnr),
                    "fast_decoder_psnr": self.fast_decoder_psnr,
                    "seconds": time.perf_counter() - started,
                }
                | finished
            )

        resume_from = phase["loop"] if phase is not None and phase["phase"] == stage else None
        return PhaseSaver(save, self.config.checkpoint_every, resume_from)

    def _train_forward_prior(self, phase: dict[str, Any] | None) -> None:
        """The forward prior's two stages (short rollouts, then longer ones), resuming inside either."""
        config = self.config
        # Every rank trains the same prior from the same seed: no communication needed.
        resumed = phase is not None and phase["phase"] in FORWARD_PHASES
        started = time.perf_counter() - (float(phase["seconds"]) if resumed else 0.0)
        # (phase, steps, rollout, lr, seed offset); each stage draws its batches from its own seed.
        stages = [
            ("forward_prior", config.forward_steps, config.forward_rollout, config.forward_lr, 3),
            (
                "forward_finetune",
                config.forward_finetune_steps,
                config.forward_finetune_rollout,
                config.forward_finetune_lr,
                5,
            ),
        ][: 1 + (config.forward_finetune_steps > 0)]
        # A run killed in the second stage resumes there: its loop state holds the prior's weights.
        first = FORWARD_PHASES.index(phase["phase"]) if resumed else 0
        for stage, steps, rollout, lr, seed in stages[first:]:
            train_forward_prior(
                self.network,
                self.data.transitions(steps=rollout),
                steps=steps,
                batch_size=config.forward_batch,
                lr=lr,
                seed=config.seed + seed,
                progress=self.progress and self.rank == 0,
                saver=self._phase_saver(stage, phase, started),
            )
        state_head = None
        if config.forward_state_steps:
            # Killed here, a resumed run redoes only this short fit: the prior's last stage is saved.
            state_head = fit_state_head(
                self.network,
                self.data.transitions(steps=1),
                self.data.transitions("val", steps=1),
                config.forward_state_steps,
                seed=config.seed + 17,
                progress=self.progress and self.rank == 0,
            )
        error = rollout_error(self.network, self.data.transitions("val", steps=ROLLOUT_STEPS))
        self.forward_prior = asdict(error) | {"seconds": time.perf_counter() - started}
        if state_head is not None:
            self.forward_prior["state_head"] = state_head

        # The drawer's and the decoder's fits roll out as far as the prior's last stage unless told otherwise.
        fit_rollout = config.drawer_rollout or stages[-1][2]

        def fit_decoder(drawer: bool) -> dict[str, float]:
            """The decoder fitted to the prior's rollouts, or to the object's drawer's."""
            return fit_decoder_to_rollouts(
                self.autoencoder,
                self.network,
                self.data,
                rollout=fit_rollout,
                steps=config.rollout_decoder_steps,
                object_weight=config.ae_object_weight,
                seed=config.seed + 7,
                progress=self.progress and self.rank == 0,
                drawer=drawer,
            )

        if config.rollout_decoder_steps and config.rollout_decoder_prior:
            # Killed here, a resumed run redoes only this short step: the prior's last stage is saved.
            self.forward_prior["decoder_on_rollouts"] = fit_decoder(drawer=False)
        if config.object_fit_steps:
            # After the decoder's fit: the decoder draws the rollouts of the prior as it was trained alone.
            self.forward_prior["object_pose"] = fit_object_pose(
                self.network,
                self.data,
                config.object_fit_steps,
                config.object_prior_steps,
                rollout=fit_rollout,
                seed=config.seed + 11,
                batch_size=min(config.forward_batch, 64),
                push_rollout_steps=config.object_push_rollout_steps,
                progress=self.progress and self.rank == 0,
                push_steps=config.object_push_steps,
                simulated_episodes=config.object_simulated_episodes,
            )
            if config.object_reward_steps:
                self.forward_prior["object_reward"] = fit_object_reward(
                    self.network,
                    self.data,
                    config.object_reward_steps,
                    seed=config.seed + 13,
                    progress=self.progress and self.rank == 0,
                )
            if config.object_agent_steps:
                self.forward_prior["object_agent"] = fit_agent_dynamics(
                    self.network,
                    self.data,
                    config.object_agent_steps,
                    config.object_agent_rollout_steps,
                    seed=config.seed + 19,
                    progress=self.progress and self.rank == 0,
                )
            if config.rollout_decoder_drawer:
                self.forward_prior["decoder_on_drawer"] = fit_decoder(drawer=True)
            if config.object_painter_steps:
                # Last: the painter corrects what the decoder, as finally fitted, draws of the drawer's rollouts.
                self.forward_prior["object_painter"] = fit_painter(
                    self.network,
                    self.autoencoder,
                    self.data,
                    rollout=fit_rollout,
                    steps=config.object_painter_steps,
                    object_weight=config.ae_object_weight,
                    seed=config.seed + 29,
                    progress=self.progress and self.rank == 0,
                )

    def _train_action_prior(self, phase: dict[str, Any] | None) -> None:
        """The action prior alone on its demonstration windows, resuming inside its phase."""
        config = self.config
        resumed = phase is not None and phase["phase"] == "action_prior"
        started = time.perf_counter() - (float(phase["seconds"]) if resumed else 0.0)
        saver = self._phase_saver("action_prior", phase, started, **self._forward_parts())
        train_action_prior(
            self.network,
            self.data.demonstrations(PRIOR_CHUNK),
            steps=config.prior_steps,
            batch_size=config.prior_batch,
            lr=config.prior_lr,
            seed=config.seed + 6,
            progress=self.progress and self.rank == 0,
            saver=saver,
        )
        errors = prior_error(self.network, self.data.demonstrations(PRIOR_CHUNK, "val"))
        self.action_prior = {
            "val_loss": self._by_embodiment(errors),
            "seconds": time.perf_counter() - started,
        }

    def _forward_parts(self) -> dict[str, Any]:
        """The parts trained before the action and inverse priors, which those phases' states carry so that a
        resumed run skips them: the forward prior's and the object's weights and the forward prior's report."""
        forward, objects = self.network.forward_prior, self.network.object_pose
        return {
            "forward_prior_weights": forward.state_dict() if forward is not None else {},
            "object_pose_weights": objects.state_dict() if objects is not None else {},
            "forward_prior": self.forward_prior,
        }

    def _by_embodiment(self, values: dict[int, float]) -> dict[str, float]:
        """Per-domain-id values keyed by embodiment name."""
        names = {e.embodiment.domain_id: name for name, e in self.data.processor.entries.items()}
        return {names.get(d, str(d)): v for d, v in values.items()}

    def _train_inverse_prior(self, phase: dict[str, Any] | None) -> None:
        """The inverse prior alone on consecutive-frame pairs, resuming inside its phase."""
        config = self.config
        resumed = phase is not None and phase["phase"] == "inverse_prior"
        started = time.perf_counter() - (float(phase["seconds"]) if resumed else 0.0)
        saver = self._phase_saver(
            "inverse_prior",
            phase,
            started,
            **self._forward_parts(),
            action_prior_weights=self.network.action_prior.state_dict(),
            action_prior=self.action_prior,
        )
        train_inverse_prior(
            self.network,
            self.data.transitions(),
            steps=config.inverse_steps,
            batch_size=config.inverse_batch,
            lr=config.prior_lr,
            seed=config.seed + 23,
            progress=self.progress and self.rank == 0,
            saver=saver,
        )
        scores = inverse_r2(self.network, self.data.transitions("val"))
        self.inverse_prior = {
            "val_r2": self._by_embodiment(scores),
            "seconds": time.perf_counter() - started,
        }

    # -- checkpoint state -----------------------------------------------------------------------------
    def _restore(self, previous: Checkpoint) -> None:
        tensors = previous.training.pop("tensors")
        load_state(self.network, {k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, Path("state"))
        self.ema.load_state_dict(previous.network.state_dict())
        optim_state = self.optimizer.state_dict()
        for index in range(len([p for p in self.network.parameters() if p.requires_grad])):
            if f"optim.{index}.exp_avg" in tensors:
                optim_state["state"][index] = {
                    "step": tensors[f"optim.{index}.step"],
                    "exp_avg": tensors[f"optim.{index}.exp_avg"],
                    "exp_avg_sq": tensors[f"optim.{index}.exp_avg_sq"],
                }
        self.optimizer.load_state_dict(optim_state)
        self.rng.set_state(tensors["rng.generator"])
        self.step = int(previous.training["step"])
        self.history = list(previous.training["history"])

    def checkpoint(self) -> Checkpoint:
        """The current EMA model as a checkpoint (with the state needed to resume)."""
        entries = dict(self.data.processor.entries)
        window = {
            "num_frames": self.config.num_frames,
            "context_frames": self.config.context_frames,
            "fps": self.data.fps,
        }
        training = {
            "step": self.step,
            "history": self.history,
            "ae_psnr": self.ae_psnr,
            "fast_decoder_psnr": self.fast_decoder_psnr,
            "forward_prior": self.forward_prior,
            "action_prior": self.action_prior,
            "inverse_prior": self.inverse_prior,
            "config": asdict(self.config),
        }
        ae = self.autoencoder
        autoencoder_config = {"latent_channels": ae.latent_channels, "patch_merge": ae.patch_merge, "width": 32}
        if ae.full_resolution_width:
            autoencoder_config["full_resolution_width"] = ae.full_resolution_width
        if self.autoencoder.fast_decoder is not None:
            autoencoder_config["fast_decoder"] = True
        return Checkpoint(self.ema, self.autoencoder, entries, window, autoencoder_config, training=training)

    def _training_tensors(self) -> dict[str, torch.Tensor]:
        tensors = {f"model.{k}": v.detach().cpu() for k, v in self.network.state_dict().items()}
        for index, state in self.optimizer.state_dict()["state"].items():
            for name, value in state.items():
                tensors[f"optim.{index}.{name}"] = torch.as_tensor(value).cpu()
        tensors["rng.generator"] = self.rng.get_state()
        return tensors

    def _save_phase(self, state: dict[str, Any]) -> None:
        if self.rank == 0:
            save_phase(self.config.out, state)

    def save(self) -> None:
        """Write the checkpoint (rank 0 only)."""
        if self.rank == 0:
            save_checkpoint(self.checkpoint(), self.config.out, training_tensors=self._training_tensors())

    # -- the loop ---------------------------------------------------------------------------------------
    def _draw_prior_batch(self) -> PriorBatch | None:
        """The action prior's demonstration windows for this step (global batch), or None."""
        if not self.config.prior_batch or self.config.prior_steps:
            return None
        table = self.data.demonstrations(PRIOR_CHUNK)
        return table.select(torch.randint(len(table.domain), (self.config.prior_batch,), generator=self.rng))

    def _draw_inverse_batch(self) -> TransitionBatch | None:
        """The inverse prior's consecutive-frame pairs for this step (global batch), or None."""
        if not self.config.inverse_batch or self.config.inverse_steps:
            return None
        table = self.data.transitions()
        return table.take(torch.randint(len(table), (self.config.inverse_batch,), generator=self.rng))

    def _draw_batch(self) -> tuple[Batch, BatchPlan, list[Mode], Any]:
        c = self.config
        picks = self.data.draw(c.batch_size, self.rng)
        batch = self.data.collate(picks, context_frames=c.context_frames)
        mode_index = torch.multinomial(torch.tensor(c.mode_mix), c.batch_size, replacement=True, generator=self.rng)
        modes = [MODES[int(i)] for i in mode_index]
        plan = BatchPlan.from_modes(modes, c.num_frames, batch.clean.actions.shape[1], c.context_frames)
        drop = torch.rand(c.batch_size, generator=self.rng) < c.instruction_dropout
        batch.reasoner = _drop_instructions(batch.reasoner, drop)
        # Inverse dynamics labels video alone: its samples never see proprioception.
        is_id = torch.tensor([m is Mode.INVERSE_DYNAMICS for m in modes])
        batch.reasoner.state = batch.reasoner.state * ~is_id[:, None]
        noise = draw_noise(batch.clean, self.rng, c.time_shift)
        return batch, plan, modes, noise

    def train_step(self) -> dict[str, float]:
        """One optimiser step on this rank's slice of the global batch; returns logged losses."""
        c = self.config
        batch, plan, modes, noise = self._draw_batch()
        prior_batch = self._draw_prior_batch()
        if prior_batch is not None:
            share = c.prior_batch // self.world
            prior_batch = prior_batch.select(slice(self.rank * share, (self.rank + 1) * share)).to(self.device)
        inverse_batch = self._draw_inverse_batch()
        if inverse_batch is not None:
            share = c.inverse_batch // self.world
            inverse_batch = inverse_batch.select(slice(self.rank * share, (self.rank + 1) * share)).to(self.device)
        local = slice(self.rank * (c.batch_size // self.world), (self.rank + 1) * (c.batch_size // self.world))
        batch, plan = _select(batch, local, self.device), plan.select(local).to(self.device)
        noise = noise.select(local).to(self.device)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(self.step, c)
        autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda")
        with autocast:
            terms = training_loss(
                self.model,
                batch.reasoner,
                batch.clean,
                plan,
                noise,
                batch.rewards,
                batch.successes,
                prior_batch=prior_batch,
                inverse_batch=inverse_batch,
            )
        self.optimizer.zero_grad(set_to_none=True)
        terms.total.backward()
        torch.nn.utils.clip_grad_norm_(self.network.parameters(), c.grad_clip)
        self.optimizer.step()
        with torch.no_grad():
            # Warmed-up decay: a plain 0.999 EMA still holds 37 % of the initial weights after 1000 steps.
            decay = min(c.ema, (1.0 + self.step) / (10.0 + self.step))
            for ema, param in zip(self.ema.parameters(), self.network.parameters(), strict=True):
                ema.lerp_(param, 1.0 - decay)
        self.step += 1
        logged = {"step": self.step, "loss": terms.total.item(), "actions": terms.actions, "frames": terms.frames}
        if prior_batch is not None:
            logged["prior"] = terms.prior
        if inverse_batch is not None:
            logged["inverse"] = terms.inverse
        local_modes = modes[local]
        for mode in MODES:
            mask = torch.tensor([m is mode for m in local_modes])
            if mask.any():
                logged[mode.value] = float(terms.per_sample[mask].mean())
        return logged

    @torch.no_grad()
    def validate(self, batches: int = 4) -> float:
        """Held-out flow loss of the EMA model on fixed windows (a fixed seed: comparable across steps)."""
        c = self.config
        g = torch.Generator().manual_seed(12345)
        losses = []
        for _ in range(batches):
            batch = self.data.collate(self.data.draw(c.batch_size, g, "val"), "val", c.context_frames)
            batch = _select(batch, slice(None), self.device)
            modes = [
                MODES[int(i)] for i in torch.multinomial(torch.tensor(c.mode_mix), c.batch_size, True, generator=g)
            ]
            plan = BatchPlan.from_modes(modes, c.num_frames, batch.clean.actions.shape[1], c.context_frames)
            is_id = torch.tensor([m is Mode.INVERSE_DYNAMICS for m in modes], device=self.device)
            batch.reasoner.state = batch.reasoner.state * ~is_id[:, None]
            plan = plan.to(self.device)
            terms = training_loss(self.ema, batch.reasoner, batch.clean, plan, draw_noise(batch.clean, g))
            losses.append(float(terms.per_sample.mean()))
        return sum(losses) / len(losses)

    def run(self) -> Path:
        """Train to ``config.steps``, checkpointing on the way; returns the checkpoint folder."""
        c = self.config
        bar = tqdm(total=c.steps, initial=self.step, desc="world model", disable=not self.progress or self.rank != 0)
        self.start_step = self.step
        started = time.perf_counter()
        while self.step < c.steps:
            logged = self.train_step()
            if c.val_every and self.step % c.val_every == 0:
                logged["val"] = self.validate()
            self.history.append(logged)
            bar.update(1)
            bar.set_postfix({k: f"{v:.3f}" for k, v in logged.items() if k not in ("step",)})
            if self.step % c.checkpoint_every == 0 or self.step == c.steps:
                self.save()
        bar.close()
        self.elapsed = time.perf_counter() - started
        if self.world > 1:
            dist.barrier()
        return Path(c.out)


def train(config: TrainConfig, resume: bool = False, progress: bool = True) -> Path:
    """Train (or resume) and return the checkpoint folder."""
    return Trainer(config, resume=resume, progress=progress).run()


def export_inference(checkpoint: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """An inference-only copy of a training checkpoint: EMA weights in float16, no optimiser state."""
    loaded = load_checkpoint(checkpoint)
    return save_checkpoint(loaded, dest, dtype=torch.float16, overwrite=True)
