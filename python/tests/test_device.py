"""The GPU stage from Python: device="cuda" fails clearly without a GPU, the CPU path is
unaffected, and the device maths (run on the host through _C._device_reference, the
same code the kernel runs) turns the host's uint8 batches into exactly the CPU path's
normalised tensors. The feeding policy (C++ DeviceLoader: launch-ahead, hand-off,
synchronisation) runs here through its host fallback (``_device._HOST_FALLBACK``: the
kernel's maths on a host thread, CPU tensors from the same torch allocator callback).
Tests that need a GPU skip with the reason."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stoker
from stoker import _C
from conftest import MEAN, STD, collect

B = 8
VAL = [stoker.Resize(40), stoker.CenterCrop(32)]


def _no_gpu_reason():
    try:
        _C.check_cuda_device(0)
    except stoker.StokerError as e:
        return str(e)
    if not torch.cuda.is_available():
        return "torch has no CUDA (torch.cuda.is_available() is False)"
    return None


NO_GPU = _no_gpu_reason()
needs_gpu = pytest.mark.skipif(NO_GPU is not None, reason=f"no CUDA device: {NO_GPU}")


@pytest.fixture(scope="module")
def folder(small_root):
    return stoker.ImageFolder(small_root)


@pytest.mark.skipif(NO_GPU is None, reason="a CUDA device is present")
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_without_gpu_is_a_clear_error(folder, device):
    with pytest.raises(stoker.StokerError, match=r"device='cuda:0' requested but") as e:
        stoker.Loader(folder, batch_size=B, transforms=VAL, device=device)
    msg = str(e.value)
    assert ("cudaGetDeviceCount" in msg) if _C.built_with_cuda() else ("built without CUDA" in msg)


def test_device_argument_errors(folder):
    with pytest.raises(ValueError, match="'cpu', 'cuda' or 'cuda:N'"):
        stoker.Loader(folder, batch_size=B, transforms=VAL, device="gpu")
    with pytest.raises(ValueError, match="device_augment needs device='cuda'"):
        stoker.Loader(folder, batch_size=B, transforms=VAL,
                      device_augment=stoker.DeviceAugment(flip_p=0.5))


def test_cpu_unaffected(folder):
    a = collect(stoker.Loader(folder, batch_size=B, transforms=VAL + [stoker.Normalize(MEAN, STD)],
                              return_indices=True))
    b = collect(stoker.Loader(folder, batch_size=B, transforms=VAL + [stoker.Normalize(MEAN, STD)],
                              return_indices=True, device="cpu"))
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    assert a[0].dtype == torch.float32 and a[0].device.type == "cpu"


def _host_uint8(folder, **kw):
    """What the host stage ships to the GPU: uint8 NHWC batches."""
    return collect(stoker.Loader(folder, batch_size=B, transforms=VAL, dtype="uint8",
                                 layout="NHWC", return_indices=True, **kw))


def _reference(images, ids, epoch, dtype, layout, normalize=True, augment=None, seed=0):
    aug = (augment or stoker.DeviceAugment()).as_dict()
    return _C._device_reference(images.numpy(), ids.numpy(), epoch, dtype, layout, normalize,
                                list(MEAN), list(STD), aug, seed)


@pytest.mark.parametrize("dtype,layout", [("float32", "NCHW"), ("float16", "NCHW"),
                                          ("bfloat16", "NHWC")])
def test_device_maths_equals_cpu_path(folder, dtype, layout):
    """uint8 over the bus + the device conversion == the CPU path's Normalize/dtype/layout."""
    cpu = collect(stoker.Loader(folder, batch_size=B, transforms=VAL + [stoker.Normalize(MEAN, STD)],
                                dtype=dtype, layout=layout, return_indices=True))
    images, _, ids = _host_uint8(folder)
    ref = _reference(images, ids, 0, dtype, layout)
    want = cpu[0]
    if dtype == "bfloat16":
        want = want.view(torch.int16).numpy().view(np.uint16)
    elif dtype == "float16":
        want = want.numpy().view(np.uint16)
    else:
        want = want.numpy()
    assert ref.shape == want.shape
    assert np.array_equal(ref, want)


def test_device_augment_is_seeded_per_sample(folder):
    """Same (seed, epoch, id) -> same augmented pixels, whatever the batch it lands in."""
    images, _, ids = _host_uint8(folder)
    aug = stoker.DeviceAugment(flip_p=0.5, crop=(28, 28), pad=2, brightness=0.3, contrast=0.3,
                               saturation=0.3, degrees=10, translate=0.1, scale=(0.9, 1.1))
    whole = _reference(images, ids, 3, "float32", "NCHW", augment=aug, seed=5)
    assert whole.shape == (len(ids), 3, 28, 28)
    half = _reference(images[5:], ids[5:], 3, "float32", "NCHW", augment=aug, seed=5)
    assert np.array_equal(whole[5:], half)
    other_epoch = _reference(images, ids, 4, "float32", "NCHW", augment=aug, seed=5)
    assert not np.array_equal(whole, other_epoch)
    plain = _reference(images, ids, 3, "float32", "NCHW", augment=stoker.DeviceAugment(crop=(28, 28)),
                       seed=5)
    assert not np.array_equal(whole, plain)


def _loader_matches_host_maths(folder, dtype, device_type):
    aug = stoker.DeviceAugment(flip_p=0.5, crop=(28, 30), pad=2, brightness=0.3, contrast=0.3,
                               saturation=0.3, degrees=10, translate=0.1, scale=(0.9, 1.1))
    loader = stoker.Loader(folder, batch_size=B, transforms=VAL + [stoker.Normalize(MEAN, STD)],
                           dtype=dtype, device="cuda:0", device_augment=aug, seed=3,
                           return_indices=True, prefetch=3)
    loader.set_epoch(2)
    got = collect(loader)
    assert got[0].device.type == device_type and got[1].device.type == device_type
    images, labels, ids = _host_uint8(folder, seed=3)
    assert torch.equal(got[1].cpu(), labels)
    assert torch.equal(got[2], ids)
    ref = _reference(images, ids, 2, dtype, "NCHW", augment=aug, seed=3)
    out = got[0].cpu()
    out = out.numpy() if dtype == "float32" else out.view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(out, ref)
    # The ring's 3, the next epoch's prefetched 3, and two held (pool's idle bound 2 * 3 + 2).
    assert loader.stats()["batch_buffers"] <= 2 * 3 + 2


def _early_break_and_next_epoch(folder):
    loader = stoker.Loader(folder, batch_size=B, transforms=VAL + [stoker.Normalize(MEAN, STD)],
                           device="cuda")
    for i, (x, y) in enumerate(loader):
        assert x.shape == (B, 3, 32, 32)
        if i == 1:
            break
    n = sum(x.shape[0] for x, _ in loader)
    assert n == len(loader.source)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gpu_loader_matches_host_maths(folder, dtype):
    _loader_matches_host_maths(folder, dtype, "cuda")


@needs_gpu
def test_gpu_early_break_and_next_epoch(folder):
    _early_break_and_next_epoch(folder)


@pytest.fixture
def host_fallback(monkeypatch):
    """device="cuda..." loaders run the C++ DeviceLoader's host fallback (CPU tensors)."""
    monkeypatch.setattr(stoker._device, "_HOST_FALLBACK", True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fallback_loader_matches_host_maths(folder, host_fallback, dtype):
    """Augmented batches through DeviceLoader (launch-ahead, allocator callback, views)."""
    _loader_matches_host_maths(folder, dtype, "cpu")


def test_fallback_early_break_and_next_epoch(folder, host_fallback):
    _early_break_and_next_epoch(folder)


def _bits(x):
    return x.view(torch.int16) if x.dtype in (torch.float16, torch.bfloat16) else x


@pytest.mark.parametrize("dtype,layout", [("float32", "NCHW"), ("float16", "NCHW"),
                                          ("bfloat16", "NHWC")])
def test_fallback_equals_cpu_normalize_in_order(folder, host_fallback, dtype, layout):
    """The DeviceLoader's batches equal the CPU path's (Normalize on the host), batch by
    batch and bit for bit, over two shuffled epochs, the second cut short and resumed."""
    kw = dict(batch_size=B, transforms=VAL + [stoker.Normalize(MEAN, STD)], dtype=dtype,
              layout=layout, shuffle=True, seed=4, return_indices=True)
    dev, cpu = stoker.Loader(folder, device="cuda:0", **kw), stoker.Loader(folder, **kw)
    n = 0
    for (x, y, i), (a, b, c) in zip(dev, cpu, strict=True):
        assert x.dtype == a.dtype and x.shape == a.shape
        assert torch.equal(_bits(x), _bits(a)) and torch.equal(y, b) and torch.equal(i, c)
        n += 1
    assert n == len(dev) > 2
    # Checkpoint after two batches: the batch launched ahead does not count as consumed.
    it_dev, it_cpu = iter(dev), iter(cpu)
    for _ in range(2):
        next(it_dev), next(it_cpu)
    state = dev.state_dict()
    assert state == cpu.state_dict()
    del it_dev, it_cpu
    dev.load_state_dict(state)
    cpu.load_state_dict(state)
    rest = [(x, i) for x, _, i in dev]
    want = [(a, c) for a, _, c in cpu]
    assert len(rest) == len(want) == len(dev) - 2
    for (x, i), (a, c) in zip(rest, want):
        assert torch.equal(_bits(x), _bits(a)) and torch.equal(i, c)


def test_device_uint8_is_refused(folder):
    """The dtype check is the C++ DeviceLoader's: a ValueError with or without a GPU."""
    with pytest.raises(ValueError, match="dtype must be float32, float16 or bfloat16"):
        stoker.Loader(folder, batch_size=B, transforms=VAL, dtype="uint8", device="cuda")


def test_fallback_allocator_error_after_earlier_batches(folder, host_fallback, monkeypatch):
    """The allocator callback failing for batch 1 (launched ahead while batch 0 is handed
    over): batch 0 is delivered, then StokerError with the callback's exception as cause."""
    calls = []

    def failing(device):
        def allocate(nbytes, stream):
            calls.append(nbytes)
            if len(calls) == 3:  # batch 1's images
                raise MemoryError("no room for the batch")
            return torch.empty(nbytes, dtype=torch.uint8, device=device)
        return allocate

    monkeypatch.setattr(stoker._device, "_allocator", failing)
    loader = stoker.Loader(folder, batch_size=B, transforms=VAL + [stoker.Normalize(MEAN, STD)],
                           device="cuda")
    it = iter(loader)
    x, _ = next(it)
    assert x.shape == (B, 3, 32, 32)
    assert calls == [B * 3 * 32 * 32 * 4, B * 8, B * 3 * 32 * 32 * 4]
    with pytest.raises(stoker.StokerError, match="the device allocator raised MemoryError") as e:
        next(it)
    assert isinstance(e.value.__cause__, MemoryError)
    with pytest.raises(StopIteration):
        next(it)
    assert len(calls) == 3


@pytest.mark.skipif(NO_GPU is None, reason="a CUDA device is present")
def test_gpu_bench_fails_clearly_without_gpu():
    import os
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "gpu_bench.py")
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "gpu_bench: no CUDA device:" in r.stderr
    assert r.stdout == ""


def _run_bench(root, *args):
    import json
    import os
    import subprocess
    from pathlib import Path
    cli = os.environ.get("STOKER_CLI") or str(Path(__file__).resolve().parents[2] / "build" / "stoker")
    if not os.access(cli, os.X_OK):
        pytest.skip("the stoker CLI is not built (set STOKER_CLI)")
    r = subprocess.run([cli, "bench", str(root), "--batch-size", "4", "--epochs", "1",
                        "--threads", "1", "--pipeline", "val", "--json", *args],
                       capture_output=True, text=True, timeout=120)
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


@pytest.mark.skipif(NO_GPU is None, reason="a CUDA device is present")
def test_cli_bench_cuda_without_gpu_is_a_clear_error(small_root):
    r, out = _run_bench(small_root, "--device", "cuda:0")
    assert r.returncode == 1
    assert "device='cuda:0' requested but" in out["error"], out
    assert out["code"] == "Unimplemented"
    r, out = _run_bench(small_root, "--device", "gpu")
    assert r.returncode == 1 and "--device must be cpu, cuda, cuda:N or host" in out["error"]


def test_cli_bench_through_the_device_loader_host_fallback(small_root):
    """`stoker bench --device host`: the CLI feeds batches through DeviceLoader (its host
    fallback here); every image of the epoch arrives."""
    r, out = _run_bench(small_root, "--device", "host")
    assert r.returncode == 0, r.stderr
    assert out["device"] == "host"
    assert out["images"] == len(stoker.ImageFolder(small_root))
    assert out["images_per_sec"] > 0
    r, out = _run_bench(small_root, "--device", "host", "--dtype", "uint8")
    assert r.returncode == 1 and "dtype must be float32, float16 or bfloat16" in out["error"]
