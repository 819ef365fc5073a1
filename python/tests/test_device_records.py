"""Records through the GPU stage: ``Loader(record source, device="cuda")``
yields a dict whose image is the device stage's output, whose fixed-shape fields (stacked,
and padded under collate="pad") are tensors on the device with the host batch's bytes, and
whose lists (variable arrays, text) and padded lengths stay host values, as on the CPU path.
Here the C++ DeviceLoader runs its host fallback (``_device._HOST_FALLBACK``); the same
comparison on a GPU skips, with the reason, without one. Targets: a stacked mask
is such a fixed field (on the device), boxes and per-box rows lists (on the host)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stoker
from conftest import MEAN, STD, photo
from test_device import NO_GPU, needs_gpu

N = 23
B = 5


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("device_records")
    rng = np.random.default_rng(11)
    arrays = {
        "image": np.stack([photo(20, 16, 700 + i) for i in range(N)]),
        "label": np.arange(N, dtype=np.int32),
        "features": rng.standard_normal((N, 6)).astype(np.float32),
        "mask": rng.integers(0, 2, (N, 2, 3)).astype(bool),
        "half": rng.standard_normal((N, 4)).astype(np.float16),
        "wide": rng.integers(0, 60000, (N, 5)).astype(np.uint16),
    }
    out = {}
    for name, a in arrays.items():
        np.save(d / f"{name}.npy", a)
        out[name] = str(d / f"{name}.npy")
    return out


def _tokenise(d):
    """A variable int64 array and a text, both from the sample's own features."""
    f = d["features"]
    n = int(abs(float(f[0])) * 3) % 4 + 1
    return {"tokens": (f[:n] * 1000).astype(np.int64), "note": f"{float(f[0]):.4f}"}


def _kw(collate, threads, **extra):
    return dict(batch_size=B, threads=threads, shuffle=True, seed=3, collate=collate,
                transforms=[stoker.CenterCrop(16), stoker.Normalize(MEAN, STD),
                            stoker.Lambda(_tokenise, fields=["features"],
                                          adds={"tokens": "int64", "note": "text"})],
                return_indices=True, **extra)


def _bytes(v):
    if isinstance(v, torch.Tensor):
        return v.detach().cpu().contiguous().numpy().tobytes()
    return np.ascontiguousarray(v).tobytes()


def _expect_same(dev, cpu, device_type, on_host=("tokens", "note")):
    """Lists (variable fields: `on_host`) and a padded field's `_lengths` stay on the host
    (README, Records); every other tensor, padded fields included, is on `device_type`."""
    (d, di), (c, ci) = dev, cpu
    assert torch.equal(di.cpu(), ci)
    assert list(d) == list(c)  # the same fields, in the same order
    for name, want in c.items():
        got = d[name]
        if isinstance(want, list):
            assert isinstance(got, list) and name in on_host
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert (g == w) if isinstance(w, str) else _bytes(g) == _bytes(w), name
            continue
        assert isinstance(got, torch.Tensor), name
        assert got.device.type == ("cpu" if name.endswith("_lengths") else device_type), name
        if isinstance(want, torch.Tensor):
            assert got.dtype == want.dtype and got.shape == want.shape, name
        assert _bytes(got) == _bytes(want), name


def _compare(paths, collate, threads, device_type):
    src = stoker.Npy(paths)
    dev = stoker.Loader(src, device="cuda:0", **_kw(collate, threads))
    cpu = stoker.Loader(src, **_kw(collate, 1))
    for epoch in (0, 1):
        dev.set_epoch(epoch)
        cpu.set_epoch(epoch)
        n = 0
        for a, b in zip(dev, cpu, strict=True):
            _expect_same(a, b, device_type)
            n += 1
        assert n == len(cpu) == 5
    return dev


@pytest.fixture
def host_fallback(monkeypatch):
    monkeypatch.setattr(stoker._device, "_HOST_FALLBACK", True)


@pytest.mark.parametrize("collate", ["batch", "pad"])
@pytest.mark.parametrize("threads", [1, 3])
def test_fallback_record_fields_equal_the_cpu_batch(paths, host_fallback, collate, threads):
    dev = _compare(paths, collate, threads, "cpu")
    b, _ = next(iter(dev))
    # torch 1.13 has no uint16: the device bytes stay raw, [..., 2] uint8
    if getattr(torch, "uint16", None) is None:
        assert b["wide"].dtype == torch.uint8 and b["wide"].shape == (B, 5, 2)
    assert b["features"].dtype == torch.float32 and b["features"].shape == (B, 6)
    assert b["mask"].dtype == torch.bool
    if collate == "pad":
        assert isinstance(b["tokens"], torch.Tensor) and b["tokens"].shape[0] == B


@needs_gpu
@pytest.mark.parametrize("collate", ["batch", "pad"])
@pytest.mark.parametrize("threads", [1, 3])
def test_gpu_record_fields_equal_the_cpu_batch(paths, collate, threads):
    _compare(paths, collate, threads, "cuda")


def _arrays_only(paths, device_type):
    """A record of arrays (no image): every field on the device, equal to the CPU batch."""
    names = ("features", "label", "mask", "half", "wide")
    src = stoker.Npy({k: paths[k] for k in names})
    kw = dict(batch_size=B, shuffle=True, seed=2, return_indices=True)
    dev = stoker.Loader(src, device="cuda:0", threads=3, **kw)
    n = 0
    for a, b in zip(dev, stoker.Loader(src, threads=1, **kw), strict=True):
        assert sorted(a[0]) == sorted(names)
        for v in a[0].values():
            assert v.device.type == device_type
        _expect_same(a, b, device_type)
        n += 1
    assert n == 5
    with pytest.raises(ValueError, match="the record has no primary image"):
        stoker.Loader(src, batch_size=B, device="cuda:0",
                      device_augment=stoker.DeviceAugment(flip_p=0.5))


def test_fallback_record_without_an_image(paths, host_fallback):
    _arrays_only(paths, "cpu")


@needs_gpu
def test_gpu_record_without_an_image(paths):
    _arrays_only(paths, "cuda")


@pytest.mark.skipif(NO_GPU is None, reason="a CUDA device is present")
def test_record_on_cuda_without_gpu_is_a_clear_error(paths):
    with pytest.raises(stoker.StokerError, match=r"device='cuda:0' requested but"):
        stoker.Loader(stoker.Npy(paths), batch_size=B, transforms=[stoker.CenterCrop(16)],
                      device="cuda:0")


# ---- targets: a stacked mask goes to the device like any fixed field --------

@pytest.fixture(scope="module")
def target_paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("device_targets")
    rng = np.random.default_rng(26)
    h, w = 24, 32
    masks = rng.integers(0, 21, (N, h, w)).astype(np.uint8)
    x1, y1 = rng.uniform(0, w - 8, (N, 3)), rng.uniform(0, h - 8, (N, 3))
    boxes = np.stack([x1, y1, x1 + rng.uniform(2, 12, (N, 3)), y1 + rng.uniform(2, 10, (N, 3))],
                     axis=2).astype(np.float32)
    arrays = {"image": np.stack([photo(w, h, 900 + i) for i in range(N)]), "mask": masks,
              "boxes": boxes, "labels": np.arange(N * 3, dtype=np.int64).reshape(N, 3),
              "masks": (masks[:, None] == np.arange(3, dtype=np.uint8)[None, :, None, None])
              .astype(np.uint8)}
    out = {}
    for name, a in arrays.items():
        np.save(d / f"{name}.npy", a)
        out[name] = str(d / f"{name}.npy")
    return out


TARGETS = {"mask": "mask", "boxes": "boxes", "labels": "per_box", "masks": "per_box"}


def _targets_compare(paths, threads, device_type):
    """The mask stacked [B, 16, 16] uint8 arrives on the device with the CPU batch's bytes;
    boxes, their labels and the instance masks (per-sample lists) stay on the host, equal
    too; two shuffled epochs, the device loader at `threads` against a 1-thread CPU one."""
    def kw(t):
        return dict(batch_size=B, threads=t, shuffle=True, seed=6, targets=TARGETS,
                    transforms=[stoker.RandomResizedCrop(16, scale=(0.3, 1.0)),
                                stoker.RandomHorizontalFlip(), stoker.RandomRotation(10),
                                stoker.Normalize(MEAN, STD)],
                    return_indices=True)
    src = stoker.Npy(paths)
    dev = stoker.Loader(src, device="cuda:0", **kw(threads))
    cpu = stoker.Loader(src, **kw(1))
    masks = 0
    for epoch in (0, 1):
        dev.set_epoch(epoch)
        cpu.set_epoch(epoch)
        n = 0
        for a, b in zip(dev, cpu, strict=True):
            _expect_same(a, b, device_type, on_host=("boxes", "labels", "masks"))
            m = a[0]["mask"]
            assert m.device.type == device_type and m.dtype == torch.uint8
            assert tuple(m.shape) == (len(a[1]), 16, 16)
            masks += int(m.numel())
            n += 1
        assert n == len(cpu) == 5
    assert masks > 0


def test_fallback_target_mask_equals_the_cpu_batch(target_paths, host_fallback):
    for threads in (1, 3):
        _targets_compare(target_paths, threads, "cpu")


@needs_gpu
@pytest.mark.parametrize("threads", [1, 3])
def test_gpu_target_mask_equals_the_cpu_batch(target_paths, threads):
    _targets_compare(target_paths, threads, "cuda")
