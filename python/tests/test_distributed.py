"""Ranks, checkpoints and iterator semantics.

Ranks are simulated in one process with explicit rank/world_size; the torchrun test
(test_torchrun.py) checks the same under real processes.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import tarfile
import threading

import h5py
import numpy as np
import pytest
from PIL import Image

import stoker
from conftest import needs_hdf5, photo

T = [stoker.Resize((8, 8))]


def run(source, rank, world, **kw):
    """One epoch of one rank: (ids, batch count, pixels by id, loader)."""
    kw.setdefault("batch_size", 4)
    loader = stoker.Loader(source, transforms=T, dtype="uint8", return_indices=True,
                           rank=rank, world_size=world, threads=kw.pop("threads", 2), **kw)
    ids, batches, pixels = [], 0, {}
    for x, _, i in loader:
        batches += 1
        for k, sid in enumerate(i.tolist()):
            ids.append(sid)
            pixels[sid] = np.asarray(x[k]).copy()
    return ids, batches, pixels, loader


def check_ranks(source, n, world, **kw):
    every, counts, padded = [], [], 0
    for r in range(world):
        ids, batches, _, loader = run(source, r, world, **kw)
        assert batches == len(loader), "len(loader) is the per-rank batch count"
        # This rank's own repeat: the ranks from n % world on wrap to the epoch's start.
        assert loader.stats()["padded_samples"] == (1 if n % world and r >= n % world else 0)
        padded += loader.stats()["padded_samples"]
        counts.append(batches)
        every += ids
    assert len(set(counts)) == 1, f"ranks disagree on the batch count: {counts}"
    assert len(set(every)) == n, "the union of the ranks is the epoch"
    assert len(every) == -(-n // world) * world, "disjoint apart from the padding"
    assert padded == len(every) - n, "the ranks' own repeats sum to the epoch's"
    return every


# ------------------------------------------------------------------ sources


@pytest.fixture(scope="module")
def npy(tmp_path_factory):
    d = tmp_path_factory.mktemp("npy")
    rng = np.random.default_rng(0)
    np.save(d / "x.npy", rng.integers(0, 256, (1001, 8, 8, 3), dtype=np.uint8))
    np.save(d / "y.npy", np.arange(1001, dtype=np.int64) % 7)
    return stoker.Npy(str(d / "x.npy"), str(d / "y.npy"))


@pytest.fixture(scope="module")
def folder(tiny_root):
    return stoker.ImageFolder(tiny_root)


@pytest.fixture(scope="module")
def hdf5(tmp_path_factory):
    d = tmp_path_factory.mktemp("h5")
    rng = np.random.default_rng(1)
    with h5py.File(d / "a.h5", "w") as f:
        f["images"] = rng.integers(0, 256, (11, 8, 8, 3), dtype=np.uint8)
        f["labels"] = np.arange(11, dtype=np.int64)
    return stoker.HDF5(str(d / "a.h5"))


def jpeg(seed):
    buf = io.BytesIO()
    Image.fromarray(photo(16, 12, seed)).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def write_shards(d, shards, per, gz):
    paths = []
    for s in range(shards):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            for i in range(per):
                for name, data in ((f"s{s}_{i:03d}.jpg", jpeg(s * 100 + i)),
                                   (f"s{s}_{i:03d}.cls", str(i % 5).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        data = buf.getvalue()
        p = d / (f"shard-{s}.tar.gz" if gz else f"shard-{s}.tar")
        p.write_bytes(gzip.compress(data) if gz else data)
        paths.append(str(p))
    return paths


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_npy_1001_samples_any_world_size(npy, world):
    check_ranks(npy, 1001, world, shuffle=True, seed=3)


@needs_hdf5
@pytest.mark.parametrize("world", [2, 3, 4])
def test_folder_hdf5_indexed_shards(folder, hdf5, tmp_path, world):
    check_ranks(folder, 13, world, shuffle=True)
    check_ranks(hdf5, 11, world)
    indexed = stoker.Shards(write_shards(tmp_path, 3, 5, gz=False), mode="indexed")
    check_ranks(indexed, 15, world, shuffle=True, seed=9)


def test_drop_last_drops_the_tail_and_pads_nothing(npy):
    every = []
    for r in range(4):
        ids, batches, _, loader = run(npy, r, 4, drop_last=True, shuffle=True)
        assert batches == 1001 // 4 // 4
        assert loader.stats()["padded_samples"] == 0
        every += ids
    assert len(every) == len(set(every)) == 4 * (1001 // 4 // 4 * 4)


def test_ranks_share_and_pixels_do_not_depend_on_threads(folder):
    a = run(folder, 1, 3, shuffle=True, threads=1)
    b = run(folder, 1, 3, shuffle=True, threads=3)
    assert a[0] == b[0]
    assert all(np.array_equal(a[2][k], b[2][k]) for k in a[2])


def test_streamed_shards_split_whole_shards(tmp_path):
    paths = write_shards(tmp_path, 4, 5, gz=True)
    src = stoker.Shards(paths, length=20)
    seen, counts = [], []
    for r in range(2):
        ids, batches, _, loader = run(src, r, 2, shuffle=True, seed=1)
        assert len(loader) == batches == 3  # ceil(10 / 4)
        counts.append(batches)
        seen += ids
    assert len(seen) == len(set(seen)) == 20, "4 equal shards over 2 ranks: exactly once"
    # 3 ranks over 4 shards of 5: equal batch counts, shorter ranks repeat their shards.
    counts = [run(src, r, 3)[1] for r in range(3)]
    assert counts == [2, 2, 2]  # ceil(ceil(20 / 3) / 4)


def test_streamed_shards_without_length_refuse_ranks(tmp_path):
    src = stoker.Shards(write_shards(tmp_path, 2, 3, gz=True))
    with pytest.raises(Exception, match="length="):
        stoker.Loader(src, batch_size=2, transforms=T, rank=0, world_size=2)


# ------------------------------------------------------------------ rank discovery


def test_ranks_from_torchrun_environment(npy, monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")
    loader = stoker.Loader(npy, batch_size=4, transforms=T)
    s = loader.stats()
    assert (s["rank"], s["world_size"], s["local_world_size"]) == (2, 3, 3)
    assert s["cores"] == max(1, (len(os.sched_getaffinity(0))) // 3)
    assert len(loader) == -(-334 // 4)  # ceil(1001 / 3) samples
    explicit = stoker.Loader(npy, batch_size=4, transforms=T, rank=0, world_size=1)
    assert (explicit.stats()["rank"], explicit.stats()["world_size"]) == (0, 1)


def test_no_environment_means_one_rank(npy, monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    s = stoker.Loader(npy, batch_size=4, transforms=T).stats()
    assert (s["rank"], s["world_size"], s["local_world_size"]) == (0, 1, 1)


def test_bad_rank_is_refused(npy):
    with pytest.raises(ValueError, match="rank"):
        stoker.Loader(npy, batch_size=4, transforms=T, rank=3, world_size=3)
    with pytest.raises(TypeError, match="rank"):
        stoker.Loader(npy, batch_size=4, transforms=T, rank="1", world_size=3)


# ------------------------------------------------------------------ checkpoints


def segment(source, rank, world, state=None, batches=None, epoch=0):
    loader = stoker.Loader(source, batch_size=4, transforms=[stoker.RandomResizedCrop(8)],
                           dtype="uint8", return_indices=True, shuffle=True, seed=5,
                           rank=rank, world_size=world, threads=2)
    if state is not None:
        loader.load_state_dict(state)
    loader.set_epoch(epoch)
    ids, pixels = [], {}
    for k, (x, _, i) in enumerate(loader):
        for j, sid in enumerate(i.tolist()):
            ids.append(sid)
            pixels[sid] = np.asarray(x[j]).copy()
        if batches is not None and k + 1 == batches:
            break
    return ids, pixels, loader


@pytest.mark.parametrize("before,after", [(2, 3), (4, 1), (3, 2), (1, 4)])
def test_resume_at_another_world_size(npy, before, after):
    whole = segment(npy, 0, 1, epoch=1)[1]
    seen, states = [], []
    for r in range(before):
        ids, pixels, loader = segment(npy, r, before, batches=20, epoch=1)
        seen += ids
        states.append(loader.state_dict())
        assert all(np.array_equal(pixels[k], whole[k]) for k in pixels)
    assert all(s == states[0] for s in states), "ranks agree on the state"
    state = pickle.loads(pickle.dumps(states[0]))
    assert len(pickle.dumps(state)) < 1024
    assert state["epoch"] == 1 and state["consumed"] == 20 * 4 * before
    for r in range(after):
        ids, pixels, loader = segment(npy, r, after, state=state, epoch=1)
        seen += ids
        assert all(np.array_equal(pixels[k], whole[k]) for k in pixels), "same pixels"
    left = 1001 - 20 * 4 * before
    assert len(set(seen)) == 1001
    assert len(seen) == 20 * 4 * before + -(-left // after) * after


def test_state_after_an_epoch_is_the_next_epoch(npy):
    _, _, loader = segment(npy, 0, 2, epoch=4)
    s = loader.state_dict()
    assert (s["epoch"], s["consumed"]) == (5, 0)


def test_state_round_trips_through_torch_save(npy, tmp_path):
    torch = pytest.importorskip("torch")
    _, _, loader = segment(npy, 0, 1, batches=3)
    torch.save({"loader": loader.state_dict()}, tmp_path / "ck.pt")
    back = torch.load(tmp_path / "ck.pt")["loader"]
    assert back == loader.state_dict()
    ids, _, _ = segment(npy, 0, 1, state=back)
    assert len(ids) == 1001 - 12


def test_foreign_or_newer_states_are_refused(npy, folder):
    _, _, loader = segment(npy, 0, 1, batches=1)
    good = loader.state_dict()
    with pytest.raises(ValueError, match="newer"):
        loader.load_state_dict(dict(good, version=good["version"] + 1))
    with pytest.raises(ValueError, match="samples"):
        loader.load_state_dict(dict(good, num_samples=5))
    with pytest.raises(ValueError, match="another dataset"):
        loader.load_state_dict(dict(good, fingerprint=good["fingerprint"] ^ 1))
    with pytest.raises(ValueError, match="seed"):
        loader.load_state_dict(dict(good, seed=6))
    other = stoker.Loader(folder, batch_size=4, transforms=T)
    with pytest.raises(ValueError):
        other.load_state_dict(good)
    with pytest.raises(ValueError, match="not a stoker"):
        loader.load_state_dict({"epoch": 1})


# ------------------------------------------------------------------ iterator semantics


def test_nested_iteration_raises_instead_of_ending_the_outer_epoch(npy):
    loader = stoker.Loader(npy, batch_size=100, transforms=T)
    outer = iter(loader)
    next(outer)
    inner = sum(1 for _ in loader)
    assert inner == len(loader)
    with pytest.raises(RuntimeError, match="newer iter"):
        next(outer)


def test_use_after_close_raises(npy):
    loader = stoker.Loader(npy, batch_size=100, transforms=T)
    it = iter(loader)
    next(it)
    loader.close()
    with pytest.raises(RuntimeError, match="closed"):
        next(it)
    for use in (lambda: len(loader), loader.stats, lambda: loader.set_epoch(1),
                lambda: iter(loader), loader.state_dict):
        with pytest.raises(RuntimeError, match="closed"):
            use()


def test_two_threads_calling_next_share_the_epoch(npy):
    loader = stoker.Loader(npy, batch_size=16, transforms=T, return_indices=True)
    it = iter(loader)
    got = [[], []]

    def consume(k):
        for _, _, ids in it:
            got[k] += ids.tolist()

    # daemon: a thread left blocked (the bug) fails the test instead of stalling the run
    threads = [threading.Thread(target=consume, args=(k,), daemon=True) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread stayed blocked in next()"
    assert sorted(got[0] + got[1]) == list(range(1001))


def test_streamed_shards_resume_at_the_same_world_size(tmp_path):
    src = stoker.Shards(write_shards(tmp_path, 4, 5, gz=True), length=20, shuffle_buffer=8)
    first, states = [], []
    for r in range(2):
        ids, _, loader = segment(src, r, 2, batches=1)
        first += ids
        states.append(loader.state_dict())
    assert states[0] == states[1] and states[0]["consumed"] == 8
    second = []
    for r in range(2):
        second += segment(src, r, 2, state=states[0])[0]
    assert not set(first) & set(second)
    assert len(first) + len(second) == len(set(first) | set(second)) == 20
    with pytest.raises(Exception, match="world size"):
        segment(src, 0, 1, state=states[0])
