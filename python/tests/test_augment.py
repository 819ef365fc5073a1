"""The torchvision-compatible surface and the photometric transforms in the
pipeline: argument names, Compose, clear TypeErrors, target_transform, dct_scaling="auto",
pipeline parity with torchvision on PIL, thread-count independence and the distributions
of the random parameters."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms as T
from PIL import Image

import stoker
from conftest import MEAN, STD, collect, photo, save_jpeg


@pytest.fixture(scope="module")
def big_root(tmp_path_factory):
    """JPEGs whose shorter side is >= 512 (where DCT scaling would kick in) plus small ones."""
    root = tmp_path_factory.mktemp("big")
    d = root / "a"
    d.mkdir()
    for k, (w, h, sub) in enumerate([(800, 600, 2), (600, 900, 0), (1024, 512, 1), (333, 250, 2),
                                      (701, 517, 2)]):
        save_jpeg(photo(w, h, 9000 + k), d / f"img{k}.jpg", subsampling=sub)
    return str(root)


def torchvision_images(root, transforms):
    ds = tvd.ImageFolder(root, T.Compose(transforms))
    return torch.stack([ds[i][0] for i in range(len(ds))])


def stoker_images(root, transforms, **kw):
    loader = stoker.Loader(stoker.ImageFolder(root), batch_size=4, transforms=transforms,
                           return_indices=True, **kw)
    x, _, ids = collect(loader)
    assert ids.tolist() == list(range(len(ids)))
    return x


# ------------------------------------------------------------ surface ----

def test_every_torchvision_transform_is_mapped():
    # Every transform class of the installed torchvision is either a stoker transform of
    # the same name or refused with a TypeError that says what to use instead, and the
    # mapping table (docs/torchvision.md) names it.
    import inspect
    import stoker._transforms as st
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs",
                               "torchvision.md")).read()
    names = [n for n, c in vars(T).items() if inspect.isclass(c) and not n.startswith("_")
             and c.__module__.startswith("torchvision.transforms.transforms")
             and n not in ("InterpolationMode",)]
    assert len(names) >= 30, names
    for name in names:
        assert f"`{name}`" in readme, f"docs/torchvision.md's table does not name {name}"
        assert hasattr(stoker, name) or name in st._INSTEAD, f"{name}: no stoker form, no advice"


def test_interpolation_and_antialias_accepted_where_they_name_what_stoker_does():
    for mode in (T.InterpolationMode.BILINEAR, "bilinear", Image.BILINEAR, None):
        stoker.Resize(256, interpolation=mode, antialias=True)
        stoker.RandomResizedCrop(224, interpolation=mode, antialias=None)


@pytest.mark.parametrize("mode", [T.InterpolationMode.NEAREST, T.InterpolationMode.BICUBIC,
                                  Image.BICUBIC, "nearest"])
def test_other_interpolations_raise_naming_bilinear(mode):
    with pytest.raises(ValueError, match="BILINEAR"):
        stoker.Resize(256, interpolation=mode)
    with pytest.raises(ValueError, match="BILINEAR"):
        stoker.RandomResizedCrop(224, interpolation=mode)


def test_antialias_false_is_refused():
    with pytest.raises(ValueError, match="antialias"):
        stoker.Resize(256, antialias=False)


def test_max_size_follows_torchvision(big_root):
    # Resize(300, max_size=400): the 1024x512 image's long side would be 600 -> capped, short
    # side int(400 * 300 / 600) = 200; then a CenterCrop keeps a fixed size. Bit-identical.
    ref = torchvision_images(big_root, [T.Resize(300, max_size=400), T.CenterCrop(180),
                                        T.ToTensor()])
    out = stoker_images(big_root, [stoker.Resize(300, max_size=400), stoker.CenterCrop(180)])
    assert torch.equal(ref, out)
    with pytest.raises(ValueError, match="max_size"):
        stoker.Resize(300, max_size=300)
    with pytest.raises(ValueError, match="max_size"):
        stoker.Resize((300, 200), max_size=400)


def test_resize_with_a_one_element_list_is_the_shorter_side(big_root):
    ref = torchvision_images(big_root, [T.Resize([160]), T.CenterCrop(128), T.ToTensor()])
    out = stoker_images(big_root, [stoker.Resize([160]), stoker.CenterCrop(128)])
    assert torch.equal(ref, out)


def test_compose_and_single_transform(small_root):
    folder = stoker.ImageFolder(small_root)
    a = collect(stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize((40, 30))]), indexed=False)[0]
    b = collect(stoker.Loader(folder, batch_size=8, transforms=stoker.Resize((40, 30))), indexed=False)[0]
    c = collect(stoker.Loader(folder, batch_size=8,
                              transforms=stoker.Compose([stoker.Resize((40, 30))])), indexed=False)[0]
    d = collect(stoker.Loader(folder, batch_size=8,
                              transforms=T.Compose([stoker.Resize((40, 30))])), indexed=False)[0]
    assert a.shape == (37, 3, 40, 30)
    assert torch.equal(a, b) and torch.equal(a, c) and torch.equal(a, d)
    assert "Resize" in repr(stoker.Compose([stoker.Resize(5)]))


@pytest.mark.parametrize("bad,match", [
    (T.ColorJitter(0.4), r"use stoker\.ColorJitter"),
    (T.Resize(256), r"use stoker\.Resize"),
    (T.ToTensor(), "remove it"),
    (T.TrivialAugmentWide(), r"use stoker\.TrivialAugmentWide"),
    (T.AutoAugment(), r"use stoker\.AutoAugment"),
    (T.AugMix(), "not implemented"),
    (T.Lambda(lambda x: x), r"stoker\.Lambda\(fn\)"),
    ("Resize", "not a stoker transform"),
])
def test_unsupported_transforms_raise_a_clear_type_error(small_root, bad, match):
    folder = stoker.ImageFolder(small_root)
    for transforms in ([stoker.Resize((8, 8)), bad], T.Compose([stoker.Resize((8, 8)), bad])):
        with pytest.raises(TypeError, match=match) as e:
            stoker.Loader(folder, batch_size=4, transforms=transforms)
        assert "incompatible" not in str(e.value)  # never a pybind signature dump
        assert "transforms[1]" in str(e.value)


def test_source_that_is_not_a_stoker_source_is_a_type_error():
    with pytest.raises(TypeError, match="stoker source"):
        stoker.Loader([1, 2, 3], batch_size=2)


def test_duplicated_normalize_is_refused(small_root):
    with pytest.raises(ValueError, match="more than one Normalize"):
        stoker.Loader(stoker.ImageFolder(small_root), batch_size=4,
                      transforms=[stoker.Resize((8, 8)), stoker.Normalize(MEAN, STD),
                                  stoker.Normalize(MEAN, STD)])


def test_target_transform(small_root):
    folder = stoker.ImageFolder(small_root)
    base = stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize((8, 8))])
    _, labels, _ = collect(base, indexed=False)
    tt = stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize((8, 8))],
                       target_transform=lambda y: 10 * y + 1)
    _, labels10, _ = collect(tt, indexed=False)
    assert labels10.dtype == torch.int64
    assert torch.equal(labels10, 10 * labels + 1)
    onehot = stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize((8, 8))],
                           target_transform=lambda y: torch.nn.functional.one_hot(
                               torch.tensor(y), 3).float())
    _, soft = next(iter(onehot))
    assert soft.shape == (8, 3) and torch.equal(soft.argmax(1), labels[:8])
    with pytest.raises(TypeError, match="callable"):
        stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize((8, 8))],
                      target_transform=3)


# ------------------------------------------------------- dct_scaling ----

def test_dct_scaling_auto(small_root):
    folder = stoker.ImageFolder(small_root)
    val = stoker.Loader(folder, batch_size=4, transforms=[stoker.Resize(32), stoker.CenterCrop(24)])
    train = stoker.Loader(folder, batch_size=4, transforms=[stoker.RandomResizedCrop(24)])
    assert val.dct_scaling is False and train.dct_scaling is True
    forced = stoker.Loader(folder, batch_size=4, dct_scaling=True,
                           transforms=[stoker.Resize(32), stoker.CenterCrop(24)])
    assert forced.dct_scaling is True
    with pytest.raises(ValueError, match="auto"):
        stoker.Loader(folder, batch_size=4, dct_scaling="yes", transforms=[stoker.Resize((8, 8))])


def test_default_val_pipeline_is_bit_identical_on_large_jpegs(big_root):
    # Shorter side >= 512: Resize(256) downscales 2x or more, where dct_scaling=True differs.
    tv = [T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)]
    st = [stoker.Resize(256), stoker.CenterCrop(224), stoker.Normalize(MEAN, STD)]
    ref = torchvision_images(big_root, tv)
    assert torch.equal(ref, stoker_images(big_root, st))  # defaults
    # The check has teeth: forcing DCT scaling on changes the large images.
    assert not torch.equal(ref, stoker_images(big_root, st, dct_scaling=True))


# ------------------------------------------ photometric, in the pipeline ----

DETERMINISTIC = [
    ("grayscale", [T.Grayscale(3)], [stoker.Grayscale(3)]),
    ("randomgrayscale", [T.RandomGrayscale(p=1.0)], [stoker.RandomGrayscale(p=1.0)]),
    ("brightness", [T.ColorJitter(brightness=(1.3, 1.3))],
     [stoker.ColorJitter(brightness=(1.3, 1.3))]),
    ("contrast", [T.ColorJitter(contrast=(0.6, 0.6))], [stoker.ColorJitter(contrast=(0.6, 0.6))]),
    ("saturation", [T.ColorJitter(saturation=(1.7, 1.7))],
     [stoker.ColorJitter(saturation=(1.7, 1.7))]),
    ("hue", [T.ColorJitter(hue=(0.2, 0.2))], [stoker.ColorJitter(hue=(0.2, 0.2))]),
    ("autocontrast", [T.RandomAutocontrast(p=1)], [stoker.RandomAutocontrast(p=1)]),
    ("equalize", [T.RandomEqualize(p=1)], [stoker.RandomEqualize(p=1)]),
    ("posterize", [T.RandomPosterize(3, p=1)], [stoker.RandomPosterize(3, p=1)]),
    ("solarize", [T.RandomSolarize(100, p=1)], [stoker.RandomSolarize(100, p=1)]),
    ("sharpness", [T.RandomAdjustSharpness(2.5, p=1)], [stoker.RandomAdjustSharpness(2.5, p=1)]),
    ("chain", [T.RandomAdjustSharpness(0.3, p=1), T.RandomSolarize(200, p=1),
               T.RandomGrayscale(p=1)],
     [stoker.RandomAdjustSharpness(0.3, p=1), stoker.RandomSolarize(200, p=1),
      stoker.RandomGrayscale(p=1)]),
]


@pytest.mark.parametrize("name,tv,st", DETERMINISTIC, ids=[c[0] for c in DETERMINISTIC])
def test_photometric_pipeline_is_bit_identical_to_torchvision(big_root, name, tv, st):
    # After Resize + CenterCrop (the small image), in uint8 and in float32 with Normalize.
    ref = torchvision_images(big_root, [T.Resize(150), T.CenterCrop(128)] + tv + [T.PILToTensor()])
    out = stoker_images(big_root, [stoker.Resize(150), stoker.CenterCrop(128)] + st,
                        dtype="uint8")
    assert torch.equal(ref, out), f"{name}: max diff {(ref.int() - out.int()).abs().max()}"
    ref = torchvision_images(big_root, [T.Resize(150), T.CenterCrop(128)] + tv +
                             [T.ToTensor(), T.Normalize(MEAN, STD)])
    out = stoker_images(big_root, [stoker.Resize(150), stoker.CenterCrop(128)] + st +
                        [stoker.Normalize(MEAN, STD)])
    assert torch.equal(ref, out)


def test_vertical_flip_is_bit_identical_with_odd_crop_offsets(big_root):
    # The flip sits before a CenterCrop whose vertical offset is odd: it must be composed
    # into the geometry (not applied after the crop).
    tv = [T.Resize(151), T.RandomVerticalFlip(p=1), T.CenterCrop((120, 128)), T.PILToTensor()]
    st = [stoker.Resize(151), stoker.RandomVerticalFlip(p=1), stoker.CenterCrop((120, 128))]
    assert torch.equal(torchvision_images(big_root, tv), stoker_images(big_root, st, dtype="uint8"))
    tv = [T.RandomVerticalFlip(p=1), T.RandomHorizontalFlip(p=1), T.Resize((77, 93)),
          T.PILToTensor()]
    st = [stoker.RandomVerticalFlip(p=1), stoker.RandomHorizontalFlip(p=1),
          stoker.Resize((77, 93))]
    assert torch.equal(torchvision_images(big_root, tv), stoker_images(big_root, st, dtype="uint8"))


def test_random_photometric_pipeline_is_independent_of_threads(small_root):
    transforms = [stoker.RandomResizedCrop(48), stoker.RandomHorizontalFlip(),
                  stoker.RandomVerticalFlip(), stoker.ColorJitter(0.4, 0.4, 0.4, 0.1),
                  stoker.RandomGrayscale(0.2), stoker.RandomAutocontrast(), stoker.RandomEqualize(),
                  stoker.RandomPosterize(4), stoker.RandomSolarize(128),
                  stoker.RandomAdjustSharpness(2.0), stoker.Normalize(MEAN, STD)]
    folder = stoker.ImageFolder(small_root)
    runs = [collect(stoker.Loader(folder, batch_size=5, shuffle=True, seed=7, threads=t,
                                  transforms=transforms), indexed=False)[0] for t in (1, 2, 2)]
    assert torch.equal(runs[0], runs[1]) and torch.equal(runs[0], runs[2])
    # ... and it does something: a run without the photometric ops differs.
    plain = [t for t in transforms if not t.photometric]
    other = collect(stoker.Loader(folder, batch_size=5, shuffle=True, seed=7, threads=2,
                                  transforms=plain), indexed=False)[0]
    assert not torch.equal(runs[0], other)


@pytest.mark.parametrize("bad", [
    lambda: stoker.RandomPosterize(9), lambda: stoker.RandomSolarize(10, p=1.5),
    lambda: stoker.RandomAdjustSharpness(-1.0), lambda: stoker.RandomVerticalFlip(2.0)])
def test_invalid_parameters_are_refused(small_root, bad):
    with pytest.raises(ValueError):
        stoker.Loader(stoker.ImageFolder(small_root), batch_size=4,
                      transforms=[stoker.Resize((8, 8)), bad()])


def test_color_jitter_arguments_follow_torchvision():
    with pytest.raises(ValueError, match="hue"):
        stoker.ColorJitter(hue=0.6)
    with pytest.raises(ValueError, match=r"ColorJitter: brightness must be a number >= 0 .*got -0.1"):
        stoker.ColorJitter(brightness=-0.1)
    assert "brightness=(0, 2)" in repr(stoker.ColorJitter(brightness=1.0))  # clipped at 0
    with pytest.raises(ValueError, match="num_output_channels"):
        stoker.Grayscale()


# ---------------------------------------------------- distributions ----

N = 20000


def chi2_sf(x: float, k: int) -> float:
    """Survival function of chi-square with k degrees of freedom (Wilson-Hilferty)."""
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def ks_threshold(n: int, m: int, alpha: float = 1e-3) -> float:
    return math.sqrt(-0.5 * math.log(alpha / 2)) * math.sqrt((n + m) / (n * m))


def ks_statistic(a, b) -> float:
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def test_color_jitter_parameters_follow_torchvision():
    ranges = dict(brightness=0.4, contrast=(0.5, 1.2), saturation=0.3, hue=0.1)
    draws = np.asarray(stoker._C._sample_color_jitter(stoker.ColorJitter(**ranges), 11, N))
    orders = [tuple(int(v) for v in row) for row in draws[:, :4]]
    # torchvision's get_params over as many draws.
    torch.manual_seed(5)
    tv = T.ColorJitter(**ranges)
    ref = [T.ColorJitter.get_params(tv.brightness, tv.contrast, tv.saturation, tv.hue)
           for _ in range(N)]
    ref_orders = [tuple(int(v) for v in r[0]) for r in ref]
    # Permutations: chi-square homogeneity over the 24 orders.
    keys = sorted(set(orders) | set(ref_orders))
    assert len(keys) == 24
    a = np.array([orders.count(k) for k in keys], float)
    b = np.array([ref_orders.count(k) for k in keys], float)
    expected_a = (a + b) * a.sum() / (a.sum() + b.sum())
    expected_b = (a + b) * b.sum() / (a.sum() + b.sum())
    chi2 = float((((a - expected_a) ** 2) / expected_a).sum() +
                 (((b - expected_b) ** 2) / expected_b).sum())
    assert chi2_sf(chi2, 23) > 1e-3, chi2
    # Factors: two-sample KS against torchvision's draws.
    for k in range(4):
        ours = draws[:, 4 + k]
        theirs = np.array([r[1 + k] for r in ref], float)
        assert ks_statistic(ours, theirs) < ks_threshold(N, N), k


@pytest.fixture(scope="module")
def tiny_npy(tmp_path_factory):
    """N 2x2 images (value 10 in every channel) as an Npy source."""
    d = tmp_path_factory.mktemp("tiny")
    np.save(d / "x.npy", np.full((N // 2, 2, 2, 3), 10, np.uint8))
    np.save(d / "y.npy", np.zeros(N // 2, np.int64))
    return stoker.Npy(images=str(d / "x.npy"), labels=str(d / "y.npy"))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_random_ops_apply_with_probability_p(tiny_npy, p):
    # RandomSolarize(threshold=0) turns 10 into 245 when it applies; two epochs give N draws.
    loader = stoker.Loader(tiny_npy, batch_size=1000, dtype="uint8",
                           transforms=[stoker.Resize((2, 2)), stoker.RandomSolarize(0, p=p)])
    applied = 0
    for epoch in range(2):
        loader.set_epoch(epoch)
        for x, _ in loader:
            applied += int((x[:, 0, 0, 0] == 245).sum())
    # Binomial(N, p): |observed - Np| within 4.5 standard deviations (alpha ~ 7e-6).
    assert abs(applied - N * p) < 4.5 * math.sqrt(N * p * (1 - p)), applied


def test_gaussian_blur_in_the_pipeline_within_one_level(big_root):
    ref = torchvision_images(big_root, [T.Resize(150), T.CenterCrop(128),
                                        T.GaussianBlur(7, sigma=(1.3, 1.3)), T.PILToTensor()])
    out = stoker_images(big_root, [stoker.Resize(150), stoker.CenterCrop(128),
                                   stoker.GaussianBlur(7, sigma=(1.3, 1.3))], dtype="uint8")
    diff = (ref.int() - out.int()).abs()
    assert diff.max() <= 1 and (diff == 0).float().mean() > 0.99
    plain = stoker_images(big_root, [stoker.Resize(150), stoker.CenterCrop(128)], dtype="uint8")
    assert (plain.int() - out.int()).abs().max() > 1  # it blurs
