"""Error policies: on_error="raise" and on_error="skip" on broken files, and
files whose extension lies about their (valid) content."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms as T
from PIL import Image

import stoker
from conftest import collect, photo, save_jpeg, save_png, stoker_python_dir

VAL = [stoker.Resize(40), stoker.CenterCrop(32)]
TV_VAL = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])


# ------------------------------------------------------------ bad files ----

def jpeg_bytes(seed, w=120, h=90):
    buf = io.BytesIO()
    Image.fromarray(photo(w, h, seed)).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def png_bytes(seed, w=120, h=90):
    buf = io.BytesIO()
    Image.fromarray(photo(w, h, seed)).save(buf, format="PNG")
    return buf.getvalue()


def scan_start(data: bytes) -> int:
    sos = data.index(b"\xff\xda")
    return sos + 2 + int.from_bytes(data[sos + 2:sos + 4], "big")


def garbage_in_scan(data: bytes, seed: int, n: int = 600) -> bytes:
    # Random bytes at the start of the entropy-coded data, so that every decode (whatever
    # region it needs) runs through them; they include stray 0xFF marker bytes.
    start = scan_start(data)
    g = np.random.default_rng(seed).integers(0, 256, size=n, dtype=np.uint8).tobytes()
    assert start + n < len(data) - 2
    return data[:start] + g + data[start + n:]


def corrupt_idat_crc(data: bytes) -> bytes:
    i = data.index(b"IDAT")
    length = int.from_bytes(data[i - 4:i], "big")
    crc = i + 4 + length
    return data[:crc] + bytes([data[crc] ^ 0xFF]) + data[crc + 1:]


# name -> (bytes maker, words expected in the error message)
BAD_FILES = {
    "bad_truncated.jpg": (lambda: jpeg_bytes(1)[: len(jpeg_bytes(1)) // 2], ["JPEG"]),
    "bad_garbage.jpg": (lambda: garbage_in_scan(jpeg_bytes(2), seed=0), ["JPEG", "orrupt"]),
    "x.jpg": (lambda: b"", ["empty"]),
    "y.jpg": (lambda: b"this is a text file, not an image\n" * 20, ["not a JPEG, PNG, WebP, TIFF, BMP or PNM image"]),
    "bad_crc.png": (lambda: corrupt_idat_crc(png_bytes(3)), ["PNG", "CRC"]),
}


def write_valid_misnamed(d, seed):
    """A PNG named .jpg and a JPEG named .png (valid: decoded by content)."""
    save_png(photo(110, 80, seed), d / "png_named.jpg")
    save_jpeg(photo(80, 110, seed + 1), d / "jpeg_named.png", subsampling=2)


@pytest.fixture(scope="module")
def bad_root(tmp_path_factory):
    """21 files: 14 good JPEGs, 2 valid misnamed files, 5 broken files (class b)."""
    root = tmp_path_factory.mktemp("bad")
    a, b = root / "a", root / "b"
    a.mkdir()
    b.mkdir()
    for i in range(10):
        save_jpeg(photo(96, 72, 700 + i), a / f"good{i:02d}.jpg")
    for i in range(10, 14):
        save_jpeg(photo(72, 96, 700 + i), b / f"good{i:02d}.jpg")
    write_valid_misnamed(b, 800)
    for name, (make, _) in BAD_FILES.items():
        (b / name).write_bytes(make())
    return str(root)


def bad_indices(folder):
    return {i for i in range(len(folder))
            if os.path.basename(folder.path(i)) in BAD_FILES}


def test_bad_files_are_really_bad():
    # Each broken file makes the decoder itself fail (not only the loader).
    for name, (make, words) in BAD_FILES.items():
        with pytest.raises(Exception) as e:
            stoker._C._decode(make())
        for w in words:
            assert w in str(e.value), (name, str(e.value))


def test_misnamed_files_decode_by_content(tmp_path):
    root = tmp_path / "renamed"
    (root / "c").mkdir(parents=True)
    write_valid_misnamed(root / "c", 900)
    save_jpeg(photo(64, 64, 901), root / "c" / "z_plain.jpg")
    folder = stoker.ImageFolder(str(root))
    tv = tvd.ImageFolder(str(root), TV_VAL)
    assert [os.path.basename(p) for p, _ in tv.samples] == \
        ["jpeg_named.png", "png_named.jpg", "z_plain.jpg"]
    images, labels, ids = collect(stoker.Loader(folder, batch_size=2, transforms=VAL,
                                                dtype="uint8", return_indices=True,
                                                dct_scaling=False))
    assert ids.tolist() == [0, 1, 2]
    ref = torch.stack([tv[i][0] for i in range(3)])
    assert torch.equal(images, ref)


# --------------------------------------------------------------- raise ----

@pytest.mark.parametrize("name", list(BAD_FILES))
def test_raise_names_the_file_and_reason(tmp_path, name):
    make, words = BAD_FILES[name]
    root = tmp_path / "one_bad"
    (root / "c").mkdir(parents=True)
    for i in range(5):
        save_jpeg(photo(64, 48, 40 + i), root / "c" / f"a{i}.jpg")
    (root / "c" / name).write_bytes(make())
    folder = stoker.ImageFolder(str(root))
    loader = stoker.Loader(folder, batch_size=2, transforms=VAL, on_error="raise", threads=2)
    with pytest.raises(stoker.StokerError) as e:
        for _ in loader:
            pass
    assert isinstance(e.value, RuntimeError)
    msg = str(e.value)
    assert str(root / "c" / name) in msg, msg
    for w in words:
        assert w in msg, msg


def test_raise_on_mixed_folder_and_recovery(bad_root):
    folder = stoker.ImageFolder(bad_root)
    loader = stoker.Loader(folder, batch_size=4, transforms=VAL, on_error="raise", threads=3,
                           return_indices=True)
    got = []
    with pytest.raises(stoker.StokerError) as e:
        for x, y, i in loader:
            got += i.tolist()
    bad_paths = [folder.path(i) for i in sorted(bad_indices(folder))]
    assert any(p in str(e.value) for p in bad_paths), str(e.value)
    # Batches before the failing one were fine and contained no bad sample.
    assert not set(got) & bad_indices(folder)
    # The loader is usable afterwards: the next epoch starts again and fails the same way.
    with pytest.raises(stoker.StokerError) as e2:
        for _ in loader:
            pass
    assert str(e2.value) == str(e.value)


# ---------------------------------------------------------------- skip ----

def skip_run(root, threads, seed=0, shuffle=True, epochs=1, transforms=VAL, dtype="uint8"):
    folder = stoker.ImageFolder(root)
    loader = stoker.Loader(folder, batch_size=4, transforms=transforms, on_error="skip",
                           threads=threads, seed=seed, shuffle=shuffle, dtype=dtype,
                           return_indices=True, dct_scaling=False)
    out = []
    for _ in range(epochs):
        sizes = []
        xs, ys, ids = [], [], []
        for x, y, i in loader:
            sizes.append(len(y))
            xs.append(x.clone())
            ys.append(y.clone())
            ids.append(i.clone())
        out.append((torch.cat(xs), torch.cat(ys), torch.cat(ids), sizes,
                    loader.stats()["epoch"]["skipped"]))
    return folder, loader, out


def test_skip_leaves_bad_samples_out(bad_root):
    folder, loader, epochs = skip_run(bad_root, threads=3, epochs=3)
    n = len(folder)
    assert n == 21
    bad = bad_indices(folder)
    assert len(bad) == len(BAD_FILES)
    tv = tvd.ImageFolder(bad_root, TV_VAL)
    total_skipped = 0
    for x, y, ids, sizes, skipped in epochs:
        # The 16 good samples, packed: only the last batch may be short.
        assert sizes == [4, 4, 4, 4]
        ids = ids.tolist()
        # Every good sample exactly once; no bad one, no duplicate.
        assert sorted(ids) == sorted(set(range(n)) - bad)
        # Every yielded slot holds exactly that sample (image and label).
        for img, label, i in zip(x, y.tolist(), ids):
            ref, ref_label = tv[i]
            assert label == ref_label == folder.label(i)
            assert torch.equal(img, ref), folder.path(i)
        # Each bad file is counted once per epoch.
        assert skipped == len(bad)
        total_skipped += skipped
    assert loader.stats()["skipped"] == total_skipped
    assert loader.stats()["skipped_files"] == len(bad)  # the same files every epoch
    assert loader.stats()["epoch"]["skipped_files"] == len(bad)
    assert loader.stats()["images"] == 3 * (n - len(bad))


def test_skip_is_deterministic(bad_root):
    train = [stoker.RandomResizedCrop(24), stoker.RandomHorizontalFlip()]
    runs = [skip_run(bad_root, threads=t, seed=5, transforms=train, epochs=2)[2]
            for t in (1, 3, 3)]
    for other in runs[1:]:
        for (x0, y0, i0, s0, k0), (x1, y1, i1, s1, k1) in zip(runs[0], other):
            assert torch.equal(i0, i1) and torch.equal(y0, y1)
            assert torch.equal(x0, x1)
            assert k0 == k1
    # The two epochs differ (order and replacements come from (seed, epoch)).
    assert not torch.equal(runs[0][0][2], runs[0][1][2])


def test_skip_unshuffled_counts_each_bad_file(bad_root):
    folder, loader, [(x, y, ids, sizes, skipped)] = skip_run(bad_root, threads=2, shuffle=False)
    ids = ids.tolist()
    bad = bad_indices(folder)
    # Unshuffled: the good samples in order, the bad ones left out.
    assert ids == [i for i in range(len(folder)) if i not in bad]
    assert skipped == len(bad) == loader.stats()["epoch"]["skipped_files"]


def test_skip_with_only_bad_files_fails_clearly(tmp_path):
    # With nothing readable, skip must end the epoch with a clear error, not hang,
    # not hand out unwritten slots and not end the epoch silently empty. Run in a subprocess so that a hang
    # fails the test (timeout) instead of blocking the suite.
    root = tmp_path / "all_bad"
    (root / "c").mkdir(parents=True)
    for name, (make, _) in BAD_FILES.items():
        (root / "c" / name).write_bytes(make())
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None
        import stoker
        loader = stoker.Loader(stoker.ImageFolder(sys.argv[1]), batch_size=2,
                               transforms=[stoker.CenterCrop(32)], on_error="skip",
                               return_indices=True, threads=2)
        try:
            for x, y, i in loader:
                print("YIELDED", i.tolist(), flush=True)
        except stoker.StokerError as e:
            print("ERROR", e, flush=True)
            print("SKIPPED", loader.stats()["skipped"], flush=True)
    """)
    env = dict(os.environ, PYTHONPATH=stoker_python_dir())
    try:
        r = subprocess.run([sys.executable, "-c", code, str(root)], env=env,
                           capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("on_error='skip' over a folder of only bad files hangs")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "YIELDED" not in out, f"batches with no readable sample were yielded:\n{out}"
    assert "ERROR" in out, out
    err = out.split("ERROR", 1)[1]
    assert "could be read" in err and str(root) in err, err


def test_max_pixels(small_root):
    # small_root holds images from 50x50 (2500 px) to 160x120 (19200 px); only the
    # 160x120 ones (1 in 7) exceed 11000 px.
    folder = stoker.ImageFolder(small_root)
    loader = stoker.Loader(folder, batch_size=4, transforms=VAL, max_pixels=11000,
                           on_error="raise")
    with pytest.raises(stoker.StokerError, match="max_pixels"):
        for _ in loader:
            pass
    skip = stoker.Loader(folder, batch_size=4, transforms=VAL, max_pixels=11000,
                         on_error="skip", return_indices=True)
    ids = [j for _, _, i in skip for j in i.tolist()]
    assert len(ids) == len(set(ids)) == len(folder) - skip.stats()["skipped_files"]
    with_sizes = {}
    for i in set(ids):
        with Image.open(folder.path(i)) as im:
            with_sizes[i] = im.size[0] * im.size[1]
    assert all(px <= 11000 for px in with_sizes.values()), with_sizes
    assert skip.stats()["skipped"] > 0


def test_batch_allocation_failure_is_an_error_not_a_hang(tmp_path):
    # batch_size 1e9 of 224x224x3 float32 is ~6e14 bytes, beyond any address space: the
    # batch buffer cannot be allocated. That must surface as an exception (at construction
    # or on the first next()), not block the consumer forever. Subprocess + timeout.
    root = tmp_path / "alloc"
    (root / "c").mkdir(parents=True)
    for i in range(3):
        save_jpeg(photo(64, 48, 60 + i), root / "c" / f"{i}.jpg")
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None
        import stoker
        try:
            loader = stoker.Loader(stoker.ImageFolder(sys.argv[1]), batch_size=10**9,
                                   transforms=[stoker.CenterCrop(224)], threads=1)
            for x, y in loader:
                print("YIELDED", x.shape, flush=True)
        except (stoker.StokerError, MemoryError, ValueError) as e:
            print("ERROR", type(e).__name__, e, flush=True)
    """)
    env = dict(os.environ, PYTHONPATH=stoker_python_dir())
    try:
        r = subprocess.run([sys.executable, "-c", code, str(root)], env=env,
                           capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("a batch buffer allocation failure hangs the consumer in next()")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ERROR"), r.stdout
