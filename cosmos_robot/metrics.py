"""Metrics used by every evaluation: PSNR, SSIM, Spearman, Pearson, and intervals for rates and means."""

from __future__ import annotations

import numpy as np


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """Peak signal-to-noise ratio (dB) of two uint8 images or image stacks (100 dB when identical)."""
    mse = float(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2))
    return 100.0 if mse == 0 else 10.0 * np.log10(255.0**2 / mse)


def _box_mean(x: np.ndarray, size: int) -> np.ndarray:
    """Mean over every ``size`` x ``size`` window (valid positions) of (..., H, W)."""
    c = np.cumsum(np.cumsum(x, axis=-2), axis=-1)
    c = np.pad(c, [(0, 0)] * (x.ndim - 2) + [(1, 0), (1, 0)])
    s = c[..., size:, size:] - c[..., :-size, size:] - c[..., size:, :-size] + c[..., :-size, :-size]
    return s / (size * size)


def ssim(a: np.ndarray, b: np.ndarray, window: int = 7) -> float:
    """Structural similarity of two uint8 (H, W, 3) images: 7x7 box windows, averaged over channels.

    The constants are Wang et al. (2004)'s (K1 = 0.01, K2 = 0.03, L = 255).
    """
    x = np.moveaxis(np.asarray(a, np.float64), -1, 0)
    y = np.moveaxis(np.asarray(b, np.float64), -1, 0)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mx, my = _box_mean(x, window), _box_mean(y, window)
    vx = _box_mean(x * x, window) - mx * mx
    vy = _box_mean(y * y, window) - my * my
    cov = _box_mean(x * y, window) - mx * my
    s = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return float(s.mean())


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean rank)."""
    x = np.asarray(x, np.float64)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x), dtype=np.float64)
    for value in np.unique(x):
        tied = x == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation; 0 when either side is constant."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(x) != len(y) or len(x) < 2:
        raise ValueError(f"pearson needs two equal-length series of at least 2 values; got {len(x)} and {len(y)}")
    dx, dy = x - x.mean(), y - y.mean()
    denom = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return 0.0 if denom == 0 else float((dx * dy).sum() / denom)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (Pearson of average ranks)."""
    return pearson(_ranks(x), _ranks(y))


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a success rate (``z`` = 1.96): honest at 0 and 1 and for 20 episodes.

    >>> [round(v, 2) for v in wilson_interval(18, 20)]
    [0.7, 0.97]
    """
    if trials <= 0:
        raise ValueError(f"trials={trials!r}; expected a positive number of episodes")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes={successes!r}; expected 0..{trials}")
    rate = successes / trials
    centre = (rate + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * np.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def rate_with_interval(rate: float, trials: int) -> str:
    """A rate over ``trials`` as ``"0.90 (0.70-0.97, n=20)"``: its 95 % Wilson interval and its count.

    >>> rate_with_interval(0.9, 20)
    '0.90 (0.70-0.97, n=20)'
    """
    successes = int(round(rate * trials))
    if abs(successes - rate * trials) > 1e-6 * max(trials, 1):
        raise ValueError(f"rate={rate!r}; expected a multiple of 1/{trials} (a share of {trials} trials)")
    low, high = wilson_interval(successes, trials)
    return f"{rate:.2f} ({low:.2f}-{high:.2f}, n={trials})"


def bootstrap_interval(
    values: np.ndarray, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (one per episode), resampling episodes.

    An error in mm averaged over 8 episodes can rest on one of them (arm2's pushed block: 11 to 75 mm per
    episode at h16), so a mean is reported with how far it could move on other starts. Seeded: the
    same values give the same interval.

    >>> bootstrap_interval(np.full(8, 3.0))
    (3.0, 3.0)
    """
    values = np.asarray(values, np.float64).ravel()
    if not len(values):
        raise ValueError("values is empty; expected one value per episode")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level={level!r}; expected a number in (0, 1)")
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), (resamples, len(values)))].mean(1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)
