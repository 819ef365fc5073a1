"""The stoker.Loader contract: sizes, order, labels, shuffling, determinism,
dtypes, layouts, buffer lifetime, numpy fallback, stats and argument checks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms as T

import stoker
from conftest import MEAN, SMALL_CLASSES, STD, collect, stoker_python_dir

N = sum(SMALL_CLASSES.values())  # 37
B = 8
TRAIN = [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(), stoker.Normalize(MEAN, STD)]
TRAIN_NO_NORM = [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip()]
VAL = [stoker.Resize(40), stoker.CenterCrop(32)]


@pytest.fixture(scope="module")
def folder(small_root):
    return stoker.ImageFolder(small_root)


def make(folder, **kw):
    kw.setdefault("batch_size", B)
    kw.setdefault("transforms", VAL)
    return stoker.Loader(folder, **kw)


# ------------------------------------------------------------------ sizes ----

def test_len_with_and_without_drop_last(folder):
    assert len(folder) == N
    assert len(make(folder)) == (N + B - 1) // B == 5
    assert len(make(folder, drop_last=True)) == N // B == 4
    assert len(make(folder, batch_size=N)) == 1
    assert len(make(folder, batch_size=1)) == N
    assert len(make(folder, batch_size=N, drop_last=True)) == 1
    loader = make(folder)
    it = iter(loader)
    assert len(it) == 5
    assert sum(1 for _ in it) == 5
    # A batch larger than the dataset: one short batch.
    big = make(folder, batch_size=64, return_indices=True)
    assert len(big) == 1
    batches = list(big)
    assert len(batches) == 1 and batches[0][2].tolist() == list(range(N))


def test_batch_sizes_and_shapes_224(folder):
    loader = make(folder, transforms=[stoker.RandomResizedCrop(224), stoker.RandomHorizontalFlip(),
                                      stoker.Normalize(MEAN, STD)],
                  return_indices=True)
    sizes = []
    for x, y, i in loader:
        assert x.dtype == torch.float32
        assert x.shape[1:] == (3, 224, 224)
        assert x.is_contiguous()
        assert y.dtype == torch.int64 and i.dtype == torch.int64
        assert y.shape == (x.shape[0],) and i.shape == (x.shape[0],)
        assert torch.isfinite(x).all()
        sizes.append(x.shape[0])
    assert sizes == [8, 8, 8, 8, 5]


def test_exactly_once_per_epoch(folder):
    for shuffle in (False, True):
        loader = make(folder, shuffle=shuffle, return_indices=True, seed=3)
        for epoch in range(3):
            _, labels, ids = collect(loader)
            assert sorted(ids.tolist()) == list(range(N)), (shuffle, epoch)
            assert labels.tolist() == [folder.label(i) for i in ids.tolist()]
    loader = make(folder, shuffle=True, drop_last=True, return_indices=True, seed=3)
    seen = set()
    for epoch in range(3):
        _, _, ids = collect(loader)
        ids = ids.tolist()
        assert len(ids) == (N // B) * B == 32
        assert len(set(ids)) == len(ids), "an index repeated within an epoch"
        assert set(ids) <= set(range(N))
        seen |= set(ids)
    # Shuffling with drop_last drops different samples in different epochs.
    assert len(seen) > 32


def test_unshuffled_order_is_index_order(folder):
    _, labels, ids = collect(make(folder, return_indices=True))
    assert ids.tolist() == list(range(N))
    expected = []
    for label, count in enumerate(SMALL_CLASSES.values()):
        expected += [label] * count
    assert labels.tolist() == expected


# ------------------------------------------------------- vs torchvision ----

def test_matches_torchvision_imagefolder(folder, small_root):
    tv = tvd.ImageFolder(small_root)
    assert list(folder.classes) == tv.classes == list(SMALL_CLASSES)
    assert len(tv.samples) == len(folder)
    for i, (path, label) in enumerate(tv.samples):
        assert os.path.normpath(folder.path(i)) == os.path.normpath(path)
        assert folder.label(i) == label


def test_shuffled_samples_carry_their_own_image_and_label(folder, small_root):
    # With shuffling, every slot's image must be the image of the index it reports.
    tv = tvd.ImageFolder(small_root, T.Compose([T.Resize(40), T.CenterCrop(32),
                                                T.PILToTensor()]))
    images, labels, ids = collect(make(folder, shuffle=True, seed=11, dtype="uint8",
                                       dct_scaling=False, return_indices=True, threads=3))
    assert ids.tolist() != list(range(N))
    for x, y, i in zip(images, labels.tolist(), ids.tolist()):
        ref, ref_label = tv[i]
        assert y == ref_label
        assert torch.equal(x, ref), f"index {i}: {tv.samples[i][0]}"


# -------------------------------------------------------------- shuffle ----

def order(loader):
    return collect(loader)[2].tolist()


def test_shuffle_depends_on_seed_and_epoch(folder):
    a = make(folder, shuffle=True, seed=5, return_indices=True)
    b = make(folder, shuffle=True, seed=5, return_indices=True)
    c = make(folder, shuffle=True, seed=6, return_indices=True)
    a0, b0, c0 = order(a), order(b), order(c)
    assert a0 == b0
    assert a0 != c0
    assert a0 != list(range(N))
    # Iterating again without set_epoch advances the epoch.
    a1 = order(a)
    assert a1 != a0
    assert a.epoch == 1
    b.set_epoch(1)
    assert order(b) == a1
    # set_epoch goes back, and forward.
    a.set_epoch(0)
    assert order(a) == a0
    a.set_epoch(7)
    a7 = order(a)
    d = make(folder, shuffle=True, seed=5, return_indices=True)
    d.set_epoch(7)
    assert d.epoch == 7
    assert order(d) == a7
    assert len({tuple(a0), tuple(a1), tuple(a7)}) == 3


def test_augmentation_depends_on_epoch_not_order(folder):
    # Unshuffled, same sample ids: the random crops come from (seed, epoch, id).
    a = make(folder, transforms=TRAIN, seed=1)
    e0 = collect(a, indexed=False)[0]
    e1 = collect(a, indexed=False)[0]
    assert not torch.equal(e0, e1)
    b = make(folder, transforms=TRAIN, seed=1)
    assert torch.equal(collect(b, indexed=False)[0], e0)
    c = make(folder, transforms=TRAIN, seed=2)
    assert not torch.equal(collect(c, indexed=False)[0], e0)
    # Shuffling changes the order but not each sample's augmentation.
    s = make(folder, transforms=TRAIN, seed=1, shuffle=True, return_indices=True)
    x, _, ids = collect(s)
    assert torch.equal(x[torch.argsort(ids)], e0)


# ---------------------------------------------------------- determinism ----

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "uint8"])
def test_bit_identical_across_threads_and_prefetch(folder, dtype):
    transforms = TRAIN_NO_NORM if dtype == "uint8" else TRAIN
    runs = []
    for threads, prefetch in ((1, 2), (3, 2), (4, 1), (4, 4), (2, 1)):
        loader = make(folder, transforms=transforms, shuffle=True, seed=9, threads=threads,
                      prefetch=prefetch, dtype=dtype, return_indices=True)
        loader.set_epoch(2)
        runs.append(collect(loader))
    x0, y0, i0 = runs[0]
    assert x0.dtype == {"float32": torch.float32, "float16": torch.float16,
                        "bfloat16": torch.bfloat16, "uint8": torch.uint8}[dtype]
    for x, y, i in runs[1:]:
        assert torch.equal(i, i0) and torch.equal(y, y0)
        assert torch.equal(x.view(torch.uint8), x0.view(torch.uint8))  # bitwise
    # Flips happen, and not always: p=0.5 really is random per sample.
    ref = make(folder, transforms=transforms[:1] + transforms[2:], shuffle=True, seed=9,
               dtype=dtype, return_indices=True)
    ref.set_epoch(2)
    unflipped = collect(ref)[0]
    same = [torch.equal(a, b) for a, b in zip(x0, unflipped)]
    flipped = [torch.equal(a, b.flip(-1)) for a, b in zip(x0, unflipped)]
    assert all(s or f for s, f in zip(same, flipped))
    assert 5 < sum(flipped) < N - 5 and 5 < sum(same) < N - 5


# --------------------------------------------------------------- dtypes ----

def test_half_and_bfloat16_equal_converted_float32(folder):
    kw = dict(transforms=TRAIN, shuffle=True, seed=4)
    f32 = collect(make(folder, dtype="float32", **kw), indexed=False)[0]
    f16 = collect(make(folder, dtype="float16", **kw), indexed=False)[0]
    bf16 = collect(make(folder, dtype="bfloat16", **kw), indexed=False)[0]
    assert f16.dtype == torch.float16 and bf16.dtype == torch.bfloat16
    assert torch.equal(f16, f32.half())
    assert torch.equal(bf16, f32.bfloat16())
    assert f32.min() < -1.5 and f32.max() > 2.0  # normalised values, both signs


def test_uint8_round_trips_with_float32(folder):
    kw = dict(transforms=TRAIN_NO_NORM, shuffle=True, seed=4)
    u8 = collect(make(folder, dtype="uint8", **kw), indexed=False)[0]
    f32 = collect(make(folder, dtype="float32", **kw), indexed=False)[0]
    assert u8.dtype == torch.uint8
    assert torch.equal(f32, u8.float().div(255))  # ToTensor's arithmetic
    assert torch.equal((f32 * 255).round().to(torch.uint8), u8)
    # Normalize is (x/255 - mean)/std in float32, channel by channel.
    n32 = collect(make(folder, dtype="float32", transforms=TRAIN, shuffle=True, seed=4),
                  indexed=False)[0]
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    assert torch.equal(n32, u8.float().div(255).sub(mean).div(std))


@pytest.mark.parametrize("dtype", ["uint8", "float32", "bfloat16"])
def test_nhwc_is_nchw_permuted(folder, dtype):
    transforms = TRAIN_NO_NORM if dtype == "uint8" else TRAIN
    kw = dict(transforms=transforms, shuffle=True, seed=12, dtype=dtype, threads=2)
    nchw = collect(make(folder, **kw), indexed=False)[0]
    nhwc = collect(make(folder, layout="NHWC", **kw), indexed=False)[0]
    assert nhwc.shape == (N, 32, 32, 3)
    assert torch.equal(nhwc, nchw.permute(0, 2, 3, 1))


# ------------------------------------------------------ buffer lifetime ----

def test_held_batches_stay_valid(folder):
    kw = dict(transforms=TRAIN, shuffle=True, seed=21, prefetch=1, threads=2,
              return_indices=True)
    loader = make(folder, **kw)
    held = list(loader)  # no copies: every batch's buffer is kept alive
    assert len(held) == 5
    # Run more epochs on the same loader while holding epoch 0's buffers.
    later = collect(loader)
    collect(loader)
    fresh = make(folder, **kw)
    x, y, i = collect(fresh)
    assert torch.equal(torch.cat([b[0] for b in held]), x)
    assert torch.equal(torch.cat([b[1] for b in held]), y)
    assert torch.equal(torch.cat([b[2] for b in held]), i)
    assert not torch.equal(later[0], x)


def test_released_batches_are_recycled(folder):
    loader = make(folder, transforms=TRAIN, prefetch=2, threads=2)
    for _ in range(3):
        for x, y in loader:
            pass
    del x, y
    s = loader.stats()
    # The pool stays bounded instead of growing per batch: the ring (prefetch), the next
    # epoch's first batches made at an epoch's end (up to prefetch more) and the
    # consumer's.
    assert 1 <= s["batch_buffers"] <= 2 * 2 + 2 + 1, s


# -------------------------------------------------------- without torch ----

def test_numpy_batches_without_torch(small_root):
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # makes `import torch` raise ImportError
        import numpy as np
        import stoker
        folder = stoker.ImageFolder(sys.argv[1])
        for dtype, npdt in (("float32", np.float32), ("uint8", np.uint8),
                            ("float16", np.float16), ("bfloat16", np.uint16)):
            tf = [stoker.Resize(40), stoker.CenterCrop(32)]
            loader = stoker.Loader(folder, batch_size=8, dtype=dtype, transforms=tf,
                                   return_indices=True)
            n = 0
            for x, y, i in loader:
                assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray), type(x)
                assert x.dtype == npdt, (dtype, x.dtype)
                assert x.shape == (len(y), 3, 32, 32), x.shape
                assert y.dtype == np.int64 and i.dtype == np.int64
                n += len(y)
            assert n == len(folder)
        x, y = next(iter(stoker.Loader(folder, batch_size=4, dtype="float32", layout="NHWC",
                                       transforms=[stoker.CenterCrop(30)])))
        assert x.shape == (4, 30, 30, 3)
        assert "torch" not in sys.modules or sys.modules["torch"] is None
        print("OK")
    """)
    env = dict(os.environ, PYTHONPATH=stoker_python_dir())
    r = subprocess.run([sys.executable, "-c", code, small_root], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "OK"


# ---------------------------------------------------------------- stats ----

STAT_KEYS = {"images", "batches", "seconds", "images_per_sec", "skipped", "read_s", "decode_s",
             "augment_s"}


def test_stats_counts(folder):
    loader = make(folder, transforms=TRAIN, threads=2)
    s = loader.stats()
    assert STAT_KEYS <= set(s) and isinstance(s["epoch"], dict)
    assert STAT_KEYS <= set(s["epoch"])
    assert s["images"] == 0 and s["batches"] == 0
    collect(loader, indexed=False)
    s = loader.stats()
    assert s["images"] == N and s["batches"] == 5 and s["skipped"] == 0
    assert s["epoch"]["images"] == N and s["epoch"]["batches"] == 5
    assert s["seconds"] > 0 and s["images_per_sec"] > 0
    assert s["images_per_sec"] == pytest.approx(s["images"] / s["seconds"])
    assert s["read_s"] > 0 and s["decode_s"] > 0 and s["augment_s"] > 0
    assert s["bytes_read"] == sum(os.path.getsize(folder.path(i)) for i in range(N))
    collect(loader, indexed=False)
    s = loader.stats()
    assert s["images"] == 2 * N and s["batches"] == 10
    assert s["epoch"]["images"] == N and s["epoch"]["batches"] == 5
    assert s["epoch"]["seconds"] < s["seconds"]
    dl = make(folder, drop_last=True)
    collect(dl, indexed=False)
    assert dl.stats()["images"] == 32 and dl.stats()["batches"] == 4
    # threads=None: one worker per available core; explicit counts are kept.
    assert make(folder).stats()["threads"] == len(os.sched_getaffinity(0))
    assert make(folder, threads=3).stats()["threads"] == 3


# ------------------------------------------------------- bad arguments ----

@pytest.mark.parametrize("kwargs,words", [
    (dict(batch_size=0), ["batch_size"]),
    (dict(batch_size=-3), ["batch_size"]),
    (dict(dtype="int7"), ["dtype", "int7"]),
    (dict(on_error="ignore"), ["on_error", "ignore"]),
    (dict(layout="CHW"), ["layout", "CHW"]),
    (dict(prefetch=0), ["prefetch"]),
    (dict(threads=-1), ["threads"]),
    (dict(dtype="uint8", transforms=[stoker.CenterCrop(32), stoker.Normalize(MEAN, STD)]),
     ["Normalize", "uint8"]),
    (dict(transforms=[stoker.Resize(256)]), ["fixed"]),
    (dict(transforms=[]), ["fixed"]),
    (dict(transforms=[stoker.RandomHorizontalFlip(), stoker.Resize(20)]), ["fixed"]),
    # Transforms check their arguments when made (a callable here: made in the test).
    (lambda: dict(transforms=[stoker.CenterCrop(32), stoker.Normalize(MEAN, (0.2, 0.0, 0.2))]),
     ["Normalize: std must be 3 non-zero numbers", "got (0.2, 0.0, 0.2)"]),
    (lambda: dict(transforms=[stoker.CenterCrop(32), stoker.RandomHorizontalFlip(1.5)]),
     ["RandomHorizontalFlip: p must be a number in [0, 1], got 1.5"]),
    (lambda: dict(transforms=[stoker.CenterCrop((0, 32))]), ["CenterCrop: size", "> 0"]),
    (dict(batch_size=N + 1, drop_last=True), ["drop_last"]),
])
def test_bad_arguments_raise_value_error(folder, kwargs, words):
    with pytest.raises(ValueError) as e:
        make(folder, **(kwargs() if callable(kwargs) else kwargs))
    msg = str(e.value)
    for w in words:
        assert w in msg, msg


def test_normalize_needs_three_values():
    with pytest.raises(ValueError, match=r"Normalize: mean must be 3 numbers \(R, G, B\)"):
        stoker.Normalize([0.5, 0.5], [0.5, 0.5])


def test_missing_or_bad_directory(tmp_path):
    missing = str(tmp_path / "does-not-exist")
    with pytest.raises(FileNotFoundError, match="does-not-exist"):
        stoker.ImageFolder(missing)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="class"):
        stoker.ImageFolder(str(empty))
    (tmp_path / "a_file").write_bytes(b"x")
    with pytest.raises(ValueError, match="not a directory"):
        stoker.ImageFolder(str(tmp_path / "a_file"))
    no_images = tmp_path / "no_images"
    (no_images / "cls").mkdir(parents=True)
    (no_images / "cls" / "notes.txt").write_text("hi")
    with pytest.raises(ValueError, match="cls"):
        stoker.ImageFolder(str(no_images))


def test_closed_loader(folder):
    with make(folder) as loader:
        next(iter(loader))
    with pytest.raises(RuntimeError, match="closed"):
        iter(loader)


def test_engine_bfloat16_bits_are_rounded_float32(folder):
    # Engine level, below the torch conversion in stoker/_loader.py: the raw uint16 words
    # of a bfloat16 batch are float32 rounded to nearest even.
    def raw(dtype):
        loader = make(folder, batch_size=N, transforms=TRAIN, dtype=dtype, seed=4)
        impl = loader._impl
        impl.start()
        x = impl.next()[0].copy()
        impl.stop()
        return x

    bits, f32 = raw("bfloat16"), raw("float32")
    assert bits.dtype == np.uint16 and f32.dtype == np.float32
    want = torch.from_numpy(f32).bfloat16().view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(bits, want)


def test_folder_walk_matches_torchvision(tmp_path):
    # Nested directories, upper-case extensions, names that sort around '/', an upper-case
    # class, and files torchvision and stoker both ignore.
    from conftest import photo, save_jpeg, save_png
    root = tmp_path / "walk"
    files = ["Zebra/one.JPG", "ant/b.jpeg", "ant/a.Png", "ant/sub/c.jpg", "ant/sub b/d.jpg",
             "ant/sub-1/e.jpg", "ant/sub/deeper/f.jpg", "ant/.hidden.jpg", "bee/x.jpg"]
    for k, rel in enumerate(files):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if rel.lower().endswith(".png"):
            save_png(photo(40, 30, k), p)
        else:
            save_jpeg(photo(40, 30, k), p)
    (root / "ant" / "notes.txt").write_text("not an image")
    (root / "bee" / "y.jpg.bak").write_bytes(b"x")
    (root / "stray.jpg").write_bytes(b"top-level files are not samples")
    # Symlinks are followed: a class directory and a file (loops are not compared: stoker
    # detects them, torchvision's os.walk follows them until ELOOP).
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "inner").mkdir(parents=True)
    save_jpeg(photo(40, 30, 50), elsewhere / "s.jpg")
    save_jpeg(photo(40, 30, 51), elsewhere / "inner" / "t.jpg")
    os.symlink(elsewhere, root / "cow")
    os.symlink(root / "bee" / "x.jpg", root / "bee" / "x_link.jpg")
    files = files + ["cow/s.jpg", "cow/inner/t.jpg", "bee/x_link.jpg"]
    tv = tvd.ImageFolder(str(root), loader=lambda p: p)
    f = stoker.ImageFolder(str(root) + "/")
    assert list(f.classes) == tv.classes == ["Zebra", "ant", "bee", "cow"]
    assert len(f) == len(tv.samples) == len(files)
    for i, (path, label) in enumerate(tv.samples):
        assert os.path.normpath(f.path(i)) == os.path.normpath(path), i
        assert f.label(i) == label


def test_two_loaders_interleaved(folder):
    kw = dict(transforms=TRAIN, shuffle=True, seed=2, return_indices=True, threads=2)
    a_ref, b_ref = collect(make(folder, **kw)), collect(make(folder, batch_size=5, **kw))
    a, b = make(folder, **kw), make(folder, batch_size=5, **kw)
    got_a, got_b = [], []
    ia, ib = iter(a), iter(b)
    for _ in range(10):
        for it, got in ((ia, got_a), (ib, got_b)):
            batch = next(it, None)
            if batch is not None:
                got.append(batch)
    for got, ref in ((got_a, a_ref), (got_b, b_ref)):
        assert torch.equal(torch.cat([g[0] for g in got]), ref[0])
        assert torch.equal(torch.cat([g[2] for g in got]), ref[2])


def test_new_iterator_ends_the_previous_one(folder):
    loader = make(folder, return_indices=True, threads=2)
    it1 = iter(loader)
    next(it1)
    it2 = iter(loader)
    # The old iterator raises instead of ending silently.
    with pytest.raises(RuntimeError, match="newer iter"):
        next(it1)
    ids = [j for _, _, i in it2 for j in i.tolist()]
    assert ids == list(range(N))
    assert loader.epoch == 1
