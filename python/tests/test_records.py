"""Records: samples of named fields, from stoker.Npy({name: path, ...}).

Arrays of any dtype and shape are delivered bit for bit as numpy reads them,
every field of a record from one sample (under shuffle, threads, ranks and
skip); an image field keeps the engine's image path (its pixels equal those of
the (images, labels) Npy source on the same array).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stoker
from conftest import photo

N = 37


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("records")
    rng = np.random.default_rng(5)
    arrays = {
        "features": rng.standard_normal((N, 6)).astype(np.float32),
        "targets": np.arange(N, dtype=np.int64) * 7 - 3,
        "mask": rng.integers(0, 2, (N, 2, 3)).astype(bool),
        "half": rng.standard_normal((N, 4)).astype(np.float16),
        "wide": rng.integers(0, 60000, (N, 5)).astype(np.uint16),
        "tiny": rng.integers(-128, 127, (N,)).astype(np.int8),
        "double": rng.standard_normal((N, 2, 2)),
    }
    paths = {}
    for name, a in arrays.items():
        np.save(d / f"{name}.npy", a)
        paths[name] = str(d / f"{name}.npy")
    images = np.stack([photo(20, 16, 900 + i) for i in range(N)])
    np.save(d / "image.npy", images)
    np.save(d / "label.npy", np.arange(N, dtype=np.int32))
    return d, arrays, paths, images


def _collect(loader):
    out = {}
    for batch in loader:
        for k, v in batch.items():
            v = v.numpy() if isinstance(v, torch.Tensor) else np.asarray(v)
            out.setdefault(k, []).append(v)
    return {k: np.concatenate(v) for k, v in out.items()}


def test_arrays_come_back_bit_for_bit(data):
    _, arrays, paths, _ = data
    src = stoker.Npy(paths)
    assert src.records
    assert list(src.fields) == list(arrays)
    assert "features: array float32 [6]" == src.fields["features"]
    got = _collect(stoker.Loader(src, batch_size=5, threads=3))
    assert set(got) == set(arrays)
    for name, a in arrays.items():
        assert got[name].dtype == a.dtype, name
        assert got[name].shape == a.shape, name
        assert got[name].tobytes() == a.tobytes(), name


def test_batches_are_tensors_and_uint16_stays_numpy(data):
    _, _, paths, _ = data
    batch = next(iter(stoker.Loader(stoker.Npy(paths), batch_size=4)))
    assert isinstance(batch["features"], torch.Tensor)
    assert batch["features"].dtype == torch.float32 and tuple(batch["features"].shape) == (4, 6)
    assert batch["targets"].dtype == torch.int64 and tuple(batch["targets"].shape) == (4,)
    assert batch["mask"].dtype == torch.bool
    assert isinstance(batch["wide"], np.ndarray)  # torch 1.13 has no uint16


def test_fields_stay_together_shuffled_threads_and_ranks(data):
    _, arrays, paths, _ = data
    src = stoker.Npy({"targets": paths["targets"], "features": paths["features"]})
    order = None
    for threads in (1, 4):
        loader = stoker.Loader(src, batch_size=4, shuffle=True, seed=11, threads=threads,
                               return_indices=True)
        seen = []
        for batch, ids in loader:
            ids = ids.numpy()
            np.testing.assert_array_equal(batch["targets"].numpy(), arrays["targets"][ids])
            assert batch["features"].numpy().tobytes() == arrays["features"][ids].tobytes()
            seen.extend(ids.tolist())
        assert sorted(seen) == list(range(N))
        order = order or seen
        assert seen == order
    ranks = []
    for rank in range(2):
        for batch, ids in stoker.Loader(src, batch_size=4, shuffle=True, seed=11, rank=rank,
                                        world_size=2, return_indices=True):
            np.testing.assert_array_equal(batch["targets"].numpy(),
                                          arrays["targets"][ids.numpy()])
            ranks.extend(ids.numpy().tolist())
    assert set(ranks) == set(range(N))


def test_resume_mid_epoch(data):
    _, arrays, paths, _ = data
    src = stoker.Npy({"features": paths["features"]})
    full = [b["features"].numpy().copy()
            for b in stoker.Loader(src, batch_size=4, shuffle=True, seed=2)]
    loader = stoker.Loader(src, batch_size=4, shuffle=True, seed=2)
    it = iter(loader)
    next(it), next(it), next(it)
    state = loader.state_dict()
    del it
    again = stoker.Loader(src, batch_size=4, shuffle=True, seed=2)
    again.load_state_dict(state)
    rest = [b["features"].numpy() for b in again]
    assert len(rest) == len(full) - 3
    for a, b in zip(rest, full[3:]):
        assert a.tobytes() == b.tobytes()


def test_image_and_label_fields_keep_the_image_path(data):
    d, arrays, paths, images = data
    np.save(d / "plain_labels.npy", np.arange(N, dtype=np.int32))
    transforms = [stoker.Resize(12), stoker.CenterCrop(10)]
    tuple_loader = stoker.Loader(stoker.Npy(str(d / "image.npy"), str(d / "plain_labels.npy")),
                                 batch_size=6, transforms=transforms, dtype="uint8")
    expected = torch.cat([x for x, _ in tuple_loader]).numpy()
    src = stoker.Npy({"image": str(d / "image.npy"), "label": str(d / "label.npy"),
                      "features": paths["features"]})
    assert src.fields["image"].startswith("image: image RGB")
    assert src.fields["label"] == "label: label"
    got = _collect(stoker.Loader(src, batch_size=6, transforms=transforms, dtype="uint8"))
    assert got["image"].tobytes() == expected.tobytes()
    np.testing.assert_array_equal(got["label"], np.arange(N))
    assert got["features"].tobytes() == arrays["features"].tobytes()


def test_errors_name_the_field(data, tmp_path):
    _, arrays, paths, _ = data
    np.save(tmp_path / "short.npy", np.zeros((N - 1, 2), np.float32))
    with pytest.raises(ValueError, match=r"field 'short'.*36 rows.*field 'features'"):
        stoker.Npy({"features": paths["features"], "short": str(tmp_path / "short.npy")})
    np.save(tmp_path / "big.npy", np.zeros((N, 2), ">f4"))
    with pytest.raises(ValueError, match=r"field 'big'.*big-endian"):
        stoker.Npy({"big": str(tmp_path / "big.npy")})
    np.save(tmp_path / "fortran.npy", np.asfortranarray(np.zeros((N, 2, 3), np.float32)))
    with pytest.raises(ValueError, match=r"field 'f'.*Fortran"):
        stoker.Npy({"f": str(tmp_path / "fortran.npy")})
    src = stoker.Npy({"features": paths["features"]})
    with pytest.raises(ValueError, match="no RGB image field"):
        stoker.Loader(src, batch_size=4, transforms=[stoker.Resize(8)])
    with pytest.raises(ValueError, match="target_transform"):
        stoker.Loader(src, batch_size=4, target_transform=lambda y: y)


def test_tuple_sources_unchanged(data):
    d, _, _, images = data
    src = stoker.Npy(str(d / "image.npy"), str(d / "label.npy"))
    assert not src.records
    assert list(src.fields) == ["image", "label"]
    x, y = next(iter(stoker.Loader(src, batch_size=4, dtype="uint8",
                                   transforms=[stoker.CenterCrop((16, 20))])))
    assert tuple(x.shape) == (4, 3, 16, 20)
    np.testing.assert_array_equal(y.numpy(), np.arange(4))
