"""The forward prior: copies when untrained, follows its action once trained, loss weighs what moves."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from cosmos_robot.model.config import FORWARD_BLOCKS
from cosmos_robot.model.forward_prior import BLOCKS, ForwardPrior, rollout_loss


def blob_grids(positions: torch.Tensor, channels: int = 4, side: int = 8) -> torch.Tensor:
    """(B,) column positions -> latent grids (B, C, side, side) with one bright cell in row 3."""
    grids = torch.zeros(len(positions), channels, side, side)
    grids[torch.arange(len(positions)), :, 3, positions] = 1.0
    return grids


def perturb(prior: ForwardPrior, scale: float = 0.05) -> None:
    """Move every weight off its (partly zero) initialisation, so each path of the prior is exercised."""
    with torch.no_grad():
        for p in prior.parameters():
            p.add_(torch.randn_like(p) * scale)


@pytest.mark.parametrize(
    ("block", "bfloat16"), [("norm_gelu", False), ("relu", False), ("relu", True)], ids=["norm_gelu", "relu", "bf16"]
)
def test_untrained_prior_predicts_no_change(block, bfloat16):
    prior = ForwardPrior(
        latent_channels=4, state_width=3, action_width=2, num_domains=2, block=block, bfloat16=bfloat16
    )
    grid, state = torch.randn(5, 4, 8, 8), torch.randn(5, 3)
    change, state_change = prior(grid, state, torch.randn(5, 2), torch.zeros(5, dtype=torch.long))
    assert change.abs().max() == 0 and state_change.abs().max() == 0
    grids, states = prior.rollout(grid, state, torch.randn(5, 3, 2), torch.zeros(5, dtype=torch.long))
    torch.testing.assert_close(grids, grid[:, None].expand(-1, 3, -1, -1, -1))
    torch.testing.assert_close(states, state[:, None].expand(-1, 3, -1))


def test_rollout_chains_single_steps():
    torch.manual_seed(0)
    prior = ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=2)
    perturb(prior)
    grid, state, actions = torch.randn(2, 4, 8, 8), torch.randn(2, 3), torch.randn(2, 2, 2)
    domain = torch.tensor([0, 1])
    grids, states = prior.rollout(grid, state, actions, domain)
    change, state_change = prior(grid, state, actions[:, 0], domain)
    change2, state_change2 = prior(grid + change, state + state_change, actions[:, 1], domain)
    torch.testing.assert_close(grids[:, 1], grid + change + change2)
    torch.testing.assert_close(states[:, 1], state + state_change + state_change2)


def test_added_inputs_leave_a_trained_prior_unchanged_until_trained_and_are_read_every_step():
    torch.manual_seed(0)
    prior = ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=1, width=16, warp=True)
    perturb(prior)
    grid, state, actions = torch.randn(2, 4, 8, 8), torch.randn(2, 3), torch.randn(2, 3, 2)
    before = prior.rollout(grid, state, actions, 0)
    prior.add_inputs(3)
    assert prior.extra_inputs == 3
    maps = torch.randn(2, 3, 3, 8, 8)
    for got, want in zip(prior.rollout(grid, state, actions, 0, extra=maps), before, strict=True):
        torch.testing.assert_close(got, want)
    with torch.no_grad():
        prior.stem.weight[:, -3:] = torch.randn_like(prior.stem.weight[:, -3:]) * 0.1
    grids, states = prior.rollout(grid, state, actions, 0, extra=maps)
    assert (grids - before[0]).abs().max() > 1e-3
    # Step r reads the maps of step r.
    change, state_change = prior(grid, state, actions[:, 0], 0, maps[:, 0])
    torch.testing.assert_close(grids[:, 0], grid + change)
    torch.testing.assert_close(states[:, 0], state + state_change)
    # Not given, the maps are zero.
    for got, want in zip(
        prior(grid, state, actions[:, 0], 0), prior(grid, state, actions[:, 0], 0, 0 * maps[:, 0]), strict=True
    ):
        torch.testing.assert_close(got, want)
    with pytest.raises(ValueError, match="extra has 2 channels; expected extra_inputs=3"):
        prior(grid, state, actions[:, 0], 0, maps[:, 0, :2])
    with pytest.raises(ValueError, match="count=0"):
        prior.add_inputs(0)


def test_an_untrained_warping_prior_copies_and_its_displacement_moves_content_by_cells():
    prior = ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=1, width=16, warp=True)
    grid = blob_grids(torch.tensor([3]))
    blank = (torch.zeros(1, 3), torch.zeros(1, 2), 0)
    with torch.no_grad():
        change, _ = prior(grid, *blank)
        torch.testing.assert_close(change, torch.zeros_like(change), atol=1e-6, rtol=0)
        # Half a cell right, one cell down: the blob in row 3, column 3 is shared by columns 3 and 4 of row 4.
        prior.frame_out.bias[4:] = torch.tensor([0.5, 1.0])
        change, _ = prior(grid, *blank)
    moved = (grid + change)[0, 0]
    expected = torch.zeros(8, 8)
    expected[4, 3] = expected[4, 4] = 0.5
    torch.testing.assert_close(moved, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    ("warp", "block", "bfloat16"),
    [(False, "norm_gelu", False), (True, "norm_gelu", False), (True, "relu", True)],
    ids=["convolutions", "warp", "relu-bf16-warp"],
)
def test_trained_prior_moves_a_blob_where_its_action_says(warp, block, bfloat16):
    # A blob moves one cell left or right with the sign of the action, the state counts the moves.
    torch.manual_seed(0)
    prior = ForwardPrior(
        latent_channels=4,
        state_width=1,
        action_width=1,
        num_domains=1,
        width=32,
        blocks=2,
        warp=warp,
        block=block,
        bfloat16=bfloat16,
    )
    optimizer = torch.optim.Adam(prior.parameters(), lr=3e-3)
    domain = torch.zeros(64, dtype=torch.long)
    for _ in range(150):
        position = torch.randint(1, 7, (64,))
        step = torch.randint(0, 2, (64,)) * 2 - 1
        grids = torch.stack([blob_grids(position), blob_grids(position + step)], 1)
        states = torch.stack([position[:, None] / 8.0, (position + step)[:, None] / 8.0], 1)
        predicted, predicted_states = prior.rollout(grids[:, 0], states[:, 0], step[:, None, None].float(), domain)
        loss = rollout_loss(predicted, predicted_states, grids, states, torch.ones(64, 1, dtype=torch.bool))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    position = torch.tensor([3, 3])
    with torch.no_grad():
        change, state_change = prior(
            blob_grids(position), position[:, None] / 8.0, torch.tensor([[1.0], [-1.0]]), domain[:2]
        )
    after = (blob_grids(position) + change).mean(1)[:, 3]  # (2, 8) row 3
    assert after[0].argmax() == 4 and after[1].argmax() == 2
    torch.testing.assert_close(state_change, torch.tensor([[0.125], [-0.125]]), atol=0.03, rtol=0)


def test_rollout_loss_weighs_cells_that_change():
    start = torch.zeros(1, 1, 4, 8, 8)
    moved = start.clone()
    moved[0, 0, :, 3, 4] = 1.0  # one cell changes
    grids = torch.cat([start, moved], 1)
    states = torch.zeros(1, 2, 2)
    channels = torch.ones(1, 2, dtype=torch.bool)
    wrong_moving = moved.clone()
    wrong_moving[0, 0, :, 3, 4] = 0.5
    wrong_static = moved.clone()
    wrong_static[0, 0, :, 0, 0] = 0.5
    cost = lambda pred: float(rollout_loss(pred, torch.zeros(1, 1, 2), grids, states, channels))  # noqa: E731
    assert cost(moved) == 0.0
    assert cost(wrong_moving) > 5 * cost(wrong_static) > 0
    # The state term counts only the embodiment's channels.
    off = torch.tensor([[[0.0, 1.0]]])
    assert float(rollout_loss(moved, off, grids, states, torch.tensor([[True, False]]))) == 0.0
    assert float(rollout_loss(moved, off, grids, states, channels)) > 0


def reference_forward(prior: ForwardPrior, grid, state, action, domain):
    """The prior's step written with torch's own modules, row by row gathers and contiguous layout."""
    b, _, h, w = grid.shape
    features = prior._state_features(state)
    embedded = torch.einsum("ba,bah->bh", action, prior.action_weight[domain])
    condition = prior.condition(torch.cat([embedded, features], 1))
    rows, cols = torch.linspace(-1.0, 1.0, h), torch.linspace(-1.0, 1.0, w)
    coords = torch.stack(torch.meshgrid(rows, cols, indexing="ij"))[None].expand(b, -1, -1, -1)
    x = prior.stem(torch.cat([grid, coords], 1))
    for block in prior.blocks:
        scale, shift = block.film(condition)[..., None, None].chunk(2, 1)
        hidden = F.gelu(block.conv1(block.norm(x)), approximate="tanh") * (1.0 + scale) + shift
        x = x + block.conv2(F.gelu(hidden, approximate="tanh"))
    pooled = torch.cat([x.mean((2, 3)), condition, action, features], 1)
    state_change = torch.einsum("bh,bhs->bs", prior.state_mlp(pooled), prior.state_weight[domain])
    return prior.frame_out(x), state_change + prior.state_bias[domain]


@pytest.mark.parametrize("domain", [1, [0, 1, 1, 0]], ids=["one-embodiment", "mixed"])
@pytest.mark.parametrize("grad", [True, False])
def test_fast_forward_matches_the_reference_step(domain, grad):
    """The layout, the fused norm and the single-embodiment weights change speed, not the function."""
    torch.manual_seed(1)
    prior = ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=2, width=16, hidden=32)
    with torch.no_grad():
        for p in prior.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    grid, state, action = torch.randn(4, 4, 8, 8), torch.randn(4, 3), torch.randn(4, 2)
    rows = torch.tensor([domain] * 4 if isinstance(domain, int) else domain)
    with torch.set_grad_enabled(grad):
        change, state_change = prior(grid, state, action, domain if isinstance(domain, int) else rows)
        expected_change, expected_state = reference_forward(prior, grid, state, action, rows)
    torch.testing.assert_close(change, expected_change, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(state_change, expected_state, atol=1e-5, rtol=1e-4)
    assert change.is_contiguous()


def test_relu_block_is_film_around_two_convolutions():
    torch.manual_seed(2)
    prior = ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=1, width=16, block="relu")
    block = prior.blocks[0]
    assert not hasattr(block, "norm")
    with torch.no_grad():
        for p in block.parameters():
            p.add_(torch.randn_like(p) * 0.1)
        x, condition = torch.randn(3, 16, 8, 8), torch.randn(3, 128)
        scale, shift = block.film(condition)[..., None, None].chunk(2, 1)
        hidden = F.relu(F.relu(block.conv1(F.relu(x))) * (1.0 + scale) + shift)
        torch.testing.assert_close(block(x, condition), x + block.conv2(hidden), atol=1e-5, rtol=1e-4)


def test_the_config_names_every_block_the_prior_has():
    assert tuple(BLOCKS) == FORWARD_BLOCKS


def test_unknown_block_is_rejected():
    with pytest.raises(ValueError, match="block='resnet'; expected one of norm_gelu, relu"):
        ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=1, block="resnet")


def test_bfloat16_trunk_is_the_same_function_with_and_without_autograd_and_follows_weight_changes():
    """The env's calls (no autograd) run a cached bfloat16 copy of the trunk; training runs it under
    autocast. Both must give the same numbers, in float32, close to the float32 prior's, and the copy
    must be remade when the weights change."""
    torch.manual_seed(3)
    prior = ForwardPrior(
        latent_channels=4, state_width=3, action_width=2, num_domains=1, width=16, block="relu", bfloat16=True
    )
    perturb(prior)
    grid, state, action = torch.randn(4, 4, 8, 8), torch.randn(4, 3), torch.randn(4, 2)
    with torch.no_grad():
        cached, cached_state = prior(grid, state, action, 0)
    trained, trained_state = prior(grid, state, action, 0)
    assert cached.dtype == cached_state.dtype == torch.float32
    torch.testing.assert_close(cached, trained.detach(), atol=0, rtol=0)
    torch.testing.assert_close(cached_state, trained_state.detach(), atol=0, rtol=0)
    prior.bfloat16 = False
    with torch.no_grad():
        wide, _ = prior(grid, state, action, 0)
    torch.testing.assert_close(cached, wide, atol=0.05, rtol=0.05)
    assert not torch.equal(cached, wide)  # bfloat16 did run
    prior.bfloat16 = True
    with torch.no_grad():
        prior.frame_out.bias.add_(1.0)  # every cell's change grows by one
        moved, _ = prior(grid, state, action, 0)
    torch.testing.assert_close(moved, cached + 1.0, atol=0.02, rtol=0)


def test_state_action_term_starts_at_zero_and_is_linear_in_the_action():
    torch.manual_seed(0)
    plain = ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=2)
    perturb(plain)
    with_term = ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=2, state_action=True)
    with_term.load_state_dict(plain.state_dict(), strict=False)
    grid, state, action = torch.randn(4, 4, 8, 8), torch.randn(4, 3), torch.randn(4, 2)
    domain = torch.tensor([0, 1, 0, 1])
    with torch.no_grad():
        torch.testing.assert_close(with_term(grid, state, action, domain), plain(grid, state, action, domain))
        with_term.state_action[1] = torch.tensor([[1.0, 0.0, 2.0], [0.0, -1.0, 0.0]])
        _, base = plain(grid, state, action, domain)
        _, moved = with_term(grid, state, action, domain)
    added = moved - base
    torch.testing.assert_close(added[0::2], torch.zeros(2, 3))  # domain 0's matrix is still zero
    torch.testing.assert_close(added[1::2], action[1::2] @ with_term.state_action[1].detach())


def test_trunk_step_and_state_head_are_the_forward_pass():
    torch.manual_seed(1)
    prior = ForwardPrior(latent_channels=4, state_width=3, action_width=2, num_domains=2, warp=True, state_action=True)
    perturb(prior)
    grid, state, action, domain = torch.randn(3, 4, 8, 8), torch.randn(3, 3), torch.randn(3, 2), 1
    with torch.no_grad():
        change, state_change = prior(grid, state, action, domain)
        trunk_change, inputs = prior.trunk_step(grid, state, action, domain)
        torch.testing.assert_close(trunk_change, change)
        torch.testing.assert_close(prior.state_head(inputs, action, domain), state_change)
