"""Resumable training phases: the state of a phase that runs before the world model's first checkpoint.

``train`` runs the frame autoencoder, then the forward prior, the action prior and the inverse prior
(where the recipe trains them alone), then the MoT. The MoT saves
full checkpoints; the phases before it save their loop state (weights, optimiser, schedule, batch
generator, step, losses) to ``<out>/training/phase/`` (JSON and safetensors, written atomically). A run killed
during a phase resumes there with ``--resume`` and ends bit-identical to an uninterrupted run: every
random draw of a phase comes from the generator saved with it. The MoT's first checkpoint replaces
the whole folder, the phase state with it: from then on the checkpoint holds everything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from cosmos_robot.atomic import atomic_directory

PHASE_DIR = Path("training") / "phase"
# The forward prior trains in two stages (short rollouts, then longer ones), each resuming on its own;
# the action and inverse priors, where a recipe trains them alone, come last.
PHASES = ("autoencoder", "forward_prior", "forward_finetune", "action_prior", "inverse_prior")
PRIOR_PHASES = PHASES[1:]  # the phases that run after a finished autoencoder
FORWARD_PHASES = PHASES[1:3]
_TENSOR = "__tensor__"  # in phase.json: this value is the tensor of that name in state.safetensors


def phase_path(out: str | os.PathLike) -> Path:
    """Where a training run at ``out`` keeps its phase state (a folder: ``phase.json``, ``state.safetensors``)."""
    return Path(out) / PHASE_DIR


def has_phase(out: str | os.PathLike) -> bool:
    """Whether a training run at ``out`` saved a phase state."""
    return (phase_path(out) / "phase.json").is_file()


def _split(value: Any, tensors: dict[str, torch.Tensor], key: str) -> Any:
    # Nested dicts and lists of plain values and tensors -> JSON with tensors replaced by references.
    if isinstance(value, torch.Tensor):
        tensors[key] = value.detach().cpu().contiguous()
        return {_TENSOR: key}
    if isinstance(value, dict):
        return {str(k): _split(v, tensors, f"{key}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_split(v, tensors, f"{key}.{i}") for i, v in enumerate(value)]
    return value


def _join(value: Any, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, dict):
        if set(value) == {_TENSOR}:
            return tensors[value[_TENSOR]]
        return {k: _join(v, tensors) for k, v in value.items()}
    if isinstance(value, list):
        return [_join(v, tensors) for v in value]
    return value


def _int_keys(state: dict[str, Any]) -> dict[Any, Any]:
    # JSON turns the optimiser's integer parameter indices into strings; torch wants them back.
    return {int(k) if k.isdigit() else k: v for k, v in state.items()}


def load_phase(out: str | os.PathLike) -> dict[str, Any] | None:
    """The phase state saved at ``out``, or None when there is none."""
    if not has_phase(out):
        return None
    path = phase_path(out)
    state = _join(json.loads((path / "phase.json").read_text()), load_file(str(path / "state.safetensors")))
    if state.get("phase") not in PHASES:
        raise ValueError(f"{path}: phase={state.get('phase')!r}; expected one of {PHASES}")
    state["loop"]["optimizer"]["state"] = _int_keys(state["loop"]["optimizer"]["state"])
    return state


def save_phase(out: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write ``state`` (a dict with ``phase``; tensors anywhere inside) atomically to ``out``'s phase folder."""
    tensors: dict[str, torch.Tensor] = {}
    plain = _split(state, tensors, "state")
    with atomic_directory(phase_path(out), overwrite=True) as work:
        work.mkdir()
        save_file(tensors, str(work / "state.safetensors"))
        (work / "phase.json").write_text(json.dumps(plain))


@dataclass
class LoopState:
    """Everything a phase's training loop needs to continue exactly where it stopped."""

    step: int = 0
    losses: list[float] = field(default_factory=list)

    @staticmethod
    def capture(
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        schedule: torch.optim.lr_scheduler.LRScheduler,
        rng: torch.Generator,
        step: int,
        losses: list[float],
    ) -> dict[str, Any]:
        """The loop's state as nested dicts of tensors and plain values (what :func:`save_phase` writes)."""
        return {
            "step": step,
            "losses": list(losses),
            "module": {k: v.detach().clone() for k, v in module.state_dict().items()},
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "rng": rng.get_state(),
        }

    @staticmethod
    def restore(
        state: dict[str, Any],
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        schedule: torch.optim.lr_scheduler.LRScheduler,
        rng: torch.Generator,
    ) -> LoopState:
        """Load a captured state into the loop's objects; returns its step and losses."""
        module.load_state_dict(state["module"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        rng.set_state(state["rng"])
        return LoopState(int(state["step"]), list(state["losses"]))


# What a phase's loop calls every ``every`` steps with its captured state.
SaveLoop = Callable[[dict[str, Any]], None]


@dataclass
class PhaseSaver:
    """How a phase's loop checkpoints: call ``save`` with the loop's state every ``every`` steps.

    Attributes:
        save: receives the captured loop state (see :meth:`LoopState.capture`).
        every: steps between saves (0: never).
        resume_from: a captured loop state to continue from, or None to start at step 0.
    """

    save: SaveLoop
    every: int
    resume_from: dict[str, Any] | None = None

    def start(
        self,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        schedule: torch.optim.lr_scheduler.LRScheduler,
        rng: torch.Generator,
    ) -> LoopState:
        """Where the loop starts: step 0, or the restored ``resume_from``."""
        if self.resume_from is None:
            return LoopState()
        return LoopState.restore(self.resume_from, module, optimizer, schedule, rng)

    def after_step(
        self,
        step: int,
        steps: int,
        module: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        schedule: torch.optim.lr_scheduler.LRScheduler,
        rng: torch.Generator,
        losses: list[float],
    ) -> None:
        """Save after ``step`` (1-based) every ``every`` steps; never after the last (the phase's result follows)."""
        if self.every and step % self.every == 0 and step < steps:
            self.save(LoopState.capture(module, optimizer, schedule, rng, step, losses))


# A loop given no saver neither resumes nor saves.
NO_SAVER = PhaseSaver(lambda loop: None, 0)
