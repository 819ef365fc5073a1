"""collate="list": per-sample sizes, no padding, pooled zero-copy buffers.

References: torchvision's Resize on the same PIL images (sizes always; pixels bit-identical
with dct_scaling off, as stoker's fixed-size path is), and stoker's own collate="batch"
path for pipelines that end in a fixed size.
"""

from __future__ import annotations

import gc
import os
import shutil

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image

import stoker
from conftest import MEAN, PARITY_IMAGES, STD, photo, save_jpeg


def epoch_samples(loader):
    """One epoch: [(id, label, image tensor copy)] in delivery order, and the batch sizes."""
    out, sizes = [], []
    for images, labels, ids in loader:
        assert isinstance(images, list)
        assert len(images) == len(labels) == len(ids)
        sizes.append(len(images))
        for x, y, i in zip(images, labels.tolist(), ids.tolist()):
            out.append((i, y, x.clone()))
    return out, sizes


def paths_of(root):
    return [p for p, _ in stoker.ImageFolder(root).samples]


@pytest.mark.parametrize("size,max_size", [(256, None), (120, None), (200, 260)])
def test_shapes_and_pixels_match_torchvision_resize(parity_root, size, max_size):
    # Resize(size) alone keeps each image's aspect ratio: no fixed size, so only
    # collate="list" can batch it. Every image, every format of the parity set.
    tv = T.Compose([T.Resize(size, max_size=max_size), T.ToTensor(), T.Normalize(MEAN, STD)])
    loader = stoker.Loader(stoker.ImageFolder(parity_root), batch_size=5, collate="list",
                           transforms=[stoker.Resize(size, max_size=max_size),
                                       stoker.Normalize(MEAN, STD)],
                           return_indices=True, dct_scaling=False, threads=3)
    got, sizes = epoch_samples(loader)
    assert sizes == [5] * (len(PARITY_IMAGES) // 5) + ([len(PARITY_IMAGES) % 5]
                                                       if len(PARITY_IMAGES) % 5 else [])
    paths = paths_of(parity_root)
    assert [i for i, _, _ in got] == list(range(len(paths)))
    shapes = set()
    for i, _, x in got:
        with Image.open(paths[i]) as im:
            ref = tv(im.convert("RGB"))
        assert x.shape == ref.shape, (paths[i], x.shape, ref.shape)
        assert x.dtype == torch.float32
        assert torch.equal(x, ref), f"{paths[i]}: max diff {(x - ref).abs().max().item()}"
        shapes.add(tuple(x.shape))
    assert len(shapes) >= 4  # the images really do differ in size


def test_no_geometric_transform_gives_each_decoded_image(parity_root):
    loader = stoker.Loader(stoker.ImageFolder(parity_root), batch_size=4, collate="list",
                           dtype="uint8", layout="NHWC", return_indices=True)
    got, _ = epoch_samples(loader)
    paths = paths_of(parity_root)
    for i, _, x in got:
        with Image.open(paths[i]) as im:
            ref = np.asarray(im.convert("RGB"))
        assert x.shape == ref.shape  # [H, W, 3] for NHWC
        np.testing.assert_array_equal(x.numpy(), ref, err_msg=paths[i])


def test_fixed_size_pipeline_equals_the_batch_path(small_root):
    transforms = [stoker.RandomResizedCrop(40), stoker.RandomHorizontalFlip(),
                  stoker.ColorJitter(0.4, 0.4, 0.4, 0.1), stoker.Normalize(MEAN, STD),
                  stoker.RandomErasing(0.5)]
    kw = dict(batch_size=6, shuffle=True, seed=3, transforms=transforms, return_indices=True,
              dtype="bfloat16")
    folder = stoker.ImageFolder(small_root)
    listed, _ = epoch_samples(stoker.Loader(folder, collate="list", **kw))
    batched = [(i, x) for xs, _, ids in stoker.Loader(folder, **kw)
               for i, x in zip(ids.tolist(), xs.clone())]
    assert [i for i, _, _ in listed] == [i for i, _ in batched]
    for (_, _, a), (_, b) in zip(listed, batched):
        assert a.dtype == torch.bfloat16 and a.shape == (3, 40, 40)
        assert torch.equal(a, b)


def test_identical_for_1_and_3_threads_and_labels_follow(small_root):
    folder = stoker.ImageFolder(small_root)
    kw = dict(batch_size=5, shuffle=True, seed=9, collate="list", return_indices=True,
              transforms=[stoker.Resize(30), stoker.RandomHorizontalFlip(),
                          stoker.RandomErasing(0.5)], dtype="uint8")
    runs = []
    for threads in (1, 3):
        loader = stoker.Loader(folder, threads=threads, **kw)
        runs.append([epoch_samples(loader)[0] for _ in range(2)])  # epochs 0 and 1
    labels = [label for _, label in folder.samples]
    for e in range(2):
        a, b = runs[0][e], runs[1][e]
        assert [i for i, _, _ in a] == [i for i, _, _ in b]
        for (i, y, x), (_, _, z) in zip(a, b):
            assert y == labels[i]
            assert torch.equal(x, z), f"sample {i}, epoch {e}"
    assert [i for i, _, _ in runs[0][0]] != [i for i, _, _ in runs[0][1]]  # shuffled per epoch


@pytest.fixture(scope="module")
def transposed_root(tmp_path_factory):
    """Images of 40x30 and 30x40: Resize(12) gives 12x16 or 16x12 -- different shapes,
    the same bytes, so a recycled region always fits."""
    root = tmp_path_factory.mktemp("transposed")
    (root / "a").mkdir()
    for k in range(22):
        w, h = (40, 30) if k % 2 else (30, 40)
        save_jpeg(photo(w, h, 700 + k), root / "a" / f"{k:02d}.jpg")
    return str(root)


def test_buffers_recycle_across_epochs(transposed_root):
    loader = stoker.Loader(stoker.ImageFolder(transposed_root), batch_size=4, prefetch=2,
                           collate="list", transforms=[stoker.Resize(12)], threads=2)
    seen = set()
    for _ in range(10):
        for images, _ in loader:
            seen.update(tuple(x.shape) for x in images)
    s = loader.stats()
    assert seen == {(3, 12, 16), (3, 16, 12)}
    assert s["batches"] == 10 * 6
    # Buffers: about the in-flight ones, the next epoch's and the ones the loop holds
    # (timing decides the exact peak); regions: each slot of those buffers once, not per
    # batch (60 batches would be 240 regions).
    max_buffers = 2 * 2 + 3
    assert s["batch_buffers"] <= max_buffers
    assert 0 < s["batch_region_allocations"] <= max_buffers * 4


def test_views_keep_their_batch_alive_without_copies(transposed_root):
    loader = stoker.Loader(stoker.ImageFolder(transposed_root), batch_size=4,
                           collate="list", transforms=[stoker.Resize(12)], dtype="uint8",
                           threads=2)
    held, copies = [], []
    for images, _ in loader:
        held.append(images)
        copies.append([x.clone() for x in images])
        # Zero copy: each tensor views the batch buffer through a numpy array it does not own.
        assert all(not x.numpy().flags.owndata for x in images)
    assert loader.stats()["batch_buffers"] >= len(held)  # none went back to the pool
    for _ in range(2):  # later epochs reuse only released buffers
        for _ in loader:
            pass
    for images, ref in zip(held, copies):
        for x, r in zip(images, ref):
            assert torch.equal(x, r)
    # One image alone keeps its whole batch alive.
    one = held[2][1]
    del held, images
    gc.collect()
    for _ in loader:
        pass
    assert torch.equal(one, copies[2][1])


def test_skip_leaves_bad_files_out_with_their_own_sizes(tmp_path, small_root):
    good = stoker.ImageFolder(small_root)
    root = tmp_path / "copy"
    shutil.copytree(small_root, root)
    bad_files = sorted(str(p) for p in root.rglob("*"))[3::9]
    bad_files = [p for p in bad_files if os.path.isfile(p)]
    for p in bad_files:
        with open(p, "wb") as f:
            f.write(b"not an image")
    kw = dict(batch_size=4, collate="list", return_indices=True, dtype="uint8",
              transforms=[stoker.Resize(20)], on_error="skip", threads=3)
    ref, _ = epoch_samples(stoker.Loader(good, **kw))
    got, sizes = epoch_samples(stoker.Loader(stoker.ImageFolder(str(root)), **kw))
    names = [os.path.relpath(p, str(root)) for p, _ in stoker.ImageFolder(str(root)).samples]
    bad_ids = {names.index(os.path.relpath(p, str(root))) for p in bad_files}
    assert bad_ids
    want = [(i, x) for i, _, x in ref if i not in bad_ids]
    assert [i for i, _, _ in got] == [i for i, _ in want]
    assert sizes[:-1] == [4] * (len(sizes) - 1)
    for (_, _, a), (_, b) in zip(got, want):
        assert a.shape == b.shape and torch.equal(a, b)


def test_resume_mid_epoch(small_root):
    folder = stoker.ImageFolder(small_root)
    kw = dict(batch_size=4, shuffle=True, seed=2, collate="list", return_indices=True,
              transforms=[stoker.Resize(24), stoker.RandomHorizontalFlip()], dtype="uint8")
    full, _ = epoch_samples(stoker.Loader(folder, **kw))
    a = stoker.Loader(folder, **kw)
    it = iter(a)
    first = []
    for _ in range(3):
        images, _, ids = next(it)
        first += [(i, x.clone()) for i, x in zip(ids.tolist(), images)]
    state = a.state_dict()
    del it
    b = stoker.Loader(folder, **kw)
    b.load_state_dict(state)
    rest, _ = epoch_samples(b)
    got = first + [(i, x) for i, _, x in rest]
    assert [i for i, _ in got] == [i for i, _, _ in full]
    for (_, x), (_, _, y) in zip(got, full):
        assert torch.equal(x, y)


def test_target_transform_and_plain_pairs(small_root):
    loader = stoker.Loader(stoker.ImageFolder(small_root), batch_size=8, collate="list",
                           transforms=[stoker.Resize(16)], target_transform=lambda y: y * 10)
    images, labels = next(iter(loader))
    assert isinstance(images, list) and len(images) == 8
    assert labels.dtype == torch.int64 and labels.tolist() == [0] * 8
    assert all(x.dtype == torch.float32 and x.shape[0] == 3 and min(x.shape[1:]) == 16
               for x in images)
    assert loader.collate == "list"


def test_errors_name_the_argument_and_the_alternative(small_root):
    folder = stoker.ImageFolder(small_root)
    with pytest.raises(ValueError, match="collate must be one of"):
        stoker.Loader(folder, batch_size=2, collate="stack", transforms=[stoker.Resize(16)])
    with pytest.raises(TypeError, match="collate"):
        stoker.Loader(folder, batch_size=2, collate=None, transforms=[stoker.Resize(16)])
    # collate="batch" (the default) still needs a fixed size, and says what else to do.
    with pytest.raises(ValueError, match='collate="list"'):
        stoker.Loader(folder, batch_size=2, transforms=[stoker.Resize(16)])
    with pytest.raises(ValueError, match="collate='list' is not supported with device"):
        stoker.Loader(folder, batch_size=2, collate="list", device="cuda",
                      transforms=[stoker.Resize(16)])
    loader = stoker.Loader(folder, batch_size=2, collate="list", transforms=[stoker.Resize(16)])
    with pytest.raises(ValueError, match="diagnose needs collate='batch'"):
        stoker.diagnose(loader)


def test_decoded_cache_gives_the_uncached_pixels(small_root):
    # The decoded cache hands the processor raw pixels (no decoder): the sizes and pixels
    # must not change, in the epoch that fills it and the one that hits it.
    folder = stoker.ImageFolder(small_root)
    kw = dict(batch_size=4, shuffle=True, collate="list", return_indices=True, dtype="uint8",
              transforms=[stoker.Resize(21), stoker.RandomHorizontalFlip()])
    plain = stoker.Loader(folder, dct_scaling=False, **kw)
    cached = stoker.Loader(folder, cache="decoded", cache_bytes=64 << 20, **kw)
    for _ in range(2):
        a, _ = epoch_samples(plain)
        b, _ = epoch_samples(cached)
        assert [i for i, _, _ in a] == [i for i, _, _ in b]
        for (_, _, x), (_, _, y) in zip(a, b):
            assert x.shape == y.shape and torch.equal(x, y)
    assert cached.stats()["cache"]["hits"] >= len(folder)
