"""RandomResizedCrop: stoker's crop sampler against torchvision's get_params.

The two use different random generators, so individual crops differ; their
distributions must not. Compared with two-sample Kolmogorov-Smirnov tests at
alpha = 1e-3 (fixed seeds, so the outcome is deterministic), plus the rate at
which the central fallback crop is returned.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torchvision.transforms as T

import stoker

ALPHA = 1e-3
N_STOKER = 20000


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample KS statistic sup |F_a - F_b| (exact with ties)."""
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def ks_threshold(n: int, m: int, alpha: float = ALPHA) -> float:
    """Asymptotic critical value c(alpha) * sqrt((n + m) / (n m))."""
    return math.sqrt(-0.5 * math.log(alpha / 2)) * math.sqrt((n + m) / (n * m))


def fallback_rect(width, height, ratio):
    """torchvision's central fallback crop as (top, left, height, width)."""
    in_ratio = width / height
    if in_ratio < min(ratio):
        w = width
        h = int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        h = height
        w = int(round(h * max(ratio)))
    else:
        w, h = width, height
    return ((height - h) // 2, (width - w) // 2, h, w)


def stoker_crops(width, height, scale, ratio, n=N_STOKER, seed=1234):
    t = stoker.RandomResizedCrop(224, scale=scale, ratio=ratio)
    out = stoker._C._sample_random_resized_crop(width, height, t, seed, n)
    out = np.asarray(out)
    assert out.shape == (n, 4)
    return out.astype(np.int64)


def torchvision_crops(width, height, scale, ratio, n, seed=4321):
    torch.manual_seed(seed)
    img = torch.empty(1, height, width)
    get = T.RandomResizedCrop.get_params
    return np.array([get(img, list(scale), list(ratio)) for _ in range(n)], dtype=np.int64)


def features(crops, width, height):
    top, left, h, w = crops.T
    return {
        "area_fraction": h * w / (width * height),
        "log_aspect": np.log(w / h),
        "centre_x": (left + w / 2) / width,
        "centre_y": (top + h / 2) / height,
    }


def check_bounds(crops, width, height):
    top, left, h, w = crops.T
    assert (h > 0).all() and (w > 0).all()
    assert (top >= 0).all() and (left >= 0).all()
    assert (top + h <= height).all() and (left + w <= width).all()


CASES = [
    # (width, height, scale, ratio, torchvision draws)
    pytest.param(500, 375, (0.08, 1.0), (3 / 4, 4 / 3), 20000, id="500x375-default"),
    # Elongated: ~20% of draws exhaust the 10 attempts and take the fallback. torchvision
    # is slow here (10 Python attempts per fallback), hence fewer reference draws.
    pytest.param(1000, 200, (0.08, 1.0), (3 / 4, 4 / 3), 10000, id="1000x200-fallback"),
    pytest.param(500, 375, (0.5, 1.0), (1.0, 1.0), 20000, id="500x375-scale0.5-square"),
]


@pytest.fixture(scope="module")
def samples():
    cache = {}

    def get(width, height, scale, ratio, n_tv):
        key = (width, height, scale, ratio, n_tv)
        if key not in cache:
            cache[key] = (stoker_crops(width, height, scale, ratio),
                          torchvision_crops(width, height, scale, ratio, n_tv))
        return cache[key]

    return get


@pytest.mark.parametrize("width,height,scale,ratio,n_tv", CASES)
def test_distributions_match_torchvision(samples, width, height, scale, ratio, n_tv):
    ours, ref = samples(width, height, scale, ratio, n_tv)
    check_bounds(ours, width, height)
    check_bounds(ref, width, height)
    fo, fr = features(ours, width, height), features(ref, width, height)
    limit = ks_threshold(len(ours), len(ref))
    report = {k: round(ks_statistic(fo[k], fr[k]), 4) for k in fo}
    for k, d in report.items():
        assert d < limit, f"{k}: KS D={d} >= {limit:.4f} (all: {report})"


@pytest.mark.parametrize("width,height,scale,ratio,n_tv", CASES)
def test_fallback_frequency_matches_torchvision(samples, width, height, scale, ratio, n_tv):
    ours, ref = samples(width, height, scale, ratio, n_tv)
    fb = np.array(fallback_rect(width, height, ratio))
    p_ours = float(np.mean(np.all(ours == fb, axis=1)))
    p_ref = float(np.mean(np.all(ref == fb, axis=1)))
    # Two-proportion z-test at alpha = 1e-3 (|z| < 3.29).
    p = (p_ours * len(ours) + p_ref * len(ref)) / (len(ours) + len(ref))
    se = math.sqrt(max(p * (1 - p), 1e-12) * (1 / len(ours) + 1 / len(ref)))
    assert abs(p_ours - p_ref) <= 3.29 * se + 1e-12, (p_ours, p_ref)
    if width == 1000:
        # The elongated case really exercises the fallback.
        assert 0.05 < p_ref < 0.6 and 0.05 < p_ours < 0.6, (p_ours, p_ref)


def test_square_ratio_gives_square_crops(samples):
    ours, _ = samples(500, 375, (0.5, 1.0), (1.0, 1.0), 20000)
    top, left, h, w = ours.T
    assert (h == w).all()
    # scale >= 0.5 of the area, within rounding of the side.
    assert (np.sqrt(h * w) >= math.sqrt(0.5 * 500 * 375) - 1).all()


def test_always_fallback_when_no_crop_fits():
    # 2000x100: any crop with scale >= 0.08 and aspect <= 4/3 is taller than 100 px, so
    # all 10 attempts fail and the central crop of aspect 4/3 is returned every time.
    ours = stoker_crops(2000, 100, (0.08, 1.0), (3 / 4, 4 / 3), n=500)
    torch.manual_seed(0)
    ref = torchvision_crops(2000, 100, (0.08, 1.0), (3 / 4, 4 / 3), n=20)
    fb = fallback_rect(2000, 100, (3 / 4, 4 / 3))
    assert fb == (0, 933, 100, 133)
    assert (ref == fb).all()
    assert (ours == fb).all(), ours[np.any(ours != fb, axis=1)][:5]
    # Portrait the other way: in_ratio < 3/4.
    ours = stoker_crops(100, 2000, (0.08, 1.0), (3 / 4, 4 / 3), n=200)
    fb = fallback_rect(100, 2000, (3 / 4, 4 / 3))
    assert fb == (933, 0, 133, 100)
    assert (ours == fb).all()


def test_sampler_is_deterministic_in_seed():
    a = stoker_crops(500, 375, (0.08, 1.0), (3 / 4, 4 / 3), n=1000, seed=7)
    b = stoker_crops(500, 375, (0.08, 1.0), (3 / 4, 4 / 3), n=1000, seed=7)
    c = stoker_crops(500, 375, (0.08, 1.0), (3 / 4, 4 / 3), n=1000, seed=8)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    # Crops vary from draw to draw.
    assert len({tuple(r) for r in a}) > 900


def test_ks_threshold_has_power(samples):
    # The KS check must be able to see a plausible sampler bug: drawing the scale from
    # (0.12, 1.0) instead of (0.08, 1.0), or the aspect uniformly instead of log-uniformly.
    ours, _ = samples(500, 375, (0.08, 1.0), (3 / 4, 4 / 3), 20000)
    n = 10000
    limit = ks_threshold(len(ours), n)
    fo = features(ours, 500, 375)
    wrong_scale = features(stoker_crops(500, 375, (0.12, 1.0), (3 / 4, 4 / 3), n=n, seed=5),
                           500, 375)
    assert ks_statistic(fo["area_fraction"], wrong_scale["area_fraction"]) > limit
    # A uniform-in-aspect sampler, vectorised (torchvision's logic otherwise).
    rng = np.random.default_rng(3)
    area = 500 * 375 * rng.uniform(0.08, 1.0, n)
    aspect = rng.uniform(3 / 4, 4 / 3, n)
    w, h = np.rint(np.sqrt(area * aspect)), np.rint(np.sqrt(area / aspect))
    ok = (w <= 500) & (h <= 375)
    d = ks_statistic(fo["log_aspect"][fo["area_fraction"] < 0.5],
                     np.log(w / h)[ok & (w * h / (500 * 375) < 0.5)])
    assert d > ks_threshold(len(ours), int(ok.sum()))


def test_invalid_parameters_rejected(small_root):
    # Refused when made (as torchvision refuses them), naming the argument and its range.
    for make, match in ((lambda: stoker.RandomResizedCrop(32, scale=(0.9, 0.1)),
                         r"scale must be a pair \(min, max\) .*0 < min <= max, got \(0.9, 0.1\)"),
                        (lambda: stoker.RandomResizedCrop(32, ratio=(2.0, 1.0)), "ratio must be"),
                        (lambda: stoker.RandomResizedCrop(32, scale=(0.0, 1.0)), "scale must be"),
                        (lambda: stoker.RandomResizedCrop(0), r"size must be .* > 0, got 0")):
        with pytest.raises(ValueError, match="RandomResizedCrop: " + match):
            make()
