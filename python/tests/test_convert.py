"""`stoker convert`: image folders (and .npy) to WebDataset tar shards.

Shards are read back with Python's tarfile: member names and order, labels,
bytes equal to the source files when not resizing, decoded sizes (and pixels
close to torchvision's Resize) when resizing; refusal and --overwrite; errors.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms as T
from PIL import Image

import stoker
from conftest import needs_hdf5, npy_bytes, photo, save_jpeg, save_png, tar_bytes

ROOT = Path(__file__).resolve().parents[2]


def stoker_cli() -> str:
    for p in (os.environ.get("STOKER_CLI"), ROOT / "build" / "stoker"):
        if p and os.access(p, os.X_OK):
            return str(p)
    pytest.skip("the stoker CLI is not built (set STOKER_CLI)")


def convert(*args, check=True):
    r = subprocess.run([stoker_cli(), "convert", *map(str, args)], capture_output=True,
                       text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("conv") / "src"
    k = 0
    for c in ("cat", "dog", "eel"):
        (root / c).mkdir(parents=True)
        for i in range(3):
            arr = photo(70 + 10 * i, 50 + 5 * k, 900 + k)
            if k % 4 == 1:
                save_png(arr, root / c / f"p.{i}.png")   # dots in the name
            else:
                save_jpeg(arr, root / c / f"{c}_{i}.JPEG")
            k += 1
    return root


def members(shards):
    out = []
    for s in shards:
        with tarfile.open(s) as tf:
            for m in tf.getmembers():
                assert m.isreg() and not m.pax_headers
                out.append((m.name, tf.extractfile(m).read()))
    return out


def test_round_trip_keeps_bytes_order_and_labels(folder, tmp_path):
    r = convert(folder, tmp_path / "out", "--samples-per-shard", 4, "--threads", 2, "--json")
    info = json.loads(r.stdout)
    assert info["samples"] == 9 and info["shards"] == 3 and info["reencoded"] == 0
    shards = sorted((tmp_path / "out").glob("shard-*"))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == (
        ["classes.json"] + [f"shard-{i:06d}.tar" for i in range(3)])
    assert json.loads((tmp_path / "out" / "classes.json").read_text()) == ["cat", "dog", "eel"]
    assert stoker.Shards(str(tmp_path / "out" / "shard-*.tar")).classes == ["cat", "dog", "eel"]
    assert info["paths"] == [str(p) for p in shards]
    assert info["output_bytes"] == sum(p.stat().st_size for p in shards)
    got = members(shards)
    ds = tvd.ImageFolder(str(folder))
    assert len(got) == 2 * len(ds.samples)
    keys = []
    for n, (path, label) in enumerate(ds.samples):
        (img_name, data), (cls_name, cls) = got[2 * n], got[2 * n + 1]
        key, ext = img_name.split(".", 1)
        assert ext == ("png" if path.endswith(".png") else "jpg")
        assert cls_name == key + ".cls"
        assert cls == str(label).encode()
        assert data == Path(path).read_bytes()
        keys.append(key)
    assert len(set(keys)) == len(keys)
    assert "p_1" in keys and "cat_0" in keys


def test_resize_gzip(folder, tmp_path):
    r = convert(folder, tmp_path / "out", "--resize", 32, "--quality", 95, "--compress", "gzip",
                "--prefix", "val")
    assert "wrote 1 shard(s), 9 samples (9 re-encoded)" in r.stdout
    assert r.stderr == ""  # no progress bar when stderr is not a terminal
    shard = tmp_path / "out" / "val-000000.tar.gz"
    got = members([shard])
    ds = tvd.ImageFolder(str(folder), T.Resize(32))
    for n, (img, _) in enumerate(ds):
        name, data = got[2 * n]
        assert name.endswith(".jpg")
        out = Image.open(io.BytesIO(data))
        assert out.format == "JPEG" and out.size == img.size and min(out.size) == 32
        diff = np.abs(np.asarray(out, np.int16) - np.asarray(img, np.int16))
        assert diff.mean() < 3.0, name  # the same resize, then JPEG at quality 95


def test_refuses_existing_output_then_overwrites(folder, tmp_path):
    convert(folder, tmp_path, "--samples-per-shard", 2)
    assert len(list(tmp_path.glob("shard-*.tar"))) == 5
    r = convert(folder, tmp_path, check=False)
    assert r.returncode == 1 and "--overwrite" in r.stderr
    convert(folder, tmp_path, "--overwrite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["classes.json", "shard-000000.tar"]


def test_failure_leaves_no_partial_shard(folder, tmp_path):
    bad = tmp_path / "src"
    os.symlink(folder / "cat", tmp_path / "cat_link")
    (bad / "a").mkdir(parents=True)
    for f in sorted((folder / "cat").iterdir()):
        (bad / "a" / f.name).write_bytes(f.read_bytes())
    (bad / "a" / "zz.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    r = convert(bad, tmp_path / "out", "--resize", 16, "--samples-per-shard", 2, check=False)
    assert r.returncode == 1 and "zz.jpg" in r.stderr
    # Samples 0 and 1 made shard 0; shard 1 (sample 2) was deleted when sample 3 failed.
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["shard-000000.tar"]


def test_npy_source(tmp_path):
    x = np.stack([photo(40, 30, i) for i in range(5)])
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", np.arange(5, dtype=np.int16) + 7)
    r = convert(tmp_path / "x.npy", tmp_path / "out", "--labels", tmp_path / "y.npy", "--json")
    assert json.loads(r.stdout)["reencoded"] == 5
    got = members(sorted((tmp_path / "out").iterdir()))
    assert [n for n, _ in got[:2]] == ["x_npy_0_.jpg", "x_npy_0_.cls"]
    assert [int(d) for n, d in got if n.endswith(".cls")] == [7, 8, 9, 10, 11]
    first = np.asarray(Image.open(io.BytesIO(got[0][1])), np.int16)
    assert first.shape == (30, 40, 3) and np.abs(first - x[0]).mean() < 8  # q90 on noisy pixels


@needs_hdf5
def test_hdf5_source(tmp_path):
    h5py = pytest.importorskip("h5py")
    x = np.stack([photo(40, 30, i) for i in range(4)])
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f.create_dataset("pix", data=x)
        f.create_dataset("labels", data=np.array([3, 1, 4, 1]))
    r = convert(tmp_path / "d.h5", tmp_path / "out", "--images", "pix", "--resize", 15, "--json")
    assert json.loads(r.stdout)["samples"] == 4
    got = members(sorted((tmp_path / "out").iterdir()))
    assert [int(d) for n, d in got if n.endswith(".cls")] == [3, 1, 4, 1]
    assert Image.open(io.BytesIO(got[0][1])).size == (20, 15)
    r = convert(tmp_path / "d.h5", tmp_path / "out2", "--images", "pix", "--labels", "")
    assert "4 samples" in r.stdout
    assert not any(p.name.endswith(".cls") for p in
                   map(Path, [n for n, _ in members(sorted((tmp_path / "out2").iterdir()))]))


@pytest.mark.parametrize("args,message", [
    (["missing_dir", "out"], "no such file"),
    (["x.txt", "out"], "not an image folder, a .npy or an .h5"),
    (["SRC", "out", "--compress", "lz4"], "--compress"),
    (["SRC", "out", "--shard-size", "big"], "bad size"),
    (["SRC", "out", "--quality", "0"], "--quality"),
])
def test_bad_input(folder, tmp_path, args, message):
    (tmp_path / "x.txt").write_text("hi")
    args = [str(folder) if a == "SRC" else str(tmp_path / a) if a in ("missing_dir", "x.txt", "out")
            else a for a in args]
    r = convert(*args, check=False)
    assert r.returncode != 0
    assert message in r.stderr


def test_help_describes_the_options():
    r = subprocess.run([stoker_cli(), "convert", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for opt in ("--shard-size", "--samples-per-shard", "--resize", "--quality", "--compress",
                "--threads", "--overwrite", "--json", "--masks", "--mask-suffix", "--coco",
                "--coco-masks", "--coco-labels", "--coco-crowd", "--drop-empty"):
        assert opt in r.stdout


def test_progress_bar_on_a_terminal(folder, tmp_path):
    import pty
    master, slave = pty.openpty()
    try:
        r = subprocess.run([stoker_cli(), "convert", str(folder), str(tmp_path / "out")],
                           stdout=subprocess.PIPE, stderr=slave, text=True, timeout=60)
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(master)
    assert r.returncode == 0
    assert b"\r[" in err and b"9/9" in err and b"100%" in err
    assert r.stdout.startswith("wrote 1 shard(s), 9 samples")


@pytest.mark.parametrize("compress, mode", [("none", "indexed"), ("none", "stream"),
                                            ("gzip", "stream"), ("zstd", "stream")])
def test_converted_shards_load_in_stoker_shards_like_the_folder(folder, tmp_path, compress, mode):
    # The writer and the reader agree: same samples, order, labels and pixels as the
    # image folder the shards came from.
    out = tmp_path / "shards"
    convert(folder, out, "--samples-per-shard", 4, "--compress", compress)
    ext = {"none": ".tar", "gzip": ".tar.gz", "zstd": ".tar.zst"}[compress]
    paths = sorted(str(p) for p in out.iterdir() if p.name.endswith(ext))
    assert len(paths) == 3  # 9 samples, 4 per shard

    def run(source):
        loader = stoker.Loader(source, batch_size=4, transforms=[stoker.Resize(40),
                                                                  stoker.CenterCrop(32)],
                               dtype="uint8", threads=2)
        images, labels = [], []
        for x, y in loader:
            images.append(x.numpy().copy())
            labels.append(y.numpy().copy())
        return np.concatenate(images), np.concatenate(labels)

    ref_x, ref_y = run(stoker.ImageFolder(str(folder)))
    got_x, got_y = run(stoker.Shards(paths, image="jpg;jpeg;png", label="cls", mode=mode))
    assert np.array_equal(got_y, ref_y)
    assert np.array_equal(got_x, ref_x)


def test_record_fields_from_shards(tmp_path):
    """--field: a shard source's record fields are written as KEY.NAME.<ext> members that
    webdataset's rules read back (key up to the basename's first dot; decoded by the last
    part of the extension: np.load, json.loads, UTF-8), and that stoker.Shards(fields=)
    reads back equal."""
    embs = [np.arange(i + 2, dtype=np.float16).reshape(1, i + 2) - i for i in range(4)]
    jpegs, ms = [], []
    for i in range(4):
        b = io.BytesIO()
        Image.fromarray(photo(20, 16, i)).save(b, format="JPEG")
        jpegs.append(b.getvalue())
        ms += [(f"k{i}.jpg", jpegs[-1]), (f"k{i}.txt", f"caption \u00e9 {i}".encode()),
               (f"k{i}.json", json.dumps({"i": i}).encode()), (f"k{i}.npy", npy_bytes(embs[i])),
               (f"k{i}.cls", str(3 * i).encode())]
    (tmp_path / "in.tar").write_bytes(tar_bytes(ms))
    convert(tmp_path / "in.tar", tmp_path / "out", "--field", "image=jpg", "--field",
            "caption=txt", "--field", "meta=json", "--field", "emb=npy", "--field", "label=cls")
    shards = sorted((tmp_path / "out").iterdir())
    got = members(shards)
    samples = {}
    for name, data in got:
        base = name.rsplit("/", 1)[-1]
        key, ext = base.split(".", 1)
        samples.setdefault(key, {})[ext] = data
    assert len(samples) == 4
    for i, (key, s) in enumerate(samples.items()):
        assert set(s) == {"jpg", "cls", "caption.txt", "meta.json", "emb.npy"}
        assert s["jpg"] == jpegs[i]
        assert int(s["cls"]) == 3 * i
        assert s["caption.txt"].decode("utf-8") == f"caption \u00e9 {i}"
        assert json.loads(s["meta.json"]) == {"i": i}
        a = np.load(io.BytesIO(s["emb.npy"]))
        assert a.dtype == np.float16 and a.tobytes() == embs[i].tobytes()

    src = stoker.Shards([str(p) for p in shards if p.suffix == ".tar"],
                        fields={"image": "jpg", "caption": "caption.txt", "meta": "meta.json",
                                "emb": "emb.npy", "label": "cls"})
    b = next(iter(stoker.Loader(src, batch_size=4, transforms=[stoker.Resize((16, 20))],
                                dtype="uint8")))
    assert b["label"].tolist() == [0, 3, 6, 9]
    assert b["caption"] == [f"caption \u00e9 {i}" for i in range(4)]
    assert b["meta"] == [{"i": i} for i in range(4)]
    assert [e.numpy().tobytes() for e in b["emb"]] == [e.tobytes() for e in embs]

    bad = convert(tmp_path / "in.tar", tmp_path / "out2", "--field", "caption", check=False)
    assert bad.returncode != 0 and "NAME=EXT" in bad.stderr



def _samples(shards):
    """KEY -> {ext after the key: bytes} over the members of the written shards."""
    out = {}
    for name, data in members(shards):
        key, ext = name.rsplit("/", 1)[-1].split(".", 1)
        out.setdefault(key, {})[ext] = data
    return out


@needs_hdf5
def test_record_fields_from_hdf5_datasets(tmp_path):
    """--field NAME=DATASET on an .h5 source (":json" for a json field): each field written
    as KEY.NAME.<ext>, equal to the datasets, in sample order."""
    import h5py
    n = 5
    emb = np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3) / 7
    caps = [f"caption \u00e9 {i}" for i in range(n)]
    metas = [json.dumps({"i": i, "odd": bool(i % 2)}) for i in range(n)]
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f["emb"] = emb
        f.create_dataset("caps", data=caps, dtype=h5py.string_dtype())
        f.create_dataset("meta", data=metas, dtype=h5py.string_dtype())
        f["y"] = np.arange(n, dtype=np.int64) * 2
    convert(tmp_path / "d.h5", tmp_path / "out", "--field", "emb=emb", "--field",
            "caption=caps", "--field", "meta=meta:json", "--field", "label=y")
    got = list(_samples(sorted((tmp_path / "out").glob("*.tar"))).values())
    assert len(got) == n
    for i, s in enumerate(got):
        assert set(s) == {"emb.npy", "caption.txt", "meta.json", "cls"}, set(s)
        a = np.load(io.BytesIO(s["emb.npy"]))
        assert a.dtype == np.float32 and a.shape == (2, 3) and a.tobytes() == emb[i].tobytes()
        assert s["caption.txt"].decode("utf-8") == caps[i]
        assert json.loads(s["meta.json"]) == json.loads(metas[i])
        assert int(s["cls"]) == 2 * i
    bad = convert(tmp_path / "d.h5", tmp_path / "out2", "--field", "emb=nope", check=False)
    assert bad.returncode != 0 and "nope" in bad.stderr


def test_record_fields_from_a_folder_of_npy_arrays(tmp_path):
    """--field NAME=FILE.npy on a directory: aligned arrays (paths relative to it) written
    as KEY.NAME.npy members equal to their rows; wrong uses are named errors."""
    n = 4
    x = np.arange(n * 3, dtype=np.float64).reshape(n, 3) - 5.5
    y = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=np.int16)
    (tmp_path / "arr").mkdir()
    np.save(tmp_path / "arr" / "x.npy", x)
    np.save(tmp_path / "arr" / "y.npy", y)
    convert(tmp_path / "arr", tmp_path / "out", "--field", "feat=x.npy", "--field", "tgt=y.npy")
    got = list(_samples(sorted((tmp_path / "out").glob("*.tar"))).values())
    assert len(got) == n
    for i, s in enumerate(got):
        assert set(s) == {"feat.npy", "tgt.npy"}, set(s)
        assert np.load(io.BytesIO(s["feat.npy"])).tobytes() == x[i].tobytes()
        t = np.load(io.BytesIO(s["tgt.npy"]))
        assert t.dtype == np.int16 and t.tobytes() == y[i].tobytes()
    bad = convert(tmp_path / "arr" / "x.npy", tmp_path / "o2", "--field", "a=x.npy", check=False)
    assert bad.returncode != 0 and "is none of them" in bad.stderr
    bad = convert(tmp_path / "arr", tmp_path / "o3", "--field", "a=x.npy", "--labels", "y.npy",
                  check=False)
    assert bad.returncode != 0 and "no --labels" in bad.stderr

def import_webdataset():
    """The webdataset package (requirements/: the torch 2.x lane's venv has it, the Debian
    lane finds it in .venvs/debian-lane on its PYTHONPATH); skips with the reason when it
    does not import, and fails under CI, where scripts/install-deps.sh installed it."""
    import importlib
    try:
        return importlib.import_module("webdataset")
    except ImportError as e:
        if os.environ.get("CI"):
            pytest.fail(f"webdataset does not import ({e}); scripts/install-deps.sh installs it")
        pytest.skip(f"webdataset does not import: {e} (scripts/install-deps.sh installs it)")


def test_webdataset_reads_converted_record_shards(tmp_path):
    """Shards written by `stoker convert --field` are read by webdataset itself: the same
    keys, the JPEG decoded to the same pixels as Pillow's, the caption, the JSON and the
    .npy array as written."""
    wds = import_webdataset()
    embs = [np.arange(6, dtype=np.float32).reshape(2, 3) * (i + 1) for i in range(5)]
    ms, pixels = [], []
    for i in range(5):
        b = io.BytesIO()
        Image.fromarray(photo(24, 16, i)).save(b, format="JPEG")
        pixels.append(np.asarray(Image.open(io.BytesIO(b.getvalue())).convert("RGB")))
        ms += [(f"s{i}.jpg", b.getvalue()), (f"s{i}.txt", f"caption {i} \u00fc".encode()),
               (f"s{i}.json", json.dumps({"i": i, "tags": ["a", str(i)]}).encode()),
               (f"s{i}.npy", npy_bytes(embs[i])), (f"s{i}.cls", str(i + 10).encode())]
    (tmp_path / "in.tar").write_bytes(tar_bytes(ms))
    convert(tmp_path / "in.tar", tmp_path / "out", "--field", "image=jpg", "--field",
            "caption=txt", "--field", "meta=json", "--field", "emb=npy", "--field", "label=cls")
    urls = [str(p) for p in sorted((tmp_path / "out").glob("*.tar"))]
    assert urls
    got = list(wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode("rgb8"))
    assert len(got) == 5
    for i, s in enumerate(sorted(got, key=lambda s: int(s["cls"]))):
        assert int(s["cls"]) == i + 10
        assert np.array_equal(s["jpg"], pixels[i])
        assert s["caption.txt"] == f"caption {i} \u00fc"
        assert s["meta.json"] == {"i": i, "tags": ["a", str(i)]}
        assert s["emb.npy"].dtype == np.float32 and np.array_equal(s["emb.npy"], embs[i])


def _targets_data(root):
    """A SegmentationFolder (grey and palette masks) and a COCO file over the same images."""
    (root / "img").mkdir(parents=True)
    (root / "ann").mkdir()
    rng = np.random.default_rng(5)
    anns = []
    images = []
    for i in range(5):
        w, h = 20 + 2 * i, 16
        save_png(photo(w, h, 40 + i), root / "img" / f"p{i}.png")
        m = Image.fromarray(rng.integers(0, 30, (h, w), dtype=np.uint8))
        if i % 2:
            m = m.convert("P")
        m.save(root / "ann" / f"p{i}.png")
        images.append({"id": 100 + i, "file_name": f"p{i}.png", "height": h, "width": w})
        for j in range(i % 3):
            anns.append({"id": 10 * i + j, "image_id": 100 + i, "category_id": 7 + j,
                         "bbox": [1.5 * j, 2, 4.25, 3], "area": 12.75, "iscrowd": j % 2,
                         "segmentation": [[1, 1, 8, 1, 8, 9, 1, 9]]})
    doc = {"images": images, "annotations": anns,
           "categories": [{"id": 7, "name": "a"}, {"id": 8, "name": "b"}]}
    (root / "coco.json").write_text(json.dumps(doc))
    return root


def _all(loader):
    got = {}
    for batch in loader:
        for k, v in batch.items():
            got.setdefault(k, []).extend(np.asarray(x).copy() for x in v)
    return got


def test_convert_segmentation_and_coco_read_back_bit_for_bit(tmp_path):
    """`stoker convert --masks` writes KEY.mask.<format> with the mask's bytes; `--coco`
    writes KEY.boxes.npy, labels, iscrowd, area (and mask.npy with --coco-masks semantic).
    Shards(fields=) with targets reads every field back equal to the source's."""
    root = _targets_data(tmp_path / "data")
    convert(root / "img", tmp_path / "seg", "--masks", root / "ann", "--threads", 2)
    seg_shards = sorted(str(p) for p in (tmp_path / "seg").glob("*.tar"))
    names = [n for n, _ in members(seg_shards)]
    assert names[:2] == ["p0.png", "p0.mask.png"]
    for n, data in members(seg_shards):
        if n.endswith(".mask.png"):
            assert data == (root / "ann" / n.replace(".mask", "")).read_bytes()
    src = stoker.SegmentationFolder(root / "img", root / "ann")
    back = stoker.Shards(seg_shards, fields={"image": "png",
                                             "mask": {"ext": "mask.png", "target": "mask"}})
    assert back.targets == {"mask": {"target": "mask", "ignore_index": 255}}
    kw = dict(batch_size=2, dtype="uint8", collate="list")
    want, got = _all(stoker.Loader(src, **kw)), _all(stoker.Loader(back, **kw))
    for k in ("image", "mask"):
        assert [a.tobytes() for a in got[k]] == [a.tobytes() for a in want[k]], k
    assert [a.shape for a in got["mask"]] == [a.shape for a in want["mask"]]

    convert(root / "img", tmp_path / "coco", "--coco", root / "coco.json", "--coco-masks",
            "semantic")
    coco_shards = sorted(str(p) for p in (tmp_path / "coco").glob("*.tar"))
    src = stoker.Coco(root / "img", root / "coco.json", masks="semantic")
    back = stoker.Shards(coco_shards, fields={
        "image": "png",
        "boxes": {"ext": "boxes.npy", "target": "boxes", "format": "xywh"},
        "labels": {"ext": "labels.npy", "target": "per_box"},
        "iscrowd": {"ext": "iscrowd.npy", "target": "per_box", "follows": "boxes"},
        "area": {"ext": "area.npy", "target": "per_box"},
        "mask": {"ext": "mask.npy", "target": "mask"}})
    assert back.targets == src.targets
    want, got = _all(stoker.Loader(src, **kw)), _all(stoker.Loader(back, **kw))
    for k in ("image", "boxes", "labels", "iscrowd", "area", "mask"):
        assert [(a.dtype, a.shape, a.tobytes()) for a in got[k]] == \
            [(a.dtype, a.shape, a.tobytes()) for a in want[k]], k
    # Targets would not follow a resize: refused.
    r = convert(root / "img", tmp_path / "no", "--coco", root / "coco.json", "--resize", 8,
                check=False)
    assert r.returncode != 0 and "would not follow a resized image" in r.stderr
    with pytest.raises(ValueError, match=r"Shards: fields\['b'\]\[\"target\"\] must be"):
        stoker.Shards(coco_shards, fields={"image": "png", "b": {"ext": "boxes.npy",
                                                                 "target": "box"}})
    with pytest.raises(ValueError, match="follow the boxes field 'boxes'"):
        stoker.Shards(coco_shards, fields={"image": "png", "labels": {"ext": "labels.npy",
                                                                      "target": "per_box"}})


def test_webdataset_reads_converted_target_shards(tmp_path):
    """webdataset itself reads the shards of `convert --masks` and `--coco`: the mask PNG
    as Pillow decodes it (palette indices with decode("l")... as np.asarray of the file),
    the boxes and labels .npy as written."""
    wds = import_webdataset()
    root = _targets_data(tmp_path / "data")
    convert(root / "img", tmp_path / "seg", "--masks", root / "ann")
    urls = [str(p) for p in sorted((tmp_path / "seg").glob("*.tar"))]
    got = list(wds.WebDataset(urls, shardshuffle=False, empty_check=False))
    assert [s["__key__"] for s in got] == [f"p{i}" for i in range(5)]
    for i, s in enumerate(got):
        assert s["mask.png"] == (root / "ann" / f"p{i}.png").read_bytes()
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(s["mask.png"]))),
                              np.asarray(Image.open(root / "ann" / f"p{i}.png")))
    doc = json.loads((root / "coco.json").read_text())
    # Default: torchvision's conventions (category ids as labels, crowds left out); the
    # options: labels numbered from 0 in sorted id order, crowds kept and flagged.
    for name, args, label, crowds in (
            ("coco", (), lambda a: a["category_id"], False),
            ("coco0", ("--coco-labels", "0..K-1", "--coco-crowd", "keep"),
             lambda a: a["category_id"] - 7, True)):
        convert(root / "img", tmp_path / name, "--coco", root / "coco.json", *args)
        urls = [str(p) for p in sorted((tmp_path / name).glob("*.tar"))]
        got = list(wds.WebDataset(urls, shardshuffle=False, empty_check=False).decode())
        assert len(got) == 5
        for i, s in enumerate(got):
            anns = [a for a in doc["annotations"] if a["image_id"] == 100 + i
                    and (crowds or not a["iscrowd"])]
            assert s["boxes.npy"].dtype == np.float32
            assert s["boxes.npy"].tobytes() == \
                np.array([a["bbox"] for a in anns], np.float32).reshape(-1, 4).tobytes()
            assert s["labels.npy"].tolist() == [label(a) for a in anns]
            assert s["iscrowd.npy"].tolist() == [a["iscrowd"] for a in anns]
        assert any(s["iscrowd.npy"].tolist().count(1) for s in got) == crowds


def test_shards_read_boxes_from_a_json_member(tmp_path):
    """A boxes field may be a JSON member, a list of 4-number lists: read as float32
    [N, 4] (an empty list is [0, 4]); anything else is an error of its sample."""
    # xyxy inside the 12 x 10 image: delivered as read (no conversion, clamp or removal).
    boxes = [[[1, 2, 3.5, 4]], [], [[0.25, 0, 10, 8], [5, 5, 6, 6]]]
    ms = []
    for i, b in enumerate(boxes):
        buf = io.BytesIO()
        Image.fromarray(photo(12, 10, i)).save(buf, format="PNG")
        ms += [(f"s{i}.png", buf.getvalue()), (f"s{i}.boxes.json", json.dumps(b).encode())]
    (tmp_path / "a.tar").write_bytes(tar_bytes(ms))
    fields = {"image": "png", "boxes": {"ext": "boxes.json", "target": "boxes",
                                        "format": "xyxy"}}
    src = stoker.Shards([str(tmp_path / "a.tar")], fields=fields)
    assert src.targets == {"boxes": {"target": "boxes", "format": "xyxy"}}
    got = next(iter(stoker.Loader(src, batch_size=3, collate="list")))["boxes"]
    for g, b in zip(got, boxes):
        assert g.dtype == torch.float32 and tuple(g.shape) == (len(b), 4)
        assert g.numpy().tobytes() == np.array(b, np.float32).reshape(-1, 4).tobytes()
    (tmp_path / "b.tar").write_bytes(tar_bytes(ms[:2] + [("s9.png", ms[0][1]),
                                                         ("s9.boxes.json", b"[[1, 2, 3]]")]))
    src = stoker.Shards([str(tmp_path / "b.tar")], fields=fields)
    with pytest.raises(stoker.StokerError, match=r"sample s9: field 'boxes' "
                                                 r"\(member s9\.boxes\.json\): box 0 of the JSON member"):
        list(stoker.Loader(src, batch_size=2, collate="list"))
