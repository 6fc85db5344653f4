"""Policy ranking in MuJoCo and in the learned env, on a tiny model; bad input on the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.cli import main
from cosmos_robot.eval.ranking import evaluate_ranking
from cosmos_robot.metrics import pearson, spearman
from cosmos_robot.world_model import WorldActionModel


@pytest.fixture(scope="module")
def model(smoke_checkpoint):
    return WorldActionModel.from_pretrained(smoke_checkpoint)


# A full ranking run on the smoke model (9 s); the oracle's ranking tests cover the harness in the default run.
@pytest.mark.slow
def test_ranking_reports_correlations(model):
    result = evaluate_ranking(model, "point", episodes=2, noises=(0.0, 0.5, 1.0), sampling_steps=1, progress=False)
    assert len(result.policies) == 3
    expert, random = result.policies[0], result.policies[-1]
    assert expert["mujoco_success_rate"] == 1.0 and expert["mujoco_return"] > random["mujoco_return"]
    # The correlations are of the two columns reported beside them (recomputed here).
    mujoco = [p["mujoco_return"] for p in result.policies]
    imagined = [p["imagined_return"] for p in result.policies]
    assert result.spearman == pytest.approx(spearman(np.array(mujoco), np.array(imagined)), nan_ok=True)
    assert result.pearson == pytest.approx(pearson(np.array(mujoco), np.array(imagined)), nan_ok=True)
    assert result.return_gap == pytest.approx(np.abs(np.array(imagined) - mujoco).mean())


def test_cli_eval_rejects_an_unknown_embodiment(smoke_checkpoint, tmp_path, capsys):
    code = main(["eval", "rank", "--checkpoint", str(smoke_checkpoint), "--embodiment", "cartpole",
                 "--json", str(tmp_path / "r.json")])  # fmt: skip
    assert code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cartpole" in err[0]
