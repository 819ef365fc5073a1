"""Records from tar shards: stoker.Shards(urls, fields={name: extensions}).

Image-text shards as img2dataset and CLIP-style training write them (an image, a
caption, a JSON of metadata, plus a .npy embedding and a class), written here with
Python's tarfile. Pixels are compared with Pillow's decode of the same PNG bit for bit
(a lossless format: any decoder agrees), arrays with numpy's, text and JSON with the
values written; every field of a delivered record must be its own sample's, in both
shard modes, over HTTP, under shuffle, threads, ranks, resume and skip.
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import os
import threading

import numpy as np
import pytest
import torch
from PIL import Image

import stoker
from conftest import needs_curl, photo, tar_bytes, write_shards
from conftest import npy_bytes as npy

SHARDS = 3
PER = 7
N = SHARDS * PER
H, W = 18, 22

FIELDS = {"image": "png;jpg", "caption": "txt", "meta": "json", "emb": "npy", "label": "cls"}


def png(i: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(photo(W, H, 300 + i)).save(buf, format="PNG")
    return buf.getvalue()


def caption(i: int) -> str:
    return f"a photo n\u00b0{i} \u2014 \u6f22\u5b57 {'x' * (i % 5)}"


def emb(i: int) -> np.ndarray:
    return (np.arange(4, dtype=np.float32) + i) / 3


def members(i: int, *, drop=(), bad_text=False):
    key = f"part.a/{i:05d}"  # a dot in the directory: the key is cut in the basename
    out = [(f"{key}.PNG", png(i)),  # extensions match in any case
           (f"{key}.txt", b"\xff\xfe bad" if bad_text else caption(i).encode()),
           (f"{key}.json", json.dumps({"i": i, "tags": ["a", str(i)]}).encode()),
           (f"{key}.npy", npy(emb(i))),
           (f"{key}.cls", str(i).encode())]
    return [(n, d) for n, d in out if n.rsplit(".", 1)[1].lower() not in drop]


def write(d, *, broken=None, **kw):
    """SHARDS shards of PER samples; sample `broken` (if any) gets `kw`."""
    return write_shards(d, SHARDS, PER, lambda i: members(i, **(kw if i == broken else {})))


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return write(str(tmp_path_factory.mktemp("records")))


def collect(loader):
    """One epoch: label -> {field: value} per delivered sample, in order."""
    out = []
    for b in loader:
        assert set(b) == set(FIELDS)
        assert isinstance(b["image"], torch.Tensor) and b["image"].dtype == torch.uint8
        assert isinstance(b["label"], torch.Tensor) and b["label"].dtype == torch.int64
        assert isinstance(b["caption"], list) and isinstance(b["meta"], list)
        assert isinstance(b["emb"], list)
        for k in range(len(b["label"])):
            out.append({"label": int(b["label"][k]), "image": b["image"][k].numpy(),
                        "caption": b["caption"][k], "meta": b["meta"][k], "emb": b["emb"][k]})
    return out


def check(records):
    for r in records:
        i = r["label"]
        want = np.asarray(Image.open(io.BytesIO(png(i))).convert("RGB"))
        assert r["image"].shape == (H, W, 3)
        assert r["image"].tobytes() == want.tobytes(), i
        assert r["caption"] == caption(i)
        assert r["meta"] == {"i": i, "tags": ["a", str(i)]}
        # Undeclared .npy fields: a list of per-sample tensors (numpy arrays for the
        # dtypes torch lacks).
        assert isinstance(r["emb"], torch.Tensor) and r["emb"].dtype == torch.float32
        assert r["emb"].numpy().tobytes() == emb(i).tobytes()


def loader(src, **kw):
    kw.setdefault("batch_size", 4)
    kw.setdefault("transforms", [stoker.Resize((H, W))])  # the shards' size: no resampling
    return stoker.Loader(src, dtype="uint8", layout="NHWC", **kw)


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_image_text_records_bit_for_bit(shards, mode):
    src = stoker.Shards(shards, fields=FIELDS, mode=mode, shuffle_buffer=0)
    assert src.records
    assert list(src.fields) == list(FIELDS)
    got = collect(loader(src, threads=3))
    assert [r["label"] for r in got] == list(range(N))
    check(got)


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_same_output_for_any_thread_count_shuffled(shards, mode):
    runs = []
    for threads in (1, 2, 5):
        src = stoker.Shards(shards, fields=FIELDS, mode=mode, shuffle_buffer=5)
        got = collect(loader(src, threads=threads, shuffle=True, seed=9))
        check(got)
        runs.append([r["label"] for r in got])
    assert sorted(runs[0]) == list(range(N))
    assert runs[0] != list(range(N))
    assert runs[1] == runs[0] and runs[2] == runs[0]


@pytest.mark.parametrize("cache", ["decoded", "output"])
def test_caches_serve_whole_records(shards, cache):
    ld = loader(stoker.Shards(shards, fields=FIELDS), shuffle=True, seed=2, threads=3,
                cache=cache, cache_bytes=64 << 20)
    for epoch in range(3):  # the first fills the cache, the next ones are served from it
        ld.set_epoch(epoch)
        got = collect(ld)
        assert sorted(r["label"] for r in got) == list(range(N))
        check(got)
    assert ld.stats()["cache"]["hits"] > 0


def test_ranks_and_resume(shards):
    src = stoker.Shards(shards, fields=FIELDS)
    seen = []
    for rank in range(2):
        first = loader(src, shuffle=True, seed=4, rank=rank, world_size=2, batch_size=3)
        it = iter(first)
        part = []
        for b in [next(it), next(it)]:
            part += [int(x) for x in b["label"]]
        state = first.state_dict()
        del it
        resumed = loader(src, shuffle=True, seed=4, rank=rank, world_size=2, batch_size=3)
        resumed.load_state_dict(state)
        rest = collect(resumed)
        check(rest)
        seen += part + [r["label"] for r in rest]
    assert sorted(set(seen)) == list(range(N))


@pytest.mark.parametrize("mode", ["indexed", "stream"])
@pytest.mark.parametrize("damage", [{"drop": ("txt",)}, {"bad_text": True}])
def test_a_bad_sample_names_its_key_and_field(tmp_path, mode, damage):
    pattern = write(str(tmp_path), broken=9, **damage)
    src = stoker.Shards(pattern, fields=FIELDS, mode=mode, shuffle_buffer=0)
    with pytest.raises(stoker.StokerError) as e:
        collect(loader(src))
    assert "part.a/00009" in str(e.value)
    assert "caption" in str(e.value)
    src = stoker.Shards(pattern, fields=FIELDS, mode=mode, shuffle_buffer=0)
    ld = loader(src, on_error="skip")
    got = collect(ld)
    check(got)
    assert sorted(r["label"] for r in got) == [i for i in range(N) if i != 9]
    assert ld.stats()["epoch"]["skipped"] >= 1


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_declared_npy_field_is_stacked(shards, mode):
    fields = dict(FIELDS, emb={"ext": "npy", "dtype": np.float32, "shape": [4]})
    src = stoker.Shards(shards, fields=fields, mode=mode, shuffle_buffer=0)
    assert src.fields["emb"] == "emb: array float32 [4]"
    rows = []
    for b in loader(src, batch_size=5, threads=2):
        assert isinstance(b["emb"], torch.Tensor) and b["emb"].dtype == torch.float32
        assert b["emb"].shape[1:] == (4,)
        rows += [(int(label), e) for label, e in zip(b["label"], b["emb"].numpy())]
    assert [i for i, _ in rows] == list(range(N))
    for i, e in rows:
        assert e.tobytes() == emb(i).tobytes()
    wrong = dict(FIELDS, emb={"ext": "npy", "dtype": "float32", "shape": [5]})
    with pytest.raises(stoker.StokerError, match="emb"):
        collect(loader(stoker.Shards(shards, fields=wrong, mode=mode)))
    with pytest.raises(ValueError, match="dtype"):
        stoker.Shards(shards, fields=dict(FIELDS, emb={"ext": "npy", "shape": [4]}))
    with pytest.raises(ValueError, match=r"image and raw \(bytes\) members only"):
        stoker.Shards(shards, fields=dict(FIELDS, caption={"ext": "txt", "dtype": "int8",
                                                           "shape": [1]}))


@pytest.mark.parametrize("mode", ["indexed", "stream"])
@pytest.mark.parametrize("odd", [np.zeros(5, np.float32), np.zeros(4, np.float64)],
                         ids=["shape", "dtype"])
def test_a_member_unfit_for_its_stacked_field_names_sample_and_field_or_is_skipped(
        tmp_path, mode, odd):
    # collate="batch" stacks a declared field: one sample's member of another shape or
    # dtype is an error naming that sample's key and the field, or a skip.
    def members_with_odd(i):
        out = members(i)
        return [(n, npy(odd)) if i == 9 and n.endswith(".npy") else (n, d) for n, d in out]
    pattern = write_shards(str(tmp_path), SHARDS, PER, members_with_odd)
    fields = dict(FIELDS, emb={"ext": "npy", "dtype": "float32", "shape": [4]})
    src = stoker.Shards(pattern, fields=fields, mode=mode, shuffle_buffer=0)
    with pytest.raises(stoker.StokerError) as e:
        for _ in loader(src, collate="batch"):
            pass
    assert "part.a/00009" in str(e.value) and "'emb'" in str(e.value)
    ld = loader(stoker.Shards(pattern, fields=fields, mode=mode, shuffle_buffer=0),
                collate="batch", on_error="skip", threads=2)
    labels = []
    for b in ld:
        assert isinstance(b["emb"], torch.Tensor) and b["emb"].shape[1:] == (4,)
        for i, e in zip(b["label"].tolist(), b["emb"].numpy()):
            assert e.tobytes() == emb(i).tobytes()
            labels.append(i)
    assert labels == [i for i in range(N) if i != 9]
    assert ld.stats()["epoch"]["skipped"] == 1


def test_variable_shapes_dtypes_bytes_and_int_fields(tmp_path):
    ms = []
    for i in range(5):
        a = np.arange(i + 1, dtype=np.int64).reshape(1, i + 1) * (i - 2)
        ms += [(f"k{i}.png", png(i)), (f"k{i}.ids.npy", npy(a)),
               (f"k{i}.mask.npy", npy(np.array([i % 2 == 0, True]))),
               (f"k{i}.bin", bytes([i, 0, 255])), (f"k{i}.index", f" {100 + i}\n".encode())]
    path = tmp_path / "v.tar"
    path.write_bytes(tar_bytes(ms))
    src = stoker.Shards(str(path), fields={"image": "png", "ids": "ids.npy", "mask": "mask.npy",
                                           "raw": "bin", "idx": "index"})
    b = next(iter(loader(src, batch_size=5)))
    assert "label" not in b
    for i in range(5):
        a = np.arange(i + 1, dtype=np.int64).reshape(1, i + 1) * (i - 2)
        assert b["ids"][i].dtype == torch.int64 and tuple(b["ids"][i].shape) == a.shape
        assert b["ids"][i].numpy().tobytes() == a.tobytes()
        assert b["mask"][i].dtype == torch.bool
        assert b["mask"][i].tolist() == [i % 2 == 0, True]
        assert b["raw"][i] == bytes([i, 0, 255])
        assert int(b["idx"][i]) == 100 + i


def test_jpeg_field_equals_the_tuple_form(tmp_path):
    ms = []
    for i in range(6):
        buf = io.BytesIO()
        Image.fromarray(photo(30, 26, i)).save(buf, format="JPEG", quality=90)
        ms += [(f"k{i}.jpg", buf.getvalue()), (f"k{i}.cls", str(i).encode()),
               (f"k{i}.txt", f"t{i}".encode())]
    path = tmp_path / "j.tar"
    path.write_bytes(tar_bytes(ms))
    tf = [stoker.Resize(20), stoker.CenterCrop(16)]
    x, y = next(iter(loader(stoker.Shards(str(path)), batch_size=6, transforms=tf)))
    b = next(iter(loader(stoker.Shards(str(path), fields={"image": "jpg", "label": "cls",
                                                          "t": "txt"}),
                         batch_size=6, transforms=tf)))
    assert b["image"].numpy().tobytes() == x.numpy().tobytes()
    assert b["label"].tolist() == y.tolist() == list(range(6))
    assert b["t"] == [f"t{i}" for i in range(6)]


def test_bad_arguments(shards):
    with pytest.raises(ValueError, match="fields= or image="):
        stoker.Shards(shards, fields=FIELDS, image="png")
    with pytest.raises(TypeError, match="fields"):
        stoker.Shards(shards, fields=["image"])
    with pytest.raises(ValueError, match="names no member extension"):
        stoker.Shards(shards, fields={"image": ";"})
    with pytest.raises(ValueError, match="field .x."):
        stoker.Shards(shards, fields={"x": "jpg;txt"})


@needs_curl
def test_http_shards(shards, tmp_path):
    root = os.path.dirname(shards)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    cache = str(tmp_path / "node-cache")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/shard-{{0..{SHARDS - 1}}}.tar"
        got = collect(loader(stoker.Shards(url, fields=FIELDS, shuffle_buffer=0)))
        cached = collect(loader(stoker.Shards(url, fields=FIELDS, shuffle_buffer=0,
                                              cache_dir=cache)))
    finally:
        server.shutdown()
        server.server_close()
    assert [r["label"] for r in got] == list(range(N))
    check(got)
    assert [r["label"] for r in cached] == list(range(N))
    check(cached)
    # The server is gone: the node cache (cache_dir) serves every shard's records whole.
    again = collect(loader(stoker.Shards(url, fields=FIELDS, shuffle_buffer=0, cache_dir=cache),
                           threads=2))
    assert [r["label"] for r in again] == list(range(N))
    check(again)


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_a_bytes_field_comes_back_as_written(tmp_path, mode):
    # Any extension that is not an image, text, json, npy or label is a bytes field,
    # delivered as the member's bytes (including empty members and non-UTF-8 bytes).
    def blob(i):
        return bytes(range(256))[i % 7: i % 7 + 3 * i] + b"\xff\x00"

    def members(i):
        return [(f"k/{i:05d}.png", png(i)), (f"k/{i:05d}.bin", blob(i)),
                (f"k/{i:05d}.cls", str(i).encode())]
    pattern = write_shards(str(tmp_path), 2, 4, members)
    src = stoker.Shards(pattern, fields={"image": "png", "blob": "bin", "label": "cls"},
                        mode=mode, shuffle_buffer=0)
    assert src.fields["blob"].startswith("blob: bytes")
    for threads in (1, 2):
        seen = 0
        for b in stoker.Loader(src, batch_size=3, dtype="uint8", threads=threads,
                               transforms=[stoker.Resize((8, 8))]):
            for i, v in zip(b["label"].tolist(), b["blob"]):
                assert isinstance(v, bytes) and v == blob(i), i
                seen += 1
        assert seen == 8
