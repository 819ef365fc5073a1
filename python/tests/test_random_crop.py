"""RandomCrop: padding and pad_if_needed as torchvision computes them (bit-identical where the
crop position is forced), and crop offsets uniform (chi-square over 10,000 draws)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms as T

import stoker
from conftest import collect, photo, save_jpeg

N = 10000


def chi2_sf(x: float, k: int) -> float:
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("rc")
    (r / "a").mkdir()
    for k, (w, h) in enumerate([(64, 48), (50, 70), (31, 29)]):
        save_jpeg(photo(w, h, 500 + k), r / "a" / f"{k}.jpg")
    return str(r)


@pytest.mark.parametrize("tv,st", [
    # The crop equals the padded image: position forced, output must be identical.
    ([T.Resize((40, 30)), T.RandomCrop((44, 36), padding=(3, 2))],
     [stoker.Resize((40, 30)), stoker.RandomCrop((44, 36), padding=(3, 2))]),
    ([T.Resize((40, 30)), T.RandomCrop((47, 37), padding=(1, 2, 6, 5))],
     [stoker.Resize((40, 30)), stoker.RandomCrop((47, 37), padding=(1, 2, 6, 5))]),
])
def test_forced_position_is_bit_identical(root, tv, st):
    ds = tvd.ImageFolder(root, T.Compose(tv + [T.PILToTensor()]))
    ref = torch.stack([ds[i][0] for i in range(len(ds))])
    out = collect(stoker.Loader(stoker.ImageFolder(root), batch_size=4, dtype="uint8",
                                transforms=st, return_indices=True))[0]
    assert torch.equal(ref, out)


def test_pad_if_needed_pads_both_sides_by_the_shortfall(root):
    # Width 30 -> crop 46: torchvision pads 16 on BOTH sides (62 wide), so the image lands at
    # a column offset in [0, 16] of the output and is otherwise untouched.
    ds = tvd.ImageFolder(root, T.Compose([T.Resize((40, 30)), T.PILToTensor()]))
    ref = torch.stack([ds[i][0] for i in range(len(ds))])
    offsets = set()
    for seed in range(12):
        out = collect(stoker.Loader(stoker.ImageFolder(root), batch_size=4, dtype="uint8",
                                    seed=seed, return_indices=True,
                                    transforms=[stoker.Resize((40, 30)),
                                                stoker.RandomCrop((40, 46), pad_if_needed=True)]))[0]
        for k in range(len(out)):
            found = [o for o in range(17) if torch.equal(out[k, :, :, o:o + 30], ref[k])]
            assert found, k
            o = found[0]
            assert (out[k, :, :, :o] == 0).all() and (out[k, :, :, o + 30:] == 0).all()
            offsets.add(o)
    assert len(offsets) > 8  # the offset is random over [0, 16]


def test_offsets_are_uniform(tmp_path):
    h, w = 8, 64
    x = np.zeros((N // 2, h, w, 3), np.uint8)
    x[..., 0] = np.arange(1, w + 1)[None, None, :]
    x[..., 1] = np.arange(1, h + 1)[None, :, None] * 10
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.zeros(N // 2, np.int64))
    src = stoker.Npy(images=str(tmp_path / "x.npy"), labels=str(tmp_path / "y.npy"))
    loader = stoker.Loader(src, batch_size=1000, dtype="uint8",
                           transforms=[stoker.RandomCrop((6, 50), padding=2)])
    js, is_ = [], []
    for epoch in range(2):
        loader.set_epoch(epoch)
        for b, _ in loader:
            r = b[:, 0].numpy().astype(int)  # [B, 6, 50]
            g = b[:, 1].numpy().astype(int)
            for k in range(len(r)):
                row = r[k, 3]
                c = int(np.flatnonzero(row)[0])
                js.append(2 - c if c > 0 else row[0] - 1 + 2)
                col = g[k, :, 25]
                c = int(np.flatnonzero(col)[0])
                is_.append(2 - c if c > 0 else col[0] // 10 - 1 + 2)
    for vals, n in ((np.array(js), 68 - 50 + 1), (np.array(is_), 12 - 6 + 1)):
        counts = np.bincount(vals, minlength=n)
        assert len(counts) == n
        e = len(vals) / n
        assert chi2_sf(float(((counts - e) ** 2 / e).sum()), n - 1) > 1e-3


def test_arguments():
    with pytest.raises(ValueError, match=r"RandomCrop: fill must be .* in \[0, 255\], got 300"):
        stoker.RandomCrop(32, padding=4, fill=300)
    with pytest.raises(ValueError, match="padding_mode must be one of 'constant', 'edge', 'reflect', 'symmetric', got 'wrap'"):
        stoker.RandomCrop(32, padding=4, padding_mode="wrap")
    assert "padding_mode=reflect" in repr(stoker.RandomCrop(32, 4, padding_mode="reflect"))
    assert "RandomCrop(size=(32, 32), padding=(4, 4, 4, 4)" in repr(stoker.RandomCrop(32, 4))


MODES = [("constant", 0), ("constant", (200, 30, 90)), ("edge", 0), ("reflect", 0),
         ("symmetric", 0)]


def tv_padded(img, padding, pin, size, fill, mode):
    """RandomCrop.forward's padding steps (F.pad, then pad_if_needed's F.pad)."""
    import torchvision.transforms.functional as F
    if padding is not None:
        img = F.pad(img, list(padding), fill, mode)
    if pin and img.width < size[1]:
        img = F.pad(img, [size[1] - img.width, 0], fill, mode)
    if pin and img.height < size[0]:
        img = F.pad(img, [0, size[0] - img.height], fill, mode)
    return np.asarray(img)


def is_window_of(small, big) -> bool:
    h, w = small.shape[:2]
    for i in range(big.shape[0] - h + 1):
        for j in range(big.shape[1] - w + 1):
            if np.array_equal(big[i:i + h, j:j + w], small):
                return True
    return False


@pytest.mark.parametrize("mode,fill", MODES)
@pytest.mark.parametrize("pre,size,padding,pin", [
    (None, (44, 36), (3, 2), False),  # no resize: the crop is on the decoded image (forced)
    ((40, 30), (47, 37), (1, 2, 6, 5), False),  # forced position
    ((40, 30), (30, 20), (5, 4), False),  # random position
    ((20, 16), (44, 36), None, True),  # pad_if_needed only
    ((20, 16), (50, 40), (4, 1, 0, 7), True),  # padding, then pad_if_needed of the padded
    ((12, 9), (60, 50), (2, 3), True),  # pads larger than the image: repeated folds
])
def test_padding_modes_match_torchvision(tmp_path, mode, fill, pre, size, padding, pin):
    # stoker's output must be a window of torchvision's padded image (the crop position is
    # random; where it is forced the output is the whole padded image).
    from PIL import Image
    r = tmp_path / "pm"
    (r / "a").mkdir(parents=True)
    for k in range(3):
        Image.fromarray(photo(30, 40, 40 + k)).save(r / "a" / f"{k}.png")
    ds = tvd.ImageFolder(str(r))
    for hflip in (False, True):
        tv_pre = ([T.Resize(pre)] if pre else []) + ([T.RandomHorizontalFlip(1.0)] if hflip else [])
        st_pre = (([stoker.Resize(pre)] if pre else []) +
                  ([stoker.RandomHorizontalFlip(1.0)] if hflip else []))
        for seed in range(3):
            out = collect(stoker.Loader(
                stoker.ImageFolder(str(r)), batch_size=4, dtype="uint8", return_indices=True,
                seed=seed,
                transforms=st_pre + [stoker.RandomCrop(size, padding, pin, fill, mode)]))[0]
            for i in range(len(ds)):
                img = ds.loader(ds.samples[i][0])
                for t in tv_pre:
                    img = t(img)
                big = tv_padded(img, padding, pin, size, fill, mode)
                small = out[i].permute(1, 2, 0).numpy()
                assert is_window_of(small, big), (mode, fill, hflip, seed, i)


@pytest.mark.parametrize("mode", ["reflect", "edge"])
def test_padded_crop_then_resize_then_crop(tmp_path, mode):
    # The padded crop's stage is followed by a resize and a CenterCrop larger than the resized
    # image (zero padding, CenterCrop's own): both paddings as torchvision applies them.
    from PIL import Image
    r = tmp_path / "pc"
    (r / "a").mkdir(parents=True)
    for k in range(3):
        Image.fromarray(photo(30, 40, 60 + k)).save(r / "a" / f"{k}.png")
    tv = [T.RandomCrop((46, 38), padding=(4, 3), padding_mode=mode, fill=0), T.Resize((23, 19)),
          T.CenterCrop((27, 21))]
    st = [stoker.RandomCrop((46, 38), padding=(4, 3), padding_mode=mode), stoker.Resize((23, 19)),
          stoker.CenterCrop((27, 21))]
    ds = tvd.ImageFolder(str(r), T.Compose(tv + [T.PILToTensor()]))
    ref = torch.stack([ds[i][0] for i in range(len(ds))])
    out = collect(stoker.Loader(stoker.ImageFolder(str(r)), batch_size=4, dtype="uint8",
                                transforms=st, return_indices=True))[0]
    assert torch.equal(ref, out)
    # (A C++-built RandomCrop with padding_mode 9 is refused by the Loader:
    # src/pipeline/loader_options_test.cc, InvalidTransformFieldsAreRefusedByTheirDeclaration.)
