"""Raw values <-> model inputs: the one place that builds what the network reads, for training AND serving.

Like LeRobot's policy processors, normalisation is a saved step outside the network: a
:class:`Processor` holds, per embodiment, the quantile statistics fitted on its training data and
its default instruction, and every path into the network goes through it - the training batches of
:class:`cosmos_robot.datasets.training_set.TrainingSet` and the requests of
:class:`cosmos_robot.world_model.WorldActionModel` - so the two cannot drift apart.

The steps, in order: quantile-normalise actions and states (q01/q99 -> [-1, 1]), zero-pad them to
the model's shared widths, mark the embodiment's real channels, stamp its domain id, and tokenise
the instruction (the embodiment's default task when none is given).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from cosmos_robot.actions import Embodiment, QuantileNormalizer, pad_to_shared
from cosmos_robot.model.batches import GeneratorInputs, ReasonerInputs
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.tokenizers import ByteTokenizer


@dataclass
class EmbodimentEntry:
    """What a model knows about one embodiment: its declaration, statistics, default instruction and the
    camera it learned from (None: a dataset's first)."""

    embodiment: Embodiment
    action_norm: QuantileNormalizer
    state_norm: QuantileNormalizer
    task: str
    camera: str | None = None


class Processor:
    """Builds :class:`ReasonerInputs` and :class:`GeneratorInputs` from raw or normalised values.

    Args:
        config: the model's config (shared widths, text length).
        entries: per embodiment name, its :class:`EmbodimentEntry`.
    """

    def __init__(self, config: ModelConfig, entries: dict[str, EmbodimentEntry]) -> None:
        self.config = config
        self.entries = entries
        self.tokenizer = ByteTokenizer()

    def entry(self, embodiment: str) -> EmbodimentEntry:
        """The entry of ``embodiment``; an unknown name is an error listing the known ones."""
        if embodiment not in self.entries:
            raise ValueError(
                f"embodiment={embodiment!r} is not known to this model; expected one of {sorted(self.entries)}"
            )
        return self.entries[embodiment]

    # -- one embodiment's values ------------------------------------------------------------------------
    def actions_in(self, embodiment: str, raw: np.ndarray) -> np.ndarray:
        """Raw actions (..., A) -> normalised and padded (..., action_width) float32."""
        return self.pad_actions(embodiment, self.entry(embodiment).action_norm.normalize(raw))

    def states_in(self, embodiment: str, raw: np.ndarray) -> np.ndarray:
        """Raw states (..., S) -> normalised and padded (..., state_width) float32."""
        return self.pad_states(embodiment, self.entry(embodiment).state_norm.normalize(raw))

    def pad_actions(self, embodiment: str, normalized: np.ndarray) -> np.ndarray:
        """Normalised actions (..., A) -> zero-padded (..., action_width)."""
        return pad_to_shared(normalized, self.config.action_width, embodiment)[0]

    def pad_states(self, embodiment: str, normalized: np.ndarray) -> np.ndarray:
        """Normalised states (..., S) -> zero-padded (..., state_width)."""
        return pad_to_shared(normalized, self.config.state_width, embodiment)[0]

    def actions_out(self, embodiment: str, padded: np.ndarray) -> np.ndarray:
        """Normalised, padded model actions (..., >= A) -> raw (..., A)."""
        entry = self.entry(embodiment)
        return entry.action_norm.denormalize(np.asarray(padded)[..., : entry.embodiment.action_dim])

    def states_out(self, embodiment: str, padded: np.ndarray) -> np.ndarray:
        """Normalised, padded model states (..., >= S) -> raw (..., S)."""
        entry = self.entry(embodiment)
        return entry.state_norm.denormalize(np.asarray(padded)[..., : entry.embodiment.state_dim])

    # -- a batch ----------------------------------------------------------------------------------------
    def _domains(self, embodiments: Sequence[str]) -> torch.Tensor:
        return torch.tensor([self.entry(e).embodiment.domain_id for e in embodiments], dtype=torch.long)

    def _channels(self, embodiments: Sequence[str], width: int, dim_of: str) -> torch.Tensor:
        dims = torch.tensor([getattr(self.entry(e).embodiment, dim_of) for e in embodiments])
        return torch.arange(width)[None] < dims[:, None]

    def reasoner_inputs(
        self,
        embodiments: Sequence[str],
        observed_pixels: np.ndarray | torch.Tensor,
        observed_time: np.ndarray | torch.Tensor,
        states: np.ndarray | torch.Tensor | None,
        instructions: Sequence[str | None],
    ) -> ReasonerInputs:
        """What the reasoner reads for a batch.

        Args:
            embodiments: (B,) embodiment names.
            observed_pixels: (B, Tc, H, W, 3) uint8 observed frames.
            observed_time: (B, Tc) seconds.
            states: (B, state_width) padded, normalised current states, or None (unknown: zeros).
            instructions: (B,) texts; None takes the embodiment's default task.
        """
        b = len(embodiments)
        pairs = zip(embodiments, instructions, strict=True)
        texts = [self.entry(e).task if text is None else text for e, text in pairs]
        ids, valid = self.tokenizer.encode(texts, self.config.max_text_len)
        state = torch.zeros(b, self.config.state_width) if states is None else torch.as_tensor(states)
        return ReasonerInputs(
            domain=self._domains(embodiments),
            text_ids=ids,
            text_valid=valid,
            state=state,
            observed_frames=torch.as_tensor(np.ascontiguousarray(observed_pixels)),
            observed_time=torch.as_tensor(observed_time, dtype=torch.float32),
        )

    def generator_inputs(
        self,
        embodiments: Sequence[str],
        latents: torch.Tensor,
        frame_time: np.ndarray | torch.Tensor,
        actions: np.ndarray | torch.Tensor,
        action_time: np.ndarray | torch.Tensor,
        states: np.ndarray | torch.Tensor,
    ) -> GeneratorInputs:
        """The generator's tokens of a batch, all clean (flow time 0).

        Args:
            embodiments: (B,) embodiment names.
            latents: (B, T, G*G, Cf) frame latent tokens.
            frame_time: (B, T) seconds.
            actions: (B, K, action_width) padded, normalised actions.
            action_time: (B, K) seconds (the time of the frame each action leads into).
            states: (B, T, state_width) padded, normalised states.
        """
        b, t = latents.shape[:2]
        actions, states = torch.as_tensor(actions), torch.as_tensor(states)
        return GeneratorInputs(
            domain=self._domains(embodiments),
            frames=latents,
            frame_t=torch.zeros(b, t),
            frame_time=torch.as_tensor(frame_time, dtype=torch.float32),
            actions=actions,
            action_t=torch.zeros(actions.shape[:2]),
            action_time=torch.as_tensor(action_time, dtype=torch.float32),
            action_channels=self._channels(embodiments, self.config.action_width, "action_dim"),
            states=states,
            state_t=torch.zeros(states.shape[:2]),
            state_channels=self._channels(embodiments, self.config.state_width, "state_dim"),
        )
