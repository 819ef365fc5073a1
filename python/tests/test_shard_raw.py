"""Raw shard members with a declared dtype and shape.

A member that would be ``bytes`` (here "emb.f32", "vec.be", "tok.u16") declared with
``{"ext": ..., "dtype": ..., "shape": ...}`` is an array field of raw elements in C order:
compared bit for bit with ``numpy.frombuffer`` of the member, little-endian and big-endian
(">i4"), fixed (stacked) and with one dimension following from the size (a list), in
both shard modes and for 1 and 3 threads; a member of the wrong size is an error naming
the sample, the field and both sizes, or a counted skip.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stoker
from conftest import write_shards

SHARDS, PER = 3, 6
N = SHARDS * PER
FIELDS = {
    "emb": {"ext": "emb.f32", "dtype": "float32", "shape": [6]},
    "vec": {"ext": "vec.be", "dtype": ">i4", "shape": [2, 3]},
    "tok": {"ext": "tok.u16", "dtype": "<u2", "shape": [None]},
    "label": "cls",
}


def emb(i):
    return np.linspace(-1, 1, 6, dtype=np.float32) * (i + 0.5)


def vec(i):
    return (np.arange(6, dtype=">i4").reshape(2, 3) - 3) * (1000 * i + 7)


def tok(i):
    return np.arange(i % 4 + 1, dtype="<u2") * 4099 + i


def members(i, bad=None):
    key = f"s{i:04d}"
    e = emb(i).tobytes()
    if i == bad:
        e = e[:20]  # 20 bytes for a declared float32 [6] (24)
    return [(f"{key}.emb.f32", e), (f"{key}.vec.be", vec(i).tobytes()),
            (f"{key}.tok.u16", tok(i).tobytes()), (f"{key}.cls", str(i).encode())]


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return write_shards(str(tmp_path_factory.mktemp("raw")), SHARDS, PER, members)


def epoch(src, **kw):
    """label -> (emb bytes, vec values, tok values) in delivery order."""
    out = []
    for b in stoker.Loader(src, batch_size=4, **kw):
        assert isinstance(b["emb"], torch.Tensor) and b["emb"].dtype == torch.float32
        assert b["emb"].shape[1:] == (6,)
        assert isinstance(b["vec"], torch.Tensor) and b["vec"].dtype == torch.int32
        assert b["vec"].shape[1:] == (2, 3)
        assert isinstance(b["tok"], list)
        for k, label in enumerate(b["label"].tolist()):
            out.append((label, b["emb"][k].numpy().tobytes(), b["vec"][k].numpy(),
                        np.asarray(b["tok"][k])))
    return out


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_raw_members_bit_for_bit_for_any_thread_count(shards, mode):
    src = stoker.Shards(shards, fields=FIELDS, mode=mode, shuffle_buffer=0)
    assert src.fields["emb"] == "emb: array float32 [6]"
    one = epoch(src, threads=1)
    assert [r[0] for r in one] == list(range(N))
    for i, e, v, t in one:
        raw = members(i)
        assert e == np.frombuffer(raw[0][1], dtype="<f4").reshape(6).tobytes()
        want_v = np.frombuffer(raw[1][1], dtype=">i4").reshape(2, 3)
        assert v.dtype == np.int32 and v.tolist() == want_v.tolist()
        assert v.tobytes() == want_v.astype("<i4").tobytes()
        want_t = np.frombuffer(raw[2][1], dtype="<u2")
        assert t.dtype == np.uint16 and t.shape == want_t.shape and t.tobytes() == want_t.tobytes()
    three = epoch(src, threads=3)
    assert [r[0] for r in three] == [r[0] for r in one]
    for a, b in zip(one, three):
        assert a[1] == b[1] and a[2].tobytes() == b[2].tobytes() and a[3].tobytes() == b[3].tobytes()


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_a_raw_member_of_the_wrong_size_names_sample_field_and_sizes(tmp_path, mode):
    pattern = write_shards(str(tmp_path), SHARDS, PER, lambda i: members(i, bad=8))
    src = stoker.Shards(pattern, fields=FIELDS, mode=mode, shuffle_buffer=0)
    with pytest.raises(stoker.StokerError) as e:
        epoch(src)
    msg = str(e.value)
    assert "s0008" in msg and "emb" in msg and "20 bytes" in msg and "24 bytes" in msg, msg
    ld_src = stoker.Shards(pattern, fields=FIELDS, mode=mode, shuffle_buffer=0)
    ld = stoker.Loader(ld_src, batch_size=4, on_error="skip", threads=2)
    got = [label for b in ld for label in b["label"].tolist()]
    assert got == [i for i in range(N) if i != 8]
    assert ld.stats()["epoch"]["skipped"] == 1


def test_raw_declarations_that_cannot_be_read(shards):
    with pytest.raises(ValueError, match="byte order"):
        stoker.Shards(shards, fields=dict(FIELDS, emb={"ext": "npy", "dtype": ">f4",
                                                       "shape": [6]}))
    with pytest.raises(ValueError, match="at most one of them -1"):
        stoker.Shards(shards, fields=dict(FIELDS, tok={"ext": "tok.u16", "dtype": "uint16",
                                                       "shape": [None, None]}))
    with pytest.raises(ValueError, match="raw \\(bytes\\) members only"):
        stoker.Shards(shards, fields=dict(FIELDS, label={"ext": "cls", "dtype": "int64",
                                                         "shape": [1]}))


@pytest.mark.parametrize("shape", [[2**62 + 4], [2**31, 2**31], [2**40, None, 2**40]])
def test_a_declared_shape_past_64_bits_is_refused_not_wrapped(shards, shape):
    # 2**62 + 4 float32 (16 bytes x 2**62 + ...) wrapped past 2**64 and passed the size check;
    # (2**31, 2**31) was reported as "0 bytes".
    with pytest.raises(ValueError, match="emb.*more bytes than a 64-bit size holds"):
        stoker.Shards(shards, fields=dict(FIELDS, emb={"ext": "emb.f32", "dtype": "float32",
                                                       "shape": shape}))
    with pytest.raises(ValueError, match="more bytes than a 64-bit size holds"):
        stoker.Shards(shards, fields=dict(FIELDS, emb={"ext": "npy", "dtype": "float32",
                                                       "shape": shape}))


@pytest.mark.parametrize("bad", [
    b"[" * 200_000 + b"]" * 200_000,         # json.loads recursed past its limit in next()
    b'{"score": NaN}',                        # Python's json.dumps writes it; not JSON
])
def test_a_bad_json_member_is_its_samples_error_and_skippable(tmp_path, bad):
    import json

    def meta(i):
        return bad if i == 3 else json.dumps({"i": i}).encode()
    url = write_shards(str(tmp_path), 2, 4, lambda i: [(f"s{i:04d}.json", meta(i)),
                                                       (f"s{i:04d}.cls", str(i).encode())])
    fields = {"meta": "json", "label": "cls"}
    src = stoker.Shards(url, fields=fields, mode="indexed", shuffle_buffer=0)
    with pytest.raises(stoker.StokerError, match="field 'meta'.*(nested deeper than 256|NaN)"):
        for _ in stoker.Loader(src, batch_size=2):
            pass
    skip = stoker.Loader(src, batch_size=2, on_error="skip")
    got = [(int(l), m["i"]) for b in skip for l, m in zip(b["label"], b["meta"])]
    assert got == [(i, i) for i in range(8) if i != 3]
    assert skip.stats()["skipped"] == 1
    deep_ok = b"[" * 256 + b"]" * 256  # at the bound: delivered, and Python converts it
    url = write_shards(str(tmp_path / "ok"), 1, 2, lambda i: [(f"s{i:04d}.json", deep_ok),
                                                              (f"s{i:04d}.cls", b"0")])
    b = next(iter(stoker.Loader(stoker.Shards(url, fields=fields, mode="indexed"),
                                batch_size=2)))
    assert len(b["meta"]) == 2
