#!/usr/bin/python3
"""A long soak of one process: many loaders over data with bad files, on_error
"skip" and "raise", early breaks, close() mid-epoch, nested iterators, and
SIGINT sent to child processes mid-epoch. Every --sample-s seconds it records
the parent's resident memory, native threads and open descriptors; at the end
it says whether they stayed flat after the warm-up.

    /usr/bin/python3 bench/soak.py --minutes 30 --json soak.json

Run it from a copy of bench/ and python/ when the tree is rebuilt meanwhile: a child
that imports a _C module being relinked fails.

The data is made in a temporary folder: photo-like JPEGs and PNGs of several
sizes, plus truncated JPEGs, random bytes named .jpg, an empty file and a FIFO
named .jpg (the last must be refused, not block). Beside it: an ImageFolder of
the newer formats (TIFF, WebP, BMP, PPM/PGM), records (stoker.Npy({"x", "y"}) and
tar shards of jpg+txt+json+npy+cls members read with Shards(fields=...), indexed
and as .tar.gz streams, and over HTTP from a local server into a cache_dir with a
small cache_bytes), a stoker.Mix of three sources, multi-epoch runs, resumes from
a state_dict at a random batch, and the decoded-sample cache. Each sample line
also gives the samples per second since the last one. Exit status 0 when RSS stayed
within --rss-slack-mib of its level after the warm-up and the thread and fd
counts came back to their baseline, and every SIGINT child exited within 60 s;
1 otherwise. A child still running 10 s after SIGINT is reported with its Python and
native stacks (a slow exit: e.g. a machine too loaded to run it); the soak goes on.
"""

from __future__ import annotations

import argparse
import functools
import gc
import gzip
import http.server
import io
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
import warnings

import numpy as np
from PIL import Image

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))  # an installed stoker wins
import stoker  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
MiB = 1 << 20


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def image(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    coarse = rng.integers(0, 256, size=(max(2, h // 40), max(2, w // 40), 3), dtype=np.uint8)
    field = np.asarray(Image.fromarray(coarse).resize((w, h), Image.BICUBIC), dtype=np.float32)
    field += rng.normal(0.0, 6.0, size=field.shape)
    return np.clip(field, 0, 255).astype(np.uint8)


def make_data(root: str, good: int, seed: int) -> dict:
    """An ImageFolder tree with `good` decodable images in 4 classes and bad files beside
    them. Returns counts."""
    rng = np.random.default_rng(seed)
    bad = 0
    for i in range(good):
        d = os.path.join(root, f"class{i % 4}")
        os.makedirs(d, exist_ok=True)
        w, h = int(rng.integers(64, 400)), int(rng.integers(64, 400))
        arr = image(w, h, rng)
        if i % 5 == 0:
            Image.fromarray(arr).save(os.path.join(d, f"{i:05d}.png"))
        else:
            Image.fromarray(arr).save(os.path.join(d, f"{i:05d}.jpg"), quality=88)
    d = os.path.join(root, "class0")
    sample = open(os.path.join(root, "class1", "00001.jpg"), "rb").read()
    for j in range(6):  # truncated JPEGs
        with open(os.path.join(d, f"bad_trunc{j}.jpg"), "wb") as f:
            f.write(sample[: len(sample) * (j + 1) // 8])
        bad += 1
    for j in range(4):  # random bytes named .jpg / .png
        with open(os.path.join(d, f"bad_noise{j}.{'jpg' if j % 2 else 'png'}"), "wb") as f:
            f.write(rng.integers(0, 256, size=4096, dtype=np.uint8).tobytes())
        bad += 1
    open(os.path.join(d, "bad_empty.jpg"), "wb").close()
    bad += 1
    os.mkfifo(os.path.join(d, "bad_fifo.jpg"))
    bad += 1
    return {"good": good, "bad": bad}


def make_formats(root: str, n: int, seed: int) -> int:
    """An ImageFolder of the newer formats: TIFF (raw and deflate), WebP (lossy and
    lossless), BMP, PPM and PGM, in 3 classes. Returns the count."""
    rng = np.random.default_rng(seed + 7)
    kinds = [("tif", {}), ("tiff", {"compression": "tiff_adobe_deflate"}),
             ("webp", {"quality": 80}), ("webp", {"lossless": True}), ("bmp", {}),
             ("ppm", {}), ("pgm", {})]
    for i in range(n):
        d = os.path.join(root, f"c{i % 3}")
        os.makedirs(d, exist_ok=True)
        ext, opts = kinds[i % len(kinds)]
        img = Image.fromarray(image(int(rng.integers(40, 200)), int(rng.integers(40, 200)), rng))
        if ext == "pgm":
            img = img.convert("L")
        img.save(os.path.join(d, f"{i:05d}.{ext}"), **opts)
    return n


EMB = 8


def record_shard(first: int, n: int, rng: np.random.Generator) -> bytes:
    """A tar of n samples with jpg, txt, json, npy and cls members."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for i in range(first, first + n):
            jpg = io.BytesIO()
            Image.fromarray(image(int(rng.integers(40, 160)), int(rng.integers(40, 160)), rng)
                            ).save(jpg, "JPEG", quality=85)
            npy = io.BytesIO()
            np.save(npy, np.full((EMB,), i, np.float32))
            for ext, data in (("jpg", jpg.getvalue()), ("txt", f"caption {i}".encode()),
                              ("json", json.dumps({"i": i}).encode()),
                              ("npy", npy.getvalue()), ("cls", b"%d" % (i % 5))):
                info = tarfile.TarInfo(f"s{i:06d}.{ext}")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_records(root: str, shards: int, per_shard: int, rows: int, seed: int) -> dict:
    rng = np.random.default_rng(seed + 11)
    os.makedirs(os.path.join(root, "shards"))
    for s in range(shards):
        data = record_shard(s * per_shard, per_shard, rng)
        with open(os.path.join(root, "shards", f"r-{s:03d}.tar"), "wb") as f:
            f.write(data)
        with open(os.path.join(root, "shards", f"r-{s:03d}.tar.gz"), "wb") as f:
            f.write(gzip.compress(data, compresslevel=1))
    x = rng.normal(size=(rows, 16)).astype(np.float32)
    y = np.arange(rows, dtype=np.int64) % 7
    np.save(os.path.join(root, "x.npy"), x)
    np.save(os.path.join(root, "y.npy"), y)
    np.save(os.path.join(root, "imgs.npy"), rng.integers(0, 256, (rows, 32, 32, 3), np.uint8))
    np.save(os.path.join(root, "labels.npy"), y)
    return {"shards": shards, "per_shard": per_shard, "rows": rows,
            "pattern": os.path.join(root, "shards", "r-{%03d..%03d}.tar" % (0, shards - 1))}


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(directory: str):
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=directory))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


FIELDS = {"image": "jpg", "caption": "txt", "meta": "json",
          "emb": {"ext": "npy", "dtype": "float32", "shape": (EMB,)}, "label": "cls"}


def count_records(loader) -> int:
    n = 0
    for batch in loader:
        k = len(batch["label"])
        if len(batch["caption"]) != k or len(batch["meta"]) != k or batch["emb"].shape[0] != k:
            raise RuntimeError("a record batch with fields of different lengths")
        n += k
    return n


def batch_len(batch) -> int:
    if isinstance(batch, dict):
        return len(next(iter(batch.values())))
    return len(batch[1])


def new_round(kind: str, env: dict, rng: random.Random, tally: dict) -> None:
    """The rounds over records, formats, Mix, resume and caches."""
    t = rng.choice([1, 2, 3, 4])
    rec = env["records"]
    want_shards = rec["shards"] * rec["per_shard"]
    if kind == "records_npy":
        src = stoker.Npy({"x": env["x"], "y": env["y"]})
        loader = stoker.Loader(src, batch_size=rng.choice([16, 64]), shuffle=True, threads=t,
                               seed=rng.randrange(1 << 30))
        for epoch in range(2):
            loader.set_epoch(epoch)
            n = sum(len(b["y"]) for b in loader)
            if n != rec["rows"]:
                raise RuntimeError(f"Npy records: {n} rows, expected {rec['rows']}")
            tally["images"] += n
        loader.close()
    elif kind in ("records_shards", "records_stream"):
        pattern = rec["pattern"] + (".gz" if kind == "records_stream" else "")
        src = stoker.Shards(pattern, fields=FIELDS, shuffle_buffer=64,
                            length=want_shards if kind == "records_stream" else None)
        loader = stoker.Loader(src, batch_size=rng.choice([8, 16]), shuffle=True, threads=t,
                               transforms=[stoker.RandomResizedCrop(32)],
                               seed=rng.randrange(1 << 30))
        for epoch in range(2):
            loader.set_epoch(epoch)
            n = count_records(loader)
            if n != want_shards:
                raise RuntimeError(f"{kind}: {n} records, expected {want_shards}")
            tally["images"] += n
        loader.close()
    elif kind == "records_http_cache":
        url = env["url"] + "/shards/r-{%03d..%03d}.tar" % (0, rec["shards"] - 1)
        src = stoker.Shards(url, fields=FIELDS, shuffle_buffer=32, cache_dir=env["cache_dir"],
                            cache_bytes=env["cache_bytes"], concurrent_shards=2)
        loader = stoker.Loader(src, batch_size=16, shuffle=True, threads=t,
                               transforms=[stoker.Resize(40), stoker.CenterCrop(32)],
                               seed=rng.randrange(1 << 30))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            n = count_records(loader)
        if n != want_shards:
            raise RuntimeError(f"HTTP records via cache_dir: {n}, expected {want_shards}")
        # The cache holds fewer shards than a shuffled rank holds at once: said, once.
        said = [w for w in caught if "cache_bytes=" in str(w.message)]
        if len(said) != 1 or not loader.stats()["shard_cache"]["too_small"]:
            raise RuntimeError(f"a too-small shard cache was warned {len(said)} times")
        tally["images"] += n
        loader.close()
    elif kind == "formats":
        loader = stoker.Loader(stoker.ImageFolder(env["formats"]), batch_size=16, shuffle=True,
                               threads=t, transforms=TRAIN, seed=rng.randrange(1 << 30))
        for epoch in range(2):
            loader.set_epoch(epoch)
            n = sum(len(labels) for _, labels in loader)
            if n != env["formats_n"]:
                raise RuntimeError(f"formats: {n} images, expected {env['formats_n']}")
            tally["images"] += n
        loader.close()
    elif kind == "mix":
        mix = stoker.Mix([stoker.ImageFolder(env["formats"]),
                          stoker.Shards(rec["pattern"]),
                          stoker.Npy(images=env["imgs"], labels=env["labels"])],
                         weights=[0.3, 0.3, 0.4], labels="per_source")
        want = env["formats_n"] + want_shards + rec["rows"]
        loader = stoker.Loader(mix, batch_size=32, shuffle=True, threads=t,
                               transforms=[stoker.RandomResizedCrop(32)],
                               seed=rng.randrange(1 << 30))
        loader.set_epoch(rng.randrange(100))
        n = sum(len(labels) for _, labels in loader)
        if n != want:
            raise RuntimeError(f"Mix: {n} samples, expected {want}")
        tally["images"] += n
        loader.close()
    elif kind == "resume":
        choice = rng.choice(["folder", "shards", "npy"])
        def make():
            if choice == "folder":
                src, tf = stoker.ImageFolder(env["formats"]), [stoker.RandomResizedCrop(32)]
            elif choice == "shards":
                src, tf = stoker.Shards(rec["pattern"], fields=FIELDS), [stoker.Resize(32),
                                                                         stoker.CenterCrop(32)]
            else:
                src, tf = stoker.Npy({"x": env["x"], "y": env["y"]}), []
            return stoker.Loader(src, batch_size=8, shuffle=True, seed=5, threads=t,
                                 transforms=tf, return_indices=choice != "npy")
        first = make()
        first.set_epoch(3)
        total = len(first)
        it = iter(first)
        head = rng.randrange(1, total)
        got = sum(batch_len(next(it)) for _ in range(head))
        state = first.state_dict()
        first.close()
        second = make()
        second.load_state_dict(state)
        got += sum(batch_len(b) for b in second)
        want = {"folder": env["formats_n"], "shards": want_shards, "npy": rec["rows"]}[choice]
        if got != want:
            raise RuntimeError(f"resume ({choice}): {got} samples, expected {want}")
        tally["images"] += got
        second.close()
    elif kind == "decoded_cache":
        loader = stoker.Loader(stoker.ImageFolder(env["formats"]), batch_size=16, shuffle=True,
                               threads=t, transforms=[stoker.RandomResizedCrop(32)],
                               cache="decoded", cache_bytes=rng.choice([1 << 20, 64 << 20]))
        for epoch in range(3):
            loader.set_epoch(epoch)
            tally["images"] += sum(len(labels) for _, labels in loader)
        loader.close()


TRAIN = [stoker.RandomResizedCrop(64), stoker.RandomHorizontalFlip(),
         stoker.ColorJitter(0.3, 0.3, 0.3), stoker.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))]
VAL = [stoker.Resize(72), stoker.CenterCrop(64)]

CHILD = textwrap.dedent("""
    import faulthandler, signal, sys
    faulthandler.register(signal.SIGUSR1)  # the parent asks for the Python stacks on a hang
    # SIGINT may come ignored from a parent (a background job of a script):
    # Python then installs no Ctrl-C handler, so install its own here.
    import signal; signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {python!r})
    import stoker
    loader = stoker.Loader(stoker.ImageFolder({root!r}), batch_size=16, shuffle=True,
                           threads={threads}, on_error="skip",
                           transforms=[stoker.RandomResizedCrop(64)])
    print("ready", flush=True)
    while True:
        for _ in loader:
            pass
""")


def _has_gdb() -> bool:
    return any(os.access(os.path.join(d, "gdb"), os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep))


class ChildHung(RuntimeError):
    """A SIGINT child that did not exit in time (recorded; the soak goes on)."""


SLOW_EXIT_S = 10.0  # a child still running this long after SIGINT is looked at (stacks)
HANG_S = 60.0       # and one still running this long is a hang


def sigint_child(root: str, rng: random.Random, slow: list) -> float:
    """Starts a child iterating a loader, sends SIGINT after a random delay, and returns
    the seconds it took to exit. A child still running SLOW_EXIT_S after the signal has its
    Python (faulthandler) and native (gdb) stacks appended to `slow`; one still running
    HANG_S after it is killed and raises ChildHung. Raises RuntimeError if it exited
    without a KeyboardInterrupt."""
    python_dir = os.path.dirname(os.path.dirname(stoker.__file__))
    code = CHILD.format(python=python_dir, root=root, threads=rng.choice([1, 2, 4]))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    if child.stdout.readline().strip() != b"ready":
        child.kill()
        _, err = child.communicate()
        raise RuntimeError("a SIGINT child failed before its first batch: "
                           f"{err.decode(errors='replace')[-2000:]}")
    time.sleep(rng.uniform(0.05, 0.6))
    t0 = time.monotonic()
    child.send_signal(signal.SIGINT)
    stacks = None
    try:
        _, err = child.communicate(timeout=SLOW_EXIT_S)
    except subprocess.TimeoutExpired:
        # Where it is, for the report: the Python stacks go to its stderr.
        child.send_signal(signal.SIGUSR1)
        stacks = ""
        if _has_gdb():
            try:
                stacks = subprocess.run(
                    ["gdb", "-p", str(child.pid), "-batch", "-ex", "thread apply all bt"],
                    capture_output=True, text=True, timeout=120).stdout
            except subprocess.TimeoutExpired:  # a loaded machine: the child may exit meanwhile
                stacks = "(gdb gave no stacks within 120 s)"
        try:
            _, err = child.communicate(timeout=max(1.0, HANG_S - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            child.kill()
            _, err = child.communicate()
            raise ChildHung(f"a child did not exit within {HANG_S:.0f} s of SIGINT (killed)\n"
                            f"--- child stderr ---\n{err.decode(errors='replace')[-6000:]}\n"
                            f"--- native stacks at {SLOW_EXIT_S:.0f} s ---\n{stacks[-12000:]}")
    took = time.monotonic() - t0
    if stacks is not None:
        slow.append(f"a child took {took:.1f} s to exit after SIGINT\n"
                    f"--- child stderr ---\n{err.decode(errors='replace')[-6000:]}\n"
                    f"--- native stacks at {SLOW_EXIT_S:.0f} s ---\n{stacks[-12000:]}")
        print(slow[-1], flush=True)
    if child.returncode == 0 or b"KeyboardInterrupt" not in err:
        raise RuntimeError(f"child exited {child.returncode} without KeyboardInterrupt: "
                           f"{err.decode(errors='replace')[-400:]}")
    return took


NEW_KINDS = ["records_npy", "records_shards", "records_stream", "records_http_cache",
             "formats", "mix", "resume", "decoded_cache"]


# Every round kind (skip_epoch is drawn twice as often).
ALL_KINDS = ["skip_epoch", "early_break", "raise", "close_mid", "nested", "sigint",
             "val"] + NEW_KINDS


def one_round(root: str, counts: dict, rng: random.Random, tally: dict, env: dict) -> None:
    kind = rng.choice(["skip_epoch"] + ALL_KINDS)
    if kind in NEW_KINDS:
        new_round(kind, env, rng, tally)
        tally["rounds"][kind] = tally["rounds"].get(kind, 0) + 1
        return
    t = rng.choice([1, 2, 3, 4])
    bs = rng.choice([8, 16, 32])
    src = stoker.ImageFolder(root)
    if kind == "sigint":
        try:
            tally["sigint_exit_s"].append(sigint_child(root, rng, tally["sigint_slow"]))
        except ChildHung as e:
            print(e, flush=True)
            tally["sigint_hangs"].append(str(e)[:20000])
    elif kind in ("skip_epoch", "val"):
        loader = stoker.Loader(src, batch_size=bs, shuffle=kind != "val", threads=t,
                               seed=rng.randrange(1 << 30), on_error="skip",
                               transforms=TRAIN if kind != "val" else VAL)
        loader.set_epoch(rng.randrange(1000))
        n = sum(len(labels) for _, labels in loader)
        st = loader.stats()
        # An engine with skipped_files delivers each good image once; an older one refilled
        # a bad sample's slot, so its epochs were as long as the folder.
        want = counts["good"] if "skipped_files" in st else counts["good"] + counts["bad"]
        if n != want:
            raise RuntimeError(f"a skip epoch delivered {n} images, expected {want}")
        tally["images"] += n
        tally["skipped"] += int(st.get("skipped", 0))
        loader.close()
    elif kind == "early_break":
        loader = stoker.Loader(src, batch_size=bs, shuffle=True, threads=t, on_error="skip",
                               transforms=TRAIN, prefetch=rng.choice([1, 2, 4]))
        stop = rng.randrange(0, 6)
        for k, _ in enumerate(loader):
            if k >= stop:
                break
        del loader
    elif kind == "raise":
        loader = stoker.Loader(src, batch_size=bs, shuffle=True, threads=t, transforms=TRAIN)
        try:
            for _ in loader:
                pass
            raise RuntimeError("on_error='raise' finished an epoch with bad files in it")
        except stoker.StokerError:
            tally["raised"] += 1
        loader.close()
    elif kind == "close_mid":
        loader = stoker.Loader(src, batch_size=bs, shuffle=True, threads=t, on_error="skip",
                               transforms=TRAIN)
        it = iter(loader)
        for _ in range(rng.randrange(1, 4)):
            next(it)
        loader.close()
        try:
            next(it)
            raise RuntimeError("an iterator went on after close()")
        except (RuntimeError, StopIteration, stoker.StokerError) as e:
            if "went on" in str(e):
                raise
    elif kind == "nested":
        loader = stoker.Loader(src, batch_size=bs, shuffle=True, threads=t, on_error="skip",
                               transforms=TRAIN)
        first = iter(loader)
        next(first)
        second = iter(loader)
        next(second)
        try:
            next(first)
            raise RuntimeError("a superseded iterator went on")
        except (RuntimeError, stoker.StokerError) as e:
            if "went on" in str(e):
                raise
        del first, second, loader
    tally["rounds"][kind] = tally["rounds"].get(kind, 0) + 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0, help="how long to run (default 30)")
    ap.add_argument("--warmup-minutes", type=float, default=2.0,
                    help="RSS is compared with its level at the end of the warm-up: this many "
                         "minutes, and until every round kind has run --warmup-rounds times "
                         "(default 2)")
    ap.add_argument("--warmup-rounds", type=int, default=5,
                    help="rounds of each kind the warm-up includes (default 5), so that every "
                         "kind's buffers and caches exist before RSS is compared")
    ap.add_argument("--sample-s", type=float, default=30.0, help="seconds between samples")
    ap.add_argument("--images", type=int, default=400, help="good images in the folder")
    ap.add_argument("--rss-slack-mib", type=float, default=32.0,
                    help="allowed RSS growth after the warm-up, MiB (default 32)")
    ap.add_argument("--fd-slack", type=int, default=0,
                    help="allowed growth of open fds and threads over the baseline at the "
                         "end (default 0)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the samples and the verdict here")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    tmp = tempfile.TemporaryDirectory(prefix="stoker-soak-")
    counts = make_data(tmp.name, args.images, args.seed)
    print(f"data: {counts['good']} images, {counts['bad']} bad files in {tmp.name}", flush=True)
    extra_dir = tempfile.TemporaryDirectory(prefix="stoker-soak-extra-")
    env = {"formats": os.path.join(extra_dir.name, "formats")}
    env["formats_n"] = make_formats(env["formats"], 70, args.seed)
    env["records"] = make_records(extra_dir.name, shards=6, per_shard=20, rows=500, seed=args.seed)
    for k in ("x", "y", "imgs", "labels"):
        env[k] = os.path.join(extra_dir.name, f"{k}.npy")
    server = serve(extra_dir.name)
    env["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    env["cache_dir"] = os.path.join(extra_dir.name, "cache")
    shard_bytes = os.path.getsize(os.path.join(extra_dir.name, "shards", "r-000.tar"))
    env["cache_bytes"] = 4 * shard_bytes  # evicts: 6 shards, 2 read at once
    print(f"extra: {env['formats_n']} TIFF/WebP/BMP/PNM images, "
          f"{env['records']['shards']} record shards of {env['records']['per_shard']}, "
          f"{env['records']['rows']} Npy rows, HTTP at {env['url']}", flush=True)
    gc.collect()
    base = {"threads": threads(), "fds": fds(), "rss_mib": rss_bytes() / MiB}
    tally = {"images": 0, "skipped": 0, "raised": 0, "rounds": {}, "sigint_exit_s": [],
             "sigint_hangs": [], "sigint_slow": []}
    samples = []
    t0 = time.monotonic()
    end = t0 + args.minutes * 60
    next_sample = t0
    while True:
        now = time.monotonic()
        if now >= next_sample or now >= end:
            gc.collect()
            prev = samples[-1] if samples else None
            s = {"t_s": round(now - t0, 1), "rss_mib": round(rss_bytes() / MiB, 1),
                 "threads": threads(), "fds": fds(), "rounds": sum(tally["rounds"].values()),
                 "samples": tally["images"],
                 "fewest_rounds_of_a_kind": min(tally["rounds"].get(k, 0) for k in ALL_KINDS)}
            s["samples_per_s"] = round((s["samples"] - prev["samples"]) /
                                       max(1e-9, s["t_s"] - prev["t_s"]), 1) if prev else 0.0
            samples.append(s)
            print(f"{s['t_s']:8.1f} s  rss {s['rss_mib']:7.1f} MiB  threads {s['threads']:3d}"
                  f"  fds {s['fds']:3d}  rounds {s['rounds']}  samples {s['samples']}"
                  f"  {s['samples_per_s']:.0f}/s", flush=True)
            # A round longer than --sample-s (a slow SIGINT child) delays the next record
            # rather than bunching several after it.
            next_sample = max(next_sample + args.sample_s, now + args.sample_s / 2)
            if now >= end:
                break
        one_round(tmp.name, counts, rng, tally, env)

    after_warmup = [s for s in samples if s["t_s"] >= args.warmup_minutes * 60 and
                    s["fewest_rounds_of_a_kind"] >= args.warmup_rounds]
    ref = after_warmup[0]["rss_mib"] if after_warmup else samples[0]["rss_mib"]
    peak = max(s["rss_mib"] for s in after_warmup or samples)
    final = samples[-1]
    ok_rss = peak - ref <= args.rss_slack_mib and final["rss_mib"] - ref <= args.rss_slack_mib
    ok_threads = final["threads"] <= base["threads"] + args.fd_slack
    ok_fds = final["fds"] <= base["fds"] + args.fd_slack
    exits = sorted(tally["sigint_exit_s"])
    verdict = {
        "baseline": base, "warmup_ended_s": after_warmup[0]["t_s"] if after_warmup else None,
        "rss_after_warmup_mib": ref, "rss_peak_after_warmup_mib": peak,
        "final": final, "rss_flat": ok_rss, "threads_back": ok_threads, "fds_back": ok_fds,
        "rounds": tally["rounds"], "images": tally["images"], "skipped": tally["skipped"],
        "samples_per_s_after_warmup": [s["samples_per_s"] for s in after_warmup],
        "raise_rounds_that_raised": tally["raised"],
        "sigint_children": len(exits),
        "sigint_exit_s_median": exits[len(exits) // 2] if exits else None,
        "sigint_exit_s_max": exits[-1] if exits else None,
        "sigint_hangs": len(tally["sigint_hangs"]),
        "sigint_slow_exits": len(tally["sigint_slow"]),
    }
    print(json.dumps(verdict, indent=1))
    server.shutdown()
    server.server_close()
    tmp.cleanup()
    extra_dir.cleanup()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples": samples, "verdict": verdict,
                       "sigint_hang_reports": tally["sigint_hangs"],
                       "sigint_slow_reports": tally["sigint_slow"]}, f, indent=1)
    return 0 if ok_rss and ok_threads and ok_fds and not tally["sigint_hangs"] else 1


if __name__ == "__main__":
    sys.exit(main())
