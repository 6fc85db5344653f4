"""Real Cosmos 3 checkpoints behind our facade: ``diffusers.Cosmos3OmniPipeline`` as a backend.

:class:`Cosmos3Backend` implements the calls the tools use (``forward_dynamics``,
``inverse_dynamics``, ``policy``, plus ``embodiments``, ``fps``, ``num_frames``, ...), so
:class:`ForwardDynamicsEnv`, :func:`cosmos_robot.labeler.label` and :class:`WorldModelPolicy` run on it
unchanged: both satisfy :class:`cosmos_robot.interface.WorldModel` with the same signatures. It
handles what users of Cosmos 3 otherwise get wrong:

- **Domains.** Our embodiment names map to Cosmos 3 domain names (``point`` -> ``pusht``: a planar
  pusher with 2-D velocity actions); the raw width is Cosmos 3's own table. An embodiment Cosmos 3
  does not know is an error listing the domains it does know.
- **Normalisation.** The pipeline neither normalises raw actions nor de-normalises its outputs. Actions
  go in as Cosmos 3's quantile normalisation (q01 -> -1, q99 -> +1, per dimension: the same
  :class:`~cosmos_robot.actions.QuantileNormalizer` as the native model) and come back de-normalised,
  from the per-embodiment statistics given to the backend (``action_stats``; for a real checkpoint,
  the statistics of the dataset it was trained on).
- **Chunks and frames.** A chunk of T actions spans T+1 frames; frame 0 is the conditioning frame.
  Forward dynamics over a longer horizon runs chunk after chunk from the last predicted frame;
  inverse dynamics covers a video with (T+1)-frame windows (the last one aligned with the end) and
  averages overlaps.
- **Frames.** The pipeline pads a frame into the canvas of a resolution tier (256/480/704/720) and
  returns frames the size of the input; we pick the smallest tier that holds the frame without
  downscaling and check the size we get back.
- **Prompts and fps.** The instruction becomes the pipeline's structured action prompt (it builds the
  JSON caption itself from ``prompt`` and ``view_point``); our fps is passed through, and actions
  advance at the video rate as in every shipped Cosmos 3 path.

Cosmos 3 predicts no proprio state, reward or success: ``Prediction.states`` carries the given start
state forward (zeros when none was given), rewards and success are zero. Its policy mode draws
actions and frames jointly (``action_estimate="sample"``); it has no one-pass action estimate.
``pixel_residual=True`` keeps the conditioning frame's real pixels where the decoded change is small,
as the native model does (:mod:`cosmos_robot.pixel_residual`), with the pipeline's own decode of the
conditioning frame as the reference; the default (None) is the pipeline's plain decode. Use ``reward_fn`` and
``success_fn`` of :class:`ForwardDynamicsEnv` on the frames. :meth:`Cosmos3Backend.tiny_random`
builds a tiny random pipeline entirely locally (tests, demos; nothing is downloaded).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cosmos_robot.actions import QuantileNormalizer
from cosmos_robot.interface import ActionChunk, Prediction
from cosmos_robot.pixel_residual import keep_unchanged_pixels
from cosmos_robot.temporal_ensemble import average_windows, window_starts

# Our embodiment name -> Cosmos 3 domain name.
DEFAULT_DOMAINS = {"point": "pusht"}
RESOLUTION_TIERS = (256, 480, 704, 720)
STATS_FILE = "cosmos_robot_action_stats.json"
INSTRUCTIONS_FILE = "cosmos_robot_instructions.json"


def cosmos3_domains() -> dict[str, int]:
    """Cosmos 3 domains that support action inference, with their raw action widths."""
    from diffusers.pipelines.cosmos.pipeline_cosmos3_omni import _EMBODIMENT_TO_RAW_ACTION_DIM

    return dict(_EMBODIMENT_TO_RAW_ACTION_DIM)


def resolution_tier_for(height: int, width: int) -> int:
    """The smallest tier whose square canvas holds the frame (the pipeline never upscales, only pads)."""
    from diffusers.pipelines.cosmos.pipeline_cosmos3_omni import _ACTION_RESOLUTION_BINS

    for tier in RESOLUTION_TIERS:
        h, w = _ACTION_RESOLUTION_BINS[str(tier)]["1.0"]
        if height <= h and width <= w:
            return tier
    return RESOLUTION_TIERS[-1]


def quantile_stats(embodiment: str, stats: QuantileNormalizer | dict[str, Any]) -> QuantileNormalizer:
    """Cosmos 3's per-dimension action statistics as a normaliser; q99 must exceed q01 everywhere."""
    if isinstance(stats, QuantileNormalizer):
        normalizer = stats
    else:
        normalizer = QuantileNormalizer(embodiment, np.asarray(stats["q01"]), np.asarray(stats["q99"]))
    if not np.all(normalizer.high > normalizer.low):
        raise ValueError(
            f"action stats of {embodiment!r} q01={normalizer.low.tolist()} q99={normalizer.high.tolist()}; "
            "expected q99 > q01 in every dimension"
        )
    return normalizer


class Cosmos3Backend:
    """A ``Cosmos3OmniPipeline`` with our facade's calls (see the module docstring).

    Args:
        pipeline: a loaded ``diffusers.Cosmos3OmniPipeline`` whose transformer was trained with actions.
        action_stats: per embodiment, its :class:`~cosmos_robot.actions.QuantileNormalizer` (or a dict
            with ``q01`` and ``q99``).
        domains: our embodiment name -> Cosmos 3 domain name (default: ``point`` -> ``pusht``).
        instructions: per embodiment, the default prompt.
        chunk_size: actions per pipeline call (T; T+1 frames).
        fps: the video and action rate.
        image_size: side of the square frames the tools exchange with the backend.
        num_inference_steps: sampling steps of a call that passes ``steps=None``.
        guidance_scale: classifier-free guidance of a call that passes ``guidance_scale=None`` (1.0 =
            off, Cosmos 3's default for FD and ID).
        view_point: the camera description in the action prompt.
    """

    context_frames = 1

    def __init__(
        self,
        pipeline: Any,
        action_stats: dict[str, QuantileNormalizer | dict[str, Any]],
        domains: dict[str, str] | None = None,
        instructions: dict[str, str] | None = None,
        chunk_size: int = 4,
        fps: float = 10.0,
        image_size: int = 64,
        num_inference_steps: int = 30,
        guidance_scale: float = 1.0,
        view_point: str = "third_person_view",
    ) -> None:
        if not getattr(pipeline.transformer.config, "action_gen", False):
            raise ValueError("the pipeline's transformer was not trained with actions (action_gen=False)")
        known = cosmos3_domains()
        self.domains = dict(DEFAULT_DOMAINS if domains is None else domains)
        self.action_stats: dict[str, QuantileNormalizer] = {}
        for embodiment, stats in action_stats.items():
            if embodiment not in self.domains:
                raise ValueError(
                    f"embodiment={embodiment!r} has no Cosmos 3 domain; pass domains={{{embodiment!r}: <one of "
                    f"{sorted(known)}>}}"
                )
            domain = self.domains[embodiment]
            if domain not in known:
                raise ValueError(
                    f"domain {domain!r} (for {embodiment!r}) is unknown to Cosmos 3; expected one of {sorted(known)}"
                )
            stats = quantile_stats(embodiment, stats)
            if stats.dim != known[domain]:
                raise ValueError(
                    f"action stats of {embodiment!r} have {stats.dim} dimensions; Cosmos 3 domain {domain!r} "
                    f"has {known[domain]}"
                )
            self.action_stats[embodiment] = stats
        if chunk_size < 1:
            raise ValueError(f"chunk_size={chunk_size!r}; expected a positive integer")
        self.pipeline = pipeline
        self.instructions = dict(instructions or {})
        self.chunk_size = chunk_size
        self.fps = float(fps)
        self._image_size = int(image_size)
        self.num_inference_steps = num_inference_steps
        self.guidance_scale = guidance_scale
        self.view_point = view_point

    # -- construction -----------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike,
        action_stats: dict[str, Any] | str | os.PathLike | None = None,
        device: str = "cpu",
        torch_dtype: torch.dtype = torch.float32,
        **kwargs: Any,
    ) -> Cosmos3Backend:
        """Load a local diffusers-format Cosmos 3 folder (or a hub id where the network allows).

        ``action_stats``: per-embodiment ``{"q01": [...], "q99": [...]}``, a JSON file of them, or None
        to read ``cosmos_robot_action_stats.json`` from the folder. Default instructions saved beside
        them are read too, unless ``instructions`` is passed.
        """
        import json

        from diffusers import Cosmos3OmniPipeline

        folder = Path(path)
        if action_stats is None:
            stats_path = folder / STATS_FILE
            if not stats_path.is_file():
                raise FileNotFoundError(
                    f"{stats_path} is missing; pass action_stats={{embodiment: {{'q01': [...], 'q99': [...]}}}} "
                    "(the statistics of the data the checkpoint was trained on: the pipeline does not normalise)"
                )
            action_stats = stats_path
        if isinstance(action_stats, str | os.PathLike):
            action_stats = json.loads(Path(action_stats).read_text())
        if "instructions" not in kwargs and (folder / INSTRUCTIONS_FILE).is_file():
            kwargs["instructions"] = json.loads((folder / INSTRUCTIONS_FILE).read_text())
        pipeline = Cosmos3OmniPipeline.from_pretrained(str(path), dtype=torch_dtype, enable_safety_checker=False)
        return cls(pipeline.to(device), action_stats, **kwargs)

    def save_pretrained(self, path: str | os.PathLike) -> Path:
        """Write the pipeline (diffusers format) and our action statistics (and default instructions) beside it."""
        import json

        path = Path(path)
        self.pipeline.save_pretrained(str(path))
        stats = {e: {"q01": s.low.tolist(), "q99": s.high.tolist()} for e, s in self.action_stats.items()}
        (path / STATS_FILE).write_text(json.dumps(stats, indent=2))
        if self.instructions:
            (path / INSTRUCTIONS_FILE).write_text(json.dumps(self.instructions, indent=2))
        return path

    @classmethod
    def tiny_random(cls, seed: int = 0, **kwargs: Any) -> Cosmos3Backend:
        """A tiny random Cosmos 3 pipeline built locally (2 layers, 32 wide; a byte-level tokenizer; a
        small Wan autoencoder; UniPC), for ``point`` with PushBlock's action box as its statistics and a
        default instruction (its weights are random: any text serves)."""
        pipeline = tiny_random_pipeline(seed)
        stats = {"point": {"q01": [-0.3, -0.3], "q99": [0.3, 0.3]}}
        defaults = {"num_inference_steps": 2, "instructions": {"point": "push the block onto the goal"}}
        return cls(pipeline, stats, **(defaults | kwargs))

    # -- what the tools read ----------------------------------------------------------------------------
    @property
    def embodiments(self) -> list[str]:
        """Embodiments with a Cosmos 3 domain and action statistics."""
        return sorted(self.action_stats)

    @property
    def num_frames(self) -> int:
        """Frames per pipeline call (chunk + 1)."""
        return self.chunk_size + 1

    @property
    def future_frames(self) -> int:
        """Frames generated per call."""
        return self.chunk_size

    @property
    def image_size(self) -> int:
        """Side of the square frames the tools exchange with this backend."""
        return self._image_size

    def action_names(self, embodiment: str) -> list[str]:
        """Names of the raw action dimensions (Cosmos 3 domain, index)."""
        self._stats(embodiment)
        return [f"{self.domains[embodiment]}_{i}" for i in range(self.action_stats[embodiment].dim)]

    # -- the three calls ---------------------------------------------------------------------------------
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
        """Frames that ``actions`` (raw, (Hz, A) or (B, Hz, A)) produce from the last observed frame.

        Cosmos 3 generates pixels and has no latents to continue from: ``decode`` and ``rewards`` change
        nothing (frames always come back; rewards and success are zeros)."""
        if latents is not None:
            raise ValueError(
                "latents were given; this backend returns none (Prediction.latents is None), expected latents=None"
            )
        stats = self._stats(embodiment)
        frames = _batched(frames, 4, "frames")
        actions = np.asarray(actions, np.float32)
        actions = actions[None] if actions.ndim == 2 else actions
        if actions.ndim != 3 or actions.shape[0] != frames.shape[0] or actions.shape[2] != stats.dim:
            raise ValueError(
                f"actions has shape {actions.shape}; expected (horizon, {stats.dim}) or "
                f"({frames.shape[0]}, horizon, {stats.dim})"
            )
        b, horizon = actions.shape[:2]
        out = np.zeros((b, horizon, *frames.shape[2:]), np.uint8)
        for i in range(b):
            current = frames[i, -1]
            for start in range(0, horizon, self.chunk_size):
                chunk = stats.normalize(actions[i, start : start + self.chunk_size])
                video, _ = self._call(
                    "forward_dynamics", embodiment, steps, seed + i, image=current, raw_actions=torch.from_numpy(chunk)
                )
                take = len(chunk)
                out[i, start : start + take] = self._future(video, current, pixel_residual)[:take]
                current = out[i, start + take - 1]
        carried = np.zeros((b, horizon, 0 if states is None else np.asarray(states).shape[-1]), np.float32)
        if states is not None:
            carried[:] = np.asarray(states, np.float32).reshape(b, 1, -1)
        zeros = np.zeros((b, horizon), np.float32)
        return Prediction(frames=out, states=carried, rewards=zeros, success=zeros.copy())

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
        """Actions between consecutive frames ((N, H, W, 3) or batched), raw units unless ``normalized``.

        ``stride`` defaults to the chunk size; the pipeline takes one window per call, so every
        ``batch_windows`` >= 1 gives the same result."""
        stats = self._stats(embodiment)
        if fps is not None and abs(float(fps) - self.fps) > 1e-6:
            raise ValueError(f"fps={fps}; this backend runs at {self.fps:g} fps (resample the video first)")
        frames = _batched(frames, 4, "frames")
        b, n = frames.shape[:2]
        t = self.chunk_size
        if n < t + 1:
            raise ValueError(f"frames has {n} frames; Cosmos 3 inverse dynamics reads {t + 1}-frame windows")
        stride = t if stride is None else stride
        if not isinstance(stride, int) or not 1 <= stride <= t:
            raise ValueError(f"stride={stride!r}; expected an integer in 1..{t}")
        if not isinstance(batch_windows, int) or batch_windows < 1:
            raise ValueError(f"batch_windows={batch_windows!r}; expected a positive integer")
        starts = window_starts(n, t + 1, stride)
        pred = np.stack(
            [
                [
                    self._call("inverse_dynamics", embodiment, steps, seed + i, video=frames[i, s : s + t + 1])[1]
                    for s in starts
                ]
                for i in range(b)
            ]
        )  # (B, W, T, A), normalised
        mean, spread = average_windows(pred if normalized else stats.denormalize(pred), starts, n)
        return (mean, spread) if return_spread else mean

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
        """An action chunk (raw units) and the frames it should produce, from the current frame.

        Cosmos 3's pipeline has no state or history input in this diffusers version: ``state`` is
        accepted and unused, ``history`` must be None; ``use_cache`` is the pipeline's own business.
        Actions are drawn jointly with the frames (``action_estimate`` None or ``"sample"``).
        """
        stats = self._stats(embodiment)
        if history is not None:
            raise ValueError("history is not supported by Cosmos 3's policy mode (diffusers 0.42); expected None")
        if action_estimate not in (None, "sample"):
            raise ValueError(
                f"action_estimate={action_estimate!r}; Cosmos 3's policy mode samples actions and frames "
                "jointly: expected None or 'sample'"
            )
        frame = _batched(frame, 3, "frame")
        actions, videos = [], []
        for i in range(frame.shape[0]):
            video, action = self._call(
                "policy", embodiment, steps, seed + i, prompt=instruction, guidance_scale=guidance_scale, image=frame[i]
            )
            actions.append(stats.denormalize(action))
            videos.append(self._future(video, frame[i], pixel_residual))
        return ActionChunk(np.stack(actions), np.stack(videos))

    # -- helpers ----------------------------------------------------------------------------------------
    @staticmethod
    def _future(video: np.ndarray, reference: np.ndarray, pixel_residual: bool | None) -> np.ndarray:
        """The generated frames of a pipeline video (T+1, H, W, 3), optionally as a change to ``reference``."""
        if not pixel_residual:
            return video[1:]
        return keep_unchanged_pixels(video[None, 1:], video[None, 0], reference[None])[0]

    def _stats(self, embodiment: str) -> QuantileNormalizer:
        if embodiment not in self.action_stats:
            raise ValueError(
                f"embodiment={embodiment!r} is not set up for this Cosmos 3 backend; expected one of "
                f"{self.embodiments} (Cosmos 3 domains: {sorted(cosmos3_domains())})"
            )
        return self.action_stats[embodiment]

    def _call(
        self,
        mode: str,
        embodiment: str,
        steps: int | None,
        seed: int,
        prompt: str | None = None,
        guidance_scale: float | None = None,
        **condition: Any,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """One pipeline call -> (video (T+1, H, W, 3) uint8 at the input size, normalised actions (T, A) or None)."""
        from diffusers.pipelines.cosmos.pipeline_cosmos3_omni import CosmosActionCondition

        reference = condition.get("image") if "image" in condition else condition["video"][0]
        h, w = reference.shape[:2]
        action = CosmosActionCondition(
            mode=mode,
            chunk_size=self.chunk_size,
            domain_name=self.domains[embodiment],
            resolution_tier=resolution_tier_for(h, w),
            view_point=self.view_point,
            **condition,
        )
        text = prompt or self.instructions.get(embodiment)
        if not text:
            raise ValueError(
                f"instruction=None and no default instruction for embodiment={embodiment!r}; pass instruction= "
                "or instructions={embodiment: text} to the backend"
            )
        result = self.pipeline(
            prompt=text,
            action=action,
            num_inference_steps=steps or self.num_inference_steps,
            guidance_scale=self.guidance_scale if guidance_scale is None else guidance_scale,
            fps=self.fps,
            output_type="np",
            generator=torch.Generator().manual_seed(seed),
        )
        video = np.asarray(result.video)
        if video.shape[1:3] != (h, w):
            raise RuntimeError(f"the pipeline returned frames of {video.shape[1:3]}; expected the input's {(h, w)}")
        video = (np.clip(video, 0.0, 1.0) * 255).round().astype(np.uint8) if video.dtype != np.uint8 else video
        actions = None
        if result.action is not None:
            actions = result.action[0].float().cpu().numpy()[:, : self.action_stats[embodiment].dim]
        return video, actions


def _batched(x: np.ndarray, per_sample_ndim: int, name: str) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != np.uint8 or x.ndim not in (per_sample_ndim, per_sample_ndim + 1) or x.shape[-1] != 3:
        raise ValueError(f"{name} has shape {x.shape} and dtype {x.dtype}; expected uint8 (..., H, W, 3)")
    return x[None] if x.ndim == per_sample_ndim else x


def tiny_random_pipeline(seed: int = 0) -> Any:
    """A Cosmos3OmniPipeline with a tiny random transformer and autoencoder; nothing is downloaded."""
    return random_pipeline(seed)


def random_pipeline(
    seed: int = 0,
    *,
    num_layers: int = 2,
    hidden_size: int = 32,
    head_dim: int = 16,
    num_heads: int = 2,
    num_kv_heads: int = 1,
    latent_channels: int = 4,
    action_dim: int = 16,
    rope_axes_dim: tuple[int, int, int] = (4, 2, 2),
    vae_base_dim: int = 8,
    vae_dim_mult: tuple[int, ...] = (1, 1, 1, 1),
    vae_res_blocks: int = 1,
) -> Any:
    """A Cosmos3OmniPipeline of random weights at any size (the defaults are the tiny test size)."""
    from diffusers import AutoencoderKLWan, Cosmos3OmniPipeline, UniPCMultistepScheduler
    from diffusers.models.transformers.transformer_cosmos3 import Cosmos3OmniTransformer

    torch.manual_seed(seed)
    tokenizer = byte_level_tokenizer()
    z = latent_channels
    transformer = Cosmos3OmniTransformer(
        head_dim=head_dim,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        num_hidden_layers=num_layers,
        latent_channel=z,
        latent_patch_size=2,
        patch_latent_dim=z * 4,
        vocab_size=len(tokenizer),
        action_dim=action_dim,
        action_gen=True,
        rope_axes_dim=list(rope_axes_dim),
    )
    vae = AutoencoderKLWan(
        base_dim=vae_base_dim,
        z_dim=z,
        dim_mult=list(vae_dim_mult),
        num_res_blocks=vae_res_blocks,
        latents_mean=[0.0] * z,
        latents_std=[1.0] * z,
    )
    scheduler = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=5.0)
    return Cosmos3OmniPipeline(
        transformer=transformer, text_tokenizer=tokenizer, vae=vae, scheduler=scheduler, enable_safety_checker=False
    )


def byte_level_tokenizer() -> Any:
    """A byte-level tokenizer with Cosmos 3's special tokens and a ChatML template, built locally."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|vision_start|>", "<|vision_end|>"]})
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    return tokenizer
