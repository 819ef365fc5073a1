"""Image fields besides the primary image, decoded natively.

Shards hold an RGB image, a 16-bit grey depth PNG, an 8-bit grey mask PNG and an RGBA
PNG per sample, made with numpy and written by Pillow. Every field other than the
primary image is decoded as the file stores it (channels and bit depth) by the
engine's threads and must equal numpy's source array and Pillow's decode bit for bit;
the primary image keeps the RGB path and the transforms.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image

import stoker
from conftest import photo, tar_bytes, write_shards

SHARDS = 3
PER = 6
N = SHARDS * PER
H, W = 14, 18    # the primary image
DH, DW = 9, 11   # depth and mask: another size than the image

FIELDS = {"image": "jpg;png", "depth": "depth.png", "mask": "mask.png", "rgba": "rgba.png",
          "label": "cls"}


def depth(i: int) -> np.ndarray:
    rng = np.random.default_rng(1000 + i)
    return rng.integers(0, 65536, size=(DH, DW), dtype=np.uint16)


def mask(i: int) -> np.ndarray:
    rng = np.random.default_rng(2000 + i)
    return rng.integers(0, 256, size=(DH, DW), dtype=np.uint8)


def rgba(i: int) -> np.ndarray:
    rng = np.random.default_rng(3000 + i)
    return rng.integers(0, 256, size=(DH, DW, 4), dtype=np.uint8)


def encode(a: np.ndarray, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    # A uint16 2-D array is Pillow's mode "I;16": a 16-bit grey PNG.
    Image.fromarray(a).save(buf, format=fmt)
    return buf.getvalue()


def members(i: int, *, bad_depth=False):
    key = f"s/{i:05d}"
    d = encode(depth(i))
    if bad_depth:
        d = d[: len(d) // 2]  # cut inside the pixel data
    return [(f"{key}.png", encode(photo(W, H, 40 + i))), (f"{key}.depth.png", d),
            (f"{key}.mask.png", encode(mask(i))), (f"{key}.rgba.png", encode(rgba(i))),
            (f"{key}.cls", str(i).encode())]


def write(d, *, broken=None):
    return write_shards(d, SHARDS, PER, lambda i: members(i, bad_depth=i == broken))


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    return write(str(tmp_path_factory.mktemp("native")))


def arr(x) -> np.ndarray:
    return x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def loader(src, **kw):
    kw.setdefault("batch_size", 4)
    kw.setdefault("transforms", [stoker.Resize((H, W))])
    return stoker.Loader(src, dtype="uint8", layout="NHWC", **kw)


def collect(ld):
    out = []
    for b in ld:
        for k in range(len(b["label"])):
            out.append({"label": int(b["label"][k]), "image": arr(b["image"][k]),
                        "depth": arr(b["depth"][k]), "mask": arr(b["mask"][k]),
                        "rgba": arr(b["rgba"][k])})
    return out


def check(records):
    for r in records:
        i = r["label"]
        want = np.asarray(Image.open(io.BytesIO(encode(photo(W, H, 40 + i)))).convert("RGB"))
        assert r["image"].tobytes() == want.tobytes(), i
        # 16-bit grey: uint16 [h, w, 1], numpy's values, and Pillow's decode.
        assert r["depth"].dtype == np.uint16 and r["depth"].shape == (DH, DW, 1)
        assert np.array_equal(r["depth"][..., 0], depth(i))
        pil = np.asarray(Image.open(io.BytesIO(encode(depth(i)))))
        assert np.array_equal(r["depth"][..., 0], pil.astype(np.uint16))
        assert r["mask"].dtype == np.uint8 and r["mask"].shape == (DH, DW, 1)
        assert np.array_equal(r["mask"][..., 0], mask(i))
        assert r["rgba"].dtype == np.uint8 and r["rgba"].shape == (DH, DW, 4)
        assert np.array_equal(r["rgba"], np.asarray(Image.open(io.BytesIO(encode(rgba(i))))))


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_depth_and_mask_are_decoded_as_stored(shards, mode):
    src = stoker.Shards(shards, fields=FIELDS, mode=mode, shuffle_buffer=0)
    assert "native" in src.fields["depth"] and "RGB" in src.fields["image"]
    got = collect(loader(src, threads=2))
    assert [r["label"] for r in got] == list(range(N))
    check(got)


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_one_and_two_threads_identical(shards, mode):
    runs = []
    for threads in (1, 2):
        src = stoker.Shards(shards, fields=FIELDS, mode=mode, shuffle_buffer=4)
        got = collect(loader(src, threads=threads, shuffle=True, seed=5))
        check(got)
        runs.append([(r["label"], r["depth"].tobytes(), r["mask"].tobytes()) for r in got])
    assert runs[0] == runs[1]


def test_ranks_and_resume(shards):
    seen = []
    for rank in range(2):
        first = loader(stoker.Shards(shards, fields=FIELDS), shuffle=True, seed=4, rank=rank,
                       world_size=2, batch_size=3)
        it = iter(first)
        part = [int(x) for x in next(it)["label"]]
        state = first.state_dict()
        del it
        resumed = loader(stoker.Shards(shards, fields=FIELDS), shuffle=True, seed=4,
                         rank=rank, world_size=2, batch_size=3)
        resumed.load_state_dict(state)
        rest = collect(resumed)
        check(rest)
        seen += part + [r["label"] for r in rest]
    assert sorted(seen) == list(range(N))


@pytest.mark.parametrize("cache", ["decoded", "output"])
def test_caches_keep_native_fields(shards, cache):
    ld = loader(stoker.Shards(shards, fields=FIELDS), threads=2, cache=cache,
                cache_bytes=64 << 20)
    for epoch in range(2):
        ld.set_epoch(epoch)
        got = collect(ld)
        assert sorted(r["label"] for r in got) == list(range(N))
        check(got)
    assert ld.stats()["cache"]["hits"] > 0


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_a_corrupt_depth_member_names_sample_and_field(tmp_path, mode):
    pattern = write(str(tmp_path), broken=7)
    with pytest.raises(stoker.StokerError) as e:
        collect(loader(stoker.Shards(pattern, fields=FIELDS, mode=mode, shuffle_buffer=0)))
    assert "s/00007" in str(e.value) and "depth" in str(e.value)
    ld = loader(stoker.Shards(pattern, fields=FIELDS, mode=mode, shuffle_buffer=0),
                on_error="skip")
    got = collect(ld)
    check(got)
    assert [r["label"] for r in got] == [i for i in range(N) if i != 7]
    assert ld.stats()["epoch"]["skipped"] == 1


def test_declared_shape_is_stacked_and_checked(shards):
    fields = dict(FIELDS, depth={"ext": "depth.png", "dtype": "uint16", "shape": (DH, DW, 1)},
                  mask={"ext": "mask.png", "dtype": "uint8", "shape": (DH, DW, 1)})
    labels = []
    for b in loader(stoker.Shards(shards, fields=fields), batch_size=5):
        d, m = arr(b["depth"]), arr(b["mask"])
        assert d.dtype == np.uint16 and d.shape == (len(b["label"]), DH, DW, 1)
        assert isinstance(b["mask"], torch.Tensor) and m.shape == (len(b["label"]), DH, DW, 1)
        for k, i in enumerate(int(x) for x in b["label"]):
            assert np.array_equal(d[k, ..., 0], depth(i))
            assert np.array_equal(m[k, ..., 0], mask(i))
            labels.append(i)
    assert labels == list(range(N))
    for wrong in ({"ext": "depth.png", "dtype": "uint8", "shape": (DH, DW, 1)},
                  {"ext": "depth.png", "dtype": "uint16", "shape": (DH, DW, 3)},
                  {"ext": "depth.png", "dtype": "uint16", "shape": (DH + 1, DW, 1)}):
        with pytest.raises(stoker.StokerError) as e:
            collect(loader(stoker.Shards(shards, fields=dict(FIELDS, depth=wrong))))
        assert "s/00000" in str(e.value) and "'depth'" in str(e.value)
        assert "declares" in str(e.value)


def test_modes_rgb_and_native_primary(tmp_path):
    ms = []
    for i in range(4):
        grey8 = mask(i)
        buf = io.BytesIO()
        Image.fromarray(grey8).save(buf, format="JPEG", quality=90)  # a greyscale JPEG
        ms += [(f"k{i}.png", encode(depth(i))), (f"k{i}.m.png", encode(grey8)),
               (f"k{i}.g.jpg", buf.getvalue()), (f"k{i}.t.tif", encode(depth(i), "TIFF")),
               (f"k{i}.cls", str(i).encode())]
    path = tmp_path / "m.tar"
    path.write_bytes(tar_bytes(ms))
    # A dataset of 16-bit grey images and no RGB image: every image field native (a
    # field left unset would be the primary RGB one), no transforms; a grey JPEG
    # decoded natively is one channel, libjpeg's greyscale output (Pillow's "L").
    fields = {"image": {"ext": "png", "mode": "native"}, "g": {"ext": "g.jpg", "mode": "native"},
              "t": {"ext": "t.tif", "mode": "native"}, "label": "cls"}
    src = stoker.Shards(str(path), fields=fields)
    assert "RGB" not in src.fields["image"]
    b = next(iter(stoker.Loader(src, batch_size=4)))
    for k, i in enumerate(int(x) for x in b["label"]):
        img = arr(b["image"][k])
        assert img.dtype == np.uint16 and np.array_equal(img[..., 0], depth(i))
        g = arr(b["g"][k])
        assert g.shape == (DH, DW, 1) and g.dtype == np.uint8
        jpg = [d for n, d in ms if n == f"k{i}.g.jpg"][0]
        assert np.array_equal(g[..., 0], np.asarray(Image.open(io.BytesIO(jpg))))
        # A 16-bit grey TIFF (Pillow's "I;16"): uint16 as stored.
        t = arr(b["t"][k])
        assert t.dtype == np.uint16 and t.shape == (DH, DW, 1)
        assert np.array_equal(t[..., 0], depth(i))
    with pytest.raises((ValueError, stoker.StokerError), match="no RGB image field"):
        stoker.Loader(src, batch_size=4, transforms=[stoker.Resize(8)])
    # "rgb" on a field besides the primary image: 8-bit RGB, Pillow's convert("RGB"),
    # untransformed; the primary image keeps its transforms.
    fields = {"image": "g.jpg", "m": {"ext": "m.png", "mode": "rgb"}, "label": "cls"}
    b = next(iter(loader(stoker.Shards(str(path), fields=fields), transforms=[stoker.Resize((4, 4))])))
    assert b["image"].shape[1:3] == (4, 4)
    for k, i in enumerate(int(x) for x in b["label"]):
        want = np.asarray(Image.fromarray(mask(i)).convert("RGB"))
        assert np.array_equal(arr(b["m"][k]), want)
    with pytest.raises(ValueError, match="mode"):
        stoker.Shards(str(path), fields={"image": {"ext": "png", "mode": "L"}})
    with pytest.raises(ValueError, match="image fields only"):
        stoker.Shards(str(path), fields={"image": "png", "t": {"ext": "cls", "mode": "rgb"}})
    with pytest.raises(ValueError, match="primary"):
        stoker.Shards(str(path), fields={"image": {"ext": "png", "dtype": "uint8",
                                                   "shape": (4, 4, 3)}})
