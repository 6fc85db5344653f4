"""The learned-env harnesses on MuJoCo as its own model (perfect scores) and on a model that ignores actions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cosmos_robot.cli import main
from cosmos_robot.eval import fd_fidelity, ranking
from cosmos_robot.eval.fd_fidelity import evaluate_fd
from cosmos_robot.eval.imagination_rl import evaluate_imagination_rl
from cosmos_robot.eval.oracle import MuJoCoOracle
from cosmos_robot.eval.ranking import evaluate_ranking
from cosmos_robot.interface import Prediction
from cosmos_robot.seeds import EVAL_SEED

POINT = "cosmos_robot/PushBlockPoint-v0"
ARM2 = "cosmos_robot/PushBlockArm2-v0"


class StandStill(MuJoCoOracle):
    """A broken world model: every predicted frame is the observed one, whatever the actions."""

    def forward_dynamics(
        self,
        frames,
        actions,
        embodiment,
        states=None,
        steps=None,
        seed=0,
        pixel_residual=None,
        latents=None,
        decode=True,
        rewards=True,
    ):
        frames, actions = np.asarray(frames), np.asarray(actions)
        b, h = actions.shape[:2]
        held = np.repeat(frames[:, -1:], h, 1)
        return Prediction(held, np.repeat(np.asarray(states)[:, None], h, 1), np.zeros((b, h)), np.zeros((b, h)))


def test_fd_fidelity_scores_the_oracle_perfectly_and_sees_shuffled_actions():
    oracle = MuJoCoOracle(POINT, seeds=range(EVAL_SEED, EVAL_SEED + 3))
    result = evaluate_fd(oracle, "point", episodes=3, horizon=8, sampling_steps=1, progress=False)
    assert result.effector_found == [1.0] * 8 and result.block_found == [1.0] * 8
    assert result.effector_error_mm == [0.0] * 8 and result.block_error_mm == [0.0] * 8
    assert result.block_error_mm_copy_last[7] > 0.0  # MuJoCo's pushes moved the block by h8
    assert result.state_error == [0.0] * 8
    assert result.effector_error_mm_shuffled[7] > 20.0 and result.delta_psnr_shuffled > 20.0
    assert result.beats_copy_last_at == list(range(1, 9))
    assert result.autoencoder_floor is None  # MuJoCo draws its own frames: no autoencoder to score


class Reconstructing(MuJoCoOracle):
    """MuJoCo with an "autoencoder": ``keep`` returns the frames as they are, else a bare grey table."""

    def __init__(self, env_id, seeds, keep):
        super().__init__(env_id, seeds=seeds)
        self.keep = keep

    def reconstruct(self, frames):
        frames = np.asarray(frames)
        return frames.copy() if self.keep else np.full_like(frames, 200)


@pytest.mark.parametrize("keep", [True, False])
def test_the_autoencoder_floor_reads_the_reconstructions(keep):
    model = Reconstructing(POINT, range(EVAL_SEED, EVAL_SEED + 2), keep)
    result = evaluate_fd(model, "point", episodes=2, horizon=8, sampling_steps=1, progress=False)
    floor = result.autoencoder_floor
    if keep:  # a perfect autoencoder loses nothing
        assert floor["effector_found"] == [1.0] * 8 and floor["block_error_mm"] == [0.0] * 8
    else:  # one that draws an empty table finds nothing, so has no error to report
        assert floor["effector_found"] == [0.0] * 8 and floor["block_error_mm"] == [None] * 8
    assert result.effector_found == [1.0] * 8  # the env's own frames are scored as before


def test_fd_fidelity_finds_every_object_of_the_oracle_even_when_it_leaves_mujocos_view():
    # At these starts the noisy and random arms swing the fingertip out of the camera's view (MuJoCo
    # shows it in fewer than all frames); the oracle's frames are MuJoCo's, so it misses nothing.
    oracle = MuJoCoOracle(ARM2, seeds=range(EVAL_SEED, EVAL_SEED + 8))
    result = evaluate_fd(oracle, "arm2", episodes=8, horizon=8, sampling_steps=1, progress=False)
    assert min(result.effector_visible) < 1.0
    assert result.effector_found == [1.0] * 8 and result.block_found == [1.0] * 8
    assert all(share in (None, 0.0) for share in result.effector_spurious)
    assert result.effector_error_mm == [0.0] * 8


def test_fd_fidelity_fails_a_model_that_ignores_its_actions():
    broken = StandStill(POINT)
    result = evaluate_fd(broken, "point", episodes=3, horizon=8, sampling_steps=1, progress=False)
    assert result.delta_psnr_shuffled == 0.0 and result.effector_error_mm == result.effector_error_mm_shuffled
    assert result.effector_error_mm[7] > 20.0  # the real effector moved away from where it is drawn
    # Its block never moves: it scores exactly the block's copy-last baseline.
    assert result.block_error_mm == result.block_error_mm_copy_last


def test_ranking_of_the_oracle_is_the_simulators_own():
    oracle = MuJoCoOracle(POINT, seeds=range(EVAL_SEED + 10_000, EVAL_SEED + 10_003))
    result = evaluate_ranking(oracle, "point", episodes=3, noises=(0.0, 0.5, 1.0), sampling_steps=1, progress=False)
    assert result.spearman == pytest.approx(1.0) and result.pearson == pytest.approx(1.0)
    for policy in result.policies:
        assert policy["imagined_return"] == pytest.approx(policy["mujoco_return"], abs=1e-5)
    assert result.return_gap == pytest.approx(0.0, abs=1e-5) and result.success_rate_gap == 0.0


def test_the_fd_harness_broken_on_purpose_no_longer_scores_the_oracle(monkeypatch):
    # "Shuffled" actions that are not shuffled: the oracle then loses nothing, and the check that
    # passes above (delta_psnr_shuffled > 20) fails - the harness's check has teeth.
    monkeypatch.setattr(fd_fidelity.np, "roll", lambda a, shift, axis=None: a)
    oracle = MuJoCoOracle(POINT, seeds=range(EVAL_SEED, EVAL_SEED + 3))
    result = evaluate_fd(oracle, "point", episodes=3, horizon=8, sampling_steps=1, progress=False)
    assert result.delta_psnr_shuffled == 0.0 and result.effector_error_mm_shuffled == result.effector_error_mm


def test_the_rank_harness_broken_on_purpose_no_longer_ranks_the_oracle(monkeypatch):
    # The imagined side runs the policies in the opposite order of their noise levels.
    run_imagined = ranking.run_imagined
    monkeypatch.setattr(
        ranking, "run_imagined", lambda model, emb, noise, *rest: run_imagined(model, emb, 1.0 - noise, *rest)
    )
    oracle = MuJoCoOracle(POINT, seeds=range(EVAL_SEED + 10_000, EVAL_SEED + 10_003))
    result = evaluate_ranking(oracle, "point", episodes=3, noises=(0.0, 0.5, 1.0), sampling_steps=1, progress=False)
    assert result.spearman < 0.0 and result.return_gap > 1.0 and result.success_rate_gap > 0.3


@pytest.mark.slow
def test_imagination_rl_on_the_oracle_matches_mujoco_and_fails_a_model_that_ignores_actions():
    # Few PPO steps, so both worlds' PPO are far from converged: the oracle's ratio is ~1 because the
    # two worlds are one; the stand-still model's policy is no better than random.
    oracle = MuJoCoOracle(POINT)
    result = evaluate_imagination_rl(oracle, steps=4096, sampling_steps=1, progress=False, start=oracle.starts())
    assert result.real_return_mujoco_ppo > 1.5 * result.real_return_random
    assert 0.85 <= result.ratio_real_return <= 1.15
    broken = StandStill(POINT)
    result = evaluate_imagination_rl(broken, steps=4096, sampling_steps=1, progress=False, start=broken.starts())
    assert result.ratio_real_return < 0.6
    assert result.real_return_imagination_ppo < 1.2 * result.real_return_random


def test_an_unregistered_start_is_a_clear_error():
    oracle = MuJoCoOracle(POINT)
    with pytest.raises(ValueError, match="neither a registered start"):
        oracle.forward_dynamics(np.zeros((1, 1, 64, 64, 3), np.uint8), np.zeros((1, 1, 2)), "point")
    with pytest.raises(ValueError, match="forward dynamics only"):
        oracle.inverse_dynamics(np.zeros((2, 64, 64, 3), np.uint8), "point")


def test_the_cli_runs_the_fd_harness_on_mujoco_itself(tmp_path, capsys):
    out = tmp_path / "fd.json"
    assert main(["eval", "fd", "--checkpoint", "mujoco", "--episodes", "2", "--horizon", "8", "--json", str(out)]) == 0
    assert "expert episodes h8 0.0 mm (95 % interval 0.0-0.0, n=2)" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["effector_found"] == [1.0] * 8 and result["block_error_mm"] == [0.0] * 8
    assert result["per_source"]["expert"]["block_error_mm_ci95"] == [[0.0, 0.0]] * 8


def test_the_oracle_has_no_forward_path_to_choose(tmp_path, capsys):
    out = tmp_path / "fd.json"
    args = ["eval", "fd", "--checkpoint", "mujoco", "--episodes", "2", "--forward-path", "prior", "--json", str(out)]
    assert main(args) != 0
    assert "forward_path='prior' with checkpoint='mujoco'" in capsys.readouterr().err


@pytest.mark.slow
def test_labeling_scores_the_true_actions_perfectly_and_fails_the_mean_action(tmp_path):
    from cosmos_robot.eval.labeling import evaluate_labeling
    from cosmos_robot.eval.oracle import MeanActionLabels, TrueActionLabels
    from cosmos_robot.seeds import LABELING_SEED

    true = evaluate_labeling(TrueActionLabels(POINT, 4, LABELING_SEED), "point", POINT, episodes=4, progress=False)
    assert true.r2 > 0.9999 and true.original_success_rate > 0
    assert true.replay_success_ratio == 1.0 and true.final_block_error_m < 1e-6
    mean = evaluate_labeling(MeanActionLabels(POINT, 4, LABELING_SEED), "point", POINT, episodes=4, progress=False)
    assert mean.r2 < 0.05 and mean.replay_success_rate == 0.0
