"""RandomRotation, RandomAffine and RandomPerspective: the warps with fixed parameters against
torchvision's F.rotate / F.affine / F.perspective on PIL images (tolerance per op below), the
random parameters against torchvision's get_params (two-sample KS / chi-square over 10,000
draws), their place in a Loader (bit-identical to torchvision with a fixed angle, the same
output for any thread count) and the errors for what is not supported.

Tolerances:
- F.rotate and F.affine, NEAREST, BILINEAR and BICUBIC: 0 (Pillow's nearest engine, 16.16
  fixed point included, and its bilinear/bicubic_filter32RGB in doubles are replicated).
- F.perspective with torchvision's own coefficients: 0 (the same Pillow engine).
- F.perspective from the points: the coefficients are solved in double and rounded to float32
  (what torchvision >= 0.15 does; equal to torch's float64 lstsq rounded to float32, tested
  here); torchvision 0.14 solves in float32 (LAPACK sgels), whose solution is a few float32 ulps
  away, so a few pixels move (at most 1% of an image here, where they do any value can change).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.transforms import InterpolationMode as IM

import stoker
from stoker import _C
from conftest import coeffs_f64, collect, photo, save_jpeg

N = 10000
SHAPES = [(64, 48), (37, 53), (40, 40), (31, 29), (97, 71)]
INTERP = [(IM.NEAREST, 0), (IM.BILINEAR, 2), (IM.BICUBIC, 3)]


def ks_statistic(a, b) -> float:
    a, b = np.sort(np.asarray(a, np.float64)), np.sort(np.asarray(b, np.float64))
    allv = np.concatenate([a, b])
    return float(np.max(np.abs(np.searchsorted(a, allv, side="right") / len(a)
                               - np.searchsorted(b, allv, side="right") / len(b))))


def ks_threshold(n: int, m: int, alpha: float = 1e-3) -> float:
    return math.sqrt(-0.5 * math.log(alpha / 2)) * math.sqrt((n + m) / (n * m))


def chi2_sf(x: float, k: int) -> float:
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def same_distribution_counts(a, b) -> float:
    """Two-sample chi-square homogeneity p-value for integer samples of equal size."""
    values = np.union1d(a, b)
    ca = np.array([(a == v).sum() for v in values], np.float64)
    cb = np.array([(b == v).sum() for v in values], np.float64)
    keep = ca + cb > 0
    x = float((((ca - cb) ** 2)[keep] / (ca + cb)[keep]).sum())
    k = int(keep.sum()) - 1
    return 1.0 if k <= 0 else chi2_sf(max(x, 1e-12), k)


def images():
    for k, (w, h) in enumerate(SHAPES):
        yield photo(w, h, 900 + k)


# -- fixed parameters vs torchvision -------------------------------------------------------

@pytest.mark.parametrize("interp,code", INTERP)
def test_rotate_is_bit_identical_to_torchvision(interp, code):
    rng = np.random.default_rng(1)
    angles = [0.0, 90.0, 180.0, 270.0, -90.0, 360.0, 45.0, 17.0, -33.3, 135.0, 1e-3]
    for img in images():
        pil = Image.fromarray(img)
        h, w = img.shape[:2]
        for a in angles + [float(np.float32(rng.uniform(-180, 180))) for _ in range(20)]:
            fill = [int(v) for v in rng.integers(0, 256, 3)]
            ref = np.asarray(F.rotate(pil, a, interp, fill=fill))
            assert np.array_equal(ref, _C._warp_op("rotate", img, [a], code, fill)), (w, h, a)
            c = [float(rng.integers(0, w)), float(rng.integers(0, h))]
            ref = np.asarray(F.rotate(pil, a, interp, center=c, fill=fill))
            out = _C._warp_op("rotate", img, [a] + c, code, fill)
            assert np.array_equal(ref, out), (w, h, a, c)


@pytest.mark.parametrize("interp,code", INTERP)
def test_affine_is_bit_identical_to_torchvision(interp, code):
    rng = np.random.default_rng(2)
    for img in images():
        pil = Image.fromarray(img)
        h, w = img.shape[:2]
        cases = [(0.0, 0, 0, 1.0, 0.0, 0.0), (0.0, 5, -3, 1.0, 0.0, 0.0),
                 (0.0, 0, 0, 0.5, 0.0, 0.0), (0.0, 0, 0, 1.7, 0.0, 0.0),
                 (30.0, 0, 0, 1.0, 0.0, 0.0), (0.0, 0, 0, 1.0, 20.0, 0.0),
                 (0.0, 0, 0, 1.0, 0.0, -25.0)]
        for _ in range(25):
            f32 = lambda lo, hi: float(np.float32(rng.uniform(lo, hi)))  # noqa: E731
            cases.append((f32(-180, 180), int(rng.integers(-12, 13)), int(rng.integers(-12, 13)),
                          f32(0.6, 1.4), f32(-40, 40), f32(-40, 40)))
        for a, tx, ty, sc, sx, sy in cases:
            fill = [int(v) for v in rng.integers(0, 256, 3)]
            ref = np.asarray(F.affine(pil, a, [tx, ty], sc, [sx, sy], interp, fill=fill))
            out = _C._warp_op("affine", img, [a, tx, ty, sc, sx, sy], code, fill)
            assert np.array_equal(ref, out), (w, h, a, tx, ty, sc, sx, sy)
            c = [float(rng.integers(0, w)), float(rng.integers(0, h))]
            ref = np.asarray(F.affine(pil, a, [tx, ty], sc, [sx, sy], interp, fill=fill,
                                      center=c))
            out = _C._warp_op("affine", img, [a, tx, ty, sc, sx, sy] + c, code, fill)
            assert np.array_equal(ref, out), (w, h, a, tx, ty, sc, sx, sy, c)


def random_endpoints(rng, w, h, d=0.5):
    dx, dy = int(d * (w // 2)), int(d * (h // 2))
    ri = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    return [[ri(0, dx + 1), ri(0, dy + 1)], [ri(w - dx - 1, w), ri(0, dy + 1)],
            [ri(w - dx - 1, w), ri(h - dy - 1, h)], [ri(0, dx + 1), ri(h - dy - 1, h)]]


def flat(points):
    return [float(v) for p in points for v in p]


@pytest.mark.parametrize("interp,code", INTERP)
def test_perspective_engine_and_coefficients(interp, code):
    rng = np.random.default_rng(3)
    worst, total, count = 0.0, 0.0, 0
    for img in images():
        pil = Image.fromarray(img)
        h, w = img.shape[:2]
        sp = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        for k in range(25):
            ep = random_endpoints(rng, w, h, 0.5 if k % 2 else 0.9)
            fill = [int(v) for v in rng.integers(0, 256, 3)]
            ref = np.asarray(F.perspective(pil, sp, ep, interp, fill=fill))
            # Pillow's engine, given torchvision's coefficients: exact.
            tv_coeffs = F._get_perspective_coeffs(sp, ep)
            assert np.array_equal(ref, _C._warp_op("perspective", img, tv_coeffs, code, fill))
            # stoker's coefficients = float64 lstsq rounded to float32: exact.
            ours = _C._warp_op("perspective", img, flat(sp) + flat(ep), code, fill)
            expect = _C._warp_op("perspective", img, coeffs_f64(sp, ep), code, fill)
            assert np.array_equal(expect, ours), (w, h, ep)
            # torchvision 0.14's float32 solve: a few pixels differ.
            frac = float((ref != ours).any(axis=2).mean())
            worst, total, count = max(worst, frac), total + frac, count + 1
    print(f"perspective vs torchvision 0.14: worst {worst:.4f}, mean {total / count:.5f}")
    assert worst <= 0.02 and total / count <= 0.003, (worst, total / count)


# -- random parameters vs get_params -------------------------------------------------------

def test_rotation_angle_follows_get_params():
    t = stoker.RandomRotation((-20, 45))
    ours = _C._sample_warp(t, 64, 48, 7, N)[:, 0]
    torch.manual_seed(0)
    ref = np.array([T.RandomRotation.get_params([-20.0, 45.0]) for _ in range(N)])
    assert ours.min() >= -20 and ours.max() <= 45
    assert np.array_equal(ours, ours.astype(np.float32))  # float32 draws, as torch's
    assert ks_statistic(ours, ref) < ks_threshold(N, N)
    # A wrong range is caught: the test can fail.
    assert ks_statistic(ours + 2.0, ref) > ks_threshold(N, N)


def test_affine_params_follow_get_params():
    w, h = 64, 48
    degrees, translate, scale, shear = [-10.0, 30.0], [0.1, 0.25], [0.8, 1.2], [-5.0, 8.0, -3.0, 4.0]
    t = stoker.RandomAffine(degrees, translate, scale, shear)
    ours = _C._sample_warp(t, w, h, 11, N)
    torch.manual_seed(1)
    ref = np.array([[p for v in T.RandomAffine.get_params(degrees, translate, scale, shear, [w, h])
                     for p in (v if isinstance(v, tuple) else (v,))] for _ in range(N)])
    assert ref.shape == ours.shape == (N, 6)
    for k in (0, 3, 4, 5):  # angle, scale, shear_x, shear_y: continuous
        assert ks_statistic(ours[:, k], ref[:, k]) < ks_threshold(N, N), k
    for k in (1, 2):  # translations: whole pixels, round half to even
        assert np.array_equal(ours[:, k], np.round(ours[:, k]))
        assert same_distribution_counts(ours[:, k], ref[:, k]) > 1e-4, k
    assert np.abs(ours[:, 1]).max() == round(0.1 * w) and np.abs(ours[:, 2]).max() == round(0.25 * h)


def test_affine_defaults_draw_no_translation_scale_or_shear():
    ours = _C._sample_warp(stoker.RandomAffine(15), 40, 30, 5, 1000)
    assert np.all(ours[:, 1:3] == 0) and np.all(ours[:, 3] == 1) and np.all(ours[:, 4:] == 0)
    ours = _C._sample_warp(stoker.RandomAffine(0, shear=12), 40, 30, 5, 1000)
    assert np.all(ours[:, 5] == 0) and ours[:, 4].min() < -10 and ours[:, 4].max() > 10


@pytest.mark.parametrize("w,h,d", [(64, 48, 0.5), (37, 53, 0.8), (30, 30, 0.0)])
def test_perspective_params_follow_get_params(w, h, d):
    t = stoker.RandomPerspective(distortion_scale=d, p=0.3)
    ours = _C._sample_warp(t, w, h, 13, N)
    applied = ours[:, 0] == 1
    # Binomial(N, 0.3): 5 sigma.
    assert abs(applied.sum() - 0.3 * N) < 5 * math.sqrt(N * 0.3 * 0.7)
    assert np.all(ours[~applied, 1:] == 0)
    pts = ours[applied, 1:]
    torch.manual_seed(2)
    ref = np.array([flat(T.RandomPerspective.get_params(w, h, d)[1]) for _ in range(len(pts))])
    for k in range(8):
        assert set(np.unique(pts[:, k])) == set(np.unique(ref[:, k])), k
        assert same_distribution_counts(pts[:, k], ref[:, k]) > 1e-4, k


# -- in the Loader --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("geom")
    (r / "a").mkdir()
    for k, (w, h) in enumerate([(80, 60), (50, 70), (64, 64), (45, 33)]):
        # PNG: lossless, so torchvision's PIL decode and stoker's give the same pixels.
        Image.fromarray(photo(w, h, 700 + k)).save(r / "a" / f"{k}.png")
    return str(r)


@pytest.mark.parametrize("tv,st", [
    (T.RandomRotation((23.5, 23.5), fill=(10, 200, 30)),
     stoker.RandomRotation((23.5, 23.5), fill=(10, 200, 30))),
    (T.RandomRotation((-41, -41), IM.BILINEAR, center=(5, 9)),
     stoker.RandomRotation((-41, -41), IM.BILINEAR, center=(5, 9))),
    (T.RandomAffine((12, 12), scale=(1.1, 1.1), shear=(7, 7, -4, -4), fill=77),
     stoker.RandomAffine((12, 12), scale=(1.1, 1.1), shear=(7, 7, -4, -4), fill=77)),
    (T.RandomAffine((-8, -8), scale=(0.9, 0.9), interpolation=IM.BILINEAR),
     stoker.RandomAffine((-8, -8), scale=(0.9, 0.9), interpolation=IM.BILINEAR)),
    (T.RandomRotation((61, 61), IM.BICUBIC, fill=5),
     stoker.RandomRotation((61, 61), IM.BICUBIC, fill=5)),
])
def test_fixed_warp_in_loader_is_bit_identical(root, tv, st):
    ds = tvd.ImageFolder(root, T.Compose([T.Resize((40, 48)), tv, T.PILToTensor()]))
    ref = torch.stack([ds[i][0] for i in range(len(ds))])
    out = collect(stoker.Loader(stoker.ImageFolder(root), batch_size=4, dtype="uint8",
                                transforms=[stoker.Resize((40, 48)), st],
                                return_indices=True))[0]
    assert torch.equal(ref, out)


@pytest.mark.parametrize("warp", [
    stoker.RandomRotation(40, interpolation=IM.BILINEAR),
    stoker.RandomAffine(20, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=10),
    stoker.RandomPerspective(0.6, p=0.7),
])
def test_warps_do_not_depend_on_thread_count(root, warp):
    def run(threads):
        return collect(stoker.Loader(
            stoker.ImageFolder(root), batch_size=2, dtype="uint8", seed=5, threads=threads,
            transforms=[stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(), warp,
                        stoker.ColorJitter(0.2)],
            return_indices=True))[0]
    one = run(1)
    assert torch.equal(one, run(3))
    plain = collect(stoker.Loader(
        stoker.ImageFolder(root), batch_size=2, dtype="uint8", seed=5, threads=1,
        transforms=[stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(),
                    stoker.ColorJitter(0.2)], return_indices=True))[0]
    assert not torch.equal(one, plain)  # the warp did something


def test_perspective_p0_is_identity(root):
    def run(extra):
        return collect(stoker.Loader(stoker.ImageFolder(root), batch_size=4, dtype="uint8",
                                     transforms=[stoker.Resize((30, 30))] + extra,
                                     return_indices=True))[0]
    assert torch.equal(run([]), run([stoker.RandomPerspective(p=0.0)]))


# -- errors ---------------------------------------------------------------------------------

def test_unsupported_arguments_raise_clear_errors(root):
    with pytest.raises(ValueError, match="expand must be False, got True"):
        stoker.RandomRotation(10, expand=True)
    for make in (lambda: stoker.RandomRotation(10, interpolation=IM.LANCZOS),
                 lambda: stoker.RandomAffine(10, interpolation=IM.BOX),
                 lambda: stoker.RandomPerspective(interpolation=IM.HAMMING)):
        with pytest.raises(ValueError, match="interpolation must be InterpolationMode.NEAREST, BILINEAR or BICUBIC"):
            make()
    with pytest.raises(ValueError, match=r"RandomRotation: degrees must be a number d >= 0 .*got -5"):
        stoker.RandomRotation(-5)
    with pytest.raises(ValueError, match=r"RandomAffine: shear must be .*2 or 4 numbers.*got \(1, 2, 3\)"):
        stoker.RandomAffine(0, shear=(1, 2, 3))
    with pytest.raises(ValueError, match=r"RandomAffine: translate must be None or a pair \(x, y\) of fractions in \[0, 1\]"):
        stoker.RandomAffine(0, translate=(0.5, 1.5))
    with pytest.raises(ValueError, match=r"RandomRotation: fill must be .* in \[0, 255\], got 300"):
        stoker.RandomRotation(5, fill=300)
    with pytest.raises(ValueError, match="distortion_scale"):
        stoker.RandomPerspective(1.5)
    # Before a crop: refused by the Loader, naming the order to use.
    with pytest.raises(ValueError, match="place RandomRotation after the crops"):
        stoker.Loader(stoker.ImageFolder(root), batch_size=2,
                      transforms=[stoker.RandomRotation(10), stoker.RandomResizedCrop(32)])
    with pytest.raises(ValueError, match="RandomHorizontalFlip.*follows RandomAffine"):
        stoker.Loader(stoker.ImageFolder(root), batch_size=2,
                      transforms=[stoker.Resize((32, 32)), stoker.RandomAffine(10),
                                  stoker.RandomHorizontalFlip()])
    # torchvision's own objects point to stoker's.
    with pytest.raises(TypeError, match="use stoker.RandomRotation"):
        stoker.Loader(stoker.ImageFolder(root), batch_size=2,
                      transforms=[stoker.Resize(32), T.RandomRotation(10)])
