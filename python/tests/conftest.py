"""Shared fixtures for the stoker Python tests.

Every test makes its own data: photo-like images (smooth colour fields, a
gradient, a few hard edges and sensor-like noise) written with Pillow into
pytest's tmp directories, laid out as ImageFolder trees root/<class>/<file>.
Fixtures are session-scoped so each tree is generated once per run.
"""

from __future__ import annotations

import gc
import os
import sys
import time

import numpy as np
import pytest
from PIL import Image

# Make `import stoker` work when pytest is run without PYTHONPATH=python (appended, so
# that a PYTHONPATH pointing at another build still wins).
_PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
if _PYTHON_DIR not in sys.path:
    sys.path.append(_PYTHON_DIR)

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def torchrun_command() -> list:
    """The launcher as a user runs it: ``python -m torch.distributed.run`` (torchrun).
    torch 1.x on Python 3.11 also needs ``--redirects 1 --tee 1``: its argument handling
    otherwise fails with ``'NoneType' object has no attribute 'get'``; torch 2.x does not."""
    import torch
    cmd = [sys.executable, "-m", "torch.distributed.run"]
    if int(torch.__version__.split(".")[0]) < 2:
        cmd += ["--redirects", "1", "--tee", "1"]
    return cmd


def _built_with(part: str) -> bool:
    from stoker import _C
    return getattr(_C, f"built_with_{part}")()


# The optional parts of the build (CMake STOKER_WITH_HDF5, STOKER_WITH_CURL,
# STOKER_WITH_VIDEO): tests that need one are skipped, naming the reason, in a build
# without it.
_WITHOUT = {"hdf5": "stoker was built without HDF5 (STOKER_WITH_HDF5=OFF)",
            "curl": "stoker was built without libcurl (STOKER_WITH_CURL=OFF)",
            "video": "stoker was built without video (STOKER_WITH_VIDEO: FFmpeg's libav* "
                     "not found)"}
needs_hdf5 = pytest.mark.skipif(not _built_with("hdf5"), reason=_WITHOUT["hdf5"])
needs_curl = pytest.mark.skipif(not _built_with("curl"), reason=_WITHOUT["curl"])
needs_video = pytest.mark.skipif(not _built_with("video"), reason=_WITHOUT["video"])


def skip_unless_built_with(part: str) -> None:
    """For fixtures (marks do not apply to them): skip the test needing them."""
    if not _built_with(part):
        pytest.skip(_WITHOUT[part])


def photo(width: int, height: int, seed: int) -> np.ndarray:
    """A photo-like RGB uint8 array [height, width, 3]."""
    rng = np.random.default_rng(seed)
    # Smooth colour field: a coarse random grid upsampled bicubically.
    gw, gh = max(2, width // 60), max(2, height // 60)
    coarse = rng.integers(0, 256, size=(gh, gw, 3), dtype=np.uint8)
    field = np.asarray(Image.fromarray(coarse).resize((width, height), Image.BICUBIC),
                       dtype=np.float32)
    # A diagonal gradient.
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    grad = (xx / max(1, width - 1) * 60.0 - yy / max(1, height - 1) * 40.0)[..., None]
    img = 0.75 * field + grad + 20.0
    # A few hard-edged shapes (high frequencies the resampler must handle).
    for _ in range(4):
        x0, y0 = rng.integers(0, width), rng.integers(0, height)
        x1 = min(width, x0 + rng.integers(width // 10 + 1, width // 3 + 2))
        y1 = min(height, y0 + rng.integers(height // 10 + 1, height // 3 + 2))
        img[y0:y1, x0:x1] = rng.integers(0, 256, size=3)
    # Thin lines.
    img[:, rng.integers(0, width)] = 250.0
    img[rng.integers(0, height), :] = 5.0
    # Sensor-like noise.
    img += rng.normal(0.0, 6.0, size=img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def save_jpeg(arr: np.ndarray, path, *, subsampling: int = 0, quality: int = 90,
              mode: str = "RGB") -> None:
    img = Image.fromarray(arr)
    if mode != "RGB":
        img = img.convert(mode)
    kwargs = {"quality": quality}
    if mode != "L":
        kwargs["subsampling"] = subsampling
    img.save(path, format="JPEG", **kwargs)


def save_png(arr: np.ndarray, path, *, mode: str = "RGB", seed: int = 0) -> None:
    img = Image.fromarray(arr)
    if mode == "RGBA":
        rng = np.random.default_rng(seed)
        alpha = rng.integers(0, 256, size=arr.shape[:2], dtype=np.uint8)
        img = Image.fromarray(np.dstack([arr, alpha]), "RGBA")
    elif mode == "P":
        img = img.quantize(colors=200)
    elif mode != "RGB":
        img = img.convert(mode)
    img.save(path, format="PNG")


# (class, file, width, height, kind, option)
PARITY_IMAGES = [
    ("a_jpeg444", "w500x375.jpg", 500, 375, "jpeg", 0),
    ("a_jpeg444", "p375x500.jpg", 375, 500, "jpeg", 0),
    ("a_jpeg444", "s333x250.jpg", 333, 250, "jpeg", 0),
    ("a_jpeg444", "t200x150.jpg", 200, 150, "jpeg", 0),
    ("a_jpeg444", "u1200x900.jpg", 1200, 900, "jpeg", 0),
    ("a_jpeg444", "v257x255.jpg", 257, 255, "jpeg", 0),
    ("b_jpeg420", "w500x375.jpg", 500, 375, "jpeg", 2),
    ("b_jpeg420", "p375x500.jpg", 375, 500, "jpeg", 2),
    ("b_jpeg420", "s333x250.jpg", 333, 250, "jpeg", 2),
    ("b_jpeg420", "t200x150.jpg", 200, 150, "jpeg", 2),
    ("b_jpeg420", "u1200x900.jpg", 1200, 900, "jpeg", 2),
    ("b_jpeg420", "v901x1201.jpg", 901, 1201, "jpeg", 2),
    ("b_jpeg420", "x257x255.jpg", 257, 255, "jpeg", 2),
    ("c_jpeg422", "w500x375.jpg", 500, 375, "jpeg", 1),
    ("c_jpeg422", "p375x500.jpg", 375, 500, "jpeg", 1),
    ("c_jpeg422", "s333x250.jpg", 333, 250, "jpeg", 1),
    ("c_jpeg422", "t200x150.jpg", 200, 150, "jpeg", 1),
    ("c_jpeg422", "u1200x900.jpg", 1200, 900, "jpeg", 1),
    ("d_grey", "w500x375.jpg", 500, 375, "grey", 0),
    ("d_grey", "p375x500.jpg", 375, 500, "grey", 0),
    ("d_grey", "t200x150.jpg", 200, 150, "grey", 0),
    ("e_cmyk", "w500x375.jpg", 500, 375, "cmyk", 0),
    ("e_cmyk", "p375x500.jpg", 375, 500, "cmyk", 0),
    ("e_cmyk", "t200x150.jpg", 200, 150, "cmyk", 0),
    ("f_png", "rgb500x375.png", 500, 375, "png", "RGB"),
    ("f_png", "rgba375x500.png", 375, 500, "png", "RGBA"),
    ("f_png", "l333x250.png", 333, 250, "png", "L"),
    ("f_png", "p200x150.png", 200, 150, "png", "P"),
    ("f_png", "rgb1200x900.png", 1200, 900, "png", "RGB"),
    # Progressive (and Huffman-optimised) JPEGs; one with an EXIF orientation tag, which
    # torchvision does not apply (so neither may stoker).
    ("g_progressive", "w500x375.jpg", 500, 375, "progressive", 2),
    ("g_progressive", "p375x500.jpg", 375, 500, "progressive", 0),
    ("g_progressive", "r300x200_exif6.jpg", 300, 200, "exif", 6),
]


def write_image(path, width, height, kind, option, seed):
    arr = photo(width, height, seed)
    if kind == "jpeg":
        save_jpeg(arr, path, subsampling=option)
    elif kind == "grey":
        save_jpeg(arr, path, mode="L")
    elif kind == "cmyk":
        save_jpeg(arr, path, mode="CMYK")
    elif kind == "png":
        save_png(arr, path, mode=option, seed=seed)
    elif kind == "progressive":
        Image.fromarray(arr).save(path, format="JPEG", quality=90, subsampling=option,
                                  progressive=True, optimize=True)
    elif kind == "exif":
        img = Image.fromarray(arr)
        exif = img.getexif()
        exif[0x0112] = option  # Orientation
        img.save(path, format="JPEG", quality=90, exif=exif.tobytes())
    else:
        raise AssertionError(kind)


@pytest.fixture(scope="session")
def parity_root(tmp_path_factory):
    """An ImageFolder of JPEGs (4:4:4, 4:2:0, 4:2:2, grey, CMYK) and PNGs (RGB, RGBA, L, P)."""
    root = tmp_path_factory.mktemp("parity")
    for seed, (cls, name, w, h, kind, option) in enumerate(PARITY_IMAGES):
        d = root / cls
        d.mkdir(exist_ok=True)
        write_image(d / name, w, h, kind, option, 1000 + seed)
    # Sanity: the files are what we meant them to be.
    with Image.open(root / "e_cmyk" / "w500x375.jpg") as im:
        assert im.mode == "CMYK"
    with Image.open(root / "d_grey" / "w500x375.jpg") as im:
        assert im.mode == "L"
    with Image.open(root / "f_png" / "p200x150.png") as im:
        assert im.mode == "P"
    return str(root)


# Class name -> number of images; uneven on purpose, 37 in all (prime).
SMALL_CLASSES = {"cat": 13, "dog": 11, "emu": 13}


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory):
    """A tiny ImageFolder: 13 PNGs of 24x20, image i in class c{i % 3}."""
    root = tmp_path_factory.mktemp("tiny")
    for i in range(13):
        c = root / f"c{i % 3}"
        c.mkdir(exist_ok=True)
        save_png(photo(24, 20, i), c / f"{i:02d}.png")
    return str(root)


@pytest.fixture(scope="session")
def small_root(tmp_path_factory):
    """A small ImageFolder for the Loader contract: 37 images, 3 classes, mixed sizes/formats."""
    root = tmp_path_factory.mktemp("small")
    sizes = [(96, 72), (72, 96), (120, 90), (64, 48), (160, 120), (50, 50), (90, 60)]
    k = 0
    for cls, count in SMALL_CLASSES.items():
        d = root / cls
        d.mkdir()
        for i in range(count):
            w, h = sizes[k % len(sizes)]
            arr = photo(w, h, 5000 + k)
            if k % 5 == 4:
                save_png(arr, d / f"img{i:02d}.png")
            else:
                save_jpeg(arr, d / f"img{i:02d}.jpg", subsampling=(0, 2, 1)[k % 3])
            k += 1
    return str(root)


def stoker_python_dir() -> str:
    """The directory holding the `stoker` package under test (for subprocesses)."""
    import stoker
    return os.path.dirname(os.path.dirname(os.path.abspath(stoker.__file__)))


def run_child(code: str, timeout: float = 120) -> str:
    """Runs `code` in a child interpreter that imports the stoker under test, under
    `timeout` (the crash and hang cases); asserts it exits 0 and prints "done" last;
    returns its stdout."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=stoker_python_dir())
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=timeout, env=env)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-3000:])
    assert r.stdout.strip().endswith("done"), r.stdout
    return r.stdout


def collect(loader, *, indexed=True):
    """Runs one epoch; returns (images, labels, indices) concatenated, as torch tensors."""
    import torch
    imgs, labels, ids = [], [], []
    for batch in loader:
        if indexed:
            x, y, i = batch
            ids.append(i.clone())
        else:
            x, y = batch
        imgs.append(x.clone())
        labels.append(y.clone())
    out_ids = torch.cat(ids) if ids else None
    return torch.cat(imgs), torch.cat(labels), out_ids


# --- Process-level checks shared by the lifecycle and soak tests. ---------

def thread_count() -> int:
    """Native threads of this process (/proc/self/task)."""
    return len(os.listdir("/proc/self/task"))


def fd_count() -> int:
    """Open file descriptors of this process (/proc/self/fd)."""
    return len(os.listdir("/proc/self/fd"))


def settle(target: int, timeout: float = 3.0) -> int:
    """Thread count, polled until it drops to `target` (exited threads vanish lazily)."""
    deadline = time.monotonic() + timeout
    n = thread_count()
    while n > target and time.monotonic() < deadline:
        time.sleep(0.01)
        n = thread_count()
    return n


def warm_torch_threads() -> None:
    """Starts torch's own intra-op thread pool (if any) before baselines are taken, so
    that only stoker's threads come and go in a test."""
    import torch
    torch.ones(1 << 20).add_(1).sum()
    torch.ones(8, 3, 32, 32).clone()


def drop_loaders_of_earlier_tests() -> None:
    """Loaders of earlier tests must be gone before a baseline is taken. pytest keeps the
    last failure's traceback (and so its frames' loaders) in sys.last_traceback until the
    next test's call phase; drop it now and collect."""
    for name in ("last_type", "last_value", "last_traceback"):
        if hasattr(sys, name):
            delattr(sys, name)
    gc.collect()
    settle(0, timeout=0.2)  # let exited threads disappear from /proc


def tar_bytes(members) -> bytes:
    """A pax tar (Python's tarfile) of (name, bytes) members, in order."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write_shards(d, shards: int, per: int, members) -> str:
    """`shards` tar files d/shard-{s}.tar, shard s holding members(i) for its `per` samples
    i = s * per, ...; returns their brace pattern."""
    import os
    os.makedirs(d, exist_ok=True)
    for s in range(shards):
        ms = []
        for i in range(s * per, (s + 1) * per):
            ms += members(i)
        with open(os.path.join(d, f"shard-{s}.tar"), "wb") as f:
            f.write(tar_bytes(ms))
    return os.path.join(d, "shard-{0..%d}.tar" % (shards - 1))


def save_npy_fields(d, arrays: dict) -> dict:
    """Each array of `arrays` saved as d/<name>.npy; returns {name: path} for stoker.Npy."""
    paths = {}
    for k, v in arrays.items():
        np.save(d / f"{k}.npy", v)
        paths[k] = str(d / f"{k}.npy")
    return paths


def npy_bytes(a) -> bytes:
    """The .npy file numpy's np.save writes for `a`."""
    import io
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def coeffs_f64(sp, ep):
    """F.perspective's 8 coefficients for startpoints sp, endpoints ep, solved in float64
    and rounded to float32 (torchvision >= 0.15; stoker's)."""
    import torch
    a = torch.zeros(8, 8, dtype=torch.float64)
    for i, (p1, p2) in enumerate(zip(ep, sp)):
        a[2 * i] = torch.tensor([p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]])
        a[2 * i + 1] = torch.tensor([0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]])
    b = torch.tensor(sp, dtype=torch.float64).view(8)
    return torch.linalg.lstsq(a, b, driver="gels").solution.to(torch.float32).tolist()
