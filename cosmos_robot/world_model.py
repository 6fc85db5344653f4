"""``WorldActionModel``: the model behind one facade, numpy in and out, raw units in and out.

Normalisation happens here, from the statistics saved with the checkpoint: users pass raw actions
and states and get raw ones back (feeding normalised values by hand was a real Cosmos 3 bug).
Every call accepts one sample or a batch (a leading batch axis) and validates its inputs.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import numpy as np
import torch

from cosmos_robot.checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from cosmos_robot.forking import note_use
from cosmos_robot.interface import ActionChunk, Prediction, WorldModel
from cosmos_robot.model.batches import GeneratorInputs, ReasonerInputs
from cosmos_robot.model.object_pose import MEMORY_WIDTH, ObjectPose
from cosmos_robot.model.plan import Mode, make_plan
from cosmos_robot.model.sampler import sample_plan
from cosmos_robot.model.stems import grid_tokens, latent_grids
from cosmos_robot.pixel_residual import keep_unchanged_pixels
from cosmos_robot.processor import EmbodimentEntry, Processor
from cosmos_robot.temporal_ensemble import average_windows, window_starts

# What makes forward dynamics. "full": the forward prior rolls frames and state forward and the MoT,
# reading that rollout, predicts reward and success. "corrected": the MoT's sampled x0 correction is
# added to the rollout as well (measured worse against MuJoCo; an ablation). "prior": the prior alone,
# no MoT pass (reward and success come back 0; an ablation, and the fastest).
FORWARD_PATHS = ("full", "corrected", "prior")
# Where the policy's actions come from (see WorldActionModel.policy).
ACTION_ESTIMATES = ("mean", "sample", "prior")
# Euler steps of a model call when the caller names none.
DEFAULT_STEPS = 10
# Classifier-free guidance of the policy's actions on the instruction (1.0 = off). Training drops the
# instruction 10 % of the time, and noisy demonstrations say "noisy" in theirs: the unconditional
# estimate mixes expert and noisy actions, and guidance steps away from that mix towards the expert.
# Chosen on tuning episodes (seeds.TUNING_SEED and up), not the eval seeds; see docs/results.md.
POLICY_GUIDANCE = 1.25
# Outputs leave through ``.float()`` before numpy: under bf16 autocast (on a GPU) the heads return
# bfloat16, which numpy has no type for.


def default_checkpoint_path() -> Path:
    """Folder of the default model shipped inside the package."""
    return Path(str(resources.files("cosmos_robot") / "assets" / "default"))


def _push(
    objects: ObjectPose,
    memory: torch.Tensor,
    states: tuple[torch.Tensor, torch.Tensor],
    effector: torch.Tensor,
    action: torch.Tensor,
    domain: int,
    scoring: tuple[list[torch.Tensor], list[torch.Tensor]] | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(the object's memory, the effector) after a step under ``action`` that takes the normalised agent state
    from ``states[0]`` to ``states[1]``, the effector from ``effector``; given ``scoring`` (lists of rewards and
    success probabilities), the step's reward and success probability from the object's reward head are appended."""
    memory, effector_after = objects.advance(memory, *states, effector, action, domain)
    if scoring is not None:
        reward, probability = objects.rewards(memory, effector_after, domain)
        scoring[0].append(reward)
        scoring[1].append(probability)
    return memory, effector_after


class WorldActionModel:
    """Forward dynamics, inverse dynamics and policy of one trained checkpoint.

    Args:
        checkpoint: a loaded :class:`Checkpoint`.
        device: torch device to run on.
    """

    def __init__(self, checkpoint: Checkpoint, device: str | torch.device = "cpu") -> None:
        note_use("torch")
        self.checkpoint = checkpoint
        self.device = torch.device(device)
        self.network = checkpoint.network.float().to(self.device).eval()
        self.autoencoder = checkpoint.autoencoder.float().to(self.device).eval()
        self.config = self.network.config
        self.num_frames = int(checkpoint.window["num_frames"])
        self.context_frames = int(checkpoint.window["context_frames"])
        self.fps = float(checkpoint.window["fps"])
        self.processor = Processor(self.config, checkpoint.embodiments)
        self.forward_path = "full"
        # Forward dynamics may draw its frames with the fast decoder (a learned env with pixel observations
        # decodes every step). Off by default: measured, it loses arm2's 5-pixel fingertip (found in 33-75 %
        # of imagined frames against 79-96 % with the full decoder; docs/results.md). Point keeps its numbers.
        self.fast_decoding = False
        # Where no frame is read (``decode=False``) and the checkpoint's object has agent heads, the agent
        # state and the block are stepped by them and the push MLP alone, not by the forward prior's
        # convolutions (``agent_dynamics_training``); False runs the prior there too (the ablation).
        self.agent_heads = True
        self._last_decode: tuple[torch.Tensor, np.ndarray, bool] | None = None

    @property
    def forward_path(self) -> str:
        """How forward dynamics is made, one of :data:`FORWARD_PATHS` (``"full"`` unless set)."""
        return self._forward_path

    @forward_path.setter
    def forward_path(self, value: str) -> None:
        if value not in FORWARD_PATHS:
            raise ValueError(f"forward_path={value!r}; expected one of {list(FORWARD_PATHS)}")
        if value != "full" and self.network.forward_prior is None:
            raise ValueError(f"forward_path={value!r} but this checkpoint has no forward prior; expected 'full'")
        self.network.forward_correction = value == "corrected"
        self._forward_path = value

    # -- loading and saving -----------------------------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike = "default", device: str = "cpu", backend: str = "native", **backend_kwargs
    ) -> WorldActionModel:
        """Load a checkpoint folder, or ``"default"`` for the model shipped with the package.

        ``backend="cosmos3"`` loads a local diffusers-format Cosmos 3 folder instead and returns a
        :class:`cosmos_robot.backends.cosmos3.Cosmos3Backend` with the same three calls
        (``backend_kwargs`` go to its ``from_pretrained``: action statistics, domains, ...).
        """
        if backend == "cosmos3":
            from cosmos_robot.backends.cosmos3 import Cosmos3Backend

            return Cosmos3Backend.from_pretrained(path, device=device, **backend_kwargs)
        if backend != "native":
            raise ValueError(f"backend={backend!r} is unknown; expected 'native' or 'cosmos3'")
        if backend_kwargs:
            raise ValueError(
                f"{sorted(backend_kwargs)} are options of backend='cosmos3'; the native backend takes none"
            )
        folder = default_checkpoint_path() if str(path) == "default" else Path(path)
        if str(path) == "default" and not (folder / "config.json").is_file():
            raise FileNotFoundError(
                f"the default model is not installed at {folder}; train it with "
                "`cosmos-robot train --recipe default --out ckpt --export <that folder>`"
            )
        return cls(load_checkpoint(folder), device=device)

    def save_pretrained(self, path: str | os.PathLike, dtype: torch.dtype = torch.float32) -> Path:
        """Write the model as a checkpoint folder (atomically)."""
        return save_checkpoint(self.checkpoint, path, dtype=dtype)

    @property
    def embodiments(self) -> list[str]:
        """Embodiments this model was trained on."""
        return sorted(self.checkpoint.embodiments)

    @property
    def image_size(self) -> int:
        """Side of the square frames the model reads and writes."""
        return int(self.config.image_size)

    def action_names(self, embodiment: str) -> list[str]:
        """Names of an embodiment's raw action dimensions."""
        return list(self._entry(embodiment).embodiment.spec.names())

    @property
    def future_frames(self) -> int:
        """Frames generated per model call (window minus observed frames)."""
        return self.num_frames - self.context_frames

    # -- validation -------------------------------------------------------------------------------------
    def _entry(self, embodiment: str) -> EmbodimentEntry:
        return self.processor.entry(embodiment)

    def _frames(self, frames: np.ndarray, name: str, per_sample_ndim: int) -> np.ndarray:
        frames = np.asarray(frames)
        size = self.config.image_size
        if frames.dtype != np.uint8:
            raise ValueError(f"{name} has dtype {frames.dtype}; expected uint8 images")
        if frames.ndim == per_sample_ndim:
            frames = frames[None]
        if frames.ndim != per_sample_ndim + 1 or frames.shape[-3:] != (size, size, 3):
            raise ValueError(
                f"{name} has shape {frames.shape}; expected (..., {size}, {size}, 3) "
                f"with {per_sample_ndim - 3} time axis(es) and an optional batch axis"
            )
        return frames

    def _vectors(self, values: np.ndarray | None, name: str, width: int, batch: int, steps: int | None) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        expected_ndim = 1 if steps is None else 2
        if values.ndim == expected_ndim:
            values = np.broadcast_to(values[None], (batch, *values.shape))
        shape = (batch, width) if steps is None else (batch, steps, width)
        if values.shape != shape:
            raise ValueError(f"{name} has shape {values.shape}; expected {shape[1:]} or {shape}")
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name} contains NaN or inf; expected finite values")
        return values

    def _check_steps(self, steps: int | None) -> int:
        """``steps``, or :data:`DEFAULT_STEPS` for None, after checking it."""
        steps = DEFAULT_STEPS if steps is None else steps
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise ValueError(f"steps={steps!r}; expected a positive integer number of denoising steps")
        return steps

    # -- building model inputs ----------------------------------------------------------------------------
    def _reasoner(
        self,
        entry: EmbodimentEntry,
        observed: np.ndarray,
        state: np.ndarray | None,
        instruction: str | None,
        start_time: np.ndarray,
    ) -> ReasonerInputs:
        b, tc = observed.shape[:2]
        name = entry.embodiment.name
        return self.processor.reasoner_inputs(
            [name] * b,
            observed,
            start_time[:, None] + np.arange(tc)[None] / self.fps,
            None if state is None else self.processor.states_in(name, state),
            [instruction] * b,
        ).to(self.device)

    def _template(
        self,
        entry: EmbodimentEntry,
        b: int,
        frame_tokens: torch.Tensor,
        actions_norm: np.ndarray,
        states_norm: np.ndarray,
        start_time: np.ndarray,
    ) -> GeneratorInputs:
        name = entry.embodiment.name
        frame_time = start_time[:, None] + np.arange(self.num_frames)[None] / self.fps
        return self.processor.generator_inputs(
            [name] * b,
            frame_tokens,
            frame_time,
            self.processor.pad_actions(name, actions_norm),
            frame_time[:, 1:],
            self.processor.pad_states(name, states_norm),
        ).to(self.device)

    @torch.no_grad()
    def reconstruct(self, frames: np.ndarray) -> np.ndarray:
        """Real frames (B, T, H, W, 3) uint8 through the autoencoder: encoded, then the full decoder's plain
        decode (no pixel residual). What the decoder alone loses of real frames (``eval fd``'s
        ``autoencoder_floor``); the env's frames keep the camera's pixels where little changes, so they can lose
        less."""
        frames = np.asarray(frames)
        size = self.image_size
        if frames.ndim != 5 or frames.shape[2:] != (size, size, 3) or frames.dtype != np.uint8:
            raise ValueError(
                f"frames has shape {frames.shape} and dtype {frames.dtype}; expected uint8 (B, T, {size}, {size}, 3)"
            )
        return self._decode(self._encode(frames))

    def _encode(self, frames_bthwc: np.ndarray) -> torch.Tensor:
        b, t = frames_bthwc.shape[:2]
        flat = torch.from_numpy(np.ascontiguousarray(frames_bthwc.reshape(b * t, *frames_bthwc.shape[2:])))
        return self.autoencoder.frames_to_tokens(flat.to(self.device)).view(b, t, self.config.tokens_per_frame, -1)

    def _decode(self, tokens: torch.Tensor, fast: bool = False, places: torch.Tensor | None = None) -> np.ndarray:
        """Tokens (B, T, GG, Cf) -> uint8 frames (B, T, H, W, 3); given the effector's places (B, T, 2, metres)
        and a model whose object holds a painter, corrected round them (:mod:`cosmos_robot.model.painter`)."""
        b, t = tokens.shape[:2]
        frames = self.autoencoder.tokens_to_frames(tokens.flatten(0, 1), self.config.latent_grid, fast=fast)
        painter = None if self.network.object_pose is None else self.network.object_pose.painter
        if places is not None and painter is not None:
            frames = painter.paint(frames, places.flatten(0, 1).to(frames.device))
        return frames.view(b, t, *frames.shape[1:]).cpu().numpy()

    def _decode_against(
        self,
        tokens: torch.Tensor,
        reference: np.ndarray,
        reference_tokens: torch.Tensor,
        fast: bool = False,
        places: torch.Tensor | None = None,
    ) -> np.ndarray:
        """Decode predicted tokens (B, T, GG, Cf) as a change to the real frame ``reference``
        (:mod:`cosmos_robot.pixel_residual`); given the effector's places (B, 1 + T, 2: at the reference, then
        at each predicted frame), both decodes are painted there."""
        ahead, at_reference = (None, None) if places is None else (places[:, 1:], places[:, 0])
        decoded = self._decode(tokens, fast, ahead)
        decoded_reference = self._recall_decode(reference_tokens, fast, at_reference)
        self._last_decode = (tokens[:, -1].clone(), decoded[:, -1], fast)
        return keep_unchanged_pixels(decoded, decoded_reference, reference)

    def _recall_decode(self, tokens: torch.Tensor, fast: bool, places: torch.Tensor | None = None) -> np.ndarray:
        """The plain decode (B, H, W, 3) of one frame's tokens (B, GG, Cf), painted at ``places`` (B, 2) if
        given. Stepping an env, they are the last call's prediction, decoded (and painted where the effector
        ended, which is where this call starts) then: those rows are reused (exactly equal tokens), the rest
        decoded."""
        memo = self._last_decode
        column = None if places is None else places[:, None]
        if memo is None or memo[2] != fast or memo[0].shape != tokens.shape:
            return self._decode(tokens[:, None], fast, column)[:, 0]
        known = (memo[0] == tokens).flatten(1).all(1).cpu().numpy()
        out = memo[1].copy()
        if not known.all():
            fresh = torch.from_numpy(~known)
            out[~known] = self._decode(tokens[fresh][:, None], fast, None if column is None else column[fresh])[:, 0]
        return out

    # -- the three calls ----------------------------------------------------------------------------------
    @torch.no_grad()
    def forward_dynamics(
        self,
        frames: np.ndarray,
        actions: np.ndarray,
        embodiment: str,
        states: np.ndarray | None = None,
        steps: int | None = None,
        seed: int = 0,
        pixel_residual: bool | None = None,
        latents: np.ndarray | None = None,
        decode: bool = True,
        rewards: bool = True,
    ) -> Prediction:
        """Predict the frames (and states, rewards, success) that ``actions`` produce from the observed ``frames``.

        The forward prior rolls the latent grid and the state forward through the actions and the MoT,
        reading that rollout, predicts reward and success (:attr:`forward_path` selects the ablations). Across model
        calls the rollout stays in latent space: the returned ``latents`` continue it.

        Args:
            frames: (Tc, H, W, 3) or (B, Tc, H, W, 3) uint8 observed frames; the last ``context_frames`` are used.
            actions: (Hz, A) or (B, Hz, A) raw actions, one per future control step (any horizon Hz).
            embodiment: a name from :attr:`embodiments`.
            states: (S,) or (B, S) raw state at the last observed frame, or None (unknown).
            steps: Euler steps per model call (None: :data:`DEFAULT_STEPS`).
            seed: seeds the sampling noise.
            pixel_residual: return the last observed frame plus the decoded predicted change (True, the
                default), or the plain decode of the predicted latents (False).
            latents: (B, context_frames, width, Cf) ``Prediction.latents`` of the call that predicted
                ``frames``, used instead of encoding them; rows that are all NaN are encoded from
                ``frames`` (episodes of a batch that were just reset). None encodes every row.
            decode: False skips the decoder where nothing needs the frames (``Prediction.frames`` is then
                None): a state-only consumer continues the rollout from ``latents``. The MoT reads
                pixels, so frames come back whenever it runs.
            rewards: False says the learned reward and success will not be read (they come back None):
                the ``"full"`` path then skips the MoT, whose only output there they are.
        """
        steps = self._check_steps(steps)
        pixel_residual = True if pixel_residual is None else pixel_residual
        entry = self._entry(embodiment)
        frames = self._frames(frames, "frames", 4)
        b = frames.shape[0]
        if frames.shape[1] < self.context_frames:
            raise ValueError(f"frames has {frames.shape[1]} frames; expected at least {self.context_frames}")
        actions = np.asarray(actions)
        horizon = actions.shape[-2] if actions.ndim >= 2 else 0
        if horizon < 1:
            raise ValueError(
                f"actions has shape {actions.shape}; expected (horizon >= 1, {entry.embodiment.action_dim})"
            )
        actions = self._vectors(actions, "actions", entry.embodiment.action_dim, b, horizon)
        state = None if states is None else self._vectors(states, "states", entry.embodiment.state_dim, b, None)
        context = frames[:, -self.context_frames :]
        carried = self._context_tokens(entry, context, latents)
        gg = self.config.tokens_per_frame
        context_tokens = carried[:, :, :gg]  # the drawn grids (the whole of them without an object)
        reference, reference_tokens = np.asarray(context[:, -1]), context_tokens[:, -1]

        def draw(tokens: torch.Tensor, places: torch.Tensor | None = None) -> np.ndarray:
            if pixel_residual:
                return self._decode_against(tokens, reference, reference_tokens, self.fast_decoding, places)
            return self._decode(tokens, self.fast_decoding, None if places is None else places[:, 1:])

        # Without the MoT's outputs, the full path is the prior's rollout: one small conv net per step.
        prior_only = self.forward_path == "prior" or (self.forward_path == "full" and not rewards)
        # With an object, frames and states are the prior's (carrying the object) on the full path too:
        # the MoT's own rollout does not carry it, and only its reward and success are read.
        with_object = self._carries_objects(entry) and self.forward_path == "full"
        given = None
        if not decode and (prior_only or with_object) and self._steps_agent_heads(entry, prior_only):
            state_norm = np.zeros((b, self.config.state_width), np.float32)
            if state is not None:
                state_norm = self.processor.states_in(embodiment, state)
            states_norm, carried_out, scores = self._agent_rollout(entry, carried, state_norm, actions, not prior_only)
            latents_out = torch.cat([carried, carried_out], 1)[:, -self.context_frames :].float().cpu().numpy()
            states_out = self.processor.states_out(embodiment, states_norm).astype(np.float32)
            if scores is None:
                zeros = np.zeros((b, horizon), np.float32) if rewards else None
                return Prediction(None, states_out, zeros, None if zeros is None else zeros.copy(), latents_out)
            return Prediction(None, states_out, scores[0], scores[1], latents_out)
        if (prior_only or with_object) and self.network.forward_prior is not None:
            state_norm = np.zeros((b, self.config.state_width), np.float32)
            if state is not None:
                state_norm = self.processor.states_in(embodiment, state)
            drawing = decode or not prior_only
            # The drawer paints the block into the grid only where frames are read (decoded, or for the MoT):
            # the carried pose alone feeds the reward head, so a state-only env with the learned reward
            # steps one conv net, not two.
            objects = self.network.object_pose
            painting = decode or objects is None or not objects.has_reward
            tokens, states_norm, rolled, scores, places = self._prior_rollout(
                entry, carried, state_norm, actions, drawing, painting
            )
            # The MoT reads pixels: frames are decoded where it runs, else only where asked for.
            future = draw(tokens, places) if decode or (drawing and scores is None) else None
            latents_out = torch.cat([carried, rolled], 1)[:, -self.context_frames :].float().cpu().numpy()
            states_out = self.processor.states_out(embodiment, states_norm).astype(np.float32)
            if prior_only:
                # The prior path predicts no reward: zeros when asked for (the ablation), None when not.
                zeros = np.zeros((b, horizon), np.float32) if rewards else None
                return Prediction(future, states_out, zeros, None if zeros is None else zeros.copy(), latents_out)
            if scores is not None:
                # The object's reward head scores the carried pose: the MoT, whose only output here would be
                # the reward and success, is not run.
                return Prediction(future, states_out, scores[0], scores[1], latents_out)
            given = (tokens, future, states_out)
        rng = torch.Generator().manual_seed(seed)
        context_pixels = np.asarray(context)
        f = self.future_frames
        state_now = state
        out_frames, out_states, out_rewards, out_success = [], [], [], []
        for start in range(0, horizon, f):
            chunk = actions[:, start : start + f]
            n = chunk.shape[1]
            chunk = np.concatenate([chunk, np.repeat(chunk[:, -1:], f - n, 1)], 1) if n < f else chunk
            tokens = torch.zeros(b, self.num_frames, gg, context_tokens.shape[-1], device=self.device)
            tokens[:, : self.context_frames] = context_tokens
            states_norm = np.zeros((b, self.num_frames, entry.embodiment.state_dim), np.float32)
            if state_now is not None:
                states_norm[:, self.context_frames - 1] = entry.state_norm.normalize(state_now)
            actions_norm = np.concatenate(
                [
                    np.zeros((b, self.context_frames - 1, entry.embodiment.action_dim)),
                    entry.action_norm.normalize(chunk),
                ],
                1,
            ).astype(np.float32)
            start_time = np.full(b, start / self.fps)
            reasoner = self._reasoner(entry, context_pixels, state_now, None, start_time)
            template = self._template(entry, b, tokens, actions_norm, states_norm, start_time)
            plan = make_plan(Mode.FORWARD_DYNAMICS, self.num_frames, self.num_frames - 1, self.context_frames)
            sample = sample_plan(self.network, reasoner, template, plan, steps=steps, rng=rng)
            gen = sample.tokens
            if given is None:
                future_tokens = gen.frames[:, self.context_frames :]
                future = draw(future_tokens)
                future_states = gen.states[:, self.context_frames :].float().cpu().numpy()
                pred_states = self.processor.states_out(embodiment, future_states)[:, :n]
            else:
                future_tokens = given[0][:, start : start + n]
                future = given[1][:, start : start + n]
                pred_states = given[2][:, start : start + n]
            out_frames.append(future[:, :n])
            context_pixels = np.concatenate([context_pixels, future], 1)[:, -self.context_frames :]
            out_states.append(pred_states)
            heads = sample.heads
            read = slice(self.context_frames - 1, self.context_frames - 1 + n)
            out_rewards.append(heads.reward[:, read].float().cpu().numpy())
            out_success.append(torch.sigmoid(heads.success_logit[:, read]).float().cpu().numpy())
            # The next chunk starts from the predicted latents, never from a re-encoded decode.
            context_tokens = torch.cat([context_tokens, future_tokens[:, :n]], 1)[:, -self.context_frames :]
            state_now = pred_states[:, -1]
        return Prediction(
            np.concatenate(out_frames, 1),
            np.concatenate(out_states, 1).astype(np.float32),
            np.concatenate(out_rewards, 1).astype(np.float32),
            np.concatenate(out_success, 1).astype(np.float32),
            context_tokens.float().cpu().numpy() if given is None else latents_out,
        )

    def _carries_objects(self, entry: EmbodimentEntry) -> bool:
        """Whether this embodiment's rollouts carry an object's pose (:mod:`cosmos_robot.model.object_pose`)."""
        pose = self.network.object_pose
        return pose is not None and pose.carries(entry.embodiment.domain_id)

    def _latent_width(self, entry: EmbodimentEntry) -> int:
        """Tokens per frame in ``Prediction.latents``: the drawn grid's; with an object, then the agent-state
        rollout's grid and one token whose first channels hold the object's memory."""
        gg = self.config.tokens_per_frame
        return 2 * gg + 1 if self._carries_objects(entry) else gg

    def _fresh_tokens(self, entry: EmbodimentEntry, context: np.ndarray) -> torch.Tensor:
        """Latent tokens (B, Tc, width, Cf) of frames ``context`` seen for the first time (see
        :meth:`_latent_width`); an object's memory is left unread (its flag at 0) until frames are drawn."""
        tokens = self._encode(context)
        if not self._carries_objects(entry):
            return tokens
        return torch.cat([tokens, tokens, torch.zeros_like(tokens[:, :, :1])], 2)

    def _context_tokens(self, entry: EmbodimentEntry, context: np.ndarray, latents: np.ndarray | None) -> torch.Tensor:
        """Latent tokens (B, Tc, width, Cf) of the context: ``latents`` where given, else from ``context``."""
        if latents is None:
            return self._fresh_tokens(entry, context)
        b = context.shape[0]
        shape = (b, self.context_frames, self._latent_width(entry), self.config.frame_token_dim)
        latents = np.asarray(latents, np.float32)
        if latents.shape != shape:
            raise ValueError(f"latents has shape {latents.shape}; expected {shape} (Prediction.latents)")
        fresh = np.isnan(latents).reshape(b, -1).all(1)
        if np.isnan(latents[~fresh]).any() or np.isinf(latents).any():
            raise ValueError("latents contains NaN or inf outside all-NaN rows; expected finite values")
        tokens = torch.from_numpy(latents).to(self.device)
        if fresh.any():
            tokens[torch.from_numpy(fresh)] = self._fresh_tokens(entry, context[fresh])
        return tokens

    def _action_prior_chunk(self, entry: EmbodimentEntry, tokens: torch.Tensor, state_norm: np.ndarray) -> np.ndarray:
        """The action prior's normalised chunk (B, T - 1, A), laid out as the generator's action tokens
        (the actions before the current frame zero), from the current frame's tokens (B, 1, GG, Cf)."""
        b, a = tokens.shape[0], entry.embodiment.action_dim
        state = np.zeros((b, self.config.state_width), np.float32)
        state[:, : state_norm.shape[1]] = state_norm
        grid = latent_grids(tokens, self.config)[:, 0]
        domain = torch.full((b,), entry.embodiment.domain_id, device=self.device)
        chunk = self.network.action_prior(grid, torch.from_numpy(state).to(self.device), domain)
        chosen = np.zeros((b, self.num_frames - 1, a), np.float32)
        future = chunk[:, : self.num_frames - self.context_frames, :a]
        chosen[:, self.context_frames - 1 :] = future.float().cpu().numpy()
        return chosen

    def _steps_agent_heads(self, entry: EmbodimentEntry, prior_only: bool) -> bool:
        """Whether forward dynamics without frames steps the object's agent heads for ``entry``: they exist, are
        switched on (:attr:`agent_heads`), this is the full path, and the learned reward, where it is read,
        comes from the object's reward head."""
        objects = self.network.object_pose
        if not (self.agent_heads and self.forward_path == "full" and self._carries_objects(entry)):
            return False
        return objects.has_agent and (prior_only or objects.has_reward)

    def _agent_rollout(
        self,
        entry: EmbodimentEntry,
        context_tokens: torch.Tensor,
        state_norm: np.ndarray,
        actions: np.ndarray,
        scored: bool,
    ) -> tuple[np.ndarray, torch.Tensor, tuple[np.ndarray, np.ndarray] | None]:
        """The object's agent heads alone: (normalised states (B, Hz, S), the latents' tokens (B, Hz, width, Cf),
        (rewards, success probabilities) (B, Hz) of the object's reward head where ``scored``, else None) from
        ``context_tokens`` (B, Tc, width, Cf).

        The agent state, the block's pose and the effector are stepped by MLPs; no grid is. The latents carry
        the last grids unchanged and the block's memory as known: a later call that decodes draws the grid of
        the last frame drawn, with the block where it is carried."""
        name, domain = entry.embodiment.name, entry.embodiment.domain_id
        b, horizon = actions.shape[:2]
        gg = self.config.tokens_per_frame
        objects = self.network.object_pose
        state = torch.from_numpy(state_norm).to(self.device)
        actions_in = torch.from_numpy(self.processor.actions_in(name, actions)).to(self.device)
        channels = (torch.arange(self.config.state_width, device=self.device) < entry.embodiment.state_dim).float()
        last = context_tokens[:, -1]
        memory, known = last[:, 2 * gg, :MEMORY_WIDTH], last[:, 2 * gg, MEMORY_WIDTH] > 0.5
        if not known.all():  # a start, or frames not drawn since: read the object where it is drawn
            drawn = latent_grids(context_tokens[:, -1:, :gg], self.config)[:, 0]
            memory = torch.where(known[:, None], memory, objects.start(drawn, state, domain))
        effector = objects.effector_of(state, domain)
        states, memories, rewards, success = [], [], [], []
        scoring = (rewards, success) if scored else None
        for k in range(horizon):
            state_after = objects.agent_step(state, memory, effector, actions_in[:, k], domain, channels)
            memory, effector = _push(objects, memory, (state, state_after), effector, actions_in[:, k], domain, scoring)
            state = state_after
            states.append(state)
            memories.append(memory)
        carried = last[:, None].repeat(1, horizon, 1, 1)
        carried[:, :, 2 * gg, :MEMORY_WIDTH] = torch.stack(memories, 1)
        carried[:, :, 2 * gg, MEMORY_WIDTH] = 1.0
        states_out = torch.stack(states, 1)[..., : entry.embodiment.state_dim].float().cpu().numpy()
        scores = None
        if scored:
            scores = (torch.stack(rewards, 1).float().cpu().numpy(), torch.stack(success, 1).float().cpu().numpy())
        return states_out, carried, scores

    def _prior_rollout(
        self,
        entry: EmbodimentEntry,
        context_tokens: torch.Tensor,
        state_norm: np.ndarray,
        actions: np.ndarray,
        draw: bool,
        paint: bool = True,
    ) -> tuple[torch.Tensor, np.ndarray, torch.Tensor, tuple[np.ndarray, np.ndarray] | None, torch.Tensor | None]:
        """The forward prior alone: (the drawn tokens (B, Hz, GG, Cf), normalised states (B, Hz, S), the
        latents' tokens (B, Hz, width, Cf), (rewards, success probabilities) (B, Hz) of the object's reward
        head where it has one and frames are drawn, else None, the effector's places (B, 1 + Hz, 2, metres: at
        the start, then after each step) where frames are drawn and painted by an object with a painter, else
        None) from ``context_tokens`` (B, Tc, width, Cf).

        With an object (:mod:`cosmos_robot.model.object_pose`) each step runs the prior for the agent state
        (whose next value the object's push needs; drawing, the object's agent heads instead where it has them
        and :attr:`agent_heads` is on) and, where frames are ``draw``n, the object's drawer
        told the object's pose now and after its push, for the drawn grid. Not drawing, the drawn grid
        follows the prior's and the object is read again at the next draw. Drawing without ``paint``, the
        object is carried and scored but the drawer is not run: the drawn grid follows the prior's (for
        callers that read no frame; one that later decodes sees the prior's own block)."""
        name, domain = entry.embodiment.name, entry.embodiment.domain_id
        b, horizon = actions.shape[:2]
        gg = self.config.tokens_per_frame
        prior = self.network.forward_prior
        state = torch.from_numpy(state_norm).to(self.device)
        actions_in = torch.from_numpy(self.processor.actions_in(name, actions)).to(self.device)
        channels = (torch.arange(self.config.state_width, device=self.device) < entry.embodiment.state_dim)[None]
        channels = channels.expand(b, -1)
        if not self._carries_objects(entry):
            grid = latent_grids(context_tokens[:, -1:], self.config)[:, 0]
            grids, states = prior.rollout(grid, state, actions_in, domain, channels)
            tokens = grid_tokens(grids, self.config)
            return tokens, states[..., : entry.embodiment.state_dim].float().cpu().numpy(), tokens, None, None
        objects = self.network.object_pose
        last = context_tokens[:, -1]
        drawn = latent_grids(context_tokens[:, -1:, :gg], self.config)[:, 0]
        grid = latent_grids(context_tokens[:, -1:, gg : 2 * gg], self.config)[:, 0]
        memory, known = last[:, 2 * gg, :MEMORY_WIDTH], last[:, 2 * gg, MEMORY_WIDTH] > 0.5
        if draw and not known.all():  # a start, or frames not drawn since: read the object where it is drawn
            memory = torch.where(known[:, None], memory, objects.start(drawn, state, domain))
        effector = objects.effector_of(state, domain) if draw else None
        scored = draw and objects.has_reward
        # Drawing and painting, the frames are the drawer's and the prior's grid is read by nothing but the prior
        # itself: with agent heads the state comes from them and the prior does not run (it would continue from
        # the drawn grid).
        heads = draw and paint and objects.has_agent and self.agent_heads and self.forward_path == "full"
        grids, drawn_grids, states, memories, rewards, success = [], [], [], [], [], []
        places = [effector] if draw and paint and objects.painter is not None else None
        scoring = (rewards, success) if scored else None
        for k in range(horizon):
            if heads:
                state_after = objects.agent_step(state, memory, effector, actions_in[:, k], domain, channels)
            else:
                grid_change, state_change = prior(grid, state, actions_in[:, k], domain)
                state_after = (state + state_change) * channels
            if draw:
                action = actions_in[:, k]
                memory, effector_after = _push(objects, memory, (state, state_after), effector, action, domain, scoring)
                if paint:
                    maps = objects.drawer_maps(memory, effector, effector_after, drawn.shape[-1])
                    drawn = drawn + objects.drawer(drawn, state, actions_in[:, k], domain, maps)[0]
                effector = effector_after
                if places is not None:
                    places.append(effector)
            grid = drawn if heads else grid + grid_change
            state = state_after
            if not (draw and paint):
                drawn = grid
            grids.append(grid)
            drawn_grids.append(drawn)
            states.append(state)
            memories.append(memory)
        drawn_tokens = grid_tokens(torch.stack(drawn_grids, 1), self.config)
        memory_tokens = torch.zeros(b, horizon, 1, last.shape[-1], device=self.device)
        memory_tokens[:, :, 0, :MEMORY_WIDTH] = torch.stack(memories, 1)
        # Not drawn, the memory is stale: the flag says to read the object again at the next draw.
        memory_tokens[:, :, 0, MEMORY_WIDTH] = float(draw)
        carried = torch.cat([drawn_tokens, grid_tokens(torch.stack(grids, 1), self.config), memory_tokens], 2)
        states_out = torch.stack(states, 1)[..., : entry.embodiment.state_dim].float().cpu().numpy()
        scores = None
        if scored:
            scores = (torch.stack(rewards, 1).float().cpu().numpy(), torch.stack(success, 1).float().cpu().numpy())
        return drawn_tokens, states_out, carried, scores, None if places is None else torch.stack(places, 1)

    @torch.no_grad()
    def inverse_dynamics(
        self,
        frames: np.ndarray,
        embodiment: str,
        fps: float | None = None,
        steps: int | None = None,
        seed: int = 0,
        return_spread: bool = False,
        stride: int | None = None,
        normalized: bool = False,
        batch_windows: int = 256,
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Actions (raw units) between consecutive frames of a video.

        Windows of ``num_frames`` frames start every ``stride`` frames (plus one aligned with the end, so
        every step is covered); the predictions of every window that covers a step are averaged
        (temporal ensemble), and with ``return_spread`` their standard deviation comes back as a
        per-step confidence (0 where a single window covers the step).

        Args:
            frames: (N, H, W, 3) or (B, N, H, W, 3) uint8, N >= 2.
            embodiment: a name from :attr:`embodiments`.
            fps: frame rate of the video; must equal the model's (no resampling here).
            steps: Euler steps (None: :data:`DEFAULT_STEPS`).
            seed: seeds the sampling noise.
            return_spread: also return the (B, N-1, A) spread across windows.
            stride: frames between window starts, 1 .. num_frames - 1 (None: 1).
            normalized: return the model's normalised shared-space values ([-1, 1] at the embodiment's
                q01/q99) instead of raw units: the "latent" actions labeling returns for unseen robots.
            batch_windows: windows per model call (bounds memory on long videos).
        """
        steps = self._check_steps(steps)
        entry = self._entry(embodiment)
        stride = 1 if stride is None else stride
        if not isinstance(stride, int) or not 1 <= stride < self.num_frames:
            raise ValueError(f"stride={stride!r}; expected an integer in 1..{self.num_frames - 1}")
        if fps is not None and abs(float(fps) - self.fps) > 1e-6:
            raise ValueError(f"fps={fps}; this model expects {self.fps:g} fps video (resample it first)")
        frames = self._frames(frames, "frames", 4)
        b, n = frames.shape[:2]
        if n < 2:
            raise ValueError(f"frames has {n} frame(s); expected at least 2 to infer an action")
        t = self.num_frames
        padded = np.concatenate([frames, np.repeat(frames[:, -1:], max(0, t - n), 1)], 1)
        starts = window_starts(padded.shape[1], t, stride)
        plan = make_plan(Mode.INVERSE_DYNAMICS, t, t - 1, self.context_frames)
        rng = torch.Generator().manual_seed(seed)
        chunks = []
        per_call = max(1, batch_windows // b)
        for first in range(0, len(starts), per_call):
            chunk_starts = starts[first : first + per_call]
            windows = np.stack([padded[:, s : s + t] for s in chunk_starts], 1)
            windows = windows.reshape(b * len(chunk_starts), t, *frames.shape[2:])
            bw = windows.shape[0]
            zeros_a = np.zeros((bw, t - 1, entry.embodiment.action_dim), np.float32)
            zeros_s = np.zeros((bw, t, entry.embodiment.state_dim), np.float32)
            start_time = np.repeat(np.asarray(chunk_starts, dtype=np.float64)[None] / self.fps, b, 0).reshape(-1)
            reasoner = self._reasoner(entry, windows[:, : self.context_frames], None, None, start_time)
            template = self._template(entry, bw, self._encode(windows), zeros_a, zeros_s, start_time)
            sample = sample_plan(self.network, reasoner, template, plan, steps=steps, rng=rng)
            out = sample.tokens.actions[..., : entry.embodiment.action_dim].float().cpu().numpy()  # (bw, t-1, A)
            chunks.append(out.reshape(b, len(chunk_starts), t - 1, -1))
        pred = np.concatenate(chunks, 1)
        if not normalized:
            pred = self.processor.actions_out(embodiment, pred)
        mean, spread = average_windows(pred, starts, n)
        return (mean, spread) if return_spread else mean

    @torch.no_grad()
    def policy(
        self,
        frame: np.ndarray,
        embodiment: str,
        instruction: str | None = None,
        state: np.ndarray | None = None,
        history: np.ndarray | None = None,
        steps: int | None = None,
        seed: int = 0,
        use_cache: bool = True,
        pixel_residual: bool | None = None,
        action_estimate: str | None = None,
        guidance_scale: float | None = None,
    ) -> ActionChunk:
        """An action chunk and the frames it should produce, from the current observation.

        Args:
            frame: (H, W, 3) or (B, H, W, 3) uint8 current frame.
            embodiment: a name from :attr:`embodiments`.
            instruction: task text; None uses the task the embodiment was trained on.
            state: (S,) or (B, S) raw current state, or None.
            history: (context_frames - 1, H, W, 3) or batched earlier frames, for models that observe more
                than one frame; must be None for single-frame models.
            steps: Euler steps (None: :data:`DEFAULT_STEPS`).
            seed: seeds the sampling noise.
            use_cache: run the reasoner once per chunk (True) or at every Euler step (for comparison).
            pixel_residual: predicted frames as the current frame plus the decoded change (True, the
                default; see :meth:`forward_dynamics`) or the plain decode (False).
            action_estimate: ``"mean"`` (the default): the actions are the model's clean-value estimate from the
                observation with the chunk still pure noise (one generator pass: the posterior mean,
                what minimises the action error of a demonstrator that acts deterministically), and the
                frames are then those :meth:`forward_dynamics` predicts for them, as the learned env would (the
                MoT generates them, over ``steps``, in a model without a forward prior); ``"sample"``: actions and
                frames are sampled jointly over ``steps`` (Cosmos 3's policy mode; a draw from the
                learned action distribution, for multimodal demonstrations). Measured on the default
                model's held-out expert chunks: action MSE 0.19x / 0.25x the mean-action baseline
                (point / arm2) for "mean", 0.30x / 0.41x for "sample" at 10 steps (both guided);
                ``"prior"``: the behaviour-cloning action prior's chunk alone (no MoT pass for the
                actions; the frames are then generated for them as with "mean"): the ablation that
                shows what the MoT adds to the policy.
            guidance_scale: classifier-free guidance of the actions on the instruction (None:
                :data:`POLICY_GUIDANCE`),
                ``uncond + scale * (cond - uncond)`` with the instruction left out (as training drops
                it); 1.0 is the plain conditional estimate and skips the unconditional pass. With
                ``action_estimate="mean"`` it guides the action estimate only (the frames are then
                generated for those actions without guidance); with ``"sample"`` every step.
        """
        action_estimate = "mean" if action_estimate is None else action_estimate
        guidance_scale = POLICY_GUIDANCE if guidance_scale is None else guidance_scale
        pixel_residual = True if pixel_residual is None else pixel_residual
        if action_estimate not in ACTION_ESTIMATES:
            raise ValueError(f"action_estimate={action_estimate!r}; expected one of {list(ACTION_ESTIMATES)}")
        if (
            not isinstance(guidance_scale, int | float)
            or isinstance(guidance_scale, bool)
            or not np.isfinite(guidance_scale)
            or guidance_scale < 0
        ):
            raise ValueError(f"guidance_scale={guidance_scale!r}; expected a finite number >= 0 (1.0 = no guidance)")
        steps = self._check_steps(steps)
        entry = self._entry(embodiment)
        frame = self._frames(frame, "frame", 3)
        b = frame.shape[0]
        if history is None:
            if self.context_frames > 1:
                raise ValueError(
                    f"history=None; this model observes {self.context_frames} frames, "
                    f"expected {self.context_frames - 1} earlier frames"
                )
            observed = frame[:, None]
        else:
            history = self._frames(history, "history", 4)
            if history.shape[1] != self.context_frames - 1:
                raise ValueError(f"history has {history.shape[1]} frames; expected {self.context_frames - 1}")
            observed = np.concatenate([np.broadcast_to(history, (b, *history.shape[1:])), frame[:, None]], 1)
        state = None if state is None else self._vectors(state, "state", entry.embodiment.state_dim, b, None)
        t = self.num_frames
        tokens = torch.zeros(b, t, self.config.tokens_per_frame, self.config.frame_token_dim, device=self.device)
        observed_tokens = self._encode(observed)
        tokens[:, : self.context_frames] = observed_tokens
        states_norm = np.zeros((b, t, entry.embodiment.state_dim), np.float32)
        if state is not None:
            states_norm[:, self.context_frames - 1] = entry.state_norm.normalize(state)
        zeros_a = np.zeros((b, t - 1, entry.embodiment.action_dim), np.float32)
        start_time = np.zeros(b)
        reasoner = self._reasoner(entry, observed, state, instruction, start_time)
        rng = torch.Generator().manual_seed(seed)
        if action_estimate == "prior":
            chosen = self._action_prior_chunk(entry, observed_tokens[:, -1:], states_norm[:, self.context_frames - 1])
        else:
            guided = guidance_scale != 1.0
            template = self._template(entry, b, tokens, zeros_a, states_norm, start_time)
            plan = make_plan(Mode.POLICY, t, t - 1, self.context_frames)
            gen = sample_plan(
                self.network,
                reasoner,
                template,
                plan,
                steps=1 if action_estimate == "mean" else steps,
                use_cache=use_cache,
                rng=rng,
                cfg_scale=float(guidance_scale) if guided else None,
                uncond_reasoner=self._reasoner(entry, observed, state, "", start_time) if guided else None,
            ).tokens
            chosen = gen.actions[:, :, : entry.embodiment.action_dim].float().cpu().numpy()
        actions = chosen[:, self.context_frames - 1 :]
        raw_actions = self.processor.actions_out(embodiment, actions)
        if action_estimate != "sample" and self.network.forward_prior is not None:
            # "mean": one Euler step from t = 1 lands on the x0 estimate. For it and for the prior's chunk, the
            # frames those actions produce are the learned env's: the forward path that follows actions (the
            # MoT's own frames for a given chunk are the ablation "MoT without the prior", which loses the
            # moving object; docs/results.md).
            future = self.forward_dynamics(
                observed,
                raw_actions,
                embodiment,
                states=state,
                steps=steps,
                seed=seed,
                pixel_residual=pixel_residual,
                rewards=False,
            ).frames
            return ActionChunk(raw_actions, future)
        if action_estimate != "sample":
            # Without a forward prior the MoT draws them.
            template = self._template(entry, b, tokens, chosen, states_norm, start_time)
            fd_plan = make_plan(Mode.FORWARD_DYNAMICS, t, t - 1, self.context_frames)
            gen = sample_plan(
                self.network,
                reasoner,
                template,
                fd_plan,
                steps=steps,
                use_cache=use_cache,
                rng=rng,
            ).tokens
        future_tokens = gen.frames[:, self.context_frames :]
        future = (
            self._decode_against(future_tokens, np.asarray(frame), observed_tokens[:, -1])
            if pixel_residual
            else self._decode(future_tokens)
        )
        return ActionChunk(raw_actions, future)


def load_world_model(model: WorldModel | str | os.PathLike) -> WorldModel:
    """A model from an instance of any backend (returned as is), a checkpoint folder or ``"default"``."""
    if isinstance(model, str | os.PathLike):
        return WorldActionModel.from_pretrained(model)
    if not isinstance(model, WorldModel):
        raise TypeError(
            f"model={type(model).__name__} does not implement the WorldModel protocol "
            "(cosmos_robot.interface); expected a WorldActionModel, a backend or a path"
        )
    return model
