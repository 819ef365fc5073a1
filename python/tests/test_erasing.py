"""RandomErasing on the output tensor: its parameters follow torchvision's get_params
(two-sample KS over 10,000 draws on the erased height, width and position, binomial test of
p), the erased box is 0 and nothing else changes, in every dtype and layout, and output is
the same for any thread count."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torchvision.transforms as T

import stoker
from conftest import MEAN, STD, collect

N = 10000
H, W = 32, 40


def ks_statistic(a, b) -> float:
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def ks_threshold(n: int, m: int, alpha: float = 1e-3) -> float:
    return math.sqrt(-0.5 * math.log(alpha / 2)) * math.sqrt((n + m) / (n * m))


@pytest.fixture(scope="module")
def flat_npy(tmp_path_factory):
    d = tmp_path_factory.mktemp("flat")
    np.save(d / "x.npy", np.full((N // 2, H, W, 3), 10, np.uint8))
    np.save(d / "y.npy", np.zeros(N // 2, np.int64))
    return stoker.Npy(images=str(d / "x.npy"), labels=str(d / "y.npy"))


def boxes(x):
    """(applied, i, j, h, w) per image of a [B, 3, H, W] uint8 batch."""
    out = []
    for img in (x[:, 0] == 0).numpy():
        rows, cols = np.flatnonzero(img.any(1)), np.flatnonzero(img.any(0))
        if len(rows) == 0:
            out.append((0, -1, -1, 0, 0))
        else:
            i, j = rows[0], cols[0]
            h, w = rows[-1] - i + 1, cols[-1] - j + 1
            assert img.sum() == h * w  # a filled rectangle
            out.append((1, i, j, h, w))
    return np.array(out)


def test_parameters_follow_torchvision(flat_npy):
    p, scale, ratio = 0.7, (0.05, 0.4), (0.4, 2.5)
    loader = stoker.Loader(flat_npy, batch_size=1000, dtype="uint8",
                           transforms=[stoker.Resize((H, W)),
                                       stoker.RandomErasing(p, scale, ratio)])
    got = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        for x, _ in loader:
            assert set(np.unique(x.numpy())) <= {0, 10}
            got.append(boxes(x))
    got = np.concatenate(got)
    applied = got[got[:, 0] == 1]
    assert abs(len(applied) - N * p) < 4.5 * math.sqrt(N * p * (1 - p))
    torch.manual_seed(0)
    img = torch.zeros(3, H, W)
    ref = []
    for _ in range(N):
        i, j, h, w, _ = T.RandomErasing.get_params(img, scale, ratio, [0.0])
        if h < H:  # the fallback (whole image, erased with itself) changes nothing
            ref.append((i, j, h, w))
    ref = np.array(ref)
    for k in range(4):
        assert ks_statistic(applied[:, 1 + k], ref[:, k]) < ks_threshold(len(applied), len(ref)), k


@pytest.mark.parametrize("dtype,layout", [("float32", "NCHW"), ("float16", "NHWC"),
                                          ("bfloat16", "NCHW")])
def test_erased_box_is_zero_after_normalize(small_root, dtype, layout):
    folder = stoker.ImageFolder(small_root)
    base = [stoker.Resize((24, 20)), stoker.Normalize(MEAN, STD)]
    plain = collect(stoker.Loader(folder, batch_size=8, dtype=dtype, layout=layout,
                                  transforms=base), indexed=False)[0]
    erased = collect(stoker.Loader(folder, batch_size=8, dtype=dtype, layout=layout,
                                   transforms=base + [stoker.RandomErasing(p=1.0)]),
                     indexed=False)[0]
    diff = plain != erased
    changed = diff.flatten(1).any(1)
    assert changed.float().mean() > 0.5
    assert (erased[diff] == 0).all()  # only zeros were written


def test_independent_of_threads(small_root):
    folder = stoker.ImageFolder(small_root)
    t = [stoker.RandomResizedCrop(32), stoker.TrivialAugmentWide(), stoker.Normalize(MEAN, STD),
         stoker.RandomErasing(0.5)]
    runs = [collect(stoker.Loader(folder, batch_size=5, shuffle=True, seed=3, threads=n,
                                  transforms=t), indexed=False)[0] for n in (1, 2)]
    assert torch.equal(runs[0], runs[1])


def test_unsupported_value():
    with pytest.raises(ValueError, match="value"):
        stoker.RandomErasing(value="random")
    with pytest.raises(ValueError, match="value"):
        stoker.RandomErasing(value=1.0)
    assert "RandomErasing(p=0.5" in repr(stoker.RandomErasing())
