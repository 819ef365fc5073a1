"""Soak and lifecycle-under-stress tests: memory stays flat over many epochs, repeated
early breaks leak nothing, and SIGINT during iteration ends the process promptly.

Native threads are counted in /proc/self/task, open descriptors in /proc/self/fd,
resident memory in /proc/self/statm. Every test makes its own small images with
Pillow into tmp_path.
"""

from __future__ import annotations

import gc
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import stoker
from conftest import (MEAN, STD, drop_loaders_of_earlier_tests, fd_count, photo, save_jpeg,
                      save_png, settle, stoker_python_dir, thread_count, warm_torch_threads)

TRAIN = [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip(), stoker.Normalize(MEAN, STD)]
PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


@pytest.fixture(scope="module", autouse=True)
def warm_torch():
    warm_torch_threads()


@pytest.fixture(autouse=True)
def quiesce():
    drop_loaders_of_earlier_tests()


def make_folder(root, count, w, h, *, png_every=0, seed=0):
    """An ImageFolder tree of `count` photo-like images in two classes."""
    for cls in ("a", "b"):
        (root / cls).mkdir(parents=True, exist_ok=True)
    for k in range(count):
        d = root / ("a", "b")[k % 2]
        arr = photo(w, h, seed + k)
        if png_every and k % png_every == 0:
            save_png(arr, d / f"{k:03d}.png")
        else:
            save_jpeg(arr, d / f"{k:03d}.jpg", subsampling=(0, 2)[k % 2])
    return str(root)


# ----------------------------------------------------------------- soak ----

# RSS tolerance. The loader's own memory is fixed after the first epoch (batch buffers
# come from a pool, per-thread scratch only grows), so growth over 48 more epochs means
# a leak. The relative bound alone is too tight for a process this small (RSS of the
# pytest + torch process is a few hundred MiB, 5% is ~15 MiB, but on a lean process it
# could be < 1 MiB): glibc malloc keeps freed chunks in per-thread arenas and trims
# them lazily, and CPython's obmalloc arenas come and go with the test's own Python
# objects, so a couple of MiB of drift either way is allocator noise, not a leak.
RSS_REL = 0.05
RSS_SLACK = 2 * MiB


def test_soak_50_epochs_memory_threads_fds_flat(tmp_path):
    root = make_folder(tmp_path / "soak", 24, 64, 48, png_every=6, seed=100)
    folder = stoker.ImageFolder(root)
    gc.collect()
    base_threads, base_fds = thread_count(), fd_count()
    loader = stoker.Loader(folder, batch_size=8, transforms=TRAIN, threads=2, shuffle=True,
                           seed=7)
    rss = []
    for epoch in range(50):
        n = 0
        for x, y in loader:
            n += len(y)
            assert x.shape[1:] == (3, 32, 32)
        assert n == 24
        del x, y
        rss.append(rss_bytes())
    assert loader.epoch == 49
    assert loader.stats()["images"] == 50 * 24
    assert loader.stats()["skipped"] == 0
    ref, last = rss[1], rss[49]  # after epoch 2 and after epoch 50
    allowed = RSS_REL * ref + RSS_SLACK
    assert abs(last - ref) <= allowed, (
        f"RSS after epoch 50 is {last / MiB:.1f} MiB, after epoch 2 {ref / MiB:.1f} MiB "
        f"(allowed +-{allowed / MiB:.1f} MiB); per epoch: "
        f"{[round(r / MiB, 1) for r in rss]}")
    assert thread_count() == base_threads + 2
    del loader
    gc.collect()
    assert settle(base_threads) == base_threads
    assert fd_count() == base_fds


def test_100_random_early_breaks_then_full_epoch(tmp_path):
    root = make_folder(tmp_path / "breaks", 24, 64, 48, png_every=5, seed=200)
    folder = stoker.ImageFolder(root)
    gc.collect()
    base_threads, base_fds = thread_count(), fd_count()
    loader = stoker.Loader(folder, batch_size=4, transforms=TRAIN, threads=2, prefetch=3,
                           shuffle=True, seed=11, return_indices=True)
    assert len(loader) == 6
    rng = random.Random(4321)
    t0 = time.monotonic()
    for k in range(100):
        stop_at = rng.randrange(0, len(loader))
        if rng.random() < 0.2:
            # A manual iterator dropped mid-epoch instead of a `break`.
            it = iter(loader)
            for _ in range(stop_at + 1):
                next(it)
            del it
        else:
            for b, (x, y, i) in enumerate(loader):
                if b == stop_at:
                    break
            del x, y, i
        assert thread_count() == base_threads + 2, f"workers changed after break {k}"
    assert time.monotonic() - t0 < 15.0, "100 early breaks were slow"
    # Still a complete, correct epoch afterwards.
    epoch = loader.epoch
    ids = [j for _, _, i in loader for j in i.tolist()]
    assert sorted(ids) == list(range(24))
    assert loader.epoch == epoch + 1
    del loader
    gc.collect()
    assert settle(base_threads) == base_threads
    assert fd_count() == base_fds


# --------------------------------------------------------------- SIGINT ----

CHILD = textwrap.dedent("""
    import gc, os, sys, time
    # SIGINT may come ignored from a parent (a background job of a script):
    # Python then installs no Ctrl-C handler, so install its own here.
    import signal; signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.modules["torch"] = None  # numpy batches; keeps start-up fast and thread-free
    import stoker
    catch = sys.argv[2] == "catch"
    # numpy's OpenBLAS may have started threads of its own: count only the loader's.
    base = len(os.listdir("/proc/self/task"))
    loader = stoker.Loader(stoker.ImageFolder(sys.argv[1]), batch_size=4, threads=2,
                           prefetch=2, shuffle=True,
                           transforms=[stoker.Resize(300), stoker.CenterCrop(256)],
                           dct_scaling=False)

    def run():
        first = True
        while True:  # endless epochs
            for x, y in loader:
                if first:
                    print("ready", flush=True)
                    first = False

    if catch:
        try:
            run()
        except KeyboardInterrupt:
            print("caught KeyboardInterrupt", flush=True)
        del loader
        gc.collect()
        deadline = time.monotonic() + 3
        while len(os.listdir("/proc/self/task")) > base and time.monotonic() < deadline:
            time.sleep(0.01)
        print("threads left", len(os.listdir("/proc/self/task")) - base, flush=True)
    else:
        run()
""")


@pytest.fixture(scope="module")
def slow_root(tmp_path_factory):
    # Full-size PNG decodes (no region or DCT shortcuts): each batch takes a while, so
    # the signal usually arrives while the main thread waits inside next().
    root = tmp_path_factory.mktemp("slow")
    return make_folder(root, 12, 640, 480, png_every=2, seed=300)


def run_child_and_interrupt(root, mode):
    env = dict(os.environ, PYTHONPATH=stoker_python_dir())
    p = subprocess.Popen([sys.executable, "-c", CHILD, root, mode], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.strip() == "ready", (line, p.stderr.read() if p.poll() is not None else "")
        time.sleep(0.3)  # let it run a few batches (and cross epochs)
        assert p.poll() is None, "child ended on its own"
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"child still running 10 s after SIGINT ({mode})")
        return p.returncode, out, err, time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def test_sigint_caught_stops_all_threads(slow_root):
    rc, out, err, took = run_child_and_interrupt(slow_root, "catch")
    assert rc == 0, (rc, out, err)
    assert "caught KeyboardInterrupt" in out, (out, err)
    assert "threads left 0" in out.splitlines(), (out, err)
    assert took < 10


def test_sigint_uncaught_kills_the_process(slow_root):
    rc, out, err, took = run_child_and_interrupt(slow_root, "nocatch")
    assert rc != 0, (rc, out, err)
    assert "KeyboardInterrupt" in err, err
    assert took < 10


SLOW_BATCH_CHILD = textwrap.dedent("""
    # SIGINT may come ignored from a parent (a background job of a script):
    # Python then installs no Ctrl-C handler, so install its own here.
    import signal; signal.signal(signal.SIGINT, signal.default_int_handler)
    import sys
    import stoker
    root, n = sys.argv[1], int(sys.argv[2])
    # Full decodes of large JPEGs plus a big downscale, one thread, one batch of n:
    # the first batch takes seconds.
    loader = stoker.Loader(stoker.ImageFolder(root), batch_size=n, threads=1, prefetch=1,
                           transforms=[stoker.Resize((16, 16))], dct_scaling=False)
    it = iter(loader)
    print("waiting", flush=True)
    try:
        next(it)
        print("got the batch", flush=True)
    except KeyboardInterrupt:
        print("caught", loader.stats()["images"], flush=True)
""")


def test_sigint_is_not_held_up_by_a_slow_batch(tmp_path):
    # Ctrl-C must raise while next() waits, not after the batch is complete.
    from PIL import Image
    import numpy as np
    big = tmp_path / "big.jpg"
    rng = np.random.default_rng(5)
    Image.fromarray(rng.integers(0, 256, (3000, 4000, 3), dtype=np.uint8)).save(big, quality=90)
    n = 12
    (tmp_path / "data" / "c").mkdir(parents=True)
    for i in range(n):
        (tmp_path / "data" / "c" / f"{i:02d}.jpg").symlink_to(big)
    env = dict(os.environ, PYTHONPATH=stoker_python_dir())
    p = subprocess.Popen([sys.executable, "-c", SLOW_BATCH_CHILD, str(tmp_path / "data"), str(n)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "waiting"
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 0, (out, err)
    words = out.split()
    assert words[0] == "caught", (out, err)
    # Interrupted before the batch was done: fewer images than the batch holds.
    assert int(words[1]) < n, out


def test_bench_soak_rounds_over_records_formats_mix_resume_and_caches(tmp_path):
    # bench/soak.py's rounds over records, the newer formats, Mix, resume and the caches
    # (each checks its own sample count and raises otherwise), once each on small data: the
    # 30-minute soak must not be the first place a broken round shows.
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
    try:
        import soak
    finally:
        sys.path.pop(0)
    env = {"formats": str(tmp_path / "formats")}
    env["formats_n"] = soak.make_formats(env["formats"], 14, 1)
    env["records"] = soak.make_records(str(tmp_path), shards=3, per_shard=5, rows=40, seed=1)
    for k in ("x", "y", "imgs", "labels"):
        env[k] = str(tmp_path / f"{k}.npy")
    server = soak.serve(str(tmp_path))
    try:
        env["url"] = f"http://127.0.0.1:{server.server_address[1]}"
        env["cache_dir"] = str(tmp_path / "cache")
        env["cache_bytes"] = 2 * os.path.getsize(tmp_path / "shards" / "r-000.tar")
        tally = {"images": 0, "rounds": {}}
        rng = random.Random(3)
        for kind in soak.NEW_KINDS + ["resume"] * 3:
            soak.new_round(kind, env, rng, tally)
        assert tally["images"] > 0
    finally:
        server.shutdown()
        server.server_close()
