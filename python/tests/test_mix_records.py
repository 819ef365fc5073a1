"""A Mix of three record sources: Npy arrays, indexed shards and HDF5 datasets,
each sample an image, a label and an "aux" array; every field of every delivered sample is
its own (compared with the data written), under ranks, resume at another world size and
any thread count. A second Mix (shards, HDF5 raw, HDF5 encoded) carries text, bytes and json
fields too, each compared value by value with what was written.
"""

from __future__ import annotations

import collections
import io
import json
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


def assert_every_draw_read(seen, whole, left, world):
    """`seen` holds every draw of the epoch `whole` (its last `left` split by `world` ranks)
    and nothing more than the ranks' padding: -(-left // world) * world - left repeats."""
    counts = collections.Counter(seen)
    counts.subtract(collections.Counter(whole))
    assert all(v >= 0 for v in counts.values()), "every draw of the epoch is read"
    assert sum(counts.values()) == -(-left // world) * world - left


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
    assert_every_draw_read(every, whole, TOTAL, world)


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
    assert_every_draw_read(seen, whole, TOTAL - 8 * before, after)


# A Mix of three sources whose records also carry text, bytes and json: indexed shards (a
# .txt, a .bin and a .json member per sample), HDF5 with raw images and HDF5 with encoded
# PNG images (a string dataset, a variable-length uint8 dataset and a string dataset declared
# json). Every value is compared with what was written: pixels with PIL's decode of the PNG
# (or the raw array), arrays with numpy's bytes, text, bytes and parsed JSON by equality.
T_N = {"shards": 9, "h5": 7, "h5png": 8}
T_BASE = {"shards": 4000, "h5": 5000, "h5png": 6000}
T_KIND = ["shards", "h5", "h5png"]
T_TOTAL = 36
T_FIELDS = ["image", "label", "caption", "blob", "meta", "aux"]


def t_pixels(kind: str, i: int) -> np.ndarray:
    rng = np.random.default_rng(T_BASE[kind] + i)
    return rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)


def t_png(kind: str, i: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(t_pixels(kind, i)).save(buf, format="PNG")
    return buf.getvalue()


def t_caption(kind: str, i: int) -> str:
    return f"{kind} n\u00b0{i} \u6f22\u5b57" + "!" * (i % 4)


def t_blob(kind: str, i: int) -> bytes:
    return bytes([T_BASE[kind] % 256, i, 0xFF, 0x00]) + b"\xfe" * (i % 5)  # not UTF-8


def t_meta(kind: str, i: int) -> dict:
    return {"kind": kind, "i": i, "tags": [str(i), None, 1.5]}


def t_aux(kind: str, i: int) -> np.ndarray:
    return np.array([T_BASE[kind] + i, -i], np.int32)


@pytest.fixture(scope="module")
def text_mix(tmp_path_factory):
    import h5py
    d = tmp_path_factory.mktemp("mixtext")
    members = []
    for i in range(T_N["shards"]):
        k = f"s/{i:03d}"
        members += [(f"{k}.png", t_png("shards", i)), (f"{k}.cls", str(i % 3).encode()),
                    (f"{k}.txt", t_caption("shards", i).encode()),
                    (f"{k}.bin", t_blob("shards", i)),
                    (f"{k}.json", json.dumps(t_meta("shards", i)).encode()),
                    (f"{k}.aux.npy", npy_bytes(t_aux("shards", i)))]
    (d / "t.tar").write_bytes(tar_bytes(members))
    for kind in ("h5", "h5png"):
        n = T_N[kind]
        with h5py.File(d / f"{kind}.h5", "w") as f:
            if kind == "h5":
                f["images"] = np.stack([t_pixels(kind, i) for i in range(n)])
            else:
                enc = f.create_dataset("images", (n,), dtype=h5py.vlen_dtype(np.uint8))
                for i in range(n):
                    enc[i] = np.frombuffer(t_png(kind, i), np.uint8)
            f["labels"] = np.arange(n, dtype=np.int64) % 3
            cap = f.create_dataset("captions", (n,), dtype=h5py.string_dtype())
            blob = f.create_dataset("blobs", (n,), dtype=h5py.vlen_dtype(np.uint8))
            meta = f.create_dataset("meta", (n,), dtype=h5py.string_dtype())
            for i in range(n):
                cap[i] = t_caption(kind, i)
                blob[i] = np.frombuffer(t_blob(kind, i), np.uint8)
                meta[i] = json.dumps(t_meta(kind, i))
            f["aux"] = np.stack([t_aux(kind, i) for i in range(n)])
    h5_fields = {"image": "images", "label": "labels", "caption": "captions", "blob": "blobs",
                 "meta": {"dataset": "meta", "kind": "json"}, "aux": "aux"}
    sources = [
        stoker.Shards([str(d / "t.tar")], fields={
            "image": "png", "label": "cls", "caption": "txt", "blob": "bin", "meta": "json",
            "aux": {"ext": "aux.npy", "dtype": "int32", "shape": (2,)}}),
        stoker.HDF5(str(d / "h5.h5"), fields=h5_fields),
        stoker.HDF5(str(d / "h5png.h5"), fields=h5_fields),
    ]
    return stoker.Mix(sources, [1, 1, 1], num_samples=T_TOTAL, labels="per_source")


def t_loader(source, rank=0, world=1, threads=2, **kw):
    return stoker.Loader(source, batch_size=5, transforms=[stoker.CenterCrop(8)],
                         dtype="uint8", layout="NHWC", shuffle=True, seed=11,
                         return_indices=True, rank=rank, world_size=world, threads=threads, **kw)


def t_records(loader, batches=None):
    """The delivered ids and (id, every field's value), each value checked against the data
    it came from."""
    ids, values = [], []
    for k, (batch, i) in enumerate(loader):
        assert list(batch) == T_FIELDS
        for name in ("caption", "blob", "meta"):
            assert isinstance(batch[name], list) and len(batch[name]) == len(i)
        for j, sid in enumerate(i.tolist()):
            kind = T_KIND[stoker.Mix.source_of(sid)]
            idx = stoker.Mix.id_in_source(sid)
            img = batch["image"][j].numpy()
            if kind == "h5":
                assert img.tobytes() == t_pixels(kind, idx).tobytes(), (kind, idx)
            else:  # PIL's decode of the same PNG
                want = np.asarray(Image.open(io.BytesIO(t_png(kind, idx))).convert("RGB"))
                assert img.tobytes() == want.tobytes(), (kind, idx)
            aux_bytes = batch["aux"][j].numpy().tobytes()
            assert aux_bytes == t_aux(kind, idx).tobytes(), (kind, idx)
            assert int(batch["label"][j]) == idx % 3
            assert batch["caption"][j] == t_caption(kind, idx), (kind, idx)
            assert batch["blob"][j] == t_blob(kind, idx), (kind, idx)
            assert batch["meta"][j] == t_meta(kind, idx), (kind, idx)
            ids.append(sid)
            values.append((sid, img.tobytes(), aux_bytes, int(batch["label"][j]),
                           batch["caption"][j], batch["blob"][j], batch["meta"][j]))
        if batches is not None and k + 1 == batches:
            break
    return ids, values


def text_epoch(source, rank=0, world=1, state=None, batches=None, threads=2):
    """One rank's epoch 2 of text_mix: ids, values and the loader."""
    loader = t_loader(source, rank, world, threads)
    if state is not None:
        loader.load_state_dict(state)
    loader.set_epoch(2)
    ids, values = t_records(loader, batches)
    return ids, values, loader


@needs_hdf5
def test_text_bytes_and_json_fields_are_their_samples_own_for_any_thread_count(text_mix):
    assert list(text_mix.fields) == T_FIELDS
    ref_ids, ref, _ = text_epoch(text_mix, threads=1)
    assert len(ref_ids) == T_TOTAL
    assert collections.Counter(T_KIND[stoker.Mix.source_of(s)] for s in ref_ids) == {
        "shards": 12, "h5": 12, "h5png": 12}
    ids, got, _ = text_epoch(text_mix, threads=3)
    assert ids == ref_ids and got == ref


@needs_hdf5
@pytest.mark.parametrize("before,after", [(2, 3), (3, 2)])
def test_text_records_by_rank_and_resumed_at_another_world_size(text_mix, before, after):
    whole, _, _ = text_epoch(text_mix)
    every = []
    for r in range(before):  # the whole epoch by ranks
        ids, _, _ = text_epoch(text_mix, r, before, threads=1 + 2 * (r % 2))
        assert len(ids) == -(-T_TOTAL // before)
        every += ids
    assert_every_draw_read(every, whole, T_TOTAL, before)
    seen, states = [], []
    for r in range(before):  # two batches each, then resumed by `after` ranks
        ids, _, loader = text_epoch(text_mix, r, before, batches=2)
        seen += ids
        states.append(loader.state_dict())
    assert all(s == states[0] for s in states)
    state = pickle.loads(pickle.dumps(states[0]))
    for r in range(after):
        ids, _, _ = text_epoch(text_mix, r, after, state=state, threads=1 + 2 * (r % 2))
        seen += ids
    assert_every_draw_read(seen, whole, T_TOTAL - 10 * before, after)


@needs_hdf5
@pytest.mark.parametrize("cache", [None, "decoded", "output"])
def test_text_records_epoch_after_epoch_equal_a_fresh_loader(text_mix, cache):
    # One loader running epochs 0, 1, 2 (each next one made ahead by the cross-epoch
    # prefetch, then, with a cache, served from it) delivers what a fresh loader does.
    kw = {} if cache is None else {"cache": cache, "cache_bytes": 16 << 20}
    running = t_loader(text_mix, threads=3, **kw)
    for e in range(3):
        running.set_epoch(e)
        fresh = t_loader(text_mix, threads=1)
        fresh.set_epoch(e)
        got, want = t_records(running)[1], t_records(fresh)[1]
        assert len(got) == T_TOTAL and got == want, e
    assert running.stats()["prefetch_discarded_batches"] == 0
    if cache is not None:
        assert running.stats()["cache"]["hits"] > 0
