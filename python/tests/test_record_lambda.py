"""stoker.Lambda(fn, fields=[...], adds={...}): a Python step on a record's fields.

Sources: stoker.Npy records (fixed fields) and shards with text and varying .npy members,
written here. Outputs are compared bit for bit with fn applied to the values written, for
1 and 2 threads; a step's errors follow on_error; kinds are kept.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import stoker
from conftest import tar_bytes
from conftest import npy_bytes as npy

N = 10


@pytest.fixture(scope="module")
def npy_source(tmp_path_factory):
    d = tmp_path_factory.mktemp("lambda_npy")
    emb = (np.arange(N * 4, dtype=np.float32) / 7).reshape(N, 4)
    np.save(d / "emb.npy", emb)
    np.save(d / "label.npy", np.arange(N, dtype=np.int64))
    return {"emb": str(d / "emb.npy"), "label": str(d / "label.npy")}, emb


def caption(i: int) -> str:
    return f"sample {i} " + "\u00e9" * (i % 4)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("lambda_shards"))
    ms = []
    for i in range(N):
        ms += [(f"k/{i:03d}.txt", caption(i).encode()),
               (f"k/{i:03d}.npy", npy(np.arange(i % 3 + 1, dtype=np.int32) + i)),
               (f"k/{i:03d}.cls", str(i).encode())]
    path = os.path.join(d, "s.tar")
    with open(path, "wb") as f:
        f.write(tar_bytes(ms))
    return path


FIELDS = {"caption": "txt", "seq": "npy", "label": "cls"}


def tokenise(d):
    return {"tokens": np.frombuffer(d["caption"].encode(), dtype=np.uint8).astype(np.int64),
            "caption": d["caption"].upper()}


def test_fixed_field_rewritten_bit_for_bit(npy_source):
    paths, emb = npy_source

    def scale(d):
        assert d["emb"].dtype == np.float32 and d["emb"].flags.writeable
        d["emb"] *= 3  # in place, returning None
    runs = []
    for threads in (1, 2):
        ld = stoker.Loader(stoker.Npy(paths), batch_size=4, threads=threads, shuffle=True, seed=2,
                           transforms=[stoker.Lambda(scale, fields=["emb"])])
        runs.append([(b["label"].clone(), b["emb"].clone()) for b in ld])
    for (l1, e1), (l0, e0) in zip(runs[1], runs[0]):
        assert torch.equal(l1, l0) and torch.equal(e1, e0)
    for labels, e in runs[0]:
        want = emb[labels.numpy()] * np.float32(3)
        assert e.numpy().tobytes() == want.tobytes()


def test_a_fixed_field_of_another_shape_names_the_field(npy_source):
    paths, _ = npy_source
    ld = stoker.Loader(stoker.Npy(paths), batch_size=4,
                       transforms=[stoker.Lambda(lambda d: {"emb": d["emb"][:3]}, fields=["emb"])])
    with pytest.raises(stoker.StokerError, match=r"field 'emb'.*shape \[3\]"):
        next(iter(ld))


def test_tokenise_text_into_an_added_field_padded(shards):
    runs = []
    for threads in (1, 2):
        ld = stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=4, collate="pad",
                           threads=threads, shuffle=True, seed=5,
                           transforms=stoker.Lambda(tokenise, fields=["caption"],
                                                    adds={"tokens": "int64"}))
        got = []
        for b in ld:
            labels = [int(x) for x in b["label"]]
            assert b["caption"] == [caption(i).upper() for i in labels]
            toks = [np.frombuffer(caption(i).encode(), np.uint8).astype(np.int64) for i in labels]
            width = max(len(t) for t in toks)
            want = np.zeros((len(labels), width), np.int64)
            for r, t in enumerate(toks):
                want[r, :len(t)] = t
            assert b["tokens"].numpy().tobytes() == want.tobytes()
            assert b["tokens_lengths"].tolist() == [len(t) for t in toks]
            # the untouched varying field is padded too
            assert b["seq_lengths"].tolist() == [i % 3 + 1 for i in labels]
            got.append((labels, b["tokens"].clone()))
        runs.append(got)
    assert sorted(i for labels, _ in runs[0] for i in labels) == list(range(N))
    assert [g[0] for g in runs[1]] == [g[0] for g in runs[0]]
    assert all(torch.equal(a[1], b[1]) for a, b in zip(runs[0], runs[1]))


def test_an_added_field_as_a_list_without_pad(shards):
    ld = stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=3,
                       transforms=stoker.Lambda(tokenise, fields=["caption"],
                                                adds={"tokens": ("int64", (None,))}))
    b = next(iter(ld))
    assert isinstance(b["tokens"], list)
    for i, t in zip(b["label"].tolist(), b["tokens"]):
        assert t.tolist() == list(caption(i).encode())


def test_added_label_bytes_and_scalar_fields_are_collated_as_documented(shards):
    # A label is stacked into an int64 tensor [B], bytes come as a list of bytes, a 0-d
    # float64 array (one number per sample) is stacked into a float64 tensor [B].
    def count(d):
        b = d["caption"].encode()
        return {"n": len(b), "raw": b[::-1] + b"\xff", "w": np.float64(len(b)) / 3}
    step = stoker.Lambda(count, fields=["caption"],
                         adds={"n": "label", "raw": "bytes", "w": ("float64", ())})
    runs = []
    for threads in (1, 3):
        ld = stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=4, threads=threads,
                           shuffle=True, seed=3, transforms=step)
        got = []
        for b in ld:
            assert set(b) == {"caption", "seq", "label", "n", "raw", "w"}
            assert isinstance(b["n"], torch.Tensor) and b["n"].dtype == torch.int64
            assert isinstance(b["w"], torch.Tensor) and b["w"].dtype == torch.float64
            assert b["n"].shape == b["w"].shape == b["label"].shape
            assert isinstance(b["raw"], list) and all(isinstance(r, bytes) for r in b["raw"])
            for k, i in enumerate(b["label"].tolist()):
                c = caption(i).encode()
                assert b["caption"][k] == caption(i)
                assert int(b["n"][k]) == len(c)
                assert b["raw"][k] == c[::-1] + b"\xff"
                assert b["w"][k].item() == np.float64(len(c)) / 3
            got.append((b["label"].tolist(), b["n"].tolist(), b["raw"], b["w"].tolist()))
        runs.append(got)
    assert sorted(i for g in runs[0] for i in g[0]) == list(range(N))
    assert runs[1] == runs[0]
    # A label field given something that is not an integer fails the sample, naming it.
    bad = stoker.Lambda(lambda d: {"n": 1.5, "raw": b"", "w": 0.0}, fields=["caption"],
                        adds={"n": "label", "raw": "bytes", "w": ("float64", ())})
    with pytest.raises(stoker.StokerError, match="field 'n'.*integer field.*float"):
        next(iter(stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=4,
                                transforms=bad)))



def test_added_scalar_fields_are_float64_or_int64_per_sample(shards):
    # adds "scalar" (float64) and ("scalar", "int64"): one number per sample, stacked [B].
    def score(d):
        n = len(d["caption"])
        return {"score": n / 7, "count": n}
    step = stoker.Lambda(score, fields=["caption"],
                         adds={"score": "scalar", "count": ("scalar", "int64")})
    for b in stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=4, threads=3,
                           transforms=step):
        assert b["score"].dtype == torch.float64 and b["count"].dtype == torch.int64
        assert b["score"].shape == b["count"].shape == b["label"].shape
        for k, i in enumerate(b["label"].tolist()):
            assert b["score"][k].item() == len(caption(i)) / 7
            assert b["count"][k].item() == len(caption(i))
    # An int scalar given a float fails the sample naming the field; bad dtypes are refused.
    bad = stoker.Lambda(lambda d: {"count": 0.5}, fields=["caption"],
                        adds={"count": ("scalar", "int64")})
    with pytest.raises(stoker.StokerError, match="field 'count'.*integer field.*float"):
        next(iter(stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=4,
                                transforms=bad)))
    with pytest.raises(ValueError, match="a scalar is 'int64' or 'float64'"):
        stoker.Lambda(lambda d: d, fields=["caption"], adds={"x": ("scalar", "int8")})

def test_errors_in_the_step_follow_on_error(shards):
    def fails_on_4(d):
        if d["seq"][0] == 4:  # sample 4: seq starts at 4
            raise RuntimeError("no 4 here")
        return {"seq": d["seq"] * 2}
    step = stoker.Lambda(fails_on_4, fields=["seq"])
    with pytest.raises(stoker.StokerError, match="no 4 here") as e:
        for _ in stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=3,
                               transforms=step):
            pass
    assert "k/004" in str(e.value)
    ld = stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=3, transforms=step,
                       on_error="skip", collate="pad")
    labels, seqs = [], []
    for b in ld:
        labels += b["label"].tolist()
        seqs += [row[:n].tolist() for row, n in zip(b["seq"], b["seq_lengths"])]
    assert labels == [i for i in range(N) if i != 4]
    assert seqs == [[2 * (i + k) for k in range(i % 3 + 1)] for i in labels]
    assert ld.stats()["skipped"] == 1


@pytest.mark.parametrize("fn, match", [
    (lambda d: {"caption": b"bytes"}, "field 'caption'.*text field.*bytes"),
    (lambda d: {"nope": 1}, "'nope'"),
    (lambda d: [1], "returned list"),
    (lambda d: {"seq": "text"}, "field 'seq'.*array field.*str"),
])
def test_a_value_of_the_wrong_kind_fails_the_sample(shards, fn, match):
    ld = stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=3,
                       transforms=stoker.Lambda(fn, fields=["caption", "seq"]))
    with pytest.raises(stoker.StokerError, match=match):
        next(iter(ld))


def test_an_added_field_must_be_returned(shards):
    ld = stoker.Loader(stoker.Shards(shards, fields=FIELDS), batch_size=3,
                       transforms=stoker.Lambda(lambda d: None, fields=["caption"],
                                                adds={"meta": "json"}))
    with pytest.raises(stoker.StokerError, match="did not return 'meta'"):
        next(iter(ld))


def test_bad_declarations(shards, npy_source):
    src = stoker.Shards(shards, fields=FIELDS)
    with pytest.raises(ValueError, match="'missing' is not a field"):
        stoker.Loader(src, batch_size=2, transforms=stoker.Lambda(lambda d: d, fields=["missing"]))
    with pytest.raises(ValueError, match="primary label"):
        stoker.Loader(src, batch_size=2, transforms=stoker.Lambda(lambda d: d, fields=["label"]))
    with pytest.raises(ValueError, match="already a field"):
        stoker.Loader(src, batch_size=2,
                      transforms=stoker.Lambda(lambda d: d, adds={"caption": "text"}))
    with pytest.raises(TypeError, match="fields must be"):
        stoker.Lambda(lambda d: d, fields=[3])


def test_a_field_step_needs_a_record_source(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((4, 8, 8, 3), np.uint8))
    np.save(tmp_path / "y.npy", np.arange(4, dtype=np.int64))
    src = stoker.Npy(str(tmp_path / "x.npy"), str(tmp_path / "y.npy"))
    with pytest.raises(ValueError, match=r"\(image, label\)"):
        stoker.Loader(src, batch_size=2,
                      transforms=stoker.Lambda(lambda d: {"n": "x"}, adds={"n": "text"}))
