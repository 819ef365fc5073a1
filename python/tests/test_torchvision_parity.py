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
            if kind == "progressive":
                assert im.info.get("progressive")
            if kind == "exif":
                assert im.getexif()[0x0112] == option
    assert modes["e_cmyk"] == {"CMYK"}
    assert modes["d_grey"] == {"L"}
    assert modes["f_png"] == {"RGB", "RGBA", "L", "P"}
    assert modes["g_progressive"] == {"RGB"}


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
    # synthetic photos: mean abs diff ~0.5-0.7 levels per image, max ~25 levels (4:2:2
    # chroma at a sharp edge). The bound on the mean (1.5) leaves ~2x margin; the max is
    # bounded loosely (80) as it hinges on single edge pixels.
    large = lambda p: "x900" in p or "x1201" in p  # 1200x900 (3 JPEG, 1 PNG), 901x1201
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


FLIP = stoker.RandomHorizontalFlip(1.0)
TV_FLIP = T.RandomHorizontalFlip(1.0)


@pytest.mark.parametrize("tv,st", [
    pytest.param([T.Resize(40), T.CenterCrop(32), TV_FLIP],
                 [stoker.Resize(40), stoker.CenterCrop(32), FLIP], id="flip-last"),
    # Flipping before an odd, padded CenterCrop moves the odd pad pixel to the other side.
    pytest.param([TV_FLIP, T.CenterCrop((301, 421))],
                 [FLIP, stoker.CenterCrop((301, 421))], id="flip-then-padded-crop"),
    pytest.param([T.Resize(100), TV_FLIP, T.CenterCrop((91, 97))],
                 [stoker.Resize(100), FLIP, stoker.CenterCrop((91, 97))], id="flip-between"),
    pytest.param([TV_FLIP, T.Resize((70, 90)), TV_FLIP],
                 [FLIP, stoker.Resize((70, 90)), FLIP], id="flip-twice"),
])
def test_flip_placement(parity_root, tv, st):
    # p=1.0 makes the flip deterministic; where it sits in the chain matters for the
    # crop offsets, which must follow torchvision's.
    ds, keep, ref = torchvision_batch(parity_root, tv + [T.PILToTensor()])
    out = stoker_batch(parity_root, st, dtype="uint8", dct_scaling=False)
    assert_exact(ds, keep, ref, out)


def test_two_resizes_chain(parity_root):
    # More than one resize: each stage runs in a scratch image, as torchvision does.
    ds, keep, ref = torchvision_batch(
        parity_root, [T.Resize(180), T.CenterCrop(171), T.Resize((64, 64)), T.PILToTensor()])
    out = stoker_batch(parity_root, [stoker.Resize(180), stoker.CenterCrop(171),
                                     stoker.Resize((64, 64))], dtype="uint8", dct_scaling=False)
    assert_exact(ds, keep, ref, out)


@pytest.mark.filterwarnings("ignore:Palette images with Transparency")
def test_more_png_flavours(tmp_path):
    # Greyscale+alpha, 1-bit, and palette images with a tRNS transparency chunk (as
    # produced by GIF converters): Pillow's convert("RGB") ignores transparency.
    from conftest import photo
    root = tmp_path / "png_more"
    (root / "c").mkdir(parents=True)
    base = Image.fromarray(photo(150, 110, 77))
    base.convert("LA").save(root / "c" / "la.png")
    base.convert("1").save(root / "c" / "one_bit.png")
    base.quantize(64).save(root / "c" / "p_trns_index.png", transparency=3)
    pal = base.quantize(16)
    pal.info["transparency"] = bytes([0, 255, 128] + [255] * 13)
    pal.save(root / "c" / "p_trns_alpha.png", transparency=pal.info["transparency"])
    ds, keep, ref = torchvision_batch(str(root), [T.Resize(64), T.CenterCrop(60), T.PILToTensor()])
    failures = []
    for i in keep:
        path = ds.samples[i][0]
        sub = tmp_path / f"one{i}" / "c"
        sub.mkdir(parents=True)
        os.link(path, sub / os.path.basename(path))
        try:
            out = stoker_batch(str(sub.parent), [stoker.Resize(64), stoker.CenterCrop(60)],
                               dtype="uint8", dct_scaling=False)
        except Exception as e:  # noqa: BLE001 - collected and reported below
            failures.append(f"{os.path.basename(path)}: {type(e).__name__}: {e}")
            continue
        if not torch.equal(out[0], ref[i]):
            d = (out[0].double() - ref[i].double()).abs()
            failures.append(f"{os.path.basename(path)}: max diff {d.max().item()}")
    assert not failures, "\n".join(failures)


def test_large_downscale_factors(tmp_path):
    # Downscaling by more than 32x in one axis means more than 64 filter taps per output
    # pixel (Pillow allocates its kernel buffer per call). Run in a subprocess: a memory
    # error must fail this test, not kill the whole session.
    import subprocess
    import sys
    import textwrap
    from conftest import photo, stoker_python_dir
    root = tmp_path / "big_downscale"
    (root / "c").mkdir(parents=True)
    Image.fromarray(photo(300, 300, 1)).save(root / "c" / "a300x300.png")
    Image.fromarray(photo(1200, 900, 2)).save(root / "c" / "b1200x900.png")
    Image.fromarray(photo(1200, 900, 3)).save(root / "c" / "c1200x900.jpg", quality=90)
    code = textwrap.dedent("""
        import sys
        import torch, torchvision.datasets as tvd, torchvision.transforms as T
        import stoker
        root = sys.argv[1]
        for tv, st in (([T.Resize((9, 9))], [stoker.Resize((9, 9))]),
                       ([T.Resize((300, 8))], [stoker.Resize((300, 8))]),
                       ([T.Resize(24), T.CenterCrop(24)], [stoker.Resize(24), stoker.CenterCrop(24)])):
            ds = tvd.ImageFolder(root, T.Compose(tv + [T.PILToTensor()]))
            ref = torch.stack([ds[i][0] for i in range(len(ds))])
            loader = stoker.Loader(stoker.ImageFolder(root), batch_size=4, transforms=st,
                                   dtype="uint8", dct_scaling=False, threads=1)
            out = torch.cat([x for x, _ in loader])
            print(st, "MAXDIFF", (out.int() - ref.int()).abs().max().item(), flush=True)
    """)
    env = dict(os.environ, PYTHONPATH=stoker_python_dir())
    r = subprocess.run([sys.executable, "-c", code, str(root)], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, f"crashed (rc {r.returncode}):\n{r.stdout}\n{r.stderr[-2000:]}"
    diffs = [line for line in r.stdout.splitlines() if "MAXDIFF" in line]
    assert len(diffs) == 3, r.stdout
    assert all(line.endswith("MAXDIFF 0") for line in diffs), r.stdout


def test_dct_scaling_keeps_random_crops_aligned(parity_root):
    # RandomResizedCrop(64) with and without DCT-domain downscaling: the same crops (same
    # seed), so the outputs differ only by the filter. Measured: mean abs diff 0.53 overall,
    # at most 1.8 for one image; the crop mapped one pixel off would give ~5.
    tf = [stoker.RandomResizedCrop(64), stoker.RandomHorizontalFlip()]
    folder = stoker.ImageFolder(parity_root)
    is_png = torch.tensor([folder.path(i).endswith(".png") for i in range(len(folder))])
    per_image = []
    for seed in range(3):
        a = stoker_batch(parity_root, tf, dtype="uint8", dct_scaling=True, seed=seed)
        b = stoker_batch(parity_root, tf, dtype="uint8", dct_scaling=False, seed=seed)
        d = (a.double() - b.double()).abs().mean(dim=(1, 2, 3))
        assert d[is_png].max().item() == 0  # no DCT scaling for PNG
        per_image.append(d[~is_png])
    d = torch.stack(per_image)
    assert d.mean().item() < 1.2, d
    assert d.max().item() < 3.0, d
    assert d.mean().item() > 0.05  # DCT scaling really happened on some crops
