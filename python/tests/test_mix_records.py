"""A Mix of three record sources (issue 25): Npy arrays, indexed shards and HDF5 datasets,
each sample an image, a label and an "aux" array; every field of every delivered sample is
its own (compared with the data written), under ranks, resume at another world size and
any thread count.
"""

from __future__ import annotations

import collections
import io
import pickle

import numpy as np
import pytest
from PIL import Image

import stoker
from conftest import needs_hdf5, npy_bytes, tar_bytes

N = {"npy": 10, "shards": 8, "h5": 12}
BASE = {"npy": 1000, "shards": 2000, "h5": 3000}
KIND = ["npy", "shards", "h5"]  # Mix source index -> kind
TOTAL = 40


def pixels(kind: str, i: int) -> np.ndarray:
    rng = np.random.default_rng(BASE[kind] + i)
    return rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)


def aux(kind: str, i: int) -> np.ndarray:
    return np.array([BASE[kind] + i, -i], np.int32)


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    import h5py
    d = tmp_path_factory.mktemp("mixrec")
    n = N["npy"]
    np.save(d / "im.npy", np.stack([pixels("npy", i) for i in range(n)]))
    np.save(d / "lb.npy", np.arange(n, dtype=np.int64) % 3)
    np.save(d / "aux.npy", np.stack([aux("npy", i) for i in range(n)]))
    members = []
    for i in range(N["shards"]):
        png = io.BytesIO()
        Image.fromarray(pixels("shards", i)).save(png, format="PNG")
        members += [(f"k{i:03d}.png", png.getvalue()), (f"k{i:03d}.cls", str(i % 3).encode()),
                    (f"k{i:03d}.aux.npy", npy_bytes(aux("shards", i)))]
    (d / "r.tar").write_bytes(tar_bytes(members))
    n = N["h5"]
    with h5py.File(d / "r.h5", "w") as f:
        f["images"] = np.stack([pixels("h5", i) for i in range(n)])
        f["labels"] = np.arange(n, dtype=np.int64) % 3
        f["aux"] = np.stack([aux("h5", i) for i in range(n)])
    sources = [
        stoker.Npy({"image": str(d / "im.npy"), "label": str(d / "lb.npy"),
                    "aux": str(d / "aux.npy")}),
        stoker.Shards([str(d / "r.tar")], fields={
            "image": "png", "label": "cls",
            "aux": {"ext": "aux.npy", "dtype": "int32", "shape": (2,)}}),
        stoker.HDF5(str(d / "r.h5"), fields={"image": "images", "label": "labels",
                                             "aux": "aux"}),
    ]
    return stoker.Mix(sources, [1, 1, 2], num_samples=TOTAL, labels="per_source")


def epoch(source, rank=0, world=1, state=None, batches=None, threads=2):
    """One rank's epoch: the delivered ids, each checked against the data it came from."""
    loader = stoker.Loader(source, batch_size=4, transforms=[stoker.CenterCrop(8)],
                           dtype="uint8", layout="NHWC", shuffle=True, seed=5,
                           return_indices=True, rank=rank, world_size=world, threads=threads)
    if state is not None:
        loader.load_state_dict(state)
    loader.set_epoch(1)
    ids = []
    for k, (batch, i) in enumerate(loader):
        assert set(batch) == {"image", "label", "aux"}
        for j, sid in enumerate(i.tolist()):
            kind = KIND[stoker.Mix.source_of(sid)]
            idx = stoker.Mix.id_in_source(sid)
            assert np.array_equal(batch["image"][j].numpy(), pixels(kind, idx)), (kind, idx)
            assert np.array_equal(batch["aux"][j].numpy(), aux(kind, idx)), (kind, idx)
            assert int(batch["label"][j]) == idx % 3
            ids.append(sid)
        if batches is not None and k + 1 == batches:
            break
    return ids, loader


@needs_hdf5
def test_every_field_is_its_samples_own_for_any_thread_count(mix):
    assert mix.records and set(mix.fields) == {"image", "label", "aux"}
    ref, _ = epoch(mix, threads=1)
    assert len(ref) == TOTAL
    assert collections.Counter(KIND[stoker.Mix.source_of(s)] for s in ref) == {
        "npy": 10, "shards": 10, "h5": 20}
    for threads in (2, 4):
        ids, _ = epoch(mix, threads=threads)
        assert ids == ref


@needs_hdf5
@pytest.mark.parametrize("world", [2, 3])
def test_ranks_read_the_whole_epoch(mix, world):
    whole, _ = epoch(mix)
    every = []
    for r in range(world):
        ids, _ = epoch(mix, r, world)
        assert len(ids) == -(-TOTAL // world)
        every += ids
    counts = collections.Counter(every)
    counts.subtract(collections.Counter(whole))
    assert all(v >= 0 for v in counts.values())
    assert sum(counts.values()) == -(-TOTAL // world) * world - TOTAL


@needs_hdf5
@pytest.mark.parametrize("before,after", [(2, 3), (3, 1)])
def test_resume_at_another_world_size(mix, before, after):
    whole, _ = epoch(mix)
    seen, states = [], []
    for r in range(before):
        ids, loader = epoch(mix, r, before, batches=2)
        seen += ids
        states.append(loader.state_dict())
    assert all(s == states[0] for s in states)
    state = pickle.loads(pickle.dumps(states[0]))
    for r in range(after):
        ids, _ = epoch(mix, r, after, state=state)
        seen += ids
    left = TOTAL - 8 * before
    counts = collections.Counter(seen)
    counts.subtract(collections.Counter(whole))
    assert all(v >= 0 for v in counts.values()), "every draw of the epoch is read"
    assert sum(counts.values()) == -(-left // after) * after - left
