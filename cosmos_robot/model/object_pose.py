"""An object the learned env carries by its pose: read from the first frame, pushed by the effector, drawn by the prior.

The forward prior keeps the pushed block only in the latent grid, and there a push drifts: more
training, longer rollouts and losses on decoded frames did not take the drift down, while the same
prior told the block's true pose (as maps beside the grid) drew it within the autoencoder's own error
(``benchmarks/probe_pose_conditioning.py``, docs/results.md). So for an embodiment whose data record a
planar object pose (PushBlock's ``observation.environment_state``: block x, y, yaw), the model carries
that pose beside the grid:

- :class:`PoseReadout` reads it from the first frame's latents (a soft-argmax over the cells, with a
  sub-cell offset per cell: the block is one blob on the grid);
- :class:`ObjectPose` pushes it one step at a time with a small MLP per embodiment that reads the push
  in the block's own frame (where the effector is relative to the block, how it moves this step and
  moved the step before, how the block moved the step before, its place on the table, the action): one
  push then teaches it about every place and yaw (``cosmos_robot.eval.block_oracle`` measured this
  form against table coordinates: 1.5-2x lower error from the same data). The effector comes from the
  agent state by a learned map per embodiment (the model has no kinematics);
- :func:`step_maps` turns the pose now and after the step into maps on the latent grid (a Gaussian
  round the block's cell times its sub-cell offset and yaw) that the drawer -- a copy of the forward
  prior given them as extra inputs (``ForwardPrior.add_inputs``) -- reads when it draws the next grid.

The pose after a step needs the effector after it, which needs the agent state after it, which the
prior computes: so the forward prior, as trained, rolls the agent state (and the grid the MoT reads),
and the drawer rolls the frames (``WorldActionModel.forward_dynamics``). Agent states, reward and
success are then exactly what they were without the object.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from cosmos_robot.model.forward_prior import ForwardPrior
from cosmos_robot.model.painter import EffectorPainter

# Carried per row between model calls, raw units: the pose a step ago (x, y, yaw), the pose now, the
# effector a step ago (x, y), the goal (x, y; zero without a reward head).
MEMORY_WIDTH = 10
POSE_CHANNELS = 3
# Maps per pose: a Gaussian round the block's cell times (1, column offset, row offset, cos 4 yaw, sin 4
# yaw) -- a square block looks the same every quarter turn; the prior reads the pose now and next.
MAPS_PER_POSE = 5
POSE_MAPS = 2 * MAPS_PER_POSE
# Maps per effector place, for a drawer also told the effector (ModelConfig.object_effector_maps): the same
# Gaussian times (1, column offset, row offset); before and after the step.
MAPS_PER_EFFECTOR = 3
EFFECTOR_MAPS = 2 * MAPS_PER_EFFECTOR
# The Gaussian's width in latent cells (the probe's choice: the block spans about one cell).
MAP_SIGMA = 0.6
QUARTER_TURN = math.pi / 2
# The push MLP's targets in centimetres and deci-radians: outputs of order one.
PUSH_SCALE = (100.0, 100.0, 10.0)
PUSH_FEATURES = 10  # five 2-vectors; the action follows
# With the effector's path inside the step (ModelConfig.object_push_path), three more 2-vectors in the block's
# frame: where the commanded velocities would have put the effector without contact, relative to the block and
# to where it ended (how hard the block held it back), and its place half way through the step (an arm's
# fingertip moves on an arc, not on the chord between its two places).
PATH_FEATURES = 6
# The agent head's inputs beside the state's (3 x state width) and the action: the effector, its motion
# the step before, the block relative to it (table frame, block frame), the block's turn and place.
AGENT_FEATURES = 12
# The reward head's inputs, in decimetres: block - goal, effector - block, and their lengths.
REWARD_FEATURES = 6
REWARD_UNITS = 10.0


def fold(yaw: torch.Tensor) -> torch.Tensor:
    """Yaw folded into [-45, 45) degrees: a square's frame."""
    return torch.remainder(yaw + QUARTER_TURN / 2, QUARTER_TURN) - QUARTER_TURN / 2


def block_frame(vectors: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
    """Table-frame vectors (B, 2) in the frame of a block at ``yaw`` (B,)."""
    c, s = torch.cos(yaw), torch.sin(yaw)
    return torch.stack([c * vectors[:, 0] + s * vectors[:, 1], c * vectors[:, 1] - s * vectors[:, 0]], -1)


def _place_maps(
    places: torch.Tensor, side: int, half_extent: float, sigma: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Places (B, 2: x, y metres) -> a Gaussian round each place's cell and it times the column and row
    offsets (B, side, side each), on the latent grid of a top-down camera that sees ``[-half_extent,
    half_extent]^2`` edge to edge (x right, y up)."""
    col = (places[:, 0] / half_extent + 1.0) * side / 2 - 0.5
    row = (1.0 - places[:, 1] / half_extent) * side / 2 - 0.5
    cells = torch.arange(side, dtype=places.dtype, device=places.device)
    rows, cols = torch.meshgrid(cells, cells, indexing="ij")
    dx, dy = cols[None] - col[:, None, None], rows[None] - row[:, None, None]
    near = torch.exp(-(dx**2 + dy**2) / (2 * sigma**2))
    return near, near * dx, near * dy


def pose_maps(poses: torch.Tensor, side: int, half_extent: float, sigma: float = MAP_SIGMA) -> torch.Tensor:
    """Poses (B, 3: x, y metres, yaw) -> maps (B, 5, side, side) on the latent grid of a top-down camera
    that sees the square ``[-half_extent, half_extent]^2`` edge to edge (x right, y up)."""
    near, near_dx, near_dy = _place_maps(poses[:, :2], side, half_extent, sigma)
    turn = 4.0 * poses[:, 2, None, None]
    return torch.stack([near, near_dx, near_dy, near * torch.cos(turn), near * torch.sin(turn)], 1)


def step_maps(
    now: torch.Tensor,
    after: torch.Tensor,
    side: int,
    half_extent: float,
    effector: torch.Tensor | None = None,
    effector_after: torch.Tensor | None = None,
) -> torch.Tensor:
    """The drawer's extra inputs (B, 10, side, side) for a step from pose ``now`` (B, 3) to ``after``; given
    the effector's places before and after the step (B, 2 each), (B, 16, side, side) with theirs after."""
    maps = [pose_maps(now, side, half_extent), pose_maps(after, side, half_extent)]
    if (effector is None) != (effector_after is None):
        raise ValueError("effector and effector_after: expected both or neither")
    if effector is not None:
        for place in (effector, effector_after):  # a place has no turn: the pose maps' first three
            maps.append(torch.stack(_place_maps(place, side, half_extent, MAP_SIGMA), 1))
    return torch.cat(maps, 1)


class PoseReadout(nn.Module):
    """The object's pose read from a latent grid (B, C, h, w): a soft-argmax over the cells, each with a
    sub-cell offset, for the place; the same weights over each cell's (cos, sin) of 4 yaw for the turn."""

    def __init__(self, channels: int, half_extent: float, width: int = 64) -> None:
        super().__init__()
        self.half_extent = half_extent
        self.net = nn.Sequential(
            nn.Conv2d(channels + 2, width, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(width, 5, 1),
        )
        self.place = nn.Linear(2, 2)

    def forward(self, grid: torch.Tensor) -> torch.Tensor:
        """(B, 4): x, y in centimetres and cos, sin of 4 yaw (the training targets' units)."""
        b, _, h, w = grid.shape
        rows = torch.linspace(-1, 1, h, device=grid.device, dtype=grid.dtype)
        cols = torch.linspace(-1, 1, w, device=grid.device, dtype=grid.dtype)
        coords = torch.stack(torch.meshgrid(rows, cols, indexing="ij"))
        out = self.net(torch.cat([grid, coords[None].expand(b, -1, -1, -1)], 1)).flatten(2)
        weights = out[:, 0].softmax(-1)
        where = coords.flatten(1).flip(0)[None] + 0.3 * out[:, 1:3]
        place = self.place((where * weights[:, None]).sum(-1)) * self.half_extent * 100.0
        return torch.cat([place, (out[:, 3:] * weights[:, None]).sum(-1)], 1)

    @staticmethod
    def targets(poses: torch.Tensor) -> torch.Tensor:
        """Poses (B, 3) as :meth:`forward`'s outputs."""
        return torch.cat([poses[:, :2] * 100.0, torch.cos(4 * poses[:, 2:]), torch.sin(4 * poses[:, 2:])], 1)

    def poses(self, grid: torch.Tensor) -> torch.Tensor:
        """(B, 3) poses in metres and radians."""
        out = self(grid)
        return torch.cat([out[:, :2] / 100.0, torch.atan2(out[:, 3], out[:, 2])[:, None] / 4.0], 1)


def three_layer_mlp(inputs: int, outputs: int, hidden: int) -> nn.Sequential:
    """Three hidden GELU layers of ``hidden`` units: the push and effector MLPs (and the block oracle's)."""
    return nn.Sequential(
        nn.Linear(inputs, hidden),
        nn.GELU(),
        nn.Linear(hidden, hidden),
        nn.GELU(),
        nn.Linear(hidden, hidden),
        nn.GELU(),
        nn.Linear(hidden, outputs),
    )


class ObjectPose(nn.Module):
    """The readout, the effector maps, the push MLPs and the drawer of the embodiments that carry an object pose.

    Args:
        latent_channels: channels of the latent grid.
        state_width: the shared (padded) state width.
        action_width: the shared (padded) action width.
        domains: the embodiment ids whose data record the object's pose.
        half_extent: half the side of the square the camera sees, in metres (the maps' geometry).
        drawer: the prior that draws the grid told the pose (``extra_inputs`` = :data:`POSE_MAPS`; plus
            :data:`EFFECTOR_MAPS` for one also told the effector).
        hidden: width of the MLPs.
        reward: also hold a goal readout and a reward head per embodiment (:meth:`rewards`): the learned
            env's reward and success from the carried pose, the goal and the effector.
        agent: also hold an agent head per embodiment (:meth:`agent_change`): the agent state's change of a
            step from the state, the action and the carried pose, so that a learned env that returns no
            frames steps MLPs instead of the forward prior's convolutions.
        push_path: the push MLPs also read the effector's path inside the step (:meth:`path_of`,
            :data:`PATH_FEATURES`).
        painter: also hold an :class:`~cosmos_robot.model.painter.EffectorPainter`, which corrects decoded
            frames round the effector's place (in bfloat16 at inference where the drawer's trunk runs so).
    """

    def __init__(
        self,
        latent_channels: int,
        state_width: int,
        action_width: int,
        domains: tuple[int, ...],
        half_extent: float,
        drawer: ForwardPrior,
        hidden: int = 256,
        reward: bool = False,
        agent: bool = False,
        push_path: bool = False,
        painter: bool = False,
    ) -> None:
        super().__init__()
        if not domains:
            raise ValueError("domains=(); expected the embodiment ids that carry an object pose")
        if drawer.extra_inputs not in (POSE_MAPS, POSE_MAPS + EFFECTOR_MAPS):
            raise ValueError(
                f"drawer.extra_inputs={drawer.extra_inputs}; expected {POSE_MAPS} (the pose maps) or "
                f"{POSE_MAPS + EFFECTOR_MAPS} (and the effector's)"
            )
        self.domains = tuple(int(d) for d in domains)
        # A copy of the forward prior that reads the pose maps and draws the frames; the prior itself is
        # left as trained, for the agent state and for the MoT that was trained on its rollouts.
        self.drawer = drawer
        self.half_extent = float(half_extent)
        self.readout = PoseReadout(latent_channels, self.half_extent)
        self.effector = nn.ModuleDict({str(d): three_layer_mlp(3 * state_width, 2, hidden) for d in self.domains})
        self.register_buffer("push_scale", torch.tensor(PUSH_SCALE))
        self.set_push(state_width, action_width, push_path, hidden)
        # The reward and success of a step, from where the block, the goal and the effector end up: the MoT's
        # heads read them off drawn frames, where a block near the goal never looked like success.
        self.goal_readout = PoseReadout(latent_channels, self.half_extent) if reward else None
        self.reward = (
            nn.ModuleDict({str(d): three_layer_mlp(REWARD_FEATURES, 2, 64) for d in self.domains}) if reward else None
        )
        self.agent = None
        if agent:
            self.add_agent(state_width, action_width, hidden)
        # Built untrained (it then changes no pixel) and trained after the decoder's last fit, whose frames it
        # corrects (cosmos_robot.painter_training).
        self.painter = EffectorPainter(self.half_extent, bfloat16=drawer.bfloat16) if painter else None

    def set_push(self, state_width: int, action_width: int, push_path: bool, hidden: int = 256) -> None:
        """Give this object untrained push MLPs (reading the effector's path inside the step if ``push_path``)
        and their feature normalisation (identity until training sets it); with the path, the map from a
        state and an action to the state the action commands (zero until
        :func:`cosmos_robot.object_pose_training.fit_pushes` sets it from the data's statistics)."""
        inputs = PUSH_FEATURES + PATH_FEATURES * push_path + action_width
        device = self.push_scale.device
        self.push_path = bool(push_path)
        self.push = nn.ModuleDict({str(d): three_layer_mlp(inputs, 3, hidden) for d in self.domains}).to(device)
        self.register_buffer("push_mean", torch.zeros(len(self.domains), inputs, device=device))
        self.register_buffer("push_std", torch.ones(len(self.domains), inputs, device=device))
        for name in ("command_gain", "command_offset"):
            self._buffers.pop(name, None)
        if push_path:
            # The commanded state (normalised) is the state plus action @ gain + offset: the action is a
            # velocity and normalisation is affine, so one control period's motion is affine in it.
            n = len(self.domains)
            self.register_buffer("command_gain", torch.zeros(n, action_width, state_width, device=device))
            self.register_buffer("command_offset", torch.zeros(n, state_width, device=device))

    def add_agent(self, state_width: int, action_width: int, hidden: int = 256) -> None:
        """Give this object an untrained agent head per embodiment (:meth:`agent_change`) and its feature
        normalisation (identity until :func:`cosmos_robot.agent_dynamics_training.fit_agent_dynamics` sets it)."""
        inputs = 3 * state_width + action_width + AGENT_FEATURES
        device = self.push_mean.device
        self.agent = nn.ModuleDict({str(d): three_layer_mlp(inputs, state_width, hidden) for d in self.domains}).to(
            device
        )
        self.register_buffer("agent_mean", torch.zeros(len(self.domains), inputs, device=device))
        self.register_buffer("agent_std", torch.ones(len(self.domains), inputs, device=device))
        # Per state channel, the spread of its change in a step: the head's outputs are of order one.
        self.register_buffer("agent_scale", torch.ones(len(self.domains), state_width, device=device))

    def drop_agent(self) -> None:
        """Remove the agent heads and their normalisation (a checkpoint made before them has neither)."""
        self.agent = None
        for name in ("agent_mean", "agent_std", "agent_scale"):
            self._buffers.pop(name, None)

    @property
    def tells_effector(self) -> bool:
        """Whether the drawer is also told the effector's places (:func:`step_maps` with the effector)."""
        return self.drawer.extra_inputs == POSE_MAPS + EFFECTOR_MAPS

    def drawer_maps(
        self, memory: torch.Tensor, effector: torch.Tensor, effector_after: torch.Tensor, side: int
    ) -> torch.Tensor:
        """The drawer's extra inputs for the step that took the memory to ``memory`` (B, 10: the pose before and
        after it) and the effector from ``effector`` to ``effector_after`` (B, 2), on a ``side``-cell grid."""
        told = self.tells_effector
        places = (effector, effector_after) if told else (None, None)
        return step_maps(memory[:, :3], memory[:, 3:6], side, self.half_extent, *places)

    @property
    def has_agent(self) -> bool:
        """Whether this object holds agent heads (:meth:`agent_change`)."""
        return self.agent is not None

    @property
    def has_reward(self) -> bool:
        """Whether this object holds a goal readout and reward heads (:meth:`rewards`)."""
        return self.reward is not None

    def carries(self, domain: int) -> bool:
        """Whether embodiment ``domain`` carries an object pose."""
        return int(domain) in self.domains

    def effector_of(self, state: torch.Tensor, domain: int) -> torch.Tensor:
        """The effector (B, 2, metres) of normalised, padded agent states (B, state_width)."""
        # The state and its sin/cos: a point's effector is its state, an arm's fingertip a sum of sines and
        # cosines of its joint angles.
        features = torch.cat([state, torch.sin(state * math.pi), torch.cos(state * math.pi)], -1)
        return self.effector[str(int(domain))](features)

    def agent_features(
        self, state: torch.Tensor, memory: torch.Tensor, effector: torch.Tensor, action: torch.Tensor
    ) -> torch.Tensor:
        """The agent head's inputs (B, 3 * state_width + action_width + 12): the normalised state and its
        sines and cosines, the action, the effector (metres) and its motion the step before, the block relative
        to the effector in the table's and the block's frame, the block's turn (4 yaw) and place."""
        pose, effector_before = memory[:, 3:6], memory[:, 6:8]
        yaw = fold(pose[:, 2])
        to_block = pose[:, :2] - effector
        return torch.cat(
            [
                state,
                torch.sin(state * math.pi),
                torch.cos(state * math.pi),
                action,
                effector,
                effector - effector_before,
                to_block,
                block_frame(to_block, yaw),
                torch.cos(4.0 * pose[:, 2:3]),
                torch.sin(4.0 * pose[:, 2:3]),
                pose[:, :2],
            ],
            -1,
        )

    def agent_change(self, features: torch.Tensor, domain: int) -> torch.Tensor:
        """The normalised, padded agent state's change (B, state_width) of a step with ``features``
        (:meth:`agent_features`)."""
        if self.agent is None:
            raise ValueError("this object has no agent head (ModelConfig.object_agent=False)")
        k = self.domains.index(int(domain))
        return self.agent[str(int(domain))]((features - self.agent_mean[k]) / self.agent_std[k]) * self.agent_scale[k]

    def agent_step(
        self,
        state: torch.Tensor,
        memory: torch.Tensor,
        effector: torch.Tensor,
        action: torch.Tensor,
        domain: int,
        channels: torch.Tensor,
    ) -> torch.Tensor:
        """The normalised, padded agent state (B, state_width) a step after ``state`` under ``action``, by the
        agent head (:meth:`agent_change` of :meth:`agent_features`); zero outside the real ``channels``."""
        features = self.agent_features(state, memory, effector, action)
        return (state + self.agent_change(features, domain)) * channels

    def path_of(
        self, state: torch.Tensor, state_after: torch.Tensor, action: torch.Tensor, domain: int
    ) -> torch.Tensor:
        """The effector's path inside a step (B, 4, metres): its place half way from normalised state ``state``
        to ``state_after`` (B, state_width), and where ``action`` (B, action_width, normalised) commanded it."""
        if not self.push_path:
            raise ValueError("this object's push MLPs read no path (ModelConfig.object_push_path=False)")
        k = self.domains.index(int(domain))
        commanded = state + action @ self.command_gain[k] + self.command_offset[k]
        places = self.effector_of(torch.cat([(state + state_after) / 2, commanded]), domain)
        return torch.cat(places.chunk(2), -1)

    def push_features(
        self,
        pose: torch.Tensor,
        pose_before: torch.Tensor,
        effector_before: torch.Tensor,
        effector: torch.Tensor,
        effector_after: torch.Tensor,
        action: torch.Tensor,
        path: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The push MLP's inputs (B, 10 + action_width), in the block's frame: the effector relative to the
        block, its motion this step and the step before, the block's motion the step before; then the
        block's place on the table (the walls) and the normalised action. With the path (:meth:`path_of`,
        needed when the MLPs read it), (B, 16 + action_width): the commanded place relative to the block
        and to ``effector_after``, and the half-way place relative to the block, before the action."""
        yaw = fold(pose[:, 2])
        parts = [
            block_frame(effector - pose[:, :2], yaw),
            block_frame(effector_after - effector, yaw),
            block_frame(effector - effector_before, yaw),
            block_frame(pose[:, :2] - pose_before[:, :2], yaw),
            pose[:, :2],
        ]
        if self.push_path:
            if path is None:
                raise ValueError("path=None; these push MLPs read the effector's path (ObjectPose.path_of)")
            halfway, commanded = path[:, :2], path[:, 2:]
            parts += [
                block_frame(commanded - pose[:, :2], yaw),
                block_frame(commanded - effector_after, yaw),
                block_frame(halfway - pose[:, :2], yaw),
            ]
        return torch.cat([*parts, action], -1)

    def push_change(self, features: torch.Tensor, domain: int) -> torch.Tensor:
        """Scaled pose change (B, 3), in the block's frame (the training target), of ``features``."""
        k = self.domains.index(int(domain))
        return self.push[str(int(domain))]((features - self.push_mean[k]) / self.push_std[k])

    def step(
        self,
        memory: torch.Tensor,
        effector: torch.Tensor,
        effector_after: torch.Tensor,
        action: torch.Tensor,
        domain: int,
        path: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The memory (B, 10) after one step from ``memory`` (B, 10), the effector going from ``effector`` to
        ``effector_after`` (B, 2; :meth:`effector_of` the agent states, which a rollout computes once per
        step) under ``action`` (B, action_width, normalised); ``path`` (:meth:`path_of`) for MLPs that read it."""
        before, pose, effector_before, goal = memory[:, :3], memory[:, 3:6], memory[:, 6:8], memory[:, 8:10]
        change = self.push_change(
            self.push_features(pose, before, effector_before, effector, effector_after, action, path), domain
        )
        change = change / self.push_scale
        moved = block_frame(change[:, :2], -fold(pose[:, 2]))
        after = torch.cat([pose[:, :2] + moved, pose[:, 2:] + change[:, 2:]], 1)
        return torch.cat([pose, after, effector, goal], 1)

    def advance(
        self,
        memory: torch.Tensor,
        state: torch.Tensor,
        state_after: torch.Tensor,
        effector: torch.Tensor,
        action: torch.Tensor,
        domain: int,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(the memory, the effector) after a step under ``action`` that takes the normalised agent state from
        ``state`` to ``state_after`` and so the effector from ``effector`` to its map of ``state_after``: one
        :meth:`step` with the effector's path where the push MLPs read it, as a rollout makes it."""
        effector_after = self.effector_of(state_after, domain)
        path = self.path_of(state, state_after, action, domain) if self.push_path else None
        return self.step(memory, effector, effector_after, action, domain, path), effector_after

    def start(self, grid: torch.Tensor, state: torch.Tensor, domain: int) -> torch.Tensor:
        """The memory (B, 10) at a start: the pose read from ``grid`` (B, C, h, w), at rest (the pose a step
        ago the same), the effector of ``state`` (B, state_width) as where it was, the goal read from
        ``grid`` (zero without a reward head)."""
        grid = grid.float()
        pose = self.readout.poses(grid)
        goal = self.goal_readout.poses(grid)[:, :2] if self.has_reward else pose.new_zeros(len(pose), 2)
        return torch.cat([pose, pose, self.effector_of(state.float(), domain), goal], 1)

    def reward_logits(
        self, pose: torch.Tensor, effector: torch.Tensor, goal: torch.Tensor, domain: int
    ) -> torch.Tensor:
        """(B, 2): the reward and the success logit of a step that ends with the object at ``pose`` (B, 3),
        the effector at ``effector`` (B, 2) and the goal at ``goal`` (B, 2), metres."""
        if not self.has_reward:
            raise ValueError("this object has no reward head (ModelConfig.object_reward=False)")
        to_goal, to_block = pose[:, :2] - goal, effector - pose[:, :2]
        features = torch.cat(
            [to_goal, to_goal.norm(dim=-1, keepdim=True), to_block, to_block.norm(dim=-1, keepdim=True)], -1
        )
        return self.reward[str(int(domain))](features * REWARD_UNITS)

    def rewards(self, memory: torch.Tensor, effector: torch.Tensor, domain: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(reward (B,), success probability (B,)) of the step that left ``memory`` (B, 10) and the effector
        at ``effector`` (B, 2): the object at its pose now."""
        out = self.reward_logits(memory[:, 3:6], effector, memory[:, 8:10], domain)
        return out[:, 0], torch.sigmoid(out[:, 1])
