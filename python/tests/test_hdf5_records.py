"""Records from HDF5: stoker.HDF5(path, fields={name: dataset, ...}).

Every field comes back bit for bit as h5py reads it (numeric datasets of many dtypes,
float16, h5py's bool, uint64, big-endian, a 2-D per-sample shape; strings as str; vlen
uint8 as bytes), every field of a record from one sample, for any thread count, at two
ranks, after a resume, and under on_error="skip". An image field keeps the engine's
image path (its pixels equal those of HDF5(path, images=, labels=)).
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch
from PIL import Image

import stoker
from conftest import photo

h5py = pytest.importorskip("h5py")
pytestmark = pytest.mark.skipif(not stoker._C.built_with_hdf5(), reason="built without HDF5")

N = 29


def _jpeg(i: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(photo(24, 18, 300 + i)).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


@pytest.fixture(scope="module")
def h5(tmp_path_factory):
    path = tmp_path_factory.mktemp("h5records") / "data.h5"
    rng = np.random.default_rng(25)
    arrays = {
        "half": rng.standard_normal((N, 4)).astype(np.float16),
        "flag": rng.integers(0, 2, (N, 3)).astype(bool),
        "big": rng.integers(0, 2**64 - 1, (N,), dtype=np.uint64, endpoint=True),
        "grid": rng.standard_normal((N, 2, 3)).astype(np.float32),
        "tiny": rng.integers(-128, 128, (N,)).astype(np.int8),
        "be16": rng.integers(-30000, 30000, (N, 2)).astype(">i2"),
        "u32": rng.integers(0, 2**32, (N,), dtype=np.uint32),
        "f64": rng.standard_normal((N, 1)),
        "i32": rng.integers(-2**31, 2**31, (N, 5), dtype=np.int32),
    }
    captions = [f"sample {i} caf\u00e9 \u6771\u4eac" * (1 + i % 3) for i in range(N)]
    with h5py.File(path, "w") as f:
        for name, a in arrays.items():
            f.create_dataset(f"data/{name}", data=a, chunks=(4,) + a.shape[1:])
        f.create_dataset("captions", data=captions, dtype=h5py.string_dtype())
        f.create_dataset("codes", data=[f"c{i}".encode() for i in range(N)],
                         dtype=h5py.string_dtype("ascii", 6))
        blobs = f.create_dataset("blobs", (N,), dtype=h5py.vlen_dtype(np.uint8))
        jpegs = f.create_dataset("jpegs", (N,), dtype=h5py.vlen_dtype(np.uint8))
        for i in range(N):
            blobs[i] = np.frombuffer(bytes(range(i % 7)) * (i + 1), np.uint8)
            jpegs[i] = np.frombuffer(_jpeg(i), np.uint8)
        f.create_dataset("labels", data=np.arange(N, dtype=np.int16) * 3)
        f.create_dataset("short", data=np.zeros((N - 2, 2), np.float32))
    return path


def _fields():
    f = {name: f"data/{name}" for name in
         ("half", "flag", "big", "grid", "tiny", "be16", "u32", "f64", "i32")}
    f.update(caption="captions", code="codes", blob="blobs")
    return f


def _h5py_reads(path):
    """Each field's values as h5py reads them (numeric arrays in native byte order)."""
    out = {}
    with h5py.File(path, "r") as f:
        for name, ds in _fields().items():
            if name == "caption":
                out[name] = [s.decode() for s in f[ds][()]]
            elif name == "code":
                out[name] = [s.decode() for s in f[ds][()]]
            elif name == "blob":
                out[name] = [bytes(v) for v in f[ds][()]]
            else:
                a = f[ds][()]
                out[name] = a.astype(a.dtype.newbyteorder("=")) if a.dtype.byteorder == ">" else a
    return out


def _run(loader):
    """{field: per-sample values in delivery order}, ids."""
    got, ids = {}, []
    for batch, idx in loader:
        ids.extend(idx.numpy().tolist())
        for k, v in batch.items():
            if isinstance(v, torch.Tensor):
                v = v.numpy()
            got.setdefault(k, []).extend(list(v))
    return got, ids


def _check(got, ids, expected):
    for name, want in expected.items():
        values = got[name]
        assert len(values) == len(ids), name
        for value, i in zip(values, ids):
            if isinstance(want, list):
                assert value == want[i], (name, i)
            else:
                value = np.asarray(value)
                assert value.dtype == want.dtype, (name, value.dtype, want.dtype)
                assert value.shape == want.shape[1:], name
                assert value.tobytes() == want[i].tobytes(), (name, i)


def test_every_field_bit_for_bit_as_h5py_reads_it(h5):
    src = stoker.HDF5(str(h5), fields=_fields())
    assert src.records
    assert list(src.fields) == list(_fields())
    assert src.fields["half"] == "half: array float16 [4]"
    assert src.fields["flag"] == "flag: array bool [3]"
    assert src.fields["grid"] == "grid: array float32 [2, 3]"
    assert src.fields["caption"].startswith("caption: text")
    assert src.fields["blob"].startswith("blob: bytes")
    got, ids = _run(stoker.Loader(src, batch_size=5, shuffle=True, seed=3, threads=2,
                                  return_indices=True))
    assert sorted(ids) == list(range(N))
    _check(got, ids, _h5py_reads(h5))


def test_batches_are_stacked_tensors_and_lists(h5):
    src = stoker.HDF5(str(h5), fields=_fields())
    batch = next(iter(stoker.Loader(src, batch_size=4)))
    assert isinstance(batch["grid"], torch.Tensor) and tuple(batch["grid"].shape) == (4, 2, 3)
    assert batch["flag"].dtype == torch.bool
    assert batch["half"].dtype == torch.float16
    assert isinstance(batch["caption"], list) and isinstance(batch["caption"][0], str)
    assert isinstance(batch["blob"][0], bytes)


def test_any_thread_count_gives_the_same_batches(h5):
    src = stoker.HDF5(str(h5), fields=_fields())
    runs = []
    for threads in (1, 2, 4):
        got, ids = _run(stoker.Loader(src, batch_size=4, shuffle=True, seed=9, threads=threads,
                                      return_indices=True))
        runs.append((ids, {k: [np.asarray(v).tobytes() if not isinstance(v, (str, bytes)) else v
                               for v in vs] for k, vs in got.items()}))
    assert runs[0] == runs[1] == runs[2]


def test_image_and_label_fields_keep_the_image_path(h5):
    transforms = [stoker.Resize(16), stoker.CenterCrop(14)]
    plain = stoker.HDF5(str(h5), images="jpegs", labels="labels")
    assert not plain.records
    want = [(x.numpy(), y.numpy()) for x, y in
            stoker.Loader(plain, batch_size=6, transforms=transforms, dtype="uint8")]
    src = stoker.HDF5(str(h5), fields={"image": "jpegs", "label": "labels",
                                       "grid": "data/grid"})
    assert src.fields["image"].startswith("image: image RGB")
    assert src.fields["label"] == "label: label"
    grid = _h5py_reads(h5)["grid"]
    batches = list(stoker.Loader(src, batch_size=6, transforms=transforms, dtype="uint8"))
    assert len(batches) == len(want)
    for b, (x, y) in zip(batches, want):
        assert b["image"].numpy().tobytes() == x.tobytes()
        np.testing.assert_array_equal(b["label"].numpy(), y)
        np.testing.assert_array_equal(b["label"].numpy(), np.arange(len(y)) * 3 + y[0])
        assert b["grid"].numpy().tobytes() == grid[y // 3].tobytes()


def test_two_ranks_and_resume(h5):
    src = stoker.HDF5(str(h5), fields=_fields())
    expected = _h5py_reads(h5)
    seen = []
    for rank in range(2):
        got, ids = _run(stoker.Loader(src, batch_size=4, shuffle=True, seed=5, rank=rank,
                                      world_size=2, return_indices=True))
        _check(got, ids, expected)
        seen.append(set(ids))
    # N is odd: one sample repeats to even out the ranks' shares.
    assert seen[0] | seen[1] == set(range(N)) and len(seen[0] & seen[1]) <= 1



def test_resume_at_two_ranks(tmp_path):
    # An even count: with an odd one the sample repeated to even out the ranks is not
    # the same after a resume (an engine matter, whatever the source: seen with
    # HDF5(images=, labels=) too).
    path, n = tmp_path / "even.h5", 24
    rng = np.random.default_rng(1)
    half = rng.standard_normal((n, 3)).astype(np.float16)
    flag = rng.integers(0, 2, (n, 2, 2)).astype(bool)
    with h5py.File(path, "w") as f:
        f.create_dataset("half", data=half)
        f.create_dataset("flag", data=flag)
        f.create_dataset("text", data=[f"t{i}" for i in range(n)], dtype=h5py.string_dtype())
    src = stoker.HDF5(str(path), fields={"half": "half", "flag": "flag", "text": "text"})
    expected = {"half": half, "flag": flag, "text": [f"t{i}" for i in range(n)]}

    def loader():
        return stoker.Loader(src, batch_size=4, shuffle=True, seed=5, rank=1, world_size=2,
                             return_indices=True)
    full = [ids.numpy().tolist() for _, ids in loader()]
    first = loader()
    it = iter(first)
    next(it), next(it)
    state = first.state_dict()
    del it
    again = loader()
    again.load_state_dict(state)
    got, ids = _run(again)
    assert ids == sum(full[2:], []) and len(ids) == n // 2 - 8
    _check(got, ids, expected)


def test_skip_leaves_out_a_sample_with_bad_text(tmp_path):
    path = tmp_path / "bad.h5"
    vals = np.arange(12, dtype=np.float32).reshape(6, 2)
    with h5py.File(path, "w") as f:
        f.create_dataset("vals", data=vals)
        text = f.create_dataset("text", (6,), dtype=h5py.string_dtype())
        for i in range(6):
            text[i] = b"ok \xff\xfe" if i == 3 else f"ok {i}".encode()
    src = stoker.HDF5(str(path), fields={"v": "vals", "t": "text"})
    with pytest.raises(stoker.StokerError, match=r"bad\.h5:vals\[3\]: field 't'.*UTF-8"):
        list(stoker.Loader(src, batch_size=2))  # the sample (file, dataset, row), the field
    loader = stoker.Loader(src, batch_size=2, on_error="skip", return_indices=True)
    got, ids = _run(loader)
    assert ids == [0, 1, 2, 4, 5]
    assert got["t"] == [f"ok {i}" for i in ids]
    assert [np.asarray(v).tobytes() for v in got["v"]] == [vals[i].tobytes() for i in ids]
    assert loader.stats()["skipped"] == 1


def test_errors_name_the_datasets(h5):
    with pytest.raises(ValueError, match=r"field 'short' \(dataset 'short'\) has 27 rows but "
                                         r"field 'grid' \(dataset 'data/grid'\) has 29"):
        stoker.HDF5(str(h5), fields={"grid": "data/grid", "short": "short"})
    with pytest.raises(ValueError, match=r"field 'x'.*nothing.*no such dataset"):
        stoker.HDF5(str(h5), fields={"x": "nothing"})
    with pytest.raises(ValueError, match="either fields= or images="):
        stoker.HDF5(str(h5), images="jpegs", fields={"grid": "data/grid"})
    with pytest.raises(TypeError, match="dataset path"):
        stoker.HDF5(str(h5), fields={"grid": 3})
    with pytest.raises(TypeError, match=r"stoker.HDF5 takes \(path, images, labels, fields, "
                                        r"max_sample_bytes\)"):
        stoker.HDF5(str(h5), feilds={"grid": "data/grid"})


def test_raw_image_field_equals_the_plain_source(tmp_path):
    path = tmp_path / "raw.h5"
    images = np.stack([photo(20, 12, 700 + i) for i in range(10)])
    with h5py.File(path, "w") as f:
        f.create_dataset("pixels", data=images, chunks=(1, 12, 20, 3))
        f.create_dataset("y", data=np.arange(10, dtype=np.int64))
        f.create_dataset("w", data=np.arange(20, dtype=np.float64).reshape(10, 2))
    for transforms in ([], [stoker.RandomResizedCrop(8)]):
        plain = stoker.HDF5(str(path), images="pixels", labels="y")
        want = [(x.numpy(), y.numpy()) for x, y in
                stoker.Loader(plain, batch_size=4, transforms=transforms, dtype="uint8",
                              shuffle=True, seed=4)]
        src = stoker.HDF5(str(path), fields={"image": "pixels", "label": "y", "w": "w"})
        assert src.raw and src.fields["image"] == "image: image RGB [12, 20, 3]"
        got = list(stoker.Loader(src, batch_size=4, transforms=transforms, dtype="uint8",
                                 shuffle=True, seed=4))
        assert len(got) == len(want)
        for b, (x, y) in zip(got, want):
            assert b["image"].numpy().tobytes() == x.tobytes()
            np.testing.assert_array_equal(b["label"].numpy(), y)
            np.testing.assert_array_equal(b["w"].numpy(), np.arange(20.0).reshape(10, 2)[y])


def test_a_json_string_dataset_is_a_json_field(tmp_path):
    # Per-sample metadata: {"dataset": path, "kind": "json"} on a string dataset gives
    # each sample's document parsed; one that does not parse is an error naming the field.
    path = tmp_path / "meta.h5"
    docs = [json.dumps({"i": i, "tags": ["a", str(i)], "w": i / 4}) for i in range(8)]
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(8, dtype=np.int32))
        f.create_dataset("meta", data=docs, dtype=h5py.string_dtype())
        f.create_dataset("bad", data=docs[:5] + ["{nope"] + docs[6:], dtype=h5py.string_dtype())
    src = stoker.HDF5(str(path), fields={"x": "x", "meta": {"dataset": "meta", "kind": "json"}})
    assert src.fields["meta"].startswith("meta: json")
    seen = 0
    for threads in (1, 3):
        for b in stoker.Loader(src, batch_size=3, threads=threads):
            for x, m in zip(b["x"].tolist(), b["meta"]):
                assert m == json.loads(docs[x])
                seen += 1
    assert seen == 16
    # as text without "kind": the strings as written
    b = next(iter(stoker.Loader(stoker.HDF5(str(path), fields={"x": "x", "meta": "meta"}),
                                batch_size=8)))
    assert b["meta"] == docs
    bad = stoker.HDF5(str(path), fields={"x": "x", "m": {"dataset": "bad", "kind": "json"}})
    with pytest.raises(stoker.StokerError, match="field 'm'.*JSON"):
        list(stoker.Loader(bad, batch_size=8))
    with pytest.raises(ValueError, match="json fields are string datasets"):
        stoker.HDF5(str(path), fields={"x": {"dataset": "x", "kind": "json"}})
    with pytest.raises(ValueError, match="kind must be 'text' or 'json'"):
        stoker.HDF5(str(path), fields={"m": {"dataset": "meta", "kind": "yaml"}})


def test_a_sample_past_max_sample_bytes_is_refused_before_it_is_read(tmp_path):
    # 4 samples of [32768, 32768] uint8 in gzip'd chunks of zeros: a few MB of file that
    # made a batch of 2 cost 3-4 GB. Refused at HDF5() from the shape, naming the field.
    path = str(tmp_path / "bomb.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("big", shape=(4, 32768, 32768), dtype="uint8", chunks=(1, 4096, 4096),
                         compression="gzip")
        f.create_dataset("y", data=np.arange(4))
        blobs = f.create_dataset("blob", shape=(4,), dtype=h5py.vlen_dtype(np.uint8))
        for i in range(4):
            blobs[i] = np.full(100 if i != 2 else 3 << 20, i, dtype=np.uint8)  # one of 3 MiB
        f.create_dataset("huge", shape=(2, 2**21, 2**21), dtype="float64", chunks=(1, 64, 64))
    with pytest.raises(ValueError, match=r"field 'x'.*\[32768, 32768\] uint8, 1073741824 "
                                         r"bytes, more than max_sample_bytes \(268435456"):
        stoker.HDF5(path, fields={"x": "big", "label": "y"})
    # 8 TiB per dataset (32 TiB per sample): named up front too, not by a failed allocation.
    with pytest.raises(ValueError, match=r"field 'h'.*float64.*more than max_sample_bytes"):
        stoker.HDF5(path, fields={"h": "huge"})
    # Raised, it is read.
    src = stoker.HDF5(path, fields={"x": "big", "label": "y"}, max_sample_bytes=2 << 30)
    assert len(src) == 4
    # A variable-length sample past the bound is its sample's error, skippable.
    small = dict(fields={"blob": "blob", "label": "y"}, max_sample_bytes=1 << 20)
    with pytest.raises(stoker.StokerError, match=r"field 'blob'.*sample 2 is 3145728 bytes"):
        for _ in stoker.Loader(stoker.HDF5(path, **small), batch_size=2):
            pass
    skip = stoker.Loader(stoker.HDF5(path, **small), batch_size=2, on_error="skip")
    assert sorted(int(l) for b in skip for l in b["label"]) == [0, 1, 3]
    with pytest.raises(ValueError, match="max_sample_bytes must be >= 1"):
        stoker.HDF5(path, fields={"label": "y"}, max_sample_bytes=0)
    with pytest.raises(ValueError, match="max_sample_bytes goes with fields="):
        stoker.HDF5(path, max_sample_bytes=1 << 20)
