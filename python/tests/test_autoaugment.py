"""TrivialAugmentWide and RandAugment against torchvision.

Op by op: stoker._C._aug_op (the C++ op the pipeline runs) against torchvision's own
autoaugment._apply_op(PIL image, op, magnitude, NEAREST, fill) for every magnitude bin
of both tables, both signs, on square and non-square generated images. Tolerance 0 for
every op: the warps replicate Pillow's nearest-neighbour affine transform (its
ScaleAffine / 16.16 fixed-point paths and the rotate shortcuts) and torchvision's
inverse-matrix expressions in double; the photometric ops are Pillow's arithmetic.

Draws: op frequencies (chi-square over 20,000 draws, uniform over 14 like
torch.randint), bins (uniform over 31) and signs (1/2) follow torchvision's forward();
every drawn magnitude is one of torchvision's table values (within 2 float32 ulps:
torch.linspace's own values depend on its CPU kernel's vectorisation).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import _apply_op

import stoker
from conftest import MEAN, STD, collect, photo

OPS = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness",
       "Color", "Contrast", "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize"]
IMAGES = [photo(64, 64, 21), photo(57, 40, 22), photo(33, 71, 23)]


def tv_tables(bins, h, w):
    wide = T.TrivialAugmentWide(bins)._augmentation_space(bins)
    ra = T.RandAugment(num_magnitude_bins=bins)._augmentation_space(bins, (h, w))
    return wide, ra


@pytest.mark.parametrize("h,w", [(64, 64), (40, 57)])
def test_magnitude_tables_equal_torchvision(h, w):
    wide, ra = tv_tables(31, h, w)
    for is_wide, space in ((True, wide), (False, ra)):
        ours = np.asarray(stoker._C._aug_magnitudes(31, is_wide, w, h))
        assert list(space.keys()) == OPS
        for k, (name, (mags, _)) in enumerate(space.items()):
            if mags.ndim == 0:
                assert np.isnan(ours[k]).all(), name
            else:
                ref = mags.numpy()
                if ref.dtype != np.float32:  # Posterize: integers, exact
                    assert np.array_equal(ours[k], ref), (name, ours[k], ref)
                    continue
                # torch.linspace's float32 values depend on how its CPU kernel vectorises
                # (chunks count up from different bases); stoker uses the scalar formula.
                ulps = np.abs(ours[k].astype(np.float32).view(np.int32).astype(np.int64) -
                              ref.view(np.int32).astype(np.int64))
                assert ulps.max() <= 2, (name, ours[k], ref)


def reference(img, op, magnitude, fill=None):
    out = _apply_op(Image.fromarray(img), op, magnitude, InterpolationMode.NEAREST, fill)
    return np.asarray(out, dtype=np.uint8)


@pytest.mark.parametrize("op", OPS)
def test_each_op_is_bit_identical_to_torchvision_apply_op(op):
    checked = 0
    for img in IMAGES:
        h, w = img.shape[:2]
        wide, ra = tv_tables(31, h, w)
        for space in (wide, ra):
            mags, signed = space[op]
            values = [0.0] if mags.ndim == 0 else [float(m) for m in mags.tolist()]
            for m in values:
                for s in ((1.0, -1.0) if signed else (1.0,)):
                    ref = reference(img, op, s * m)
                    out = stoker._C._aug_op(op, np.ascontiguousarray(img), s * m)
                    diff = np.abs(ref.astype(int) - out.astype(int))
                    assert diff.max() == 0, (f"{op}({s * m}) on {img.shape}: max diff "
                                             f"{diff.max()}, {(diff.max(2) > 0).sum()} px")
                    checked += 1
    assert checked >= 3


@pytest.mark.parametrize("op,m", [("Rotate", 90.0), ("Rotate", -90.0), ("Rotate", 33.0),
                                  ("ShearX", 0.7), ("TranslateY", -20.0)])
def test_warps_with_fill(op, m):
    for img in IMAGES:
        ref = reference(img, op, m, fill=[10, 200, 30])
        out = stoker._C._aug_op(op, np.ascontiguousarray(img), m, [10, 200, 30])
        assert np.array_equal(ref, out), (op, m, img.shape)


WARPS = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"]
CODES = {InterpolationMode.NEAREST: 0, InterpolationMode.BILINEAR: 2,
         InterpolationMode.BICUBIC: 3}


@pytest.mark.parametrize("mode", [InterpolationMode.BILINEAR, InterpolationMode.BICUBIC])
@pytest.mark.parametrize("op", WARPS)
def test_warps_are_bit_identical_with_bilinear_and_bicubic(op, mode):
    # The recipe's setting (TrivialAugmentWide(interpolation=BILINEAR)): every magnitude
    # of both tables, both signs, 12 images of different sizes and contents, with and
    # without fill, against torchvision 0.14's _apply_op on PIL.
    images = [photo(w, h, 300 + k) for k, (w, h) in enumerate(
        [(64, 64), (57, 40), (33, 71), (96, 80), (17, 23), (128, 45)] * 2)]
    checked = 0
    for k, img in enumerate(images):
        h, w = img.shape[:2]
        fill = None if k % 2 == 0 else [10 + k, 200, 30]
        wide, ra = tv_tables(31, h, w)
        for space in (wide, ra):
            mags, _ = space[op]
            for m in [float(v) for v in mags.tolist()][k % 3::3]:
                for s in (1.0, -1.0):
                    ref = np.asarray(_apply_op(Image.fromarray(img), op, s * m, mode, fill),
                                     dtype=np.uint8)
                    out = stoker._C._aug_op(op, np.ascontiguousarray(img), s * m,
                                            fill or [0, 0, 0], CODES[mode])
                    diff = np.abs(ref.astype(int) - out.astype(int))
                    assert diff.max() == 0, (f"{op}({s * m}, {mode.name}) on {img.shape}: "
                                             f"max diff {diff.max()}, "
                                             f"{(diff.max(2) > 0).sum()} px")
                    checked += 1
    assert checked >= 200


@pytest.mark.parametrize("mode", [InterpolationMode.BILINEAR, InterpolationMode.BICUBIC])
def test_policies_with_interpolation_in_the_pipeline(small_root, mode):
    # The interpolation reaches the policies' warps: the same draws as NEAREST, other
    # pixels on the warped samples; identical for any thread count.
    folder = stoker.ImageFolder(small_root)
    for policy in (stoker.TrivialAugmentWide, stoker.RandAugment, stoker.AutoAugment):
        def run(p, threads):
            return collect(stoker.Loader(folder, batch_size=5, shuffle=True, seed=7,
                                         threads=threads, dtype="uint8",
                                         transforms=[stoker.Resize((48, 48)), p]),
                           indexed=False)[0]
        ours = [run(policy(interpolation=mode), t) for t in (1, 2)]
        assert torch.equal(ours[0], ours[1])
        nearest = run(policy(), 2)
        assert not torch.equal(ours[0], nearest), policy


N = 20000


def chi2_sf(x: float, k: int) -> float:
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def chi2_uniform(counts) -> float:
    counts = np.asarray(counts, float)
    e = counts.sum() / len(counts)
    return chi2_sf(float(((counts - e) ** 2 / e).sum()), len(counts) - 1)


def test_trivial_augment_draws_follow_torchvision():
    draws = np.asarray(stoker._C._sample_aug_policy(stoker.TrivialAugmentWide(), 64, 64, 3, N))
    ops = draws[:, 0, 0].astype(int)
    mags = draws[:, 0, 1]
    assert chi2_uniform(np.bincount(ops, minlength=14)) > 1e-3
    wide, _ = tv_tables(31, 64, 64)
    for k, name in enumerate(OPS):
        table, signed = wide[name]
        sel = mags[ops == k]
        if table.ndim == 0:
            assert (sel == 0).all(), name
            continue
        values = table.double().numpy()
        near = np.abs(np.abs(sel)[:, None] - values[None, :])
        bins = near.argmin(1)
        assert (near.min(1) <= 2.5e-7 * np.maximum(1, values.max())).all(), name
        # Bins are uniform: each distinct table value (Posterize repeats values) is drawn
        # with probability multiplicity / 31 (chi-square goodness of fit, on |m|).
        uniq, first, mult = np.unique(values, return_index=True, return_counts=True)
        got = np.array([(values[bins] == u).sum() for u in uniq], float)
        exp = mult / len(values) * len(sel)
        assert chi2_sf(float(((got - exp) ** 2 / exp).sum()), len(uniq) - 1) > 1e-3, name
        if signed:
            nz = sel[sel != 0]
            neg = int((nz < 0).sum())
            assert abs(neg - len(nz) / 2) < 4.5 * math.sqrt(len(nz) / 4), name


def test_rand_augment_draws_follow_torchvision():
    t = stoker.RandAugment(num_ops=3, magnitude=7)
    draws = np.asarray(stoker._C._sample_aug_policy(t, 57, 40, 5, N))
    ops = draws[:, :, 0].astype(int).ravel()
    mags = draws[:, :, 1].ravel()
    assert chi2_uniform(np.bincount(ops, minlength=14)) > 1e-3
    _, ra = tv_tables(31, 40, 57)
    for k, name in enumerate(OPS):
        table, signed = ra[name]
        sel = mags[ops == k]
        expected = 0.0 if table.ndim == 0 else float(table[7])
        assert np.allclose(np.abs(sel), expected, rtol=3e-7, atol=0), name
        if signed and expected != 0:
            neg = int((sel < 0).sum())
            assert abs(neg - len(sel) / 2) < 4.5 * math.sqrt(len(sel) / 4), name


def test_policies_in_the_pipeline(small_root):
    folder = stoker.ImageFolder(small_root)
    for policy in (stoker.TrivialAugmentWide(), stoker.RandAugment(), stoker.AutoAugment(),
                   stoker.TrivialAugmentWide(fill=128)):
        transforms = [stoker.RandomResizedCrop(48), stoker.RandomHorizontalFlip(), policy,
                      stoker.Normalize(MEAN, STD)]
        runs = [collect(stoker.Loader(folder, batch_size=5, shuffle=True, seed=7, threads=t,
                                      transforms=transforms), indexed=False)[0]
                for t in (1, 2)]
        assert torch.equal(runs[0], runs[1])
        plain = [t for t in transforms if not t.photometric]
        other = collect(stoker.Loader(folder, batch_size=5, shuffle=True, seed=7, threads=2,
                                      transforms=plain), indexed=False)[0]
        assert not torch.equal(runs[0], other)


def test_policy_arguments():
    assert "TrivialAugmentWide(num_magnitude_bins=31" in repr(stoker.TrivialAugmentWide())
    assert "RandAugment(num_ops=2, magnitude=9" in repr(stoker.RandAugment())
    for policy in (stoker.TrivialAugmentWide, stoker.RandAugment, stoker.AutoAugment):
        with pytest.raises(ValueError, match="NEAREST, BILINEAR or BICUBIC"):
            policy(interpolation=InterpolationMode.LANCZOS)
        for mode in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR,
                     InterpolationMode.BICUBIC):
            assert mode.name in repr(policy(interpolation=mode))
    with pytest.raises(ValueError, match="fill"):
        stoker.RandAugment(fill=[1, 2])


def test_rand_augment_magnitude_out_of_range_is_refused(small_root):
    with pytest.raises(ValueError, match="magnitude"):
        stoker.Loader(stoker.ImageFolder(small_root), batch_size=4,
                      transforms=[stoker.Resize((8, 8)), stoker.RandAugment(magnitude=31)])


def test_invert_is_bit_identical():
    for img in IMAGES:
        assert np.array_equal(reference(img, "Invert", 0.0),
                              stoker._C._aug_op("Invert", np.ascontiguousarray(img), 0.0))


def test_auto_augment_imagenet_draws_follow_torchvision():
    aa = T.AutoAugment()  # ImageNet policy
    draws = np.asarray(stoker._C._sample_aug_policy(stoker.AutoAugment(), 57, 40, 9, N))
    ops = draws[:, :, 0]
    mags = draws[:, :, 1]
    names = OPS + ["Invert"]
    space = aa._augmentation_space(10, (40, 57))
    allowed = set()
    for sub in aa.policies:
        for name, _, mid in sub:
            table, _ = space[name]
            allowed.add((name, 0.0 if mid is None else round(float(table[mid]), 4)))
    for op, m in zip(ops.ravel(), mags.ravel()):
        if not np.isnan(op):
            assert (names[int(op)], round(abs(float(m)), 4)) in allowed
    # Occurrences of each op per draw: mean and variance exactly from the policy table.
    for x, name in enumerate(names):
        mean = sq = 0.0
        for (n1, p1, _), (n2, p2, _) in aa.policies:
            a1, a2 = float(n1 == name), float(n2 == name)
            mean += (a1 * p1 + a2 * p2) / 25
            sq += (a1 * p1 + a2 * p2 + 2 * a1 * a2 * p1 * p2) / 25
        var = sq - mean ** 2
        count = int((ops == x).sum())
        if var == 0:
            assert count == 0, name
            continue
        assert abs(count - N * mean) < 4.5 * math.sqrt(N * var), (name, count, N * mean)
    # Signs of the signed ops (Rotate, ShearX, Color, Contrast, ...): half negative.
    rot = mags[ops == names.index("Rotate")]
    assert abs(int((rot < 0).sum()) - len(rot) / 2) < 4.5 * math.sqrt(len(rot) / 4)


def test_auto_augment_policy_argument():
    stoker.AutoAugment(T.AutoAugmentPolicy.IMAGENET)
    with pytest.raises(ValueError, match="ImageNet"):
        stoker.AutoAugment(T.AutoAugmentPolicy.CIFAR10)
    assert "AutoAugment(policy=IMAGENET" in repr(stoker.AutoAugment())
