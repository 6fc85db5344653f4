"""Checkpoints: a folder of JSON and safetensors, written atomically, validated on load. No pickle.

checkpoint/
  config.json               format, model config, autoencoder config, window, embodiments + tasks, dtype
  stats.json                per embodiment: action and state quantile statistics
  model.safetensors         network weights (the EMA weights when trained)
  autoencoder.safetensors   frozen frame autoencoder
  training/                 only for resuming: trainer.json + state.safetensors (raw weights, optimizer, rng)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from cosmos_robot.actions import Embodiment, QuantileNormalizer
from cosmos_robot.atomic import atomic_directory
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.network import WorldActionNetwork
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.processor import EmbodimentEntry

FORMAT = "cosmos_robot.checkpoint"
VERSION = 1
CONFIG_KEYS = {"format", "version", "model", "autoencoder", "window", "embodiments", "dtype"}
REQUIRED_FILES = ("config.json", "stats.json", "model.safetensors", "autoencoder.safetensors")


@dataclass
class Checkpoint:
    """Everything a trained model is made of."""

    network: WorldActionNetwork
    autoencoder: FrameAutoencoder
    embodiments: dict[str, EmbodimentEntry]
    window: dict[str, Any]
    autoencoder_config: dict[str, int] = field(
        default_factory=lambda: {"latent_channels": 8, "patch_merge": 2, "width": 32}
    )
    training: dict[str, Any] | None = None  # trainer.json + tensors, when saved for resuming


def save_checkpoint(
    checkpoint: Checkpoint,
    path: str | os.PathLike,
    *,
    dtype: torch.dtype = torch.float32,
    training_tensors: dict[str, torch.Tensor] | None = None,
    overwrite: bool = True,
) -> Path:
    """Write ``checkpoint`` at ``path`` atomically; weights cast to ``dtype`` (float16 halves a shipped model)."""
    config = {
        "format": FORMAT,
        "version": VERSION,
        "model": checkpoint.network.config.to_dict(),
        "autoencoder": checkpoint.autoencoder_config,
        "window": checkpoint.window,
        "embodiments": {
            n: {"embodiment": e.embodiment.to_dict(), "task": e.task, "camera": e.camera}
            for n, e in checkpoint.embodiments.items()
        },
        "dtype": str(dtype).removeprefix("torch."),
    }
    stats = {
        n: {"action": e.action_norm.to_dict(), "state": e.state_norm.to_dict()}
        for n, e in checkpoint.embodiments.items()
    }
    with atomic_directory(path, overwrite=overwrite) as work:
        work.mkdir()
        (work / "config.json").write_text(json.dumps(config, indent=2))
        (work / "stats.json").write_text(json.dumps(stats, indent=2))
        save_file(_cast(checkpoint.network.state_dict(), dtype), str(work / "model.safetensors"))
        save_file(_cast(checkpoint.autoencoder.state_dict(), dtype), str(work / "autoencoder.safetensors"))
        if checkpoint.training is not None:
            (work / "training").mkdir()
            (work / "training" / "trainer.json").write_text(json.dumps(checkpoint.training, indent=2))
            save_file(
                {k: v.contiguous() for k, v in (training_tensors or {}).items()},
                str(work / "training" / "state.safetensors"),
            )
    return Path(path)


def _cast(state: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    return {k: (v.to(dtype) if v.is_floating_point() else v).contiguous() for k, v in state.items()}


def read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    """Load a safetensors file, turning a truncated or corrupt file into one clear error."""
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise ValueError(f"{path} is not a valid safetensors file (truncated or corrupt?): {error}") from None


def load_state(module: torch.nn.Module, state: dict[str, torch.Tensor], source: Path) -> None:
    """Load weights after checking names and shapes, naming the first mismatch."""
    expected = module.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ValueError(
            f"{source}: missing tensors {missing[:3]} / unexpected tensors {unexpected[:3]}; "
            "expected the weights of this model config"
        )
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(expected[key].shape):
            raise ValueError(
                f"{source}: tensor {key!r} has shape {tuple(tensor.shape)}; expected {tuple(expected[key].shape)}"
            )
    module.load_state_dict({k: v.to(expected[k].dtype) for k, v in state.items()})


def load_autoencoder(path: str | os.PathLike) -> FrameAutoencoder:
    """Only the frozen frame autoencoder of a checkpoint (to reuse it in a new training run)."""
    path = Path(path)
    for name in ("config.json", "autoencoder.safetensors"):
        if not (path / name).is_file():
            raise FileNotFoundError(f"checkpoint={str(path)!r} is missing {name}")
    try:
        config = json.loads((path / "config.json").read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"checkpoint={str(path)!r}: invalid JSON ({error})") from None
    autoencoder = FrameAutoencoder(**dict(config["autoencoder"]))
    load_state(autoencoder, read_safetensors(path / "autoencoder.safetensors"), path / "autoencoder.safetensors")
    return autoencoder.eval()


def load_checkpoint(path: str | os.PathLike, *, with_training: bool = False) -> Checkpoint:
    """Read and validate a checkpoint folder."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint={str(path)!r} is not a folder")
    for name in REQUIRED_FILES:
        if not (path / name).is_file():
            raise FileNotFoundError(f"checkpoint={str(path)!r} is missing {name}")
    try:
        config = json.loads((path / "config.json").read_text())
        stats = json.loads((path / "stats.json").read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"checkpoint={str(path)!r}: invalid JSON ({error})") from None
    unknown = sorted(set(config) - CONFIG_KEYS)
    if unknown:
        raise ValueError(f"{path / 'config.json'}: unknown keys {unknown}; expected {sorted(CONFIG_KEYS)}")
    if config.get("format") != FORMAT or config.get("version") != VERSION:
        raise ValueError(
            f"{path / 'config.json'}: format {config.get('format')!r} version {config.get('version')!r}; "
            f"expected {FORMAT!r} version {VERSION}"
        )
    network = WorldActionNetwork(ModelConfig.from_dict(config["model"]))
    load_state(network, read_safetensors(path / "model.safetensors"), path / "model.safetensors")
    network.eval()
    ae_config = dict(config["autoencoder"])
    autoencoder = FrameAutoencoder(**ae_config)
    load_state(autoencoder, read_safetensors(path / "autoencoder.safetensors"), path / "autoencoder.safetensors")
    autoencoder.eval()
    embodiments = {}
    for name, entry in config["embodiments"].items():
        if name not in stats:
            raise ValueError(f"{path / 'stats.json'} has no statistics for embodiment={name!r}")
        embodiments[name] = EmbodimentEntry(
            embodiment=Embodiment.from_dict(entry["embodiment"]),
            action_norm=QuantileNormalizer.from_dict(stats[name]["action"]),
            state_norm=QuantileNormalizer.from_dict(stats[name]["state"]),
            task=entry["task"],
            camera=entry.get("camera"),
        )
    training = None
    if with_training:
        trainer = path / "training" / "trainer.json"
        if not trainer.is_file():
            raise FileNotFoundError(f"checkpoint={str(path)!r} has no training state to resume from")
        training = json.loads(trainer.read_text())
        training["tensors"] = read_safetensors(path / "training" / "state.safetensors")
    return Checkpoint(network, autoencoder, embodiments, dict(config["window"]), ae_config, training)
