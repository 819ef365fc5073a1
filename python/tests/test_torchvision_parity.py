"""stoker's deterministic pipelines against torchvision on PIL-decoded images.

torchvision's ImageFolder decodes with Pillow (convert("RGB")) and resizes
with Pillow's antialiased bilinear filter; stoker decodes with libjpeg/libpng
and reproduces that filter with its fixed-point rounding, so the results
must be bit-identical: every exact assertion here is a max-abs-diff of 0.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms as T
from PIL import Image

import stoker
from conftest import MEAN, PARITY_IMAGES, STD


def torchvision_batch(root, transforms, only=None):
    ds = tvd.ImageFolder(root, T.Compose(transforms))
    keep = [i for i in range(len(ds)) if only is None or only(ds.samples[i][0])]
    return ds, keep, torch.stack([ds[i][0] for i in keep])


def stoker_batch(root, transforms, keep=None, **kwargs):
    folder = stoker.ImageFolder(root)
    loader = stoker.Loader(folder, batch_size=7, transforms=transforms, return_indices=True,
                           **kwargs)
    images, ids = [], []
    for x, _, i in loader:
        images.append(x.clone())
        ids.append(i.clone())
    images, ids = torch.cat(images), torch.cat(ids)
    # Unshuffled: the loader yields the samples in index order.
    assert ids.tolist() == list(range(len(folder)))
    if keep is not None:
        images = images[keep]
    return images


def describe_mismatch(ds, keep, ref, out):
    """Per-image diagnostics for a failed exact comparison."""
    lines = []
    diff = (ref.to(torch.float64) - out.to(torch.float64)).abs()
    for n, i in enumerate(keep):
        d = diff[n]
        if d.max() > 0:
            ys, xs = torch.nonzero(d.amax(0), as_tuple=True)
            lines.append(f"{os.path.relpath(ds.samples[i][0], ds.root)}: max {d.max().item()} "
                         f"mean {d.mean().item():.4f} differing px {int((d.amax(0) > 0).sum())}"
                         f" first at (y={ys[0].item()}, x={xs[0].item()})")
    return "\n".join(lines)


def assert_exact(ds, keep, ref, out):
    assert ref.shape == out.shape, (ref.shape, out.shape)
    assert ref.dtype == out.dtype, (ref.dtype, out.dtype)
    if not torch.equal(ref, out):
        pytest.fail("stoker differs from torchvision:\n" + describe_mismatch(ds, keep, ref, out))


def test_parity_images_are_as_intended(parity_root):
    # The fixture must actually hold every flavour the parity tests claim to cover.
    modes = {}
    for cls, name, w, h, kind, option in PARITY_IMAGES:
        with Image.open(os.path.join(parity_root, cls, name)) as im:
            assert im.size == (w, h)
            modes.setdefault(cls, set()).add(im.mode)
            if kind == "jpeg":
                from PIL import JpegImagePlugin
                assert JpegImagePlugin.get_sampling(im) == option
    assert modes["e_cmyk"] == {"CMYK"}
    assert modes["d_grey"] == {"L"}
    assert modes["f_png"] == {"RGB", "RGBA", "L", "P"}


def test_decode_matches_pillow(parity_root):
    # The full-image decoder on its own: Pillow's open().convert("RGB").
    for cls, name, *_ in PARITY_IMAGES:
        path = os.path.join(parity_root, cls, name)
        with open(path, "rb") as f:
            data = f.read()
        got = stoker._C._decode(data)
        with Image.open(path) as im:
            want = np.asarray(im.convert("RGB"))
        assert got.shape == want.shape, (name, got.shape, want.shape)
        diff = np.abs(got.astype(int) - want.astype(int))
        assert diff.max() == 0, f"{cls}/{name}: max diff {diff.max()}, mean {diff.mean():.4f}"


def test_val_pipeline_uint8_exact(parity_root):
    ds, keep, ref = torchvision_batch(
        parity_root, [T.Resize(256), T.CenterCrop(224), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.Resize(256), stoker.CenterCrop(224)],
                       dtype="uint8", dct_scaling=False)
    assert out.shape == (len(PARITY_IMAGES), 3, 224, 224)
    assert_exact(ds, keep, ref, out)


def test_val_pipeline_float32_normalize_bit_identical(parity_root):
    ds, keep, ref = torchvision_batch(
        parity_root,
        [T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])
    out = stoker_batch(parity_root,
                       [stoker.Resize(256), stoker.CenterCrop(224), stoker.Normalize(MEAN, STD)],
                       dtype="float32", dct_scaling=False)
    assert out.dtype == torch.float32
    assert_exact(ds, keep, ref, out)


def test_float32_without_normalize_is_to_tensor(parity_root):
    ds, keep, ref = torchvision_batch(parity_root, [T.CenterCrop(96), T.ToTensor()])
    out = stoker_batch(parity_root, [stoker.CenterCrop(96)], dtype="float32")
    assert_exact(ds, keep, ref, out)


def test_center_crop_alone(parity_root):
    # Smaller than every image: a pure crop, no resampling.
    ds, keep, ref = torchvision_batch(parity_root, [T.CenterCrop(143), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.CenterCrop(143)], dtype="uint8")
    assert_exact(ds, keep, ref, out)


def test_center_crop_bigger_than_image_pads_with_zeros(parity_root):
    # (h=300, w=420): pads small images on both axes, portrait 375x500 on the width only
    # while cropping its height, and crops the large ones.
    ds, keep, ref = torchvision_batch(parity_root, [T.CenterCrop((300, 420)), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.CenterCrop((300, 420))], dtype="uint8")
    assert out.shape[-2:] == (300, 420)
    assert_exact(ds, keep, ref, out)
    # The padding is really there (and zero) for the 200x150 images.
    small = [n for n, i in enumerate(keep) if "200x150" in ds.samples[i][0]]
    assert small
    for n in small:
        assert out[n, :, :75].eq(0).all() and out[n, :, -75:].eq(0).all()
        assert out[n, :, :, :110].eq(0).all() and out[n, :, :, -110:].eq(0).all()
        assert out[n, :, 75:-75, 110:-110].ne(0).any()


def test_resize_upsampling_then_center_crop_bigger(parity_root):
    # Small images go through the upsampling path; the crop is bigger than the resized
    # 224x298 in width (pads) -- a two-step geometry.
    ds, keep, ref = torchvision_batch(
        parity_root, [T.Resize(224), T.CenterCrop((200, 320)), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.Resize(224), stoker.CenterCrop((200, 320))],
                       dtype="uint8", dct_scaling=False)
    assert_exact(ds, keep, ref, out)


def test_resize_hw_then_center_crop(parity_root):
    ds, keep, ref = torchvision_batch(
        parity_root, [T.Resize((240, 300)), T.CenterCrop((224, 280)), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.Resize((240, 300)), stoker.CenterCrop((224, 280))],
                       dtype="uint8", dct_scaling=False)
    assert out.shape[-2:] == (224, 280)
    assert_exact(ds, keep, ref, out)


def test_resize_hw_alone_odd_size(parity_root):
    ds, keep, ref = torchvision_batch(parity_root, [T.Resize((131, 97)), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.Resize((131, 97))], dtype="uint8",
                       dct_scaling=False)
    assert_exact(ds, keep, ref, out)


def test_center_crop_then_resize(parity_root):
    # Crop first, then resample the crop (the crop offset feeds the filter's window).
    ds, keep, ref = torchvision_batch(
        parity_root, [T.CenterCrop(180), T.Resize((64, 80)), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.CenterCrop(180), stoker.Resize((64, 80))],
                       dtype="uint8", dct_scaling=False)
    assert_exact(ds, keep, ref, out)


def test_dct_scaling_is_close_on_large_images(parity_root):
    # Resize(128) of a 1200x900 image is a ~7x downscale, so with dct_scaling=True the
    # JPEG is decoded at 1/4 scale in the DCT domain and then resampled. That is a
    # different (also antialiased) low-pass filter than Pillow's bilinear over full
    # resolution, so pixels differ slightly, mostly at hard edges. Measured on these
    # synthetic photos: mean abs diff 0.50-0.71 levels per image, max 25 levels (4:2:2
    # chroma at a sharp edge). The bound on the mean (1.5) leaves ~2x margin; the max is
    # bounded loosely (80) as it hinges on single edge pixels.
    large = lambda p: "1200" in os.path.basename(p)
    ds, keep, ref = torchvision_batch(
        parity_root, [T.Resize(128), T.CenterCrop(112), T.PILToTensor()], only=large)
    assert len(keep) == 5
    out_dct = stoker_batch(parity_root, [stoker.Resize(128), stoker.CenterCrop(112)],
                           keep=keep, dtype="uint8", dct_scaling=True)
    out_full = stoker_batch(parity_root, [stoker.Resize(128), stoker.CenterCrop(112)],
                            keep=keep, dtype="uint8", dct_scaling=False)
    # Without DCT scaling: exact, as everywhere else.
    assert_exact(ds, keep, ref, out_full)
    report = []
    for n, i in enumerate(keep):
        path = ds.samples[i][0]
        d = (ref[n].to(torch.float64) - out_dct[n].to(torch.float64)).abs()
        report.append(f"{os.path.relpath(path, ds.root)}: mean {d.mean().item():.3f} "
                      f"max {d.max().item():.0f}")
        if path.endswith(".png"):
            assert d.max().item() == 0, "PNGs have no DCT scaling: must stay exact"
            continue
        assert d.mean().item() < 1.5, "\n".join(report)
        assert d.max().item() <= 80, "\n".join(report)
        # The DCT path must really have been taken (otherwise this test checks nothing).
        assert d.mean().item() > 0.05, "\n".join(report)
    print("dct_scaling vs torchvision:\n" + "\n".join(report))


def test_nhwc_val_pipeline_matches_torchvision(parity_root):
    ds, keep, ref = torchvision_batch(
        parity_root, [T.Resize(100), T.CenterCrop(90), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.Resize(100), stoker.CenterCrop(90)],
                       dtype="uint8", layout="NHWC", dct_scaling=False)
    assert out.shape == (len(keep), 90, 90, 3)
    assert_exact(ds, keep, ref, out.permute(0, 3, 1, 2))
