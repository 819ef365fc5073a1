"""stoker.Pad against torchvision's Pad on PIL images: every padding_mode, the three forms of
padding, after a flip, before a resize and a crop, and with images of their own size
(collate="list"); and its arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms as T
from PIL import Image

import stoker
from conftest import collect, photo, save_jpeg

MODES = [("constant", 0), ("constant", (200, 30, 90)), ("edge", 0), ("reflect", 0),
         ("symmetric", 0)]
PADDINGS = [3, (2, 5), (1, 2, 7, 4), [6]]


@pytest.fixture(scope="module")
def pngs(tmp_path_factory):
    """Three 30 x 40 (w x h) PNGs: exact pixels through the decoder."""
    root = tmp_path_factory.mktemp("pad_png")
    (root / "a").mkdir()
    for k in range(3):
        Image.fromarray(photo(30, 40, 80 + k)).save(root / "a" / f"{k}.png")
    return str(root)


def torchvision_batch(root, transforms):
    ds = tvd.ImageFolder(root, T.Compose(transforms + [T.PILToTensor()]))
    return torch.stack([ds[i][0] for i in range(len(ds))])


def stoker_batch(root, transforms, **kw):
    loader = stoker.Loader(stoker.ImageFolder(root), batch_size=4, dtype="uint8",
                           transforms=transforms, return_indices=True, dct_scaling=False, **kw)
    return collect(loader)[0]


@pytest.mark.parametrize("mode,fill", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
def test_matches_torchvision(pngs, mode, fill, padding):
    # CenterCrop((40, 30)) is the image itself: it fixes the size the batch needs.
    ref = torchvision_batch(pngs, [T.Pad(padding, fill=fill, padding_mode=mode)])
    out = stoker_batch(pngs, [stoker.CenterCrop((40, 30)),
                              stoker.Pad(padding, fill=fill, padding_mode=mode)])
    assert out.shape == ref.shape
    assert torch.equal(ref, out)


@pytest.mark.parametrize("mode,fill", MODES)
def test_after_a_flip_and_before_a_resize_and_crop(pngs, mode, fill):
    # The padding is on the sides as the flipped image has them; the padded image is then
    # resized and centre-cropped (a crop larger than the resized image: CenterCrop's zeros).
    tv = [T.RandomHorizontalFlip(1.0), T.Pad((1, 2, 9, 4), fill=fill, padding_mode=mode),
          T.Resize((25, 21)), T.CenterCrop((29, 19))]
    st = [stoker.RandomHorizontalFlip(1.0), stoker.Pad((1, 2, 9, 4), fill=fill, padding_mode=mode),
          stoker.Resize((25, 21)), stoker.CenterCrop((29, 19))]
    assert torch.equal(torchvision_batch(pngs, tv), stoker_batch(pngs, st))
    # Pad after a resize, then a random crop of the padded image (the CIFAR recipe's shape).
    tv = [T.Resize((24, 20)), T.Pad(4, fill=fill, padding_mode=mode), T.CenterCrop((30, 26)),
          T.RandomVerticalFlip(1.0)]
    st = [stoker.Resize((24, 20)), stoker.Pad(4, fill=fill, padding_mode=mode),
          stoker.CenterCrop((30, 26)), stoker.RandomVerticalFlip(1.0)]
    assert torch.equal(torchvision_batch(pngs, tv), stoker_batch(pngs, st))


def test_jpegs_of_their_own_size(tmp_path):
    # collate="list": each output is its image's size plus the padding, pixels as torchvision.
    root = tmp_path / "j"
    (root / "a").mkdir(parents=True)
    for k, (w, h) in enumerate([(33, 21), (17, 40), (64, 48)]):
        save_jpeg(photo(w, h, 90 + k), root / "a" / f"{k}.jpg")
    ds = tvd.ImageFolder(str(root), T.Compose([T.Pad((3, 1), padding_mode="reflect"),
                                               T.PILToTensor()]))
    loader = stoker.Loader(stoker.ImageFolder(str(root)), batch_size=3, dtype="uint8",
                           collate="list", transforms=[stoker.Pad((3, 1), padding_mode="reflect")])
    images, _ = next(iter(loader))
    for i, img in enumerate(images):
        assert torch.equal(img, ds[i][0])


def test_fixed_size_thread_invariance_and_output_cache(pngs):
    t = [stoker.Resize((20, 16)), stoker.Pad((1, 2, 3, 4), padding_mode="symmetric"),
         stoker.RandomCrop(18, padding=2)]
    runs = [stoker_batch(pngs, t, shuffle=True, seed=5, threads=n) for n in (1, 3)]
    assert runs[0].shape == (3, 3, 18, 18) and torch.equal(runs[0], runs[1])
    loader = stoker.Loader(stoker.ImageFolder(pngs), batch_size=4, dtype="uint8",
                           transforms=[stoker.Resize((20, 16)), stoker.Pad(2)])
    assert collect(loader, indexed=False)[0].shape[2:] == (24, 20)  # the size plus the padding
    # Deterministic, so a pipeline ending in Pad can cache finished samples.
    cached = stoker.Loader(stoker.ImageFolder(pngs), batch_size=4, dtype="uint8",
                           transforms=[stoker.Resize((20, 16)), stoker.Pad(2)], cache="output",
                           cache_bytes=1 << 20)
    assert torch.equal(collect(cached, indexed=False)[0], collect(cached, indexed=False)[0])


def test_arguments():
    assert isinstance(stoker.Pad(2), stoker.Pad)
    assert repr(stoker.Pad((1, 2), fill=7, padding_mode="edge")) == (
        "Pad(padding=(1, 2, 1, 2), fill=(7, 7, 7), padding_mode=edge)")
    with pytest.raises(TypeError, match="missing required argument 'padding'"):
        stoker.Pad()
    with pytest.raises(ValueError, match=r"Pad: padding must be .*got -1: negative padding"):
        stoker.Pad(-1)
    with pytest.raises(ValueError, match=r"Pad: padding must be .*got \(1, 2, 3\)"):
        stoker.Pad((1, 2, 3))
    with pytest.raises(ValueError, match="Pad: padding_mode must be one of .*got 'wrap'"):
        stoker.Pad(1, padding_mode="wrap")
    with pytest.raises(ValueError, match=r"Pad: fill must be .*\[0, 255\], got 300"):
        stoker.Pad(1, fill=300)
    with pytest.raises(TypeError, match="Pad: padding must be"):
        stoker.Pad("4")


def test_alone_it_gives_no_fixed_size(pngs):
    with pytest.raises(ValueError, match="fixed image size"):
        stoker.Loader(stoker.ImageFolder(pngs), batch_size=2, transforms=[stoker.Pad(1)])
