"""Array sources: stoker.Npy (memory-mapped .npy) and stoker.HDF5.

The raw-pixel path must give exactly what decoding a lossless PNG of the same
pixels gives (through stoker.ImageFolder), and the deterministic pipeline
must match torchvision on the same pixels.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torchvision.transforms as T
from PIL import Image

import stoker
from conftest import MEAN, STD, needs_hdf5, photo

N, H, W = 10, 48, 64


@pytest.fixture(scope="module")
def pixels():
    return np.stack([photo(W, H, 500 + i) for i in range(N)])


@pytest.fixture(scope="module")
def arrays(tmp_path_factory, pixels):
    d = tmp_path_factory.mktemp("arrays")
    np.save(d / "x.npy", pixels)
    np.save(d / "c.npy", np.ascontiguousarray(pixels.transpose(0, 3, 1, 2)))
    labels = np.arange(N, dtype=np.int64) % 3
    np.save(d / "y.npy", labels)
    # The same pixels as lossless PNGs in an ImageFolder, class = label.
    for i in range(N):
        cls = d / "folder" / f"c{labels[i]}"
        cls.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels[i]).save(cls / f"{i:03d}.png")
    return d


def run(source, transforms, dtype="uint8", **kw):
    loader = stoker.Loader(source, batch_size=4, transforms=transforms, dtype=dtype,
                           return_indices=True, **kw)
    xs, ys, ids = [], [], []
    for x, y, i in loader:
        xs.append(x.clone())
        ys.append(y.clone())
        ids.append(i.clone())
    return torch.cat(xs), torch.cat(ys), torch.cat(ids)


VAL = [stoker.Resize(40), stoker.CenterCrop(32)]


def test_npy_matches_png_folder(arrays):
    folder = stoker.ImageFolder(str(arrays / "folder"))
    # The folder's order differs (sorted by class): compare per sample id -> file.
    fx, fy, fid = run(folder, VAL)
    npy = stoker.Npy(images=str(arrays / "x.npy"), labels=str(arrays / "y.npy"))
    assert npy.zero_copy and npy.layout == "NHWC" and len(npy) == N
    nx, ny, nid = run(npy, VAL)
    assert nid.tolist() == list(range(N))
    for k in range(N):
        index = int(folder.path(int(fid[k])).rsplit("/", 1)[1][:3])
        assert torch.equal(fx[k], nx[index]), index
        assert fy[k] == ny[index]


def test_npy_nchw_equals_nhwc(arrays):
    t = [stoker.RandomResizedCrop(24), stoker.RandomHorizontalFlip(), stoker.Normalize(MEAN, STD)]
    a = run(stoker.Npy(str(arrays / "x.npy")), t, dtype="float32", shuffle=True, seed=4)
    c = stoker.Npy(str(arrays / "c.npy"))
    assert c.layout == "NCHW" and not c.zero_copy
    b = run(c, t, dtype="float32", shuffle=True, seed=4)
    assert torch.equal(a[0], b[0]) and torch.equal(a[2], b[2])


def test_npy_matches_torchvision(arrays, pixels):
    t = T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor(), T.Normalize(MEAN, STD)])
    ref = torch.stack([t(Image.fromarray(p)) for p in pixels])
    out, labels, _ = run(stoker.Npy(str(arrays / "x.npy"), str(arrays / "y.npy")),
                         VAL + [stoker.Normalize(MEAN, STD)], dtype="float32")
    assert (out - ref).abs().max().item() == 0
    assert labels.tolist() == [i % 3 for i in range(N)]


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", ">i4", "uint64", "bool",
                                   "float32", "float64"])
def test_npy_label_dtypes(tmp_path, arrays, dtype):
    want = np.array([0, 1] * (N // 2))
    np.save(tmp_path / "y.npy", want.astype(dtype))
    _, labels, _ = run(stoker.Npy(str(arrays / "x.npy"), str(tmp_path / "y.npy")), VAL)
    assert labels.dtype == torch.int64
    assert labels.tolist() == want.tolist()


def test_npy_grey_is_rgb(tmp_path, pixels):
    grey = pixels[..., 1:2].copy()
    np.save(tmp_path / "g.npy", grey)
    np.save(tmp_path / "g3.npy", np.repeat(grey, 3, axis=3))
    a, _, _ = run(stoker.Npy(str(tmp_path / "g.npy")), VAL)
    b, _, _ = run(stoker.Npy(str(tmp_path / "g3.npy")), VAL)
    assert torch.equal(a, b)


def test_npy_errors(tmp_path, arrays):
    np.save(tmp_path / "f.npy", np.zeros((2, 4, 4, 3), np.float32))
    with pytest.raises(ValueError, match="uint8"):
        stoker.Npy(str(tmp_path / "f.npy"))
    np.save(tmp_path / "y.npy", np.zeros(N + 1, np.int64))
    with pytest.raises(ValueError, match="labels for"):
        stoker.Npy(str(arrays / "x.npy"), str(tmp_path / "y.npy"))
    np.save(tmp_path / "h.npy", np.array([0.5] * N))
    with pytest.raises(ValueError, match="integral"):
        stoker.Npy(str(arrays / "x.npy"), str(tmp_path / "h.npy"))
    with pytest.raises(FileNotFoundError):
        stoker.Npy(str(tmp_path / "missing.npy"))
    np.save(tmp_path / "o.npy", np.zeros((2, 4, 4), np.object_), allow_pickle=True)
    with pytest.raises(ValueError):
        stoker.Npy(str(tmp_path / "o.npy"))
    np.save(tmp_path / "s.npy", np.asfortranarray(np.zeros((2, 4, 4, 3), np.uint8)))
    with pytest.raises(ValueError, match="Fortran"):  # like every header problem
        stoker.Npy(str(tmp_path / "s.npy"))
    (tmp_path / "t.npy").write_bytes((arrays / "x.npy").read_bytes()[:1000])
    with pytest.raises(ValueError, match="truncated"):
        stoker.Npy(str(tmp_path / "t.npy"))


def test_npy_source_outlives_loader_batches(arrays):
    # A batch holds no reference into the mapping (pixels are copied into the
    # batch), and the loader keeps the source alive while it runs.
    loader = stoker.Loader(stoker.Npy(str(arrays / "x.npy")), batch_size=5,
                           transforms=VAL, dtype="uint8")
    first = next(iter(loader))[0]
    del loader
    assert first.shape == (5, 3, 32, 32)
    assert int(first.sum()) > 0


h5py = pytest.importorskip("h5py")


@pytest.fixture(scope="module")
def h5file(arrays, pixels):
    path = arrays / "data.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=pixels, chunks=(1, H, W, 3), compression="gzip")
        enc = f.create_dataset("jpegs", (N,), dtype=h5py.vlen_dtype(np.uint8))
        for i in range(N):
            enc[i] = np.frombuffer(next((arrays / "folder").glob(f"*/{i:03d}.png")).read_bytes(),
                                   np.uint8)
        f.create_dataset("labels", data=(np.arange(N) % 3).astype(np.uint8))
        f.create_dataset("flabels", data=np.arange(N, dtype=np.float32))
        f.create_dataset("short", data=np.arange(N - 1))
    return path


@needs_hdf5
def test_hdf5_raw_and_encoded_match_npy(arrays, h5file):
    t = [stoker.RandomResizedCrop(24), stoker.RandomHorizontalFlip()]
    want = run(stoker.Npy(str(arrays / "x.npy"), str(arrays / "y.npy")), t, shuffle=True,
               threads=3)
    raw = stoker.HDF5(str(h5file))
    assert raw.raw and len(raw) == N
    enc = stoker.HDF5(str(h5file), images="jpegs", labels="flabels")
    assert not enc.raw
    for src in (raw, enc):
        got = run(src, t, shuffle=True, threads=3)
        assert torch.equal(got[0], want[0]) and torch.equal(got[2], want[2])
    assert torch.equal(run(raw, t, shuffle=True)[1], want[1])
    assert run(enc, VAL)[1].tolist() == list(range(N))
    assert run(stoker.HDF5(str(h5file), labels=None), VAL)[1].tolist() == [-1] * N


@pytest.mark.skipif(stoker._C.built_with_hdf5(), reason="stoker was built with HDF5")
def test_without_hdf5_the_error_names_the_file_and_the_reason(tmp_path):
    path = str(tmp_path / "x.h5")
    with pytest.raises(stoker.StokerError, match="x.h5: stoker was built without HDF5"):
        stoker.HDF5(path)


@needs_hdf5
def test_hdf5_errors(tmp_path, h5file):
    with pytest.raises(ValueError, match="no such dataset"):
        stoker.HDF5(str(h5file), images="nope")
    with pytest.raises(ValueError, match="labels for"):
        stoker.HDF5(str(h5file), labels="short")
    with pytest.raises(ValueError, match="images must be"):
        stoker.HDF5(str(h5file), images="labels")
    (tmp_path / "x.h5").write_bytes(b"not hdf5")
    with pytest.raises(ValueError, match="not an HDF5 file"):
        stoker.HDF5(str(tmp_path / "x.h5"))
    with pytest.raises(FileNotFoundError):
        stoker.HDF5(str(tmp_path / "missing.h5"))
