"""Photometric ops against torchvision's functional ops on PIL images.

Each op is applied with fixed parameters to generated photo-like images (and
a few flat / tiny ones) by stoker (stoker._C._color_op: the C++ op the
pipeline runs) and by torchvision.transforms.functional on the PIL image.
Tolerance per op (max absolute difference in uint8 levels):
  brightness, contrast, saturation, sharpness: 0 -- the same float32 blend
    (Image.blend: in1 + alpha * (in2 - in1), truncated, clipped when
    extrapolating), the same luma (rgb2l), the same rounded contrast mean, the
    same SMOOTH 3x3 filter in float32 with copied borders;
  grayscale, autocontrast, equalize, posterize, solarize: 0 -- integer tables;
  hue: 0 -- Pillow's own rgb2hsv / hsv2rgb float/double expressions and
    numpy's uint8 wrap of hue_factor * 255.
"""

from __future__ import annotations

import numpy as np
import pytest
import torchvision.transforms.functional as F
from PIL import Image

import stoker
from conftest import photo

# 320 x 256: over 65536 pixels, where saturation blends through a (luma, value) table.
IMAGES = [photo(224, 224, 1), photo(97, 61, 2), photo(160, 120, 3), photo(3, 3, 4),
          photo(1, 5, 5), np.full((16, 16, 3), 77, np.uint8), photo(320, 256, 6)]

CASES = [
    ("brightness", F.adjust_brightness, [0.0, 0.4, 0.77, 1.0, 1.3, 2.5]),
    ("contrast", F.adjust_contrast, [0.0, 0.5, 0.9, 1.2, 1.9]),
    ("saturation", F.adjust_saturation, [0.0, 0.3, 1.0, 1.4, 3.0]),
    ("hue", F.adjust_hue, [-0.5, -0.27, -0.05, 0.0, 0.01, 0.2, 0.5]),
    ("sharpness", F.adjust_sharpness, [0.0, 0.5, 1.0, 2.0, 4.0]),
    ("posterize", F.posterize, [1, 2, 4, 7, 8]),
    ("solarize", F.solarize, [0, 64, 128, 200, 256]),
]


def reference(fn, img, arg):
    out = fn(Image.fromarray(img), arg) if arg is not None else fn(Image.fromarray(img))
    return np.asarray(out.convert("RGB"), dtype=np.uint8)


def check(op, fn, img, arg):
    ref = reference(fn, img, arg)
    out = stoker._C._color_op(op, np.ascontiguousarray(img), 0.0 if arg is None else arg)
    diff = np.abs(ref.astype(int) - out.astype(int))
    assert diff.max() == 0, (f"{op}({arg}) on {img.shape}: max diff {diff.max()}, "
                             f"{int((diff.max(2) > 0).sum())} pixels differ")


@pytest.mark.parametrize("op,fn,args", CASES, ids=[c[0] for c in CASES])
def test_parametrised_ops_match_pillow(op, fn, args):
    for img in IMAGES:
        for arg in args:
            check(op, fn, img, arg)


@pytest.mark.parametrize("op,fn", [
    ("grayscale", lambda im: F.rgb_to_grayscale(im, num_output_channels=3)),
    ("autocontrast", F.autocontrast),
    ("equalize", F.equalize),
], ids=["grayscale", "autocontrast", "equalize"])
def test_parameterless_ops_match_pillow(op, fn):
    for img in IMAGES:
        check(op, fn, img, None)


def test_hue_over_all_colours():
    # Every 8-bit RGB value on a coarse lattice plus its neighbours: the HSV round trip.
    v = np.arange(0, 256, 5, dtype=np.uint8)
    r, g, b = np.meshgrid(v, v, v, indexing="ij")
    img = np.stack([r, g, b], -1).reshape(-1, len(v), 3)
    for hue in (-0.4, 0.13, 0.37):
        check("hue", F.adjust_hue, img, hue)


@pytest.mark.parametrize("k", [3, 9, 23])
def test_gaussian_blur_within_one_level(k):
    # torchvision blurs PIL images on the tensor path (conv2d in float32, then round);
    # stoker's separable float32 sums round the other way only on .5 boundaries: <= 1 level.
    for img in IMAGES[:3]:
        if min(img.shape[:2]) <= k // 2:
            continue  # torch's reflect padding needs the image larger than the radius
        for sigma in (0.3, 1.1, 2.7):
            ref = np.asarray(F.gaussian_blur(Image.fromarray(img), [k, k], [sigma, sigma]))
            out = stoker._C._color_op(f"gaussian_blur_{k}", np.ascontiguousarray(img), sigma)
            diff = np.abs(ref.astype(int) - out.astype(int))
            assert diff.max() <= 1, (k, sigma, diff.max())
            assert (diff == 0).mean() > 0.99, (k, sigma, (diff == 0).mean())


def test_gaussian_blur_transform_arguments():
    # torchvision's order, (width, height), as given (the engine stores it as (height, width):
    # test_gaussian_blur_non_square_kernel_matches_torchvision checks the pixels).
    assert "kernel_size=(3, 5)" in repr(stoker.GaussianBlur((3, 5), sigma=1.0))
    with pytest.raises(ValueError, match="odd"):
        stoker.GaussianBlur(4)
    with pytest.raises(ValueError, match="sigma"):
        stoker.GaussianBlur(3, sigma=(2.0, 1.0))


def test_gaussian_blur_non_square_kernel_matches_torchvision(tmp_path):
    # kernel_size is torchvision's (width, height): a 3 wide, 9 tall kernel blurs vertically
    # more; through the Loader, on PNGs (no resampling: the images keep their size).
    import torch
    import torchvision.datasets as tvd
    import torchvision.transforms as T
    from conftest import collect
    (tmp_path / "a").mkdir()
    for k in range(3):
        Image.fromarray(photo(40, 30, 70 + k)).save(tmp_path / "a" / f"{k}.png")
    tv = T.Compose([T.CenterCrop((30, 40)), T.GaussianBlur((3, 9), sigma=1.7), T.PILToTensor()])
    ref = torch.stack([x for x, _ in tvd.ImageFolder(str(tmp_path), tv)])
    out = collect(stoker.Loader(stoker.ImageFolder(str(tmp_path)), batch_size=4, dtype="uint8",
                                transforms=[stoker.CenterCrop((30, 40)),
                                            stoker.GaussianBlur((3, 9), sigma=1.7)],
                                return_indices=True))[0]
    diff = (ref.int() - out.int()).abs()
    assert diff.max() <= 1 and (diff == 0).float().mean() > 0.99
    swapped = collect(stoker.Loader(stoker.ImageFolder(str(tmp_path)), batch_size=4,
                                    dtype="uint8",
                                    transforms=[stoker.CenterCrop((30, 40)),
                                                stoker.GaussianBlur((9, 3), sigma=1.7)],
                                    return_indices=True))[0]
    assert (ref.int() - swapped.int()).abs().max() > 1


def test_random_invert_matches_torchvision(tmp_path):
    # p=1: ImageOps.invert after the crop, as torchvision's RandomInvert on PIL; p=0: nothing.
    import torch
    import torchvision.datasets as tvd
    import torchvision.transforms as T
    from conftest import collect
    (tmp_path / "a").mkdir()
    for k in range(40):
        Image.fromarray(photo(24, 18, 200 + k)).save(tmp_path / "a" / f"{k:02d}.png")
    root = str(tmp_path)

    def run(transforms, **kw):
        loader = stoker.Loader(stoker.ImageFolder(root), batch_size=8, dtype="uint8",
                               transforms=transforms, return_indices=True, **kw)
        x, _, ids = collect(loader)
        return x[ids.argsort()]  # in index order

    ref = torch.stack([x for x, _ in tvd.ImageFolder(
        root, T.Compose([T.RandomResizedCrop(16, scale=(1, 1), ratio=(4 / 3, 4 / 3)),
                         T.RandomInvert(p=1.0), T.PILToTensor()]))])
    # A full-image RandomResizedCrop: the same resize, then the inversion.
    crop = stoker.RandomResizedCrop(16, scale=(1, 1), ratio=(4 / 3, 4 / 3))
    assert torch.equal(ref, run([crop, stoker.RandomInvert(p=1.0)]))
    plain = run([crop])
    assert torch.equal(plain, run([crop, stoker.RandomInvert(0.0)]))
    # p=0.5: each sample is the image or its inverse, drawn from (seed, epoch, index): the same
    # for any thread count, about half inverted.
    half = [run([crop, stoker.RandomInvert()], shuffle=True, seed=4, threads=n) for n in (1, 3)]
    assert torch.equal(half[0], half[1])
    inverted = (half[0] == 255 - plain).flatten(1).all(1)
    untouched = (half[0] == plain).flatten(1).all(1)
    assert bool((inverted | untouched).all())
    assert 8 <= int(inverted.sum()) <= 32  # 40 draws of p=0.5 (binomial: > 4 sigma)
    assert repr(stoker.RandomInvert()) == "RandomInvert(p=0.5)"
    with pytest.raises(ValueError, match=r"RandomInvert: p must be a number in \[0, 1\], got 2"):
        stoker.RandomInvert(2)
