"""Per-field collate (`collate={"caption": "list", "tokens": "pad", "emb": "batch"}`) and
`rng=True` for Lambdas on fields.

Shards written here: a PNG, a caption, a fixed-length float32 `.npy` (declared, so
stacked), a variable-length int64 `.npy` of tokens, and a class.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

import stoker
from conftest import npy_bytes, photo, write_shards

N = 12
FIELDS = {"image": "png", "caption": "txt",
          "emb": {"ext": "emb.npy", "dtype": "float32", "shape": (4,)},
          "tokens": "tok.npy", "label": "cls"}


def tokens(i):
    return np.arange(i % 5 + 1, dtype=np.int64) + 10 * i


def emb(i):
    return np.arange(4, dtype=np.float32) + i


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    def members(i):
        buf = io.BytesIO()
        Image.fromarray(photo(20, 16, i)).save(buf, format="PNG")
        return [(f"k/{i:05d}.png", buf.getvalue()), (f"k/{i:05d}.txt", f"c{i}".encode()),
                (f"k/{i:05d}.emb.npy", npy_bytes(emb(i))),
                (f"k/{i:05d}.tok.npy", npy_bytes(tokens(i))),
                (f"k/{i:05d}.cls", str(i).encode())]
    return write_shards(str(tmp_path_factory.mktemp("collate")), 2, N // 2, members)


def load(shards, **kw):
    kw.setdefault("transforms", [stoker.Resize((8, 8))])
    return stoker.Loader(stoker.Shards(shards, fields=FIELDS, shuffle_buffer=0), batch_size=4,
                         dtype="uint8", **kw)


def test_per_field_collate(shards):
    seen = 0
    for b in load(shards, collate={"caption": "list", "tokens": "pad", "emb": "list"}):
        labels = b["label"].tolist()
        assert isinstance(b["image"], torch.Tensor) and b["image"].shape[0] == len(labels)
        assert b["caption"] == [f"c{i}" for i in labels]
        # "list" on a fixed field: per-sample tensors, not one block
        assert isinstance(b["emb"], list)
        for t, i in zip(b["emb"], labels):
            assert t.numpy().tobytes() == emb(i).tobytes()
        # "pad": one padded block and the lengths
        longest = max(len(tokens(i)) for i in labels)
        want = np.zeros((len(labels), longest), np.int64)
        for k, i in enumerate(labels):
            want[k, :len(tokens(i))] = tokens(i)
        assert b["tokens"].numpy().tobytes() == want.tobytes()
        assert b["tokens_lengths"].tolist() == [len(tokens(i)) for i in labels]
        seen += len(labels)
    assert seen == N
    # Not named: the string form's rules ("batch": the declared field stacked, the
    # variable one a list); "list" on a variable field: a list, no lengths.
    for b in load(shards, collate={"tokens": "list"}):
        assert isinstance(b["emb"], torch.Tensor) and b["emb"].shape[1:] == (4,)
        assert isinstance(b["tokens"], list) and "tokens_lengths" not in b
        assert [t.tolist() for t in b["tokens"]] == [tokens(i).tolist()
                                                     for i in b["label"].tolist()]


def test_per_field_collate_errors(shards):
    with pytest.raises(ValueError, match="'nope' is not a field of the record"):
        load(shards, collate={"nope": "pad"})
    with pytest.raises(ValueError, match="'image' is the primary image"):
        load(shards, collate={"image": "list"})
    with pytest.raises(ValueError, match="'label' is the primary label"):
        load(shards, collate={"label": "batch"})
    with pytest.raises(ValueError, match=r"collate\['tokens'\] must be"):
        load(shards, collate={"tokens": "stack"})
    with pytest.raises(TypeError, match="keys are field names"):
        load(shards, collate={3: "pad"})


def draws(d, rng):
    return {"r": rng.random(3)}


def run_rng(shards, threads, seed=5, epochs=1):
    loader = load(shards, threads=threads, seed=seed, shuffle=True,
                  transforms=[stoker.Resize((8, 8)),
                              stoker.Lambda(draws, fields=["caption"],
                                            adds={"r": ("float64", (3,))}, rng=True)])
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        got = {}
        for b in loader:
            for k, i in enumerate(b["label"].tolist()):
                got[i] = b["r"][k].numpy().tobytes()
        out.append(got)
    return out, loader


def test_field_lambda_rng_is_per_sample_and_thread_independent(shards):
    (one, two), loader = run_rng(shards, 1, epochs=2)
    (three, three_b), _ = run_rng(shards, 3, epochs=2)
    assert one == three and two == three_b
    assert len(set(one.values())) == N          # a stream per sample
    assert not set(one.values()) & set(two.values())  # and per epoch
    (other,), _ = run_rng(shards, 2, seed=6)
    assert not set(other.values()) & set(one.values())  # and per seed
    assert "rng=True" in repr(stoker.Lambda(draws, fields=["caption"], rng=True))
