"""Worker threads, cancellation, file descriptors, the GIL and buffer lifetime.

Native threads are counted in /proc/self/task, open descriptors in
/proc/self/fd.
"""

from __future__ import annotations

import gc
import random
import sys
import threading
import time

import pytest
import torch

import stoker
from conftest import (MEAN, STD, SMALL_CLASSES, drop_loaders_of_earlier_tests, fd_count,
                      settle, thread_count, warm_torch_threads)

N = sum(SMALL_CLASSES.values())
TRAIN = [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(), stoker.Normalize(MEAN, STD)]


@pytest.fixture(scope="module", autouse=True)
def warm_torch():
    warm_torch_threads()


@pytest.fixture(autouse=True)
def quiesce():
    drop_loaders_of_earlier_tests()


@pytest.fixture
def folder(small_root):
    return stoker.ImageFolder(small_root)


def test_threads_start_on_first_iteration_and_end_on_delete(folder):
    base = thread_count()
    loader = stoker.Loader(folder, batch_size=8, transforms=TRAIN, threads=3)
    assert thread_count() == base  # lazily started
    for x, y in loader:
        assert thread_count() == base + 3
    # Between epochs the workers sleep but stay.
    assert thread_count() == base + 3
    for x, y in loader:
        pass
    assert thread_count() == base + 3
    del loader, x, y
    gc.collect()
    assert settle(base) == base


def test_close_stops_threads(folder):
    base = thread_count()
    loader = stoker.Loader(folder, batch_size=8, transforms=TRAIN, threads=2)
    next(iter(loader))
    assert thread_count() == base + 2
    loader.close()
    gc.collect()
    assert settle(base) == base
    del loader


def test_random_breaks_leave_no_threads_or_fds(folder):
    base_threads, base_fds = thread_count(), fd_count()
    rng = random.Random(1234)
    held = []
    for k in range(20):
        loader = stoker.Loader(folder, batch_size=rng.choice([2, 4, 8]), transforms=TRAIN,
                               threads=rng.choice([1, 2, 3, 4]), prefetch=rng.choice([1, 2, 4]),
                               shuffle=True, seed=k)
        stop_at = rng.randrange(0, len(loader))
        for b, (x, y) in enumerate(loader):
            if b == stop_at:
                break
        if k % 4 == 0:
            held.append(x)  # a batch kept across the loader's death
        t0 = time.monotonic()
        del loader, x, y
        gc.collect(0)  # young generation only: a full collection costs ~0.1 s with torch loaded
        assert time.monotonic() - t0 < 2.0, "deleting a loader mid-epoch is slow"
        assert settle(base_threads) == base_threads, f"threads left after loader {k}"
    assert fd_count() <= base_fds, (fd_count(), base_fds)
    for x in held:
        assert torch.isfinite(x).all()
    del held
    gc.collect()
    assert fd_count() <= base_fds


def test_break_then_fresh_epoch_yields_everything(folder):
    loader = stoker.Loader(folder, batch_size=4, transforms=TRAIN, threads=2, shuffle=True,
                           seed=3, return_indices=True)
    for b, (x, y, i) in enumerate(loader):
        if b == 1:
            break
    assert loader.epoch == 0
    ids, batches = [], 0
    for x, y, i in loader:
        ids += i.tolist()
        batches += 1
    assert batches == len(loader) == 10
    assert sorted(ids) == list(range(N))
    assert loader.epoch == 1
    # It really was epoch 1 (the same order as a fresh loader's epoch 1).
    ref = stoker.Loader(folder, batch_size=4, transforms=TRAIN, threads=1, shuffle=True,
                        seed=3, return_indices=True)
    ref.set_epoch(1)
    assert [j for _, _, i in ref for j in i.tolist()] == ids
    # Breaking from a manual iterator, then deleting it, also ends the epoch cleanly.
    it = iter(loader)
    next(it)
    del it
    assert sum(1 for _ in loader) == 10


def test_exception_in_training_loop(folder):
    base = thread_count()

    class Boom(Exception):
        pass

    loader = stoker.Loader(folder, batch_size=4, transforms=TRAIN, threads=3, prefetch=4)
    with pytest.raises(Boom):
        for b, (x, y) in enumerate(loader):
            if b == 2:
                raise Boom()
    # Usable after the exception: a full epoch.
    assert sum(len(y) for _, y in loader) == N
    del loader, x, y
    gc.collect()
    assert settle(base) == base


def test_gil_is_released_while_loading(parity_root):
    # Heavy enough to take a while: full-resolution decodes of up to 1200x900 images on
    # one worker, the whole dataset in one batch, so each next() blocks for ~0.2 s.
    folder = stoker.ImageFolder(parity_root)
    loader = stoker.Loader(folder, batch_size=len(folder), threads=1, prefetch=1,
                           transforms=[stoker.Resize(256), stoker.CenterCrop(224),
                                       stoker.Normalize(MEAN, STD)], dct_scaling=False)
    stamps = []
    count = [0]
    stop = threading.Event()

    def spin():
        n = 0
        while not stop.is_set():
            n += 1
            if n % 64 == 0:
                stamps.append(time.monotonic())
        count[0] = n

    # A Python thread can only run while nobody holds the GIL. Record when it runs and
    # when the main thread sits in next(): with the GIL released while the batch is being
    # made, the counter runs throughout those windows. Were it held, the counter could run
    # only near a window's ends: entering the call, and at its end converting the batch to
    # tensors in Python, where a pending GIL request gets through (measured with a
    # GIL-holding build: all counter activity in the last ~10-20% of each window). So only
    # the part from 10 ms after the start to 60% of each window counts.
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    t = threading.Thread(target=spin, daemon=True)
    t.start()
    try:
        windows = []
        for _ in range(8):  # enough waiting inside next() even on a fast machine
            it = iter(loader)
            while True:
                t0 = time.monotonic()
                batch = next(it, None)
                windows.append((t0, time.monotonic()))
                if batch is None:
                    break
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old_interval)
    margin = 0.010
    interior = [(a + margin, a + 0.6 * (b - a)) for a, b in windows if b - a > 5 * margin]
    assert sum(b - a for a, b in interior) > 0.08, f"next() did not block long enough: {windows}"
    inside = sum(1 for s in stamps if any(a < s < b for a, b in interior))
    assert count[0] > 0
    assert inside >= 20, (inside, len(stamps), interior)


def test_batch_outlives_loader(folder):
    base = thread_count()
    loader = stoker.Loader(folder, batch_size=8, transforms=TRAIN, threads=2, shuffle=True,
                           seed=8, return_indices=True)
    it = iter(loader)
    x, y, i = next(it)
    x2, _, _ = next(it)
    saved = (x.clone(), y.clone(), i.clone())
    del it, loader
    gc.collect()
    assert settle(base) == base
    # Churn memory: another loader allocating and filling same-sized buffers.
    other = stoker.Loader(folder, batch_size=8, transforms=TRAIN, threads=2, seed=99)
    for _ in range(2):
        for _ in other:
            pass
    del other
    gc.collect()
    assert torch.equal(x, saved[0]) and torch.equal(y, saved[1]) and torch.equal(i, saved[2])
    assert not torch.equal(x, x2)
    # Operations on the orphaned batch still work.
    assert torch.isfinite(x.float().mean())


def test_stats_from_another_thread(folder):
    loader = stoker.Loader(folder, batch_size=2, transforms=TRAIN, threads=2, prefetch=2)
    seen = []
    errors = []
    stop = threading.Event()

    def poll():
        try:
            while not stop.is_set():
                seen.append(loader.stats()["images"])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=poll)
    t.start()
    try:
        for _ in range(3):
            for _ in loader:
                pass
    finally:
        stop.set()
        t.join()
    assert not errors, errors
    assert seen == sorted(seen), "images counter went backwards"
    assert seen and seen[-1] <= 3 * N
    assert loader.stats()["images"] == 3 * N
