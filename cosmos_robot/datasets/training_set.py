"""Training data for the world-action model: several datasets, several embodiments, one batch sampler.

Sources are grouped by embodiment (LeRobot's ``robot_type``), split into train and held-out episodes,
their actions and states quantile-normalised per embodiment (statistics from the train split only),
and frames encoded once by the frozen autoencoder. A batch mixes embodiments in proportion to
their number of windows; every sample is a window entirely inside its episode.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from cosmos_robot.actions import Embodiment, QuantileNormalizer, registered_embodiments
from cosmos_robot.datasets.declaration import EmbodimentDeclaration, embodiment_from_data
from cosmos_robot.datasets.episodes import EpisodeArrays
from cosmos_robot.datasets.rate import MODEL_FPS, to_model_rate
from cosmos_robot.datasets.video_io import to_model_size
from cosmos_robot.datasets.windows import TimeAlignedWindows, WindowSpec, open_episodes
from cosmos_robot.keys import ACTION, OBS_STATE
from cosmos_robot.model.batches import GeneratorInputs, PriorBatch, ReasonerInputs, SequenceBatch, TransitionBatch
from cosmos_robot.model.config import ModelConfig
from cosmos_robot.model.tokenizers import FrameAutoencoder
from cosmos_robot.processor import EmbodimentEntry, Processor

LATENTS = "latents"


def to_image_size(episodes: EpisodeArrays, size: int) -> None:
    """Centre-crop and resize (in place) every camera of in-memory episodes to ``size`` x ``size``, the
    model's frames: datasets recorded at 96x96 or 480x640 train the same model (as the labeler reads video)."""
    for key in episodes.image_keys:
        frames = np.asarray(episodes.data[key])
        if frames.shape[1:3] != (size, size):
            episodes.data[key] = to_model_size(frames, size)
            episodes.features[key] = dict(episodes.features[key], shape=(size, size, 3))


def source_widths(source: str | os.PathLike) -> tuple[int, int]:
    """(action width, state width) of a dataset, from its metadata (no frame is read)."""
    path = Path(source)
    info = path / "meta" / "info.json"
    if info.is_file():
        features = json.loads(info.read_text()).get("features", {})
        shapes = [features.get(key, {}).get("shape") for key in (ACTION, OBS_STATE)]
    else:
        episodes = open_episodes(path)  # a zarr store opens lazily
        shapes = [episodes.data[key].shape[1:] if key in episodes.data else None for key in (ACTION, OBS_STATE)]
    if not all(shapes):
        raise ValueError(f"dataset={str(source)!r} lacks {ACTION!r} or {OBS_STATE!r}; expected both to train on")
    return int(np.prod(shapes[0])), int(np.prod(shapes[1]))


def select_camera(episodes: EpisodeArrays, camera: str, source: str) -> None:
    """Keep only ``camera`` among the episodes' image streams (in place): the one the model learns from."""
    if camera not in episodes.image_keys:
        raise ValueError(f"camera={camera!r} is not in {source}; expected one of {episodes.image_keys}")
    for key in episodes.image_keys:
        if key != camera:
            del episodes.data[key]
            episodes.features.pop(key, None)


def concat_episodes(parts: list[EpisodeArrays]) -> EpisodeArrays:
    """Episodes of several sources of one embodiment, end to end (task indices remapped)."""
    first = parts[0]
    keys = set(first.data)
    tasks: list[str] = []
    data: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    ends, offset = [], 0
    for part in parts:
        if set(part.data) != keys or part.fps != first.fps:
            raise ValueError(f"sources of embodiment {first.robot_type!r} differ in features or fps; expected the same")
        remap = np.array([tasks.index(t) if t in tasks else (tasks.append(t) or len(tasks) - 1) for t in part.tasks])
        for k in keys:
            values = np.asarray(part.data[k][:])
            data[k].append(remap[values] if k == "task_index" else values)
        ends.append(part.episode_ends + offset)
        offset += part.num_frames
    return EpisodeArrays(
        {k: np.concatenate(v) for k, v in data.items()},
        np.concatenate(ends),
        first.fps,
        first.features,
        tasks,
        first.robot_type,
        dict(first.meta),
    )


def split_episodes(episodes: EpisodeArrays, val_fraction: float, seed: int) -> tuple[EpisodeArrays, EpisodeArrays]:
    """(train, held-out) by whole episodes, chosen by a seeded permutation."""
    n = episodes.num_episodes
    n_val = max(1, int(round(n * val_fraction)))
    if n_val < 1 or n - n_val < 1:
        raise ValueError(f"{n} episodes of {episodes.robot_type!r} cannot be split with val_fraction={val_fraction}")
    order = np.random.default_rng(seed).permutation(n)
    return _take(episodes, np.sort(order[n_val:])), _take(episodes, np.sort(order[:n_val]))


def _take(episodes: EpisodeArrays, which: np.ndarray) -> EpisodeArrays:
    rows = np.concatenate([np.arange(*episodes.episode_bounds(int(e))) for e in which])
    lengths = episodes.episode_lengths()[which]
    data = {k: np.asarray(v[:])[rows] for k, v in episodes.data.items()}
    return EpisodeArrays(
        data, np.cumsum(lengths), episodes.fps, episodes.features, episodes.tasks, episodes.robot_type, episodes.meta
    )


@dataclass
class EmbodimentData:
    """One embodiment's train and held-out windows plus its entry of the processor."""

    entry: EmbodimentEntry
    train: TimeAlignedWindows
    val: TimeAlignedWindows

    @property
    def embodiment(self) -> Embodiment:
        """The embodiment's declaration."""
        return self.entry.embodiment


@dataclass
class Batch:
    """Model inputs of a batch plus per-action targets of the heads."""

    reasoner: ReasonerInputs
    clean: GeneratorInputs
    rewards: torch.Tensor  # (B, K) float, NaN where the dataset records none
    successes: torch.Tensor  # (B, K) float 0/1, NaN where the dataset records none


@dataclass
class TransitionTable:
    """Every frame of a split with its state and the action taken at it, and the rows where a run of
    ``steps`` actions stays inside one episode; pairs and sequences are indices into it (not copies).

    Attributes:
        latents: (N, G*G, Cf) every frame's latent tokens, embodiments end to end.
        states: (N, S) the normalised, padded state at each frame.
        actions: (N, W) the normalised, padded action taken at each frame.
        domain: (N,) long.
        action_channels: (N, W) bool.
        state_channels: (N, S) bool.
        first: (P,) long, the rows that start a run of ``steps`` actions inside their episode.
        steps: actions per run (1: consecutive-frame pairs).
    """

    latents: torch.Tensor
    states: torch.Tensor
    actions: torch.Tensor
    domain: torch.Tensor
    action_channels: torch.Tensor
    state_channels: torch.Tensor
    first: torch.Tensor
    steps: int = 1

    def __len__(self) -> int:
        return len(self.first)

    def take(self, index: torch.Tensor) -> TransitionBatch:
        """The pairs starting at ``index`` as a batch (the first action of each run)."""
        rows = self.first[index]
        frames = torch.stack([self.latents[rows], self.latents[rows + 1]], 1)
        return TransitionBatch(frames, self.domain[rows], self.actions[rows], self.action_channels[rows])

    def take_sequences(self, index: torch.Tensor) -> SequenceBatch:
        """The runs starting at ``index`` as a batch of ``steps + 1`` frames and ``steps`` actions."""
        rows = self.first[index][:, None] + torch.arange(self.steps + 1)
        first = rows[:, 0]
        return SequenceBatch(
            self.latents[rows],
            self.states[rows],
            self.actions[rows[:, :-1]],
            self.domain[first],
            self.action_channels[first],
            self.state_channels[first],
        )


class TrainingSet:
    """Windows of several datasets for one model.

    Args:
        sources: LeRobot dataset folders or zarr stores (their ``robot_type`` names the embodiment).
        config: the model config (shared widths, image size, number of domains).
        num_frames: frames per window.
        val_fraction: fraction of each embodiment's episodes held out.
        seed: seeds the split.
        declarations: by ``robot_type``, what a dataset cannot say (action layout, camera); see
            :mod:`cosmos_robot.datasets.declaration`. A robot that is not registered joins from its data.
        fps: the model's rate; sources at a whole multiple of it are subsampled
            (:mod:`cosmos_robot.datasets.rate`), other rates are an error.
    """

    def __init__(
        self,
        sources: list[str | os.PathLike],
        config: ModelConfig,
        num_frames: int = 5,
        val_fraction: float = 0.1,
        seed: int = 0,
        declarations: dict[str, EmbodimentDeclaration] | None = None,
        fps: float = MODEL_FPS,
    ) -> None:
        if not sources:
            raise ValueError("sources=[] is empty; expected at least one dataset")
        if not fps > 0:
            raise ValueError(f"fps={fps!r}; expected a positive rate in Hz")
        self.config = config
        self.fps = float(fps)
        self.spec = WindowSpec(num_frames=num_frames, min_real_frames=num_frames)
        declarations = declarations or {}
        grouped: dict[str, list[EpisodeArrays]] = {}
        self.embodiments: dict[str, Embodiment] = {}
        for source in sources:
            episodes = open_episodes(source).to_memory()
            name = episodes.robot_type or episodes.meta.get("embodiment")
            if not name:
                raise ValueError(f"{source} names no robot (robot_type); expected a LeRobot dataset with robot_type")
            declaration = declarations.get(name)
            if declaration is not None and declaration.camera is not None:
                select_camera(episodes, declaration.camera, str(source))
            if name not in self.embodiments:
                self.embodiments[name] = self._embodiment(name, episodes, declaration, str(source))
            episodes = to_model_rate(episodes, self.fps, str(source))
            to_image_size(episodes, config.image_size)
            grouped.setdefault(name, []).append(episodes)
        undeclared = sorted(set(declarations) - set(self.embodiments))
        if undeclared:
            raise ValueError(
                f"declarations for {undeclared} match no dataset; expected robot_types {sorted(self.embodiments)}"
            )
        self.parts: dict[str, tuple[EpisodeArrays, EpisodeArrays]] = {
            name: split_episodes(concat_episodes(parts), val_fraction, seed) for name, parts in grouped.items()
        }
        # The default instruction of an embodiment: the task of its first source (recipes list the expert first).
        self.tasks = {name: parts[0].tasks[0] for name, parts in grouped.items()}
        self.data: dict[str, EmbodimentData] = {}
        self._demonstrations: dict[tuple[int, str], PriorBatch] = {}
        self._transitions: dict[tuple[str, int], TransitionTable] = {}

    def _embodiment(
        self, name: str, episodes: EpisodeArrays, declaration: EmbodimentDeclaration | None, source: str
    ) -> Embodiment:
        """The registered embodiment called ``name``, or one built from the dataset on a free domain."""
        registered = {e.name: e for e in registered_embodiments()}
        action_dim, state_dim = int(episodes.data[ACTION].shape[1]), int(episodes.data[OBS_STATE].shape[1])
        if name in registered:
            if declaration is not None and declaration.components is not None:
                raise ValueError(
                    f"embodiment={name!r} is registered: its action layout is fixed; expected no components"
                )
            return registered[name]
        c = self.config
        if action_dim > c.action_width or state_dim > c.state_width:
            raise ValueError(
                f"{source}: action width {action_dim} and state width {state_dim}; expected at most the model's "
                f"{c.action_width} and {c.state_width}"
            )
        taken = {e.domain_id for e in registered.values()} | {e.domain_id for e in self.embodiments.values()}
        free = [d for d in range(c.num_domains) if d not in taken]
        if not free:
            raise ValueError(
                f"embodiment={name!r} needs a domain, but all {c.num_domains} are taken "
                f"({sorted(registered)} registered, {sorted(self.embodiments)} in this training); expected at most "
                f"{c.num_domains} embodiments (or a model config with more num_domains)"
            )
        return embodiment_from_data(name, action_dim, state_dim, episodes.fps, free[0], declaration)

    def frames(self, split: str = "train") -> torch.Tensor:
        """All frames of a split (uint8 (N, H, W, 3)): the train split trains the autoencoder, the held-out
        split measures it."""
        index = {"train": 0, "val": 1}[split]
        episodes = [parts[index] for parts in self.parts.values()]
        return torch.from_numpy(np.concatenate([e.data[e.image_keys[0]] for e in episodes]))

    def prepare(self, autoencoder: FrameAutoencoder, batch: int = 256) -> None:
        """Encode every frame with the frozen autoencoder, fit normalisers, build the windows."""
        for name, (train, val) in self.parts.items():
            for split in (train, val):
                frames = torch.from_numpy(split.data[split.image_keys[0]])
                split.data[LATENTS] = torch.cat(
                    [autoencoder.frames_to_tokens(frames[i : i + batch]) for i in range(0, len(frames), batch)]
                ).numpy()
            entry = EmbodimentEntry(
                embodiment=self.embodiments[name],
                action_norm=QuantileNormalizer.fit(train.data[ACTION], name),
                state_norm=QuantileNormalizer.fit(train.data[OBS_STATE], name),
                task=self.tasks[name],
                camera=train.image_keys[0],
            )
            self.data[name] = EmbodimentData(
                entry=entry,
                train=TimeAlignedWindows(train, self.spec, extra_frame_keys=(LATENTS,)),
                val=TimeAlignedWindows(val, self.spec, extra_frame_keys=(LATENTS,)),
            )
        self.processor = Processor(self.config, {name: d.entry for name, d in self.data.items()})

    def draw(self, batch_size: int, rng: torch.Generator, split: str = "train") -> list[tuple[str, int]]:
        """(embodiment, window index) for a batch, embodiments in proportion to their windows."""
        names = sorted(self.data)
        sizes = torch.tensor([len(getattr(self.data[n], split)) for n in names], dtype=torch.float64)
        which = torch.multinomial(sizes / sizes.sum(), batch_size, replacement=True, generator=rng)
        return [(names[int(w)], int(torch.randint(int(sizes[w]), (1,), generator=rng))) for w in which]

    def demonstrations(self, chunk: int, split: str = "train") -> PriorBatch:
        """Every window of the episodes recorded under their embodiment's default task (the expert's, in
        the recipes: noisy demonstrations carry their own instruction), as the action prior's table:
        the first frame's latents, its state and the ``chunk`` actions from it. Built once per split."""
        key = (chunk, split)
        if key in self._demonstrations:
            return self._demonstrations[key]
        c = self.config
        parts: list[PriorBatch] = []
        for name in sorted(self.data):
            d = self.data[name]
            windows = getattr(d, split)
            if chunk > windows.actions_per_window:
                raise ValueError(f"chunk={chunk}; windows hold {windows.actions_per_window} actions")
            episodes = windows.episodes
            task_of = np.asarray(episodes.data["task_index"][:]) if "task_index" in episodes.data else None
            starts = episodes.episode_ends - episodes.episode_lengths()
            picks = [
                i
                for i, episode in enumerate(windows.window_episodes)
                if task_of is None or episodes.tasks[int(task_of[starts[episode]])] == self.tasks[name]
            ]
            if not picks:
                continue
            items = [windows[i] for i in picks]
            n = len(items)
            actions = np.stack([w["actions"][:chunk].numpy() for w in items])
            states = np.stack([w["states"][0].numpy() for w in items])
            parts.append(
                PriorBatch(
                    frames=torch.stack([w[LATENTS][0] for w in items]),
                    state=torch.from_numpy(self.processor.states_in(name, states)),
                    domain=torch.full((n,), d.embodiment.domain_id),
                    actions=torch.from_numpy(self.processor.actions_in(name, actions)),
                    action_channels=(torch.arange(c.action_width) < d.embodiment.action_dim).expand(n, -1),
                    action_valid=torch.stack([~w["action_is_pad"][:chunk] for w in items]),
                )
            )
        if not parts:
            raise ValueError(f"no {split} episode is recorded under its embodiment's default task {self.tasks}")
        table = PriorBatch(*(torch.cat([getattr(p, f) for p in parts]) for f in PriorBatch.__dataclass_fields__))
        self._demonstrations[key] = table
        return table

    def transitions(self, split: str = "train", steps: int = 1) -> TransitionTable:
        """Every run of ``steps`` consecutive actions inside an episode, of every source (any task:
        noisy and random actions are what inverse dynamics must read and forward dynamics must follow),
        as the table of the inverse prior (``steps=1``) and of the forward prior. Built once per split."""
        if (split, steps) in self._transitions:
            return self._transitions[(split, steps)]
        c = self.config
        parts: dict[str, list[torch.Tensor]] = {k: [] for k in ("latents", "states", "actions", "domain", "first")}
        action_channels, state_channels = [], []
        offset = 0
        for name in sorted(self.data):
            d = self.data[name]
            episodes = getattr(d, split).episodes
            ends = episodes.episode_ends
            count = int(ends[-1]) if len(ends) else 0
            rows = np.arange(count)
            # A run must end inside its episode: its last frame is at most the episode's last.
            if count:
                rows = rows[rows + steps < ends[np.searchsorted(ends, rows, side="right")]]
            raw_actions = np.asarray(episodes.data[ACTION][:])
            raw_states = np.asarray(episodes.data[OBS_STATE][:])
            parts["latents"].append(torch.from_numpy(np.asarray(episodes.data[LATENTS])))
            parts["states"].append(torch.from_numpy(self.processor.states_in(name, raw_states)))
            parts["actions"].append(torch.from_numpy(self.processor.actions_in(name, raw_actions)))
            parts["domain"].append(torch.full((count,), d.embodiment.domain_id))
            parts["first"].append(torch.from_numpy(rows + offset))
            action_channels.append((torch.arange(c.action_width) < d.embodiment.action_dim).expand(count, -1))
            state_channels.append((torch.arange(c.state_width) < d.embodiment.state_dim).expand(count, -1))
            offset += count
        table = TransitionTable(
            *(torch.cat(parts[k]) for k in ("latents", "states", "actions", "domain")),
            torch.cat(action_channels),
            torch.cat(state_channels),
            torch.cat(parts["first"]),
            steps,
        )
        if not len(table):
            raise ValueError(f"the {split} split has no episode of {steps + 1} or more frames")
        self._transitions[(split, steps)] = table
        return table

    def transition_frames(self, split: str = "train") -> torch.Tensor:
        """The real frame (uint8 (N, H, W, 3)) of each row of :meth:`transitions`' tables, in their order."""
        return torch.from_numpy(
            np.concatenate(
                [
                    np.asarray(getattr(self.data[name], split).episodes.data[self.data[name].entry.camera])
                    for name in sorted(self.data)
                ]
            )
        )

    def collate(self, picks: list[tuple[str, int]], split: str = "train", context_frames: int = 1) -> Batch:
        """Model inputs of the picked windows, built by the same :class:`Processor` that serves the model."""
        names = [name for name, _ in picks]
        windows = [getattr(self.data[name], split)[i] for name, i in picks]
        states = torch.stack(
            [
                torch.from_numpy(self.processor.states_in(n, w["states"].numpy()))
                for n, w in zip(names, windows, strict=True)
            ]
        )
        actions = torch.stack(
            [
                torch.from_numpy(self.processor.actions_in(n, w["actions"].numpy()))
                for n, w in zip(names, windows, strict=True)
            ]
        )
        frame_time = torch.stack([w["frame_time"] for w in windows])
        frames = torch.stack([w["frames"] for w in windows])
        reasoner = self.processor.reasoner_inputs(
            names,
            frames[:, :context_frames],
            frame_time[:, :context_frames],
            states[:, context_frames - 1],
            [w["task"] for w in windows],
        )
        clean = self.processor.generator_inputs(
            names,
            torch.stack([w[LATENTS] for w in windows]),
            frame_time,
            actions,
            torch.stack([w["action_time"] for w in windows]),
            states,
        )
        # A dataset that records no reward or success (a robot's own recordings often do not) leaves them
        # unknown (NaN): the heads learn only from the windows that have them.
        unknown = torch.full((actions.shape[1],), float("nan"))
        rewards = torch.stack([w.get("rewards", unknown) for w in windows])
        successes = torch.stack([w["successes"].float() if "successes" in w else unknown for w in windows])
        return Batch(reasoner, clean, rewards, successes)
