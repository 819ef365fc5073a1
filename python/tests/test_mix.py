"""stoker.Mix: several sources read as one.

A mixture of three sources of three kinds (ImageFolder, Npy, indexed Shards) split by ranks
and resumed at other world sizes; exact shares; the source of every sample; bad arguments.
"""

from __future__ import annotations

import collections
import gzip
import io
import pickle
import tarfile

import numpy as np
import pytest
import torch
from PIL import Image

import stoker
from conftest import photo

T = [stoker.RandomResizedCrop(8), stoker.RandomHorizontalFlip()]


@pytest.fixture(scope="module")
def folder(tiny_root):
    return stoker.ImageFolder(tiny_root)


@pytest.fixture(scope="module")
def npy(tmp_path_factory):
    d = tmp_path_factory.mktemp("npy")
    rng = np.random.default_rng(0)
    np.save(d / "x.npy", rng.integers(0, 256, (20, 8, 8, 3), dtype=np.uint8))
    np.save(d / "y.npy", np.arange(20, dtype=np.int64) % 4)
    return stoker.Npy(str(d / "x.npy"), str(d / "y.npy"))


def write_tar(path, keys, seed):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for i, key in enumerate(keys):
            img = io.BytesIO()
            Image.fromarray(photo(16, 12, seed + i)).save(img, format="JPEG", quality=90)
            for name, data in ((f"{key}.jpg", img.getvalue()), (f"{key}.cls", b"1")):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    d = tmp_path_factory.mktemp("shards")
    write_tar(d / "a-0.tar", [f"k{i:02d}" for i in range(6)], 100)
    write_tar(d / "a-1.tar", [f"k{i:02d}" for i in range(6, 12)], 200)
    return stoker.Shards(str(d / "a-{0..1}.tar"), mode="indexed")


@pytest.fixture(scope="module")
def three(folder, npy, shards):
    return stoker.Mix([folder, npy, shards], [1, 2, 1], num_samples=60, labels="per_source")


def epoch(source, rank=0, world=1, state=None, batches=None, ep=1, threads=2):
    """One rank's epoch (or its first `batches`): ids, pixels by id, source per sample, loader."""
    loader = stoker.Loader(source, batch_size=4, transforms=T, dtype="uint8", shuffle=True,
                           seed=9, return_indices=True, rank=rank, world_size=world,
                           threads=threads)
    if state is not None:
        loader.load_state_dict(state)
    loader.set_epoch(ep)
    ids, pixels, origin = [], {}, []
    for k, (x, _, i) in enumerate(loader):
        assert isinstance(stoker.Mix.source_of(i), torch.Tensor)
        origin += stoker.Mix.source_of(i).tolist()
        for j, sid in enumerate(i.tolist()):
            ids.append(sid)
            pixels[sid] = np.asarray(x[j]).copy()
        if batches is not None and k + 1 == batches:
            break
    return ids, pixels, origin, loader


def test_exact_shares_and_the_source_of_every_sample(three, folder, npy, shards):
    assert len(three) == 60
    assert three.samples_per_source == [15, 30, 15]
    assert three.probabilities == pytest.approx([0.25, 0.5, 0.25])
    assert three.stop == "num_samples"
    assert three.sources[1] is npy or len(three.sources[1]) == len(npy)
    ids, _, origin, _ = epoch(three)
    assert collections.Counter(origin) == {0: 15, 1: 30, 2: 15}
    sizes = [len(folder), len(npy), len(shards)]
    for sid, src in zip(ids, origin):
        assert stoker.Mix.source_of(sid) == src
        assert 0 <= stoker.Mix.id_in_source(sid) < sizes[src]
    # Source 0 (13 samples, share 15): every sample once, two of them twice.
    zero = collections.Counter(stoker.Mix.id_in_source(s) for s in ids
                               if stoker.Mix.source_of(s) == 0)
    assert set(zero) == set(range(13)) and sorted(zero.values()) == [1] * 11 + [2] * 2
    # numpy ids too, and another epoch draws another order with the same shares.
    assert stoker.Mix.source_of(np.array(ids)).tolist() == origin
    ids2, _, origin2, _ = epoch(three, ep=2)
    assert collections.Counter(origin2) == {0: 15, 1: 30, 2: 15} and ids2 != ids


def test_same_output_for_any_thread_count(three):
    ref_ids, ref_pixels, _, _ = epoch(three, threads=1)
    for threads in (2, 5):
        ids, pixels, _, _ = epoch(three, threads=threads)
        assert ids == ref_ids
        assert all(np.array_equal(pixels[k], ref_pixels[k]) for k in ref_pixels)


@pytest.mark.parametrize("world", [2, 3, 4])
def test_three_sources_split_by_ranks(three, world):
    whole, _, _, _ = epoch(three)
    every = []
    for r in range(world):
        ids, _, _, loader = epoch(three, r, world)
        assert len(ids) == -(-60 // world)
        every += ids
    padded = -(-60 // world) * world - 60
    counts = collections.Counter(every)
    counts.subtract(collections.Counter(whole))
    assert all(v >= 0 for v in counts.values()), "every draw of the epoch is read"
    assert sum(counts.values()) == padded


@pytest.mark.parametrize("before,after", [(2, 3), (3, 1), (1, 4), (2, 2)])
def test_three_sources_resume_at_another_world_size(three, before, after):
    whole_ids, whole, _, _ = epoch(three)
    seen, states = [], []
    for r in range(before):
        ids, pixels, _, loader = epoch(three, r, before, batches=2)
        seen += ids
        states.append(loader.state_dict())
        assert all(np.array_equal(pixels[k], whole[k]) for k in pixels)
    assert all(s == states[0] for s in states)
    state = pickle.loads(pickle.dumps(states[0]))
    assert state["consumed"] == 2 * 4 * before
    for r in range(after):
        ids, pixels, _, _ = epoch(three, r, after, state=state)
        seen += ids
        assert all(np.array_equal(pixels[k], whole[k]) for k in pixels), "same pixels"
    left = 60 - 8 * before
    counts = collections.Counter(seen)
    counts.subtract(collections.Counter(whole_ids))
    assert all(v >= 0 for v in counts.values()), "every draw of the epoch is read"
    assert sum(counts.values()) == -(-left // after) * after - left


def test_a_state_of_another_mix_is_refused(three, folder, npy, shards):
    _, _, _, loader = epoch(three, batches=1)
    other = stoker.Mix([folder, npy, shards], [1, 1, 1], num_samples=60, labels="per_source")
    l2 = stoker.Loader(other, batch_size=4, transforms=T, shuffle=True, seed=9)
    with pytest.raises(ValueError):
        l2.load_state_dict(loader.state_dict())


def test_stop_modes_and_replacement(folder, npy):
    assert len(stoker.Mix([folder, npy], labels="per_source")) == 33
    first = stoker.Mix([folder, npy], [1, 1], stop="first_exhausted", labels="per_source")
    assert len(first) == 26 and first.samples_per_source == [13, 13]
    ids, _, origin, _ = epoch(first)
    assert len(set(ids)) == 26 and collections.Counter(origin) == {0: 13, 1: 13}
    rep = stoker.Mix([folder, npy], [1, 3], replacement=True, num_samples=40, labels="per_source")
    assert len(rep) == 40 and rep.stop == "replacement"
    assert len(epoch(rep)[0]) == 40


def test_labels(folder, npy):
    with pytest.raises(ValueError, match='labels="union"'):
        stoker.Mix([folder, npy])
    same = stoker.Mix([folder, folder])
    assert same.classes == folder.classes
    ids, _, origin, _ = epoch(same)
    assert sorted(origin) == [0] * 13 + [1] * 13
    # Each sample twice, under two ids: two augmentations of one image.
    assert len(set(ids)) == 26


def test_bad_arguments_are_refused_clearly(folder, npy, tmp_path):
    def refused(exc, match, *a, **kw):
        with pytest.raises(exc, match=match):
            stoker.Mix(*a, **kw)

    refused(ValueError, r"weights\[1\] is -1", [folder, npy], [1, -1], labels="per_source")
    refused(ValueError, r"weights\[0\] is nan", [folder, npy], [float("nan"), 1],
            labels="per_source")
    refused(ValueError, r"weights\[0\] is 0", [folder, npy], [0, 0], labels="per_source")
    refused(ValueError, "3 weights for 2 sources", [folder, npy], [1, 1, 1], labels="per_source")
    refused(ValueError, "weights is empty", [folder, npy], [], labels="per_source")
    refused(ValueError, "empty", [])
    refused(TypeError, "list of stoker sources", folder)
    refused(TypeError, r"sources\[1\] is a str", [folder, "data/train"])
    refused(ValueError, "positive", [folder], num_samples=0)
    refused(ValueError, "leave stop= out", [folder], num_samples=5, stop="first_exhausted")
    refused(ValueError, "replacement", [folder], replacement=True, stop="all_exhausted")
    refused(ValueError, "stop must be", [folder], stop="longest")
    refused(ValueError, "labels must be", [folder], labels="merge")
    refused(ValueError, "itself a Mix", [folder, stoker.Mix([folder])])
    # A stream: refused, saying what to do instead.
    write_tar(tmp_path / "s.tar", ["a", "b"], 0)
    (tmp_path / "s.tar.gz").write_bytes(gzip.compress((tmp_path / "s.tar").read_bytes()))
    stream = stoker.Shards(str(tmp_path / "s.tar.gz"))
    refused(ValueError, "is a stream: Mix needs random-access sources", [folder, stream])
    refused(ValueError, "stoker convert", [folder, stream])
    # A sampler does not apply.
    with pytest.raises(ValueError, match="Mix"):
        stoker.Loader(stoker.Mix([folder]), batch_size=2, transforms=T,
                      sampler=stoker.Subset([0, 1]))
