"""Issue 32, argument and state validation (items 2, 14, 15, 24, 26-30, 32): bad values
are refused with a ValueError/TypeError naming the argument (never a binding's signature
dump, a silent coercion or a frozen draw), integral numpy and torch values are accepted,
sources of one known image size batch without a transform, and the caches can check that
their files did not change."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest
import torch
import torch.utils.data as tud
import torchvision.transforms as TV
from PIL import Image

import stoker
from conftest import collect, photo, run_child, save_png

INF = float("inf")
NAN = float("nan")


@pytest.fixture()
def npy(tmp_path):
    n = 12
    np.save(tmp_path / "x.npy", np.stack([photo(4, 4, s) for s in range(n)]))
    np.save(tmp_path / "y.npy", np.arange(n, dtype=np.int64))
    return stoker.Npy(images=str(tmp_path / "x.npy"), labels=str(tmp_path / "y.npy"))


def loader_of(source, **kw):
    kw.setdefault("batch_size", 4)
    kw.setdefault("dtype", "uint8")
    kw.setdefault("threads", 2)
    return stoker.Loader(source, **kw)


def ids_of(loader):
    return [int(i) for _, _, ids in loader for i in ids]


def no_dump(excinfo):
    text = str(excinfo.value)
    assert "incompatible function arguments" not in text and "Unable to cast" not in text, text


# ------------------------------------------------------------------------- item 2 --

@pytest.mark.parametrize("make", [
    lambda v: stoker.RandomErasing(p=1.0, scale=(1.0, 1.0), ratio=(v, v)),
    lambda v: stoker.RandomErasing(p=1.0, scale=(v, 1.0)),
    lambda v: stoker.RandomResizedCrop(8, scale=(0.5, v)),
    lambda v: stoker.RandomResizedCrop(8, ratio=(v, v)),
    lambda v: stoker.RandomAffine(0, scale=(v, v)),
    lambda v: stoker.RandomAffine(0, translate=(v, 0.1)),
    lambda v: stoker.RandomAffine(0, shear=v),
    lambda v: stoker.RandomAdjustSharpness(v),
    lambda v: stoker.RandomSolarize(v),
])
@pytest.mark.parametrize("value", [INF, -INF, NAN])
def test_non_finite_transform_values_are_refused_at_construction(make, value):
    with pytest.raises(ValueError, match="must be"):
        make(value)


def test_extreme_finite_geometry_never_crashes_and_matches_torchvision(tmp_path):
    # In a child under a timeout: an extreme ratio or scale gave sizes no int holds
    # (an undefined cast), and RandomAffine's scale 1e-300 maps pixels to +-1e300.
    code = textwrap.dedent(f"""
        import numpy as np, torch, stoker
        import torchvision.transforms as TV
        from PIL import Image
        rng = np.random.default_rng(0)
        x = rng.integers(0, 256, (6, 20, 24, 3), dtype=np.uint8)
        np.save({str(tmp_path)!r} + "/x.npy", x)
        src = stoker.Npy(images={str(tmp_path)!r} + "/x.npy")
        def run(t):
            loader = stoker.Loader(src, batch_size=3, dtype="uint8", layout="NHWC",
                                   transforms=[t])
            return np.concatenate([b.numpy() for b, _ in loader])
        import torchvision.transforms.functional as F
        # torch cannot draw these (uniform_ refuses bounds beyond float32); its rule:
        # 10 attempts fail, then the fallback's central crop (at least 1 pixel: the
        # fallback's round(24 / 1e300) is 0), resized.
        for ratio, scale, box in [((1e300, 1e300), (0.5, 1.0), (9, 0, 1, 24)),
                                  ((1e-300, 1e-300), (0.5, 1.0), (0, 11, 20, 1)),
                                  ((0.75, 1.33), (1e300, 1e300), (0, 0, 20, 24))]:
            out = run(stoker.RandomResizedCrop((8, 8), scale=scale, ratio=ratio))
            for k in range(len(x)):
                ref = F.resized_crop(Image.fromarray(x[k]), *box, [8, 8])
                assert (out[k] == np.asarray(ref)).all(), (ratio, scale, k)
        for scale in [1e300, 1e-300, 1e30]:
            out = run(stoker.RandomAffine(0, scale=(scale, scale)))
            for k in range(len(x)):
                ref = F.affine(Image.fromarray(x[k]), 0.0, [0, 0], scale, [0.0, 0.0])
                assert (out[k] == np.asarray(ref)).all(), (scale, k)
        out = run(stoker.RandomAffine(0, shear=89.999999))
        assert out.shape == x.shape
        print("done")
    """)
    run_child(code)


# ------------------------------------------------------------------------ item 14 --

def test_samplers_that_draw_in_python_are_never_frozen(npy):
    class MyRandom(tud.RandomSampler):  # draws in Python every epoch
        pass

    class MyWeighted(tud.WeightedRandomSampler):
        pass

    class DuckSampler:  # not a torch Sampler, not a sequence: iterable only
        def __iter__(self):
            return iter(torch.randperm(12).tolist())

        def __len__(self):
            return 12

    for sampler in (MyRandom(range(12)), MyWeighted([1.0] * 12, 12), DuckSampler(),
                    iter(range(12)), (i for i in range(12)), {0: 1}):
        with pytest.raises(TypeError, match="sampler"):
            loader_of(npy, sampler=sampler, return_indices=True)
    # torch's own RandomSampler / WeightedRandomSampler are mapped: the draw changes
    # with the epoch.
    for sampler in (tud.RandomSampler(range(12)), tud.WeightedRandomSampler([1.0] * 12, 12)):
        with pytest.warns(stoker.MigrationWarning):
            loader = loader_of(npy, sampler=sampler, return_indices=True)
        first, second = ids_of(loader), ids_of(loader)
        assert len(first) == len(second) == 12 and first != second, sampler


# ------------------------------------------------------------------- items 15, 28 --

def saved_state(npy):
    loader = loader_of(npy, shuffle=True, seed=3, return_indices=True)
    it = iter(loader)
    next(it)
    return loader, loader.state_dict()


def test_a_state_missing_any_key_is_refused_naming_it(npy):
    loader, good = saved_state(npy)
    assert set(good) >= {"version", "epoch", "consumed", "world_size", "seed", "shuffle",
                         "num_samples", "fingerprint"}
    with pytest.raises(ValueError, match="not a stoker Loader state: no 'world_size'"):
        loader.load_state_dict({"version": 1, "epoch": 0, "consumed": 4})
    for key in ("version", "epoch", "consumed", "world_size", "seed", "shuffle",
                "num_samples", "fingerprint"):
        state = dict(good)
        del state[key]
        with pytest.raises(ValueError, match=f"no '{key}'"):
            loader.load_state_dict(state)
    loader.load_state_dict(good)  # the whole state still loads
    assert len(ids_of(loader)) == 8


@pytest.mark.parametrize("key,value,error,match", [
    ("epoch", -5, ValueError, r"state\['epoch'\] must be >= 0, got -5"),
    ("shuffle", "False", TypeError, r"state\['shuffle'\] must be True or False"),
    ("shuffle", 1, TypeError, r"state\['shuffle'\] must be True or False"),
    ("world_size", 0, ValueError, r"state\['world_size'\] must be >= 1, got 0"),
    ("consumed", 1.9, TypeError, r"state\['consumed'\] must be an int, got float 1.9"),
    ("consumed", -1, ValueError, r"state\['consumed'\] must be >= 0"),
    ("consumed", 2**63, ValueError, r"state\['consumed'\] must be <= 9223372036854775807"),
    ("epoch", 2**64, ValueError, r"state\['epoch'\] must be <="),
    ("world_size", 2**40, ValueError, r"state\['world_size'\] must be <= 2147483647"),
    ("seed", "3", TypeError, r"state\['seed'\] must be an int"),
    ("fingerprint", 1.5, TypeError, r"state\['fingerprint'\] must be an int"),
    ("version", 0, ValueError, r"state\['version'\] must be >= 1"),
])
def test_a_state_with_a_bad_value_is_refused_naming_it(npy, key, value, error, match):
    loader, good = saved_state(npy)
    with pytest.raises(error, match=match) as e:
        loader.load_state_dict(dict(good, **{key: value}))
    no_dump(e)


def test_a_state_with_numpy_and_torch_integers_loads(npy):
    loader, good = saved_state(npy)
    state = dict(good, epoch=np.int64(good["epoch"]), consumed=torch.tensor(good["consumed"]),
                 shuffle=np.bool_(True))
    loader.load_state_dict(state)
    assert len(ids_of(loader)) == 8


# ------------------------------------------------------------------------ item 27 --

def test_out_of_range_integers_name_the_argument(npy):
    with pytest.raises(ValueError, match=r"world_size must be in \[0, 2147483647\], "
                                         r"got 1099511627776") as e:
        loader_of(npy, world_size=2**40)
    no_dump(e)
    with pytest.raises(ValueError, match="rank must be") as e:
        loader_of(npy, rank=2**70, world_size=2)
    no_dump(e)
    with pytest.raises(ValueError, match=r"Subset indices must be in \[0, 2\*\*63 - 1\], "
                                         r"got 9223372036854775808") as e:
        stoker.Subset([2**63])
    no_dump(e)
    with pytest.raises(ValueError, match="num_samples must be at most") as e:
        stoker.WeightedSampler([1.0] * 3, num_samples=10**20)
    no_dump(e)
    with pytest.raises(ValueError, match="num_samples must be at most") as e:
        stoker.ClassBalanced(num_samples=10**20)
    no_dump(e)
    for size in [(2**31, 2), (2**63, 2), (2, 10**30), 2**64]:
        with pytest.raises(ValueError, match="Resize: size must be") as e:
            stoker.Resize(size)
        no_dump(e)
    with pytest.raises(ValueError, match="RandomCrop: size must be") as e:
        stoker.RandomCrop(-2**70)
    no_dump(e)
    loader, good = saved_state(npy)
    with pytest.raises(ValueError, match=r"state\['consumed'\]") as e:
        loader.load_state_dict(dict(good, consumed=2**63))
    no_dump(e)


# ------------------------------------------------------------------------ item 29 --

def test_integral_numpy_and_torch_values_are_accepted(npy):
    for rank, world in [(np.int64(0), np.int64(1)), (torch.tensor(1), torch.tensor(2)),
                        (np.int32(0), 2)]:
        loader = loader_of(npy, rank=rank, world_size=world, return_indices=True)
        assert len(ids_of(loader)) == (6 if int(world) == 2 else 12)
    for sampler in (torch.arange(10), np.arange(10), stoker.Subset(torch.arange(10)),
                    stoker.Subset(np.arange(10)), stoker.Subset([np.int64(i) for i in range(10)])):
        assert ids_of(loader_of(npy, sampler=sampler, return_indices=True)) == list(range(10))
    ws = stoker.WeightedSampler(np.ones(12), num_samples=np.int64(7))
    assert len(ids_of(loader_of(npy, sampler=ws, return_indices=True))) == 7
    assert len(loader_of(npy, batch_size=torch.tensor(3))) == 4
    assert len(loader_of(npy, batch_size=4, seed=np.uint64(5))) == 3
    # Still refused: floats, bools and non-integral tensors.
    for bad in (0.0, True, torch.tensor(0.5), np.float64(1.0), "0"):
        with pytest.raises(TypeError, match="rank must be an int"):
            loader_of(npy, rank=bad, world_size=1)
    with pytest.raises(TypeError, match="Subset indices must be ints"):
        stoker.Subset(torch.tensor([0.5, 1.0]))


# ------------------------------------------------------------------------ item 30 --

def test_shards_length_must_be_positive_or_none(tmp_path):
    import io
    import tarfile
    path = tmp_path / "s.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for k in range(3):
            for name, data in ((f"k{k}.png", _png_bytes(k)), (f"k{k}.cls", b"0")):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    for bad in (0, -1):
        with pytest.raises(ValueError, match=f"length must be >= 1, got {bad}"):
            stoker.Shards(str(path), length=bad)
    with pytest.raises(TypeError, match="length must be an int"):
        stoker.Shards(str(path), length=2.5)
    with pytest.raises(TypeError):
        len(stoker.Shards(str(path)))  # None: unknown
    assert len(stoker.Shards(str(path), length=np.int64(3))) == 3


def _png_bytes(seed):
    import io
    buf = io.BytesIO()
    Image.fromarray(photo(8, 6, seed)).save(buf, format="PNG")
    return buf.getvalue()


# ------------------------------------------------------------------------ item 32 --

def test_sources_of_one_known_size_batch_without_a_transform(tmp_path):
    x = np.stack([photo(5, 4, s) for s in range(10)])  # [N, 4, 5, 3]
    np.save(tmp_path / "x.npy", x)
    src = stoker.Npy(images=str(tmp_path / "x.npy"))
    images, _, _ = collect(loader_of(src, batch_size=4), indexed=False)
    assert images.shape == (10, 3, 4, 5)
    assert torch.equal(images, torch.from_numpy(x).permute(0, 3, 1, 2))
    # Size-keeping transforms, Pad and Resize(int) of a known size: fixed as well.
    images, _, _ = collect(loader_of(src, transforms=[stoker.RandomHorizontalFlip(0.0),
                                                      stoker.Pad(1)]), indexed=False)
    assert images.shape == (10, 3, 6, 7)
    images, _, _ = collect(loader_of(src, transforms=[stoker.Resize(8)]), indexed=False)
    want = TV.Resize(8)(Image.fromarray(x[0]))
    assert images.shape[2:] == (want.height, want.width) == (8, 10)
    assert torch.equal(images[0], torch.from_numpy(np.array(want)).permute(2, 0, 1))
    # A folder's images may differ in size: still an error there, unless a crop fixes
    # the size (a shorter-side Resize after it is then fixed too: 6x6 -> 3x3).
    root = tmp_path / "f" / "c"
    root.mkdir(parents=True)
    save_png(photo(5, 4, 0), root / "a.png")
    save_png(photo(9, 7, 1), root / "b.png")
    with pytest.raises(ValueError, match="fixed image size"):
        loader_of(stoker.ImageFolder(str(tmp_path / "f")))
    images, _, _ = collect(loader_of(stoker.ImageFolder(str(tmp_path / "f")),
                                     transforms=[stoker.CenterCrop(6), stoker.Resize(3)]),
                           indexed=False)
    assert images.shape == (2, 3, 3, 3)


# ------------------------------------------------------------------------ item 26 --

def test_image_folder_class_names_that_are_not_utf8(tmp_path):
    root = os.fsencode(str(tmp_path))
    for name in (b"caf\xe9", b"plain"):
        os.mkdir(os.path.join(root, name))
        save_png(photo(6, 5, 0), os.fsdecode(os.path.join(root, name, b"a.png")))
    folder = stoker.ImageFolder(str(tmp_path))
    want = sorted(os.fsdecode(n) for n in (b"caf\xe9", b"plain"))
    assert folder.classes == want == ["caf\udce9", "plain"]
    assert folder.class_to_idx == {c: i for i, c in enumerate(want)}
    import torchvision.datasets as D
    tv = D.ImageFolder(str(tmp_path))
    assert folder.classes == tv.classes and folder.class_to_idx == tv.class_to_idx


# ------------------------------------------------------------------------ item 24 --

def _rewrite(path, arr):
    """Rewrites `path` with other pixels (other size and a later mtime)."""
    st = os.stat(path)
    save_png(arr, path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


@pytest.mark.parametrize("cache", ["decoded", "output"])
def test_cache_serves_old_pixels_unless_validated(tmp_path, cache):
    root = tmp_path / "data" / "c"
    root.mkdir(parents=True)
    for k in range(6):
        save_png(photo(8, 8, k), root / f"{k}.png")
    new = np.full((8, 8, 3), 77, np.uint8)

    def make(validate):
        return stoker.Loader(stoker.ImageFolder(str(tmp_path / "data")), batch_size=2,
                             prefetch=1, dtype="uint8", threads=2, cache=cache,
                             cache_bytes=1 << 24,
                             cache_validate=validate, transforms=[stoker.Resize((8, 8))])

    plain, validated = make(False), make(True)
    first, _, _ = collect(plain, indexed=False)
    collect(validated, indexed=False)
    # Sample 5 is in the last batch: the next epoch's prefetched first batch (made as
    # this epoch ended) does not hold it.
    _rewrite(root / "5.png", new)
    # Without the check: the cache serves what it first read (documented).
    again, _, _ = collect(plain, indexed=False)
    assert torch.equal(again, first)
    # With it: the changed file is read again; the others stay hits.
    fresh, _, _ = collect(validated, indexed=False)
    assert (fresh[5] == 77).all() and torch.equal(fresh[:5], first[:5])
    st = validated.stats()["cache"]
    assert st["stale"] == 1 and st["hits"] >= 5, st
    assert plain.stats()["cache"]["stale"] == 0
    # A deleted file is an error again, as without a cache.
    os.remove(root / "4.png")
    with pytest.raises(stoker.StokerError, match="4.png"):
        collect(validated, indexed=False)
    with pytest.raises(ValueError, match="cache_validate=True given without cache"):
        stoker.Loader(stoker.ImageFolder(str(tmp_path / "data")), batch_size=3,
                      cache_validate=True)
