"""Our feature keys are LeRobot's: a dataset we write is read by LeRobot's processors under the same names."""

from __future__ import annotations

from lerobot.utils import constants

from cosmos_robot import keys


def test_dataset_keys_match_lerobots_constants():
    assert keys.OBS_STATE == constants.OBS_STATE
    assert keys.OBS_ENV_STATE == constants.OBS_ENV_STATE
    assert keys.ACTION == constants.ACTION
    assert keys.OBS_IMAGES_PREFIX == constants.OBS_IMAGES + "."
    assert keys.DONE == constants.DONE and keys.REWARD == constants.REWARD
