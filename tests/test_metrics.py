"""PSNR, SSIM and rank correlations on cases with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos_robot.metrics import bootstrap_interval, pearson, psnr, rate_with_interval, spearman, ssim, wilson_interval


def test_psnr_of_identical_and_known_error():
    a = np.full((8, 8, 3), 100, np.uint8)
    assert psnr(a, a) == 100.0
    assert psnr(a, a + 1) == pytest.approx(10 * np.log10(255**2 / 1.0))


def test_ssim_is_one_for_identical_and_falls_with_noise():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (32, 32, 3)).astype(np.uint8)
    assert ssim(a, a) == pytest.approx(1.0)
    small = np.clip(a + rng.normal(0, 5, a.shape), 0, 255).astype(np.uint8)
    large = np.clip(a + rng.normal(0, 40, a.shape), 0, 255).astype(np.uint8)
    assert 1.0 > ssim(a, small) > ssim(a, large) > 0.0


def test_rank_correlations():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert spearman(x, x**3) == pytest.approx(1.0)
    assert spearman(x, -x) == pytest.approx(-1.0)
    assert pearson(x, 2 * x + 1) == pytest.approx(1.0)
    assert spearman(np.array([0.0, 0.0, 1.0]), np.array([1.0, 2.0, 3.0])) == pytest.approx(np.sqrt(3) / 2)
    assert pearson(np.ones(3), x[:3]) == 0.0
    with pytest.raises(ValueError, match="equal-length"):
        pearson(x, x[:2])


def test_wilson_intervals_hold_the_rate_and_stay_inside_zero_one():
    import doctest

    import cosmos_robot.metrics as metrics

    assert doctest.testmod(metrics).failed == 0
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and 0.1 < high < 0.2  # 0/20 is not "certainly 0"
    low, high = wilson_interval(20, 20)
    assert 0.8 < low < 0.9 and high == 1.0
    narrow, wide = wilson_interval(90, 100), wilson_interval(9, 10)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]


def test_a_rate_is_written_with_its_interval_and_count():
    assert rate_with_interval(0.9, 20) == "0.90 (0.70-0.97, n=20)"
    assert rate_with_interval(0.0, 24) == "0.00 (0.00-0.14, n=24)"
    with pytest.raises(ValueError, match="rate=0.33"):
        rate_with_interval(0.33, 20)  # not a share of 20 trials


def test_bootstrap_interval_holds_the_mean_and_widens_with_the_spread():
    rng = np.random.default_rng(0)
    tight, wide = rng.normal(10.0, 1.0, 32), rng.normal(10.0, 5.0, 32)
    low, high = bootstrap_interval(tight)
    assert low < tight.mean() < high
    wide_low, wide_high = bootstrap_interval(wide)
    assert wide_high - wide_low > 3 * (high - low)
    assert bootstrap_interval(wide) == (wide_low, wide_high)  # seeded
    with pytest.raises(ValueError, match="values is empty"):
        bootstrap_interval(np.zeros(0))
    with pytest.raises(ValueError, match="level=1.5"):
        bootstrap_interval(tight, level=1.5)
