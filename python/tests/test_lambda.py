"""stoker.Lambda and plain Python callables as per-sample steps.

The callable runs in the worker threads under the GIL, on the uint8 [H, W, 3] output-size
image, in list order with the photometric transforms and before Normalize / the dtype
conversion. These tests compare against the same pipeline without the callable plus the
function applied per sample in numpy.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torchvision.transforms as T

import stoker
from conftest import MEAN, STD, collect, stoker_python_dir

SIZE = (40, 30)


def shift(img):
    """A deterministic, position-dependent function (catches a transposed or flipped view)."""
    out = np.roll(img, 3, axis=1) // 2
    out[:, :, 0] += np.arange(img.shape[1], dtype=np.uint8)[None, :]
    return out


def uint8_epoch(folder, transforms, **kw):
    kw.setdefault("batch_size", 8)
    loader = stoker.Loader(folder, transforms=transforms, dtype="uint8", layout="NHWC",
                           return_indices=True, **kw)
    return collect(loader)


def test_lambda_changes_pixels_exactly_as_the_numpy_function(small_root):
    folder = stoker.ImageFolder(small_root)
    base, labels, ids = uint8_epoch(folder, [stoker.Resize(SIZE)])
    got, labels2, ids2 = uint8_epoch(folder, [stoker.Resize(SIZE), stoker.Lambda(shift)])
    want = np.stack([shift(x) for x in base.numpy()])
    assert torch.equal(ids, ids2) and torch.equal(labels, labels2)
    assert np.array_equal(got.numpy(), want)
    assert not np.array_equal(want, base.numpy())


def test_lambda_runs_before_normalize_and_the_dtype_conversion(small_root):
    folder = stoker.ImageFolder(small_root)
    base = uint8_epoch(folder, [stoker.Resize(SIZE)])[0].numpy()
    loader = stoker.Loader(folder, batch_size=8, layout="NHWC",
                           transforms=[stoker.Resize(SIZE), stoker.Lambda(shift),
                                       stoker.Normalize(MEAN, STD)])
    got = collect(loader, indexed=False)[0].numpy()
    want = (np.stack([shift(x) for x in base]).astype(np.float32) / 255
            - np.float32(MEAN)) / np.float32(STD)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_lambda_keeps_its_place_among_the_photometric_ops(small_root):
    folder = stoker.ImageFolder(small_root)
    base = uint8_epoch(folder, [stoker.Resize(SIZE)])[0].numpy()
    invert = stoker.Lambda(lambda x: 255 - x)
    posterize = stoker.RandomPosterize(bits=2, p=1.0)
    a = uint8_epoch(folder, [stoker.Resize(SIZE), invert, posterize])[0].numpy()
    b = uint8_epoch(folder, [stoker.Resize(SIZE), posterize, invert])[0].numpy()
    assert np.array_equal(a, (255 - base) & 0xC0)
    assert np.array_equal(b, 255 - (base & 0xC0))


def test_a_plain_callable_is_a_lambda(small_root):
    folder = stoker.ImageFolder(small_root)
    ref = uint8_epoch(folder, [stoker.Resize(SIZE), stoker.Lambda(shift)])[0]
    plain = uint8_epoch(folder, [stoker.Resize(SIZE), shift])[0]
    composed = uint8_epoch(folder, T.Compose([stoker.Resize(SIZE), shift]))[0]

    class Callable:
        def __call__(self, img):
            return shift(img)

    obj = uint8_epoch(folder, stoker.Compose([stoker.Resize(SIZE), Callable()]))[0]
    tensor = uint8_epoch(folder, [stoker.Resize(SIZE),
                                  lambda x: torch.from_numpy(shift(x))])[0]
    assert torch.equal(ref, plain) and torch.equal(ref, composed) and torch.equal(ref, obj)
    assert torch.equal(ref, tensor)  # anything numpy.asarray takes is accepted
    assert repr(stoker.Lambda(shift)) == "Lambda(shift)"


def test_none_means_changed_in_place(small_root):
    folder = stoker.ImageFolder(small_root)
    base = uint8_epoch(folder, [stoker.Resize(SIZE)])[0].numpy()

    def zero_top_row(img):
        assert img.flags.writeable and img.dtype == np.uint8 and img.shape == (*SIZE, 3)
        img[0] = 0

    got = uint8_epoch(folder, [stoker.Resize(SIZE), zero_top_row])[0].numpy()
    want = base.copy()
    want[:, 0] = 0
    assert np.array_equal(got, want)


@pytest.mark.parametrize("fn,match", [
    (lambda x: x.astype(np.float32), r"dtype float32 and shape \(40, 30, 3\)"),
    (lambda x: x[:10], r"shape \(10, 30, 3\)"),
    (lambda x: x[..., 0], r"shape \(40, 30\)"),
    (lambda x: x.tolist(), r"returned list"),
])
def test_a_wrong_result_is_a_clear_error_naming_the_sample(small_root, fn, match):
    folder = stoker.ImageFolder(small_root)
    loader = stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize(SIZE), fn])
    with pytest.raises(stoker.StokerError, match=match) as e:
        collect(loader, indexed=False)
    msg = str(e.value)
    assert small_root in msg  # the sample's file
    assert "uint8 numpy array of shape (40, 30, 3)" in msg
    assert "Lambda(" in msg


def test_an_exception_names_the_sample_and_the_exception(small_root):
    folder = stoker.ImageFolder(small_root)

    def boom(img):
        raise ValueError("boom at the pixels")

    loader = stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize(SIZE), boom])
    with pytest.raises(stoker.StokerError) as e:
        collect(loader, indexed=False)
    msg = str(e.value)
    assert small_root in msg
    assert "Lambda(test_an_exception_names_the_sample_and_the_exception.<locals>.boom)" in msg
    assert "ValueError: boom at the pixels" in msg
    assert "test_lambda.py(" in msg and "): boom" in msg  # the traceback
    assert isinstance(e.value.__cause__, ValueError)  # the user's exception itself
    assert str(e.value.__cause__) == "boom at the pixels"
    # The loader is usable afterwards (next epoch raises again, it does not hang).
    with pytest.raises(stoker.StokerError):
        collect(loader, indexed=False)


def test_on_error_skip_counts_the_failed_samples(small_root):
    folder = stoker.ImageFolder(small_root)
    base = uint8_epoch(folder, [stoker.Resize(SIZE)])[0].numpy()

    def bad(img):
        return int(img.sum(dtype=np.int64)) % 4 == 0

    n_bad = sum(bad(x) for x in base)
    assert 0 < n_bad < len(base) // 2, "choose another predicate"

    def picky(img):
        if bad(img):
            raise RuntimeError("refused")
        return img

    loader = stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize(SIZE), picky],
                           dtype="uint8", layout="NHWC", on_error="skip")
    got = collect(loader, indexed=False)[0].numpy()
    # The refused samples are left out (not replaced): each good one once.
    assert len(got) == len(base) - n_bad
    assert not any(bad(x) for x in got)
    assert sorted(x.tobytes() for x in got) == sorted(x.tobytes() for x in base if not bad(x))
    assert loader.stats()["skipped"] == loader.stats()["skipped_files"] == n_bad


def deterministic_rng_noise(img, rng):
    return np.clip(img.astype(np.int16) + rng.integers(-20, 21, size=img.shape), 0,
                   255).astype(np.uint8)


def test_identical_output_for_one_and_three_threads(small_root):
    folder = stoker.ImageFolder(small_root)
    transforms = [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(), shift,
                  stoker.Lambda(deterministic_rng_noise, rng=True), stoker.ColorJitter(0.3),
                  stoker.Normalize(MEAN, STD)]
    runs = [collect(stoker.Loader(folder, batch_size=5, shuffle=True, seed=3, threads=t,
                                  transforms=transforms, return_indices=True))
            for t in (1, 3)]
    assert torch.equal(runs[0][2], runs[1][2])
    assert torch.equal(runs[0][0], runs[1][0])
    # The rng differs per sample and per epoch.
    loader = stoker.Loader(folder, batch_size=5, threads=2, dtype="uint8", layout="NHWC",
                           transforms=[stoker.Resize(SIZE),
                                       stoker.Lambda(deterministic_rng_noise, rng=True)])
    e0, e1 = collect(loader, indexed=False)[0], collect(loader, indexed=False)[0]
    assert not torch.equal(e0, e1)
    assert not torch.equal(e0[0], e0[1])


def test_stats_show_the_callback_seconds(small_root):
    folder = stoker.ImageFolder(small_root)

    def slow(img):
        import time
        time.sleep(0.002)

    loader = stoker.Loader(folder, batch_size=8, threads=2,
                           transforms=[stoker.Resize(SIZE), slow])
    collect(loader, indexed=False)
    s = loader.stats()
    assert s["callback_s"] >= 37 * 0.002
    assert s["callback_s"] <= s["augment_s"]
    assert s["epoch"]["callback_s"] > 0
    plain = stoker.Loader(folder, batch_size=8, transforms=[stoker.Resize(SIZE)])
    collect(plain, indexed=False)
    assert plain.stats()["callback_s"] == 0


def test_torchvision_lambda_and_non_callables_are_refused(small_root):
    folder = stoker.ImageFolder(small_root)
    with pytest.raises(TypeError, match=r"stoker\.Lambda\(fn\)"):
        stoker.Loader(folder, batch_size=4, transforms=[stoker.Resize(SIZE), T.Lambda(shift)])
    with pytest.raises(TypeError, match="not callable"):
        stoker.Lambda(3)


def run_script(body: str, timeout: float = 60):
    script = textwrap.dedent(f"""
        import sys, time, gc
        sys.path.insert(0, {stoker_python_dir()!r})
        import numpy as np
        import stoker
        folder = stoker.ImageFolder(sys.argv[1])
    """) + textwrap.dedent(body)
    return script


@pytest.mark.parametrize("ending", [
    "del it, loader\ngc.collect()",       # deleted mid-epoch
    "loader.close()",                      # closed mid-epoch
    "it2 = iter(loader)\nnext(it2)",       # a new epoch while workers sit in the callable
    "pass",                                # the interpreter exits with the epoch running
])
def test_a_loader_with_a_lambda_stops_cleanly_mid_epoch(small_root, ending):
    script = run_script(f"""
        def slow(img):
            time.sleep(0.01)
            return 255 - img
        loader = stoker.Loader(folder, batch_size=2, threads=3, prefetch=4,
                               transforms=[stoker.Resize(({SIZE[0]}, {SIZE[1]})), slow])
        it = iter(loader)
        next(it)
        {ending.replace(chr(10), chr(10) + ' ' * 8)}
        print("done", flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", script, small_root], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "done"


def test_the_native_loader_joins_its_workers_without_the_gil(small_root):
    # _C.Loader deleted mid-epoch with no iterator to stop it first: its destructor joins
    # workers that wait for the GIL inside the callable, so it must release the GIL.
    script = run_script(f"""
        from stoker._transforms import _transform_list
        def slow(img):
            time.sleep(0.01)
        transforms = _transform_list([stoker.Resize(({SIZE[0]}, {SIZE[1]})), slow])
        impl = stoker._C.Loader(folder, stoker._C.LoaderOptions(
            batch_size=2, transforms=transforms, threads=3, prefetch=4, dct_scaling=False))
        impl.start()
        impl.next()
        del impl
        gc.collect()
        print("done", flush=True)
    """)
    r = subprocess.run([sys.executable, "-c", script, small_root], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "done"
