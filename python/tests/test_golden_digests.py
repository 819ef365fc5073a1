"""Golden digests: the engine's output, pinned bit for bit.

SHA-256 digests of every batch (image bytes, labels, sample ids, in delivery
order) of two epochs of one Loader, for each source (ImageFolder, Npy, HDF5,
indexed Shards, streamed Shards), each pipeline (train, val, a training
recipe) and each variant (on_error="raise"; on_error="skip" with a corrupt
sample present; ranks 0 and 1 of 2 under skip, which pads the ranks; the
decoded and output caches). Every variant runs at 1 and at 3 threads and
must give the same digest: the table holds one per variant.

The data is made here, deterministically (photo-like JPEGs from conftest's
generator, encoded by Pillow). The table was recorded on the engine before
LoaderImpl was split into units and must not change when the
engine is restructured. A change that is meant to alter the output (a new
augmentation default, a decoder change) updates the table on purpose:

    PYTHONPATH=python /usr/bin/python3 python/tests/test_golden_digests.py

prints the table recomputed, to paste below.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, os.path.dirname(__file__))
import stoker  # noqa: E402
from conftest import MEAN, STD, photo  # noqa: E402

h5py = pytest.importorskip("h5py")

N = 26          # good samples; 4 per batch: 6 full batches and a short one
BAD_AT = 11     # where the corrupt sample sits in the "with a bad sample" data
BATCH = 4
EPOCHS = 2
THREADS = (1, 3)
SEED = 7

SOURCES = ("folder", "npy", "hdf5", "shards_indexed", "shards_stream")


def pipelines():
    return {
        "train": [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(),
                  stoker.Normalize(MEAN, STD)],
        "val": [stoker.Resize(36), stoker.CenterCrop(32), stoker.Normalize(MEAN, STD)],
        "recipe": [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(),
                   stoker.TrivialAugmentWide(), stoker.ColorJitter(0.4, 0.4, 0.4),
                   stoker.Normalize(MEAN, STD), stoker.RandomErasing(0.5)],
    }


# variant -> Loader keyword arguments, and whether the data holds a corrupt sample.
VARIANTS = {
    "raise": ({"on_error": "raise"}, False),
    "skip": ({"on_error": "skip"}, True),
    "rank0of2": ({"on_error": "skip", "rank": 0, "world_size": 2}, True),
    "rank1of2": ({"on_error": "skip", "rank": 1, "world_size": 2}, True),
    "cache_decoded": ({"cache": "decoded", "cache_bytes": 64 << 20}, False),
    "cache_output": ({"cache": "output", "cache_bytes": 64 << 20}, False),
}


def cases():
    out = []
    for source in SOURCES:
        for pipeline in ("train", "val", "recipe"):
            for variant in VARIANTS:
                if variant.startswith("cache") and source != "folder":
                    continue  # the caches are exercised once, on encoded files
                if variant == "cache_output" and pipeline != "val":
                    continue  # the output cache takes no random transforms
                out.append((source, pipeline, variant))
    return out


def jpeg(i: int) -> bytes:
    w, h = 44 + (i * 7) % 37, 40 + (i * 11) % 29
    buf = io.BytesIO()
    Image.fromarray(photo(w, h, 9000 + i)).save(buf, format="JPEG", quality=90,
                                                subsampling=0 if i % 2 else 2)
    return buf.getvalue()


CORRUPT = b"\xff\xd8\xff\xe0 this is not a JPEG any more"


def samples(with_bad: bool):
    """(label, encoded bytes) in source order; the corrupt one at BAD_AT."""
    out = [(i % 3, jpeg(i)) for i in range(N)]
    if with_bad:
        out.insert(BAD_AT, (1, CORRUPT))
    return out


def make_folder(root, items):
    for k, (label, data) in enumerate(items):
        d = root / f"c{label}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{k:03d}.jpg").write_bytes(data)
    return stoker.ImageFolder(str(root))


def make_npy(root, with_bad):
    # Raw pixels cannot be corrupt: the same 26 samples either way.
    root.mkdir(parents=True, exist_ok=True)
    pixels = np.stack([photo(48, 40, 9000 + i) for i in range(N)])
    np.save(root / "x.npy", pixels)
    np.save(root / "y.npy", (np.arange(N) % 3).astype(np.int64))
    return stoker.Npy(str(root / "x.npy"), str(root / "y.npy"))


def make_hdf5(root, items):
    root.mkdir(parents=True, exist_ok=True)
    path = root / "data.h5"
    with h5py.File(path, "w") as f:
        enc = f.create_dataset("jpegs", (len(items),), dtype=h5py.vlen_dtype(np.uint8))
        for k, (_, data) in enumerate(items):
            enc[k] = np.frombuffer(data, np.uint8)
        f.create_dataset("labels", data=np.array([lab for lab, _ in items], np.int64))
    return stoker.HDF5(str(path), images="jpegs", labels="labels")


def make_shards(root, items, mode):
    root.mkdir(parents=True, exist_ok=True)
    per = 9
    for s in range(0, len(items), per):
        with tarfile.open(root / f"part-{s // per:03d}.tar", "w", format=tarfile.PAX_FORMAT) as t:
            for k in range(s, min(s + per, len(items))):
                label, data = items[k]
                for name, payload in ((f"k{k:04d}.jpg", data), (f"k{k:04d}.cls",
                                                                 str(label).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(payload)
                    info.mode = 0o444
                    t.addfile(info, io.BytesIO(payload))
    count = (len(items) + per - 1) // per
    extra = {"length": len(items)} if mode == "stream" else {}  # ranks need the length
    return stoker.Shards(str(root / f"part-{{000..{count - 1:03d}}}.tar"), mode=mode,
                         shuffle_buffer=8, concurrent_shards=2, **extra)


def make_source(root, source, with_bad):
    items = samples(with_bad)
    root = root / f"{source}-{'bad' if with_bad else 'clean'}"
    if source == "folder":
        return make_folder(root, items)
    if source == "npy":
        return make_npy(root, with_bad)
    if source == "hdf5":
        return make_hdf5(root, items)
    return make_shards(root, items, "indexed" if source == "shards_indexed" else "stream")


def digest(source, pipeline, variant, threads):
    kwargs, _ = VARIANTS[variant]
    loader = stoker.Loader(source, batch_size=BATCH, shuffle=True, seed=SEED,
                           transforms=pipelines()[pipeline], threads=threads, prefetch=2,
                           return_indices=True, **kwargs)
    h = hashlib.sha256()
    for epoch in range(EPOCHS):  # one loader: the second epoch may come from the prefetch
        loader.set_epoch(epoch)
        for images, labels, ids in loader:
            h.update(np.ascontiguousarray(images.numpy()).tobytes())
            h.update(np.ascontiguousarray(labels.numpy().astype(np.int64)).tobytes())
            h.update(np.ascontiguousarray(ids.numpy().astype(np.int64)).tobytes())
            h.update(b"|")
        h.update(b"#")
    loader.close()
    return h.hexdigest()


# Recorded on main before the engine split, 1 and 3 threads agreeing.
GOLDEN = {
    "folder/train/raise":
        "43a7cf293e6af3114acab99f120efdbec1a76dde986fa6cb7816439bdba7787f",
    "folder/train/skip":
        "3c29717c1d284a52d3d4dc1df899d106a070afabfc70a498c80bfebb17f56e25",
    "folder/train/rank0of2":
        "06273c3e3c7d7acd527e7b0c5909ab68ba06c69859445ccf8041c4984d194c0b",
    "folder/train/rank1of2":
        "2ee2af6bba4678c128cdbe0e30a4c4ce7cc21c7c11ab385d2d66720716b9418a",
    "folder/train/cache_decoded":
        "43a7cf293e6af3114acab99f120efdbec1a76dde986fa6cb7816439bdba7787f",
    "folder/val/raise":
        "174d6f1fc1600657e617126a24ad9773d201dafc8a7416a16afc1005d7792e7f",
    "folder/val/skip":
        "842b8d2c96e579bfff0d9e54fa68de422d349cf14c4d453be7e61e96f014dc74",
    "folder/val/rank0of2":
        "2722d3ecbc9d6ec965036b1d77c210adf8e8d3505708a62b5837874032e9abdf",
    "folder/val/rank1of2":
        "a9b329282b0464472d9f7c3a8cbee192991697a8f99fdf414026b6f632108c47",
    "folder/val/cache_decoded":
        "174d6f1fc1600657e617126a24ad9773d201dafc8a7416a16afc1005d7792e7f",
    "folder/val/cache_output":
        "174d6f1fc1600657e617126a24ad9773d201dafc8a7416a16afc1005d7792e7f",
    "folder/recipe/raise":
        "0ad8bbf51469c0417ac685048eb24981f50f5c668624b491be2b9a90dd9af2da",
    "folder/recipe/skip":
        "1e488b97b3ee2da462ac723cf3f6ae614eda4ae7e0d45912fdf15e29cc13649a",
    "folder/recipe/rank0of2":
        "6b3f7e87b5daa9ffdc264cb0520277ad4ee33c7b18a8148a719b3e03e3935aac",
    "folder/recipe/rank1of2":
        "59f43a9ba2a7fd6c38062e14cd449dcf4e17391af8d1d7b0ee20bd85235f5901",
    "folder/recipe/cache_decoded":
        "0ad8bbf51469c0417ac685048eb24981f50f5c668624b491be2b9a90dd9af2da",
    "npy/train/raise":
        "f5e79427ee25e2d2b929bc0c0245efd80fc245ab24292b1d07c1b771da51e5db",
    "npy/train/skip":
        "f5e79427ee25e2d2b929bc0c0245efd80fc245ab24292b1d07c1b771da51e5db",
    "npy/train/rank0of2":
        "ba2d95f2921cb44bcfa6905bebc5b9d370673e3ded59dfbde382b64e9940c3a9",
    "npy/train/rank1of2":
        "8315ca8cd483bedd34fe08fd3003ff0e3bf5f68dbb8ebf1a213f80b4e6f30634",
    "npy/val/raise":
        "445363fa3370da96b13c1b0866fe2f3bc34fc8e040abf869ec59a38ef97bff5a",
    "npy/val/skip":
        "445363fa3370da96b13c1b0866fe2f3bc34fc8e040abf869ec59a38ef97bff5a",
    "npy/val/rank0of2":
        "b572ff378d50a99cc8cdd64c00f9b0e4f8f90e86e292b5d7302f03e4bd6d5cc1",
    "npy/val/rank1of2":
        "1fbd281645cb2a583bd7137b304b2b6eba4f8aeac81ccad7b2be7bf39c9eb443",
    "npy/recipe/raise":
        "9894ed2ce8c04387525507b3ed0fbb6605cb311c964a12065313747763ab753c",
    "npy/recipe/skip":
        "9894ed2ce8c04387525507b3ed0fbb6605cb311c964a12065313747763ab753c",
    "npy/recipe/rank0of2":
        "a931ecb1fab7e9a0fabf34a5226e88784553abff6b15d35534ab46c783712592",
    "npy/recipe/rank1of2":
        "6dfcb0549a02724e8d98b42da6ed35d43af21aeae8691fb094a3cd3eac2fba1b",
    "hdf5/train/raise":
        "3cac58926b06d4683371e41b98806493ebd311d16a9348bc6759fa667b8ea574",
    "hdf5/train/skip":
        "95355c1fd5e04c810f8554cdca035f74dc01c5d5c601bbc6413f9b7912d704b9",
    "hdf5/train/rank0of2":
        "9e99e6129dc31812a206dcf13a6e1d8fb6d41a88fb622908d97fb5eae72a8406",
    "hdf5/train/rank1of2":
        "e3887a5b0005f0fb6a2969b0261f674565564c5795890c01fd59a931a1a35a03",
    "hdf5/val/raise":
        "399ac7dc9caee7222c9bf35c09b5a9303c2ed50030a83e77badee9b930d66ce6",
    "hdf5/val/skip":
        "990323b617ac9a4fd8cc2de6f7586378574acd11728bf02334085505b8fca5d0",
    "hdf5/val/rank0of2":
        "5079b79f827f18367d4221d2491bf83cf5d28059abfbbf39db427d36d0bcdbfe",
    "hdf5/val/rank1of2":
        "f7da92544d19d7c785ba4f82184a6d3463a8a8ae21627acf94b81f16f687e836",
    "hdf5/recipe/raise":
        "54c469d389f51cd448488b4ed8781cefc5503b650a53d18e6fcc8ad80ace6ef5",
    "hdf5/recipe/skip":
        "f4a1010eef52b631766aa20086590ffcc526b0f38b568c57fa0591106dcb9787",
    "hdf5/recipe/rank0of2":
        "8d24b41da4293b8200f525443157b06271422afda76c207a02b4deb6ba33bea0",
    "hdf5/recipe/rank1of2":
        "b01f48ffb50915af7038f36139c5bf3f3f01cdac47004c889efc4345025808be",
    "shards_indexed/train/raise":
        "3cac58926b06d4683371e41b98806493ebd311d16a9348bc6759fa667b8ea574",
    "shards_indexed/train/skip":
        "95355c1fd5e04c810f8554cdca035f74dc01c5d5c601bbc6413f9b7912d704b9",
    "shards_indexed/train/rank0of2":
        "9e99e6129dc31812a206dcf13a6e1d8fb6d41a88fb622908d97fb5eae72a8406",
    "shards_indexed/train/rank1of2":
        "e3887a5b0005f0fb6a2969b0261f674565564c5795890c01fd59a931a1a35a03",
    "shards_indexed/val/raise":
        "399ac7dc9caee7222c9bf35c09b5a9303c2ed50030a83e77badee9b930d66ce6",
    "shards_indexed/val/skip":
        "990323b617ac9a4fd8cc2de6f7586378574acd11728bf02334085505b8fca5d0",
    "shards_indexed/val/rank0of2":
        "5079b79f827f18367d4221d2491bf83cf5d28059abfbbf39db427d36d0bcdbfe",
    "shards_indexed/val/rank1of2":
        "f7da92544d19d7c785ba4f82184a6d3463a8a8ae21627acf94b81f16f687e836",
    "shards_indexed/recipe/raise":
        "54c469d389f51cd448488b4ed8781cefc5503b650a53d18e6fcc8ad80ace6ef5",
    "shards_indexed/recipe/skip":
        "f4a1010eef52b631766aa20086590ffcc526b0f38b568c57fa0591106dcb9787",
    "shards_indexed/recipe/rank0of2":
        "8d24b41da4293b8200f525443157b06271422afda76c207a02b4deb6ba33bea0",
    "shards_indexed/recipe/rank1of2":
        "b01f48ffb50915af7038f36139c5bf3f3f01cdac47004c889efc4345025808be",
    "shards_stream/train/raise":
        "9d2e83d53096f47efbd98e5eaa447a3b3f735e83b3d614a0ab3e7eee50411701",
    "shards_stream/train/skip":
        "b55b4b7d222ac5bb6f20e0688383544de077435c96432a04911a024b918c1a86",
    "shards_stream/train/rank0of2":
        "1690540607587e37167b7bf2b21d80290799a906cfa2b4c21419cafd6c069140",
    "shards_stream/train/rank1of2":
        "58d06bca9c103d226286256839653d7d9b079a51a44c395cc56d1e93c4ce4d59",
    "shards_stream/val/raise":
        "8f964f0446109f5a260b429490b7acf7beed07c42485a9e8447511c627b9a3de",
    "shards_stream/val/skip":
        "384f883424f5826b833b2725413af0178dd28e33de0dbc65552571aeb53e126f",
    "shards_stream/val/rank0of2":
        "71e814901ffe4dfa91df208bc39c719c26b95c7ccd08c384aaddcbba5e399af8",
    "shards_stream/val/rank1of2":
        "940561afb4ce3883d448bda333c7197da1af3757262da447cbe02f71391a8d5f",
    "shards_stream/recipe/raise":
        "8fd6567a11e301ce303dc7218b0e6a61264070a3babc922fc93bd6452504eb66",
    "shards_stream/recipe/skip":
        "a28168dc1e2a411e89d86b0a9c979d98e1b515e8b76b2dc83842008f592c45cb",
    "shards_stream/recipe/rank0of2":
        "8b4ef28e573ec02c0d839ebd9371c523c84620efcb944ed550afcf8291887807",
    "shards_stream/recipe/rank1of2":
        "4ba3be42706841e3279c036ea3bd00b7ea1fee2c75e3be2f618812d1680ca975",
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    root = tmp_path_factory.mktemp("golden")
    made = {}

    def get(source, with_bad):
        key = (source, with_bad)
        if key not in made:
            made[key] = make_source(root, source, with_bad)
        return made[key]
    return get


@pytest.mark.parametrize("source,pipeline,variant", cases())
def test_golden_digest(sources, source, pipeline, variant):
    src = sources(source, VARIANTS[variant][1])
    got = {t: digest(src, pipeline, variant, t) for t in THREADS}
    assert got[THREADS[0]] == got[THREADS[1]], f"thread counts disagree: {got}"
    key = f"{source}/{pipeline}/{variant}"
    assert got[THREADS[0]] == GOLDEN[key], f"{key}: the engine's output changed"


def test_every_case_has_a_digest():
    assert sorted(GOLDEN) == sorted(f"{s}/{p}/{v}" for s, p, v in cases())


def main() -> int:
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        made = {}
        print("GOLDEN = {")
        for source, pipeline, variant in cases():
            with_bad = VARIANTS[variant][1]
            if (source, with_bad) not in made:
                made[(source, with_bad)] = make_source(Path(tmp), source, with_bad)
            src = made[(source, with_bad)]
            got = {t: digest(src, pipeline, variant, t) for t in THREADS}
            note = "" if len(set(got.values())) == 1 else f"  # THREADS DISAGREE: {got}"
            print(f'    "{source}/{pipeline}/{variant}":\n        "{got[THREADS[0]]}",{note}')
        print("}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
