"""Issue 17: hostile files and careless use must not hang, crash or lose data
silently. Cases that used to hang run in a subprocess under a timeout, so a
regression fails instead of stalling the suite."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import stoker
from conftest import needs_curl, photo, save_jpeg, stoker_python_dir

ROOT = Path(__file__).resolve().parents[2]
VAL = [stoker.Resize(40), stoker.CenterCrop(32)]


def stoker_cli() -> str:
    for p in (os.environ.get("STOKER_CLI"), ROOT / "build" / "stoker"):
        if p and os.access(p, os.X_OK):
            return str(p)
    pytest.skip("the stoker CLI is not built (set STOKER_CLI)")


def run_python(code: str, timeout: float = 60, **env):
    """Runs `code` in a fresh interpreter; a hang is a TimeoutExpired failure."""
    e = dict(os.environ, PYTHONPATH=stoker_python_dir(), **{k: str(v) for k, v in env.items()})
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                              text=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for more than {timeout} s")


# A body for run_under_address_limit: the first batch of the iterator `it`, printing
# "ERR <message>" for a StokerError.
FIRST_BATCH_OR_ERROR = """
try:
    next(it)
    print("NOERROR")
except stoker.StokerError as e:
    print("ERR", e)
"""


def run_under_address_limit(setup: str, body: str, headroom: int = 256 << 20,
                            timeout: float = 60):
    """Runs `setup` in a fresh interpreter, then caps its address space at what it maps by
    then plus `headroom` (RLIMIT_AS) and runs `body`: a bomb is an allocation failure (or a
    timeout), never the machine's memory."""
    return run_python("import resource, stoker\n" + textwrap.dedent(setup) + textwrap.dedent("""
        def _vm():
            for line in open("/proc/self/status"):
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
        _limit = _vm() + %d
        resource.setrlimit(resource.RLIMIT_AS, (_limit, _limit))
        """ % headroom) + textwrap.dedent(body), timeout=timeout)


def run_cli(*args, timeout: float = 60):
    try:
        return subprocess.run([stoker_cli(), *map(str, args)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"stoker {args[0]} hung for more than {timeout} s")


def small_folder(root: Path, n: int = 4, classes=("a", "b")) -> Path:
    k = 0
    for c in classes:
        (root / c).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            save_jpeg(photo(48, 40, 100 + k), root / c / f"{c}{i}.jpg")
            k += 1
    return root


# ------------------------------------------------------------- item 1: FIFOs ----

@pytest.fixture()
def fifo_folder(tmp_path):
    root = small_folder(tmp_path / "f")
    os.mkfifo(root / "a" / "x.jpg")
    return root


@pytest.mark.parametrize("policy", ["raise", "skip"])
def test_fifo_in_folder_is_refused_not_waited_on(fifo_folder, policy):
    r = run_python(f"""
        import stoker
        l = stoker.Loader(stoker.ImageFolder({str(fifo_folder)!r}), batch_size=4,
                          transforms=[stoker.Resize(40), stoker.CenterCrop(32)],
                          on_error={policy!r}, threads=2)
        try:
            n = sum(len(b[1]) for b in l)
            print("OK", n, l.stats()["skipped"])
        except stoker.StokerError as e:
            print("ERR", e)
    """, timeout=30)
    assert r.returncode == 0, r.stderr
    if policy == "raise":
        assert "ERR" in r.stdout and "x.jpg: not a regular file" in r.stdout, r.stdout
    else:
        assert r.stdout.startswith("OK "), r.stdout


def test_fifo_shard_is_refused_in_both_modes(tmp_path):
    fifo = tmp_path / "s-0.tar"
    os.mkfifo(fifo)
    for mode in ("stream", "indexed"):
        r = run_python(f"""
            import stoker
            try:
                src = stoker.Shards({str(fifo)!r}, mode={mode!r})
                l = stoker.Loader(src, batch_size=2, transforms=[stoker.Resize(40),
                                  stoker.CenterCrop(32)])
                for b in l: pass
                print("NOERROR")
            except (stoker.StokerError, ValueError, OSError) as e:
                print("ERR", e)
        """, timeout=30)
        assert r.returncode == 0, r.stderr
        assert "not a regular file" in r.stdout, (mode, r.stdout)


def test_fifo_npy_is_refused(tmp_path):
    fifo = tmp_path / "x.npy"
    os.mkfifo(fifo)
    r = run_python(f"""
        import stoker
        try:
            stoker.Npy({str(fifo)!r})
        except (stoker.StokerError, ValueError, OSError) as e:
            print("ERR", e)
    """, timeout=30)
    assert "not a regular file" in r.stdout, (r.stdout, r.stderr)


def test_cli_decode_and_convert_refuse_a_fifo(fifo_folder, tmp_path):
    r = run_cli("decode", fifo_folder, "--threads", 1, "--epochs", 1)
    assert "1 failure" in r.stdout + r.stderr, r.stdout + r.stderr  # finished, counted once
    out = tmp_path / "out"
    r = run_cli("convert", fifo_folder, out)
    assert r.returncode == 1 and "x.jpg: not a regular file" in r.stderr, r.stderr
    leftovers = [p.name for p in out.iterdir()] if out.exists() else []
    assert not [n for n in leftovers if ".tmp" in n], leftovers


# ------------------------------------------------------- item 2: fork ----

def test_forked_child_gets_a_clear_error_not_a_hang(tmp_path):
    root = small_folder(tmp_path / "f")
    r = run_python(f"""
        import gc, os, sys, multiprocessing as mp
        import stoker
        l = stoker.Loader(stoker.ImageFolder({str(root)!r}), batch_size=2, threads=2,
                          transforms=[stoker.Resize(40), stoker.CenterCrop(32)])
        assert sum(len(b[1]) for b in l) == 8  # the parent's threads are running
        it = iter(l); next(it)                 # and mid-epoch at the fork

        pid = os.fork()
        if pid == 0:
            try:
                for b in l: pass
                os._exit(3)
            except stoker.StokerError as e:
                ok = "forked child" in str(e) and "spawn" in str(e)
            l.stats(); del it; del l; gc.collect()
            os._exit(0 if ok else 4)
        _, status = os.waitpid(pid, 0)
        print("CHILD", os.waitstatus_to_exitcode(status))

        def work(_):
            try:
                return sum(len(b[1]) for b in l)
            except stoker.StokerError as e:
                return str(e)
        with mp.get_context("fork").Pool(2) as pool:
            print("POOL", pool.map(work, range(2)))
        del it
        print("PARENT", sum(len(b[1]) for b in l))
    """, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "CHILD 0" in r.stdout, r.stdout
    assert r.stdout.count("forked child") == 2, r.stdout
    assert "PARENT 8" in r.stdout, r.stdout


# ------------------------------------------- item 6: bad_alloc in a worker ----

def zero_png(path: Path, w: int, h: int) -> None:
    """A valid all-black RGB PNG of w x h written without holding its pixels."""
    import struct
    import zlib

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    c = zlib.compressobj(1)
    rows = (b"\x00" + bytes(3 * w)) * 100
    body = b"".join(c.compress(rows) for _ in range(h // 100)) + c.flush()
    path.write_bytes(b"\x89PNG\r\n\x1a\n" +
                     chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                     chunk(b"IDAT", body) + chunk(b"IEND", b""))


@pytest.mark.parametrize("policy", ["raise", "skip"])
def test_bad_alloc_in_a_worker_is_an_error_not_an_abort(tmp_path, policy):
    # The huge file comes last, after 12 small ones: the worker (prefetch 2 batches of 2)
    # blocks before reaching it, so VmSize is read before its decode starts (with it first,
    # the worker could decode it before vm() and the limit then had room for it).
    root = small_folder(tmp_path / "f", n=6)
    (root / "z").mkdir()
    zero_png(root / "z" / "huge.png", 8000, 8000)  # 192 MB of pixels to decode
    r = run_under_address_limit(f"""
        # Two resizes take the whole-image path (a single crop + resize streams the PNG's
        # rows and would not need the 192 MB).
        t = [stoker.Resize(64), stoker.Resize(40), stoker.CenterCrop(32)]
        l = stoker.Loader(stoker.ImageFolder({str(root)!r}), batch_size=2, threads=1,
                          transforms=t, on_error={policy!r})
        it = iter(l)  # the worker thread and its malloc arena exist from here on
    """, f"""
        try:
            n = sum(len(b[1]) for b in it)
            print("OK", n, l.stats()["skipped"])
        except stoker.StokerError as e:
            print("ERR", e)
    """, headroom=96 << 20, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    if policy == "raise":
        assert "ERR" in r.stdout and "huge.png" in r.stdout, r.stdout
    else:
        ok, n, skipped = r.stdout.split()
        assert ok == "OK" and int(n) >= 4 and int(skipped) >= 1, r.stdout


# ------------------------------------------------- item 7: scratch memory ----

def rss_bytes() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def test_scratch_of_an_oversized_image_is_released_and_in_stats(tmp_path):
    root = small_folder(tmp_path / "f", n=3)
    zero_png(root / "a" / "big.png", 6000, 6000)  # 108 MB decoded, above the 64 MiB budget
    r = run_python(f"""
        import stoker
        # Two resizes: the whole-image path (one crop + resize would stream the rows).
        l = stoker.Loader(stoker.ImageFolder({str(root)!r}), batch_size=7, threads=2,
                          transforms=[stoker.Resize(64), stoker.Resize(40),
                                      stoker.CenterCrop(32)])
        for epoch in range(2):
            n = sum(len(b[1]) for b in l)
            s = l.stats()
            print("EPOCH", n, s["scratch_bytes"], s["scratch_budget"], s["scratch_releases"])
    """, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [l.split() for l in r.stdout.splitlines() if l.startswith("EPOCH")]
    assert len(lines) == 2, r.stdout
    for _, n, held, budget, releases in lines:
        assert int(n) == 7 and int(budget) == 64 << 20
        assert int(held) <= int(budget), r.stdout  # 108 MB of pixels were not kept
    assert int(lines[0][4]) >= 1 and int(lines[1][4]) >= 2, r.stdout


@pytest.mark.parametrize("transforms", ["[stoker.Resize(40), stoker.CenterCrop(32)]",
                                        "[stoker.RandomResizedCrop(224)]"])
def test_large_png_is_decoded_by_rows_within_the_scratch_budget(tmp_path, transforms):
    # One crop + resize streams a PNG's rows into the resampler: scratch never holds the
    # 108 MB image, so no sample goes over the 64 MiB budget (nothing to release) and
    # what the workers hold is a few MB. (Before: 108 MB decoded, 1 release per epoch.)
    # Bit-identity with the whole-image path: SampleProcessorPngRowsTest (C++).
    root = small_folder(tmp_path / "f", n=3)
    zero_png(root / "a" / "big.png", 6000, 6000)
    r = run_python(f"""
        import stoker
        l = stoker.Loader(stoker.ImageFolder({str(root)!r}), batch_size=7, threads=2,
                          transforms={transforms})
        for epoch in range(2):
            n = sum(len(b[1]) for b in l)
            s = l.stats()
            print("EPOCH", n, s["scratch_bytes"], s["scratch_releases"])
    """, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [l.split() for l in r.stdout.splitlines() if l.startswith("EPOCH")]
    assert len(lines) == 2, r.stdout
    for _, n, held, releases in lines:
        assert int(n) == 7, r.stdout
        assert int(releases) == 0, r.stdout  # no sample needed more than 64 MiB
        assert int(held) < 16 << 20, r.stdout


# ------------------------------------------------------------- item 20: CLI ----

def test_cli_argument_errors_are_short_and_negative_threads_refused(tmp_path):
    root = small_folder(tmp_path / "f", n=1)
    r = run_cli("bench", root, "--batch-size", 0)
    assert r.returncode != 0 and "must be an integer >= 1, got '0'" in r.stderr, r.stderr
    assert len(r.stderr) < 300, r.stderr
    r = run_cli("decode", root, "--threads", -3)
    assert r.returncode != 0 and ">= 0" in r.stderr, r.stderr


def test_cli_bench_skip_and_json_error(tmp_path):
    root = small_folder(tmp_path / "f", n=4)
    (root / "a" / "bad.jpg").write_bytes(b"\xff\xd8\xff garbage")
    r = run_cli("bench", root, "--batch-size", 2, "--epochs", 1, "--threads", 1, "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    import json
    out = json.loads(r.stdout)
    assert "bad.jpg" in out["error"], out
    r = run_cli("bench", root, "--batch-size", 2, "--epochs", 1, "--threads", 1, "--json",
                "--on-error", "skip")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["skipped"] >= 1, r.stdout


# ------------------------------------------ item 15: empty shard, both modes ----

def write_tar(path: Path, members) -> Path:
    """members: (name, bytes) pairs, in order."""
    import io
    import tarfile
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return path


def jpeg_bytes(seed: int) -> bytes:
    import io
    buf = io.BytesIO()
    from PIL import Image
    Image.fromarray(photo(48, 40, seed)).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def test_empty_shard_is_an_error_in_both_modes(tmp_path):
    empty = tmp_path / "e-0.tar"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="no samples"):
        stoker.Loader(stoker.Shards(str(empty), mode="indexed"), batch_size=2, transforms=VAL)
    l = stoker.Loader(stoker.Shards(str(empty), mode="stream"), batch_size=2, transforms=VAL)
    with pytest.raises(stoker.StokerError, match="no samples"):
        list(l)
    # An empty shard among others is just a shard without samples.
    write_tar(tmp_path / "e-1.tar", [(f"k{i}.{ext}", jpeg_bytes(i) if ext == "jpg" else b"1")
                                     for i in range(3) for ext in ("jpg", "cls")])
    l = stoker.Loader(stoker.Shards(str(tmp_path / "e-{0..1}.tar"), mode="stream"),
                      batch_size=2, transforms=VAL)
    assert sum(len(b[1]) for b in l) == 3


# ------------------------------------------------ item 17: negative labels ----

@pytest.mark.parametrize("mode", ["stream", "indexed"])
def test_negative_label_is_refused(tmp_path, mode):
    write_tar(tmp_path / "n-0.tar", [("k0.jpg", jpeg_bytes(1)), ("k0.cls", b"-5\n"),
                                     ("k1.jpg", jpeg_bytes(2)), ("k1.cls", b"3\n")])
    l = stoker.Loader(stoker.Shards(str(tmp_path / "n-0.tar"), mode=mode), batch_size=2,
                      transforms=VAL)
    with pytest.raises(stoker.StokerError, match="negative label -5"):
        list(l)


# -------------------------------------------- item 11: duplicate keys in shards ----

@pytest.mark.parametrize("mode", ["stream", "indexed"])
def test_duplicate_keys_in_a_shard_are_named_or_counted(tmp_path, mode):
    j = {i: jpeg_bytes(10 + i) for i in range(4)}
    write_tar(tmp_path / "d-0.tar", [("k.jpg", j[0]), ("k.cls", b"1"), ("k.jpg", j[1]),
                                     ("m.jpg", j[2]), ("m.cls", b"2")])
    write_tar(tmp_path / "d-1.tar", [("a.jpg", j[0]), ("a.cls", b"1"), ("b.jpg", j[1]),
                                     ("b.cls", b"2"), ("a.jpg", j[3]), ("a.cls", b"3")])
    for shard, msg in (("d-0.tar", "k.jpg appears twice in sample k"),
                       ("d-1.tar", "sample a appears again")):
        l = stoker.Loader(stoker.Shards(str(tmp_path / shard), mode=mode), batch_size=4,
                          transforms=VAL)
        with pytest.raises(stoker.StokerError, match=msg):
            list(l)
        l = stoker.Loader(stoker.Shards(str(tmp_path / shard), mode=mode), batch_size=4,
                          transforms=VAL, on_error="skip")
        labels = sorted(int(x) for b in l for x in b[1])
        assert l.stats()["skipped"] >= 1
        if mode == "stream":  # no replacement in a stream: exactly the good samples
            assert labels == ([2] if shard == "d-0.tar" else [1, 2]), labels


# ------------------------------------------------- item 12: stale .tar.idx ----

def test_index_of_a_shard_rewritten_with_same_size_and_mtime_is_rebuilt(tmp_path):
    shard = tmp_path / "s-0.tar"
    members = lambda labels: [(f"k{i}.{e}", jpeg_bytes(i) if e == "jpg" else str(l).encode())
                              for i, l in enumerate(labels) for e in ("jpg", "cls")]
    write_tar(shard, members([1, 2, 3]))
    st = shard.stat()
    l = stoker.Loader(stoker.Shards(str(shard), mode="indexed"), batch_size=3, transforms=VAL)
    assert sorted(int(x) for b in l for x in b[1]) == [1, 2, 3]
    assert (tmp_path / "s-0.tar.idx").exists()
    write_tar(shard, members([7, 8, 9]))  # same sizes: labels are one digit each
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert shard.stat().st_size == st.st_size and shard.stat().st_mtime_ns == st.st_mtime_ns
    l = stoker.Loader(stoker.Shards(str(shard), mode="indexed"), batch_size=3, transforms=VAL)
    assert sorted(int(x) for b in l for x in b[1]) == [7, 8, 9]


# ------------------------------------------- item 19: argument validation ----

def test_source_set_epoch_and_scale_are_validated(tmp_path):
    root = small_folder(tmp_path / "f", n=1)
    with pytest.raises(TypeError, match="did you mean stoker.ImageFolder"):
        stoker.Loader(str(root), batch_size=2, transforms=VAL)
    l = stoker.Loader(stoker.ImageFolder(str(root)), batch_size=2, transforms=VAL)
    with pytest.raises(ValueError, match="epoch must be <="):
        l.set_epoch(2**70)
    import math
    with pytest.raises(ValueError, match=r"scale must be a pair \(min, max\) of finite numbers"):
        stoker.RandomResizedCrop(32, scale=(math.nan, math.nan))


# ------------------------------------------------ item 18: paths and names ----

def test_non_utf8_names_and_pathlike_roots(tmp_path):
    base = os.fsencode(str(tmp_path))
    root = base + b"/r\xff\xfe"  # not UTF-8
    os.makedirs(root + b"/a")
    with open(root + b"/a/ok.jpg", "wb") as f:
        f.write(jpeg_bytes(3))
    with open(root + b"/a/bad\xff.jpg", "wb") as f:
        f.write(b"\xff\xd8\xff not a jpeg")
    for arg in (root, os.fsdecode(root), Path(os.fsdecode(root))):
        folder = stoker.ImageFolder(arg)
        assert len(folder) == 2
        assert os.fsencode(folder.root) == root
    l = stoker.Loader(stoker.ImageFolder(root), batch_size=2, transforms=VAL)
    with pytest.raises(stoker.StokerError) as e:
        list(l)
    msg = str(e.value)
    assert msg and os.fsdecode(b"bad\xff.jpg") in msg, repr(msg)
    with pytest.raises(TypeError):
        stoker.ImageFolder(42)


# ---------------------------------------- item 13: folders deeper than PATH_MAX ----

def test_folder_deeper_than_path_max_is_an_error_not_a_silent_loss(tmp_path):
    root = small_folder(tmp_path / "f", n=2)
    fd = os.open(root / "a", os.O_RDONLY)
    name = "d" * 250
    for _ in range(20):  # about 5,000 bytes of path: beyond PATH_MAX (4096)
        os.mkdir(name, dir_fd=fd)
        nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    out = os.open("deep.jpg", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, jpeg_bytes(5))
    os.close(out)
    os.close(fd)
    with pytest.raises((stoker.StokerError, OSError), match="File name too long"):
        stoker.ImageFolder(str(root))


# ------------------------------------- item 4: Ctrl-C during a stalled transfer ----

@needs_curl
def test_sigint_cancels_a_stalled_remote_transfer(tmp_path):
    shard = write_tar(tmp_path / "s-0.tar", [(f"k{i}.{e}", jpeg_bytes(i) if e == "jpg" else b"1")
                                              for i in range(8) for e in ("jpg", "cls")])
    r = run_python(f"""
        import os, signal, socket, threading, time, gc
        # SIGINT may come ignored from a parent (a background job of a script):
        # Python then installs no Ctrl-C handler, so install its own here.
        import signal; signal.signal(signal.SIGINT, signal.default_int_handler)
        import stoker
        body = open({str(shard)!r}, "rb").read()
        srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(8)
        port = srv.getsockname()[1]
        conns = []
        def serve():  # sends the headers and half the body, then stalls for ever
            while True:
                c, _ = srv.accept(); conns.append(c)
                c.recv(65536)
                c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body))
                c.sendall(body[:len(body) // 2])
        threading.Thread(target=serve, daemon=True).start()
        l = stoker.Loader(stoker.Shards(f"http://127.0.0.1:{{port}}/s-0.tar"), batch_size=64,
                          transforms=[stoker.Resize(40), stoker.CenterCrop(32)], threads=1)
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        try:
            for b in l: pass
            print("NOINTERRUPT")
        except KeyboardInterrupt:
            del l
            gc.collect()
            # seconds from SIGINT to a stopped, deleted loader (reported, not asserted)
            print("INTERRUPTED", round(time.monotonic() - t0 - 1.0, 2))
    """, timeout=20)  # the stall timeout is 30 s: without cancelling this would hang past 20 s
    assert r.returncode == 0, r.stderr[-2000:]
    assert "INTERRUPTED" in r.stdout, r.stdout
    print(r.stdout)


# ------------------------------------- item 5: a mapped .npy truncated while read ----

def test_npy_truncated_while_mapped_is_an_error_not_sigbus(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.arange(64 * 32 * 32 * 3, dtype=np.uint64).astype(np.uint8)
            .reshape(64, 32, 32, 3))
    keep = os.path.getsize(path) - 56 * 32 * 32 * 3  # the header and 8 samples
    r = run_python(f"""
        import os
        import time
        import stoker
        src = stoker.Npy({str(path)!r})
        l = stoker.Loader(src, batch_size=8, threads=1, prefetch=1, dtype="uint8",
                          transforms=[stoker.CenterCrop(32)])
        it = iter(l)
        held = next(it)  # its slot stays taken: the worker makes one batch, then waits
        while l.stats()["images"] < 16:
            time.sleep(0.001)
        # The truncation comes while the worker waits for a slot (the mapping is
        # re-checked after every wait; within a burst of reads it is not, see
        # io/mapped_file.h): the next batch's first read finds the file short.
        os.truncate({str(path)!r}, {keep})  # as np.save over the file does first
        del held
        try:
            for b in it: pass
            print("NOERROR")
        except stoker.StokerError as e:
            print("ERR", e)
    """, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])  # -7: killed by SIGBUS
    assert "ERR" in r.stdout and "x.npy" in r.stdout and "truncated" in r.stdout, r.stdout


# ------------------------------------- item 17: invalid PNG palette indices ----

def palette_png(depth: int, palette, rows, trns: bytes = b"") -> bytes:
    import struct
    import zlib

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))

    w = len(rows[0])
    raw = b""
    for r in rows:  # pack indices MSB first, depth bits each
        bits = "".join(format(i, f"0{depth}b") for i in r)
        bits += "0" * (-len(bits) % 8)
        raw += b"\x00" + int(bits, 2).to_bytes(len(bits) // 8, "big")
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, len(rows), depth, 3, 0, 0, 0))
            + chunk(b"PLTE", b"".join(bytes(c) for c in palette))
            + (chunk(b"tRNS", trns) if trns else b"")
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@pytest.mark.filterwarnings("ignore:Palette images")
@pytest.mark.parametrize("depth,trns", [(8, b""), (4, b""), (2, b""), (8, b"\x00\x80")])
def test_png_palette_index_past_the_palette_matches_pillow(depth, trns):
    # libpng's badpal cases: indices past a short PLTE. stoker pads the palette with the
    # grey ramp (i, i, i), as Pillow did up to 10.0; from 10.1 Pillow gives black there
    # (as libpng's own expansion does) and matches stoker everywhere else.
    import io
    import PIL
    from PIL import Image
    from stoker import _C
    top = (1 << depth) - 1
    rows = [[0, 1, 2, top], [top, 1, min(5, top), 0]]
    data = palette_png(depth, [(200, 10, 20), (5, 250, 7)], rows, trns)
    want = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    got = _C._decode(data)
    idx = np.array(rows)
    past = idx >= 2  # the PLTE has two entries
    assert (got[past] == idx[past][:, None]).all(), got  # the grey ramp, not black
    np.testing.assert_array_equal(got[~past], want[~past])
    pillow = tuple(int(p) for p in PIL.__version__.split(".")[:2])
    if pillow >= (10, 1):
        assert (want[past] == 0).all(), want
    else:
        np.testing.assert_array_equal(got, want)


# ---------------------------------- round 4, item 2: COCO declared sizes ----

@pytest.mark.parametrize("masks", ["instances", "semantic", None])
def test_coco_declaring_a_huge_size_is_refused_before_rasterising(tmp_path, masks):
    # 1 KB of JSON declaring 16000 x 16000 for a 64 x 48 image once cost 2.2 GB and 13-17 s
    # before the size-mismatch error: now the header is read first, under 256 MB more
    # address space than the loader needs and a 30 s timeout.
    import json
    from PIL import Image
    (tmp_path / "img").mkdir()
    Image.fromarray(np.zeros((48, 64, 3), np.uint8)).save(tmp_path / "img" / "a.png")
    doc = {"images": [{"id": 1, "file_name": "a.png", "height": 16000, "width": 16000}],
           "categories": [{"id": 1, "name": "x"}],
           "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                            "segmentation": [[0, 0, 16000, 0, 16000, 16000, 0, 16000]]}]}
    (tmp_path / "a.json").write_text(json.dumps(doc))
    r = run_under_address_limit(f"""
        src = stoker.Coco({str(tmp_path / "img")!r}, {str(tmp_path / "a.json")!r},
                          masks={masks!r})
        l = stoker.Loader(src, batch_size=1, threads=1, collate="list")
        it = iter(l)
    """, FIRST_BATCH_OR_ERROR, timeout=30)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ERR") and "declare 16000x16000 (width x height) for image id 1, " \
        "the file is 64x48" in r.stdout, r.stdout


# ------------------------------------------ round 4, item 3: polygon cost ----

def _coco_with_polygon(tmp_path, polygon, h=48, w=64):
    import json
    from PIL import Image
    (tmp_path / "img").mkdir(exist_ok=True)
    Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(tmp_path / "img" / "a.png")
    doc = {"images": [{"id": 1, "file_name": "a.png", "height": h, "width": w}],
           "categories": [{"id": 1, "name": "x"}],
           "annotations": [{"id": 7, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10],
                            "segmentation": [polygon]}]}
    (tmp_path / "a.json").write_text(json.dumps(doc))
    return str(tmp_path / "img"), str(tmp_path / "a.json")


def test_a_polygon_past_max_polygon_points_is_refused_naming_it(tmp_path):
    rng = np.random.default_rng(0)
    poly = (rng.random(2 * 100_001) * 48).round(2).tolist()
    img, ann = _coco_with_polygon(tmp_path, poly)
    with pytest.raises(ValueError) as e:
        stoker.Coco(img, ann, masks="instances")
    assert "annotation id 7 (image id 1): a polygon has 100001 points, more than " \
        "max_polygon_points (100000; raise it to read it)" in str(e.value), str(e.value)
    assert len(stoker.Coco(img, ann)) == 1  # without masks polygons are not read
    with pytest.raises(ValueError, match="max_polygon_points must be >= 1"):
        stoker.Coco(img, ann, masks="instances", max_polygon_points=0)
    for bad in (2e9, -1e10):
        img, ann = _coco_with_polygon(tmp_path, [0, 0, bad, 0, 0, 10])
        with pytest.raises(ValueError, match="a polygon coordinate is"):
            stoker.Coco(img, ann, masks="instances")


def test_two_million_points_rasterise_in_the_image_size(tmp_path):
    # One polygon of 2,000,000 points on a 64 x 48 image once cost 8.6-9.5 CPU-s and 1.3 GB
    # (the outline walked point by point, every point kept): now the marks are found at the
    # columns each edge crosses, and kept in at most the image's size. Under 256 MB more
    # address space than the loader needs and a 60 s timeout; the mask is pycocotools'
    # (a pixel is inside when its centre is: checked against a point-in-polygon count on a
    # small polygon of the same kind in test_target_sources).
    rng = np.random.default_rng(1)
    poly = np.stack([rng.random(2_000_000) * 64, rng.random(2_000_000) * 48], 1)
    img, ann = _coco_with_polygon(tmp_path, poly.round(2).ravel().tolist())
    r = run_under_address_limit(f"""
        src = stoker.Coco({img!r}, {ann!r}, masks="instances", max_polygon_points=2_000_000)
        l = stoker.Loader(src, batch_size=1, threads=1, collate="list")
        it = iter(l)
    """, f"""
        import time
        t = time.process_time()
        b = next(it)
        m = b["masks"][0]
        print("OK", tuple(m.shape), int(m.sum()), round(time.process_time() - t, 2))
    """, headroom=256 << 20, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    words = r.stdout.split()
    assert words[0] == "OK" and words[1:4] == ["(1,", "48,", "64)"], r.stdout
    assert 0 < int(words[4]) < 48 * 64, r.stdout


def test_a_polygon_reaching_far_outside_costs_its_columns(tmp_path):
    # Vertices 10^8 pixels out: the walk along each edge was 5 x 10^8 points (seconds and
    # gigabytes); the image shows a wedge of it over its top-left corner.
    img, ann = _coco_with_polygon(tmp_path, [0, 0, 1e8, 1e8, 0, 1e8], h=6, w=6)
    r = run_python(f"""
        import resource, stoker
        src = stoker.Coco({img!r}, {ann!r}, masks="instances")
        l = stoker.Loader(src, batch_size=1, threads=1, collate="list")
        it = iter(l)
        resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
        m = next(it)["masks"][0][0]
        print("".join("#" if v else "." for v in m.flatten().tolist()))
    """, timeout=30)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [r.stdout.strip()[i:i + 6] for i in range(0, 36, 6)]
    assert rows == ["#.....", "##....", "###...", "####..", "#####.", "######"], rows


def test_a_source_whose_init_raised_has_a_repr(tmp_path):
    # pytest formats a failed constructor's traceback with the half-made object: its repr
    # read through null and killed the process. In a child process, as it was a crash.
    r = run_python("""
        import stoker
        for cls in (stoker.Coco, stoker.ImageFolder, stoker.Npy, stoker.HDF5, stoker.Mix,
                    stoker.SegmentationFolder, stoker.VideoClips):
            o = cls.__new__(cls)
            try:
                len(o)
            except TypeError as e:
                print(repr(o), e)
    """, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert lines[0] == "<stoker.Coco, not constructed> the source was not constructed", lines
    assert len(lines) == 7, lines


# ---------------------------- round 4, item 13: arguments that do not convert ----

def test_a_constructor_argument_that_does_not_convert_is_named(tmp_path):
    # pybind11's "incompatible constructor arguments" dump, with every signature, became
    # one sentence naming the argument: TypeError for a type, ValueError for a range.
    np.save(tmp_path / "a.npy", np.zeros((4, 8, 8, 3), np.uint8))
    a = stoker.Npy(str(tmp_path / "a.npy"))
    (tmp_path / "v").mkdir()
    cases = [
        (lambda: stoker.Mix([a, a], weights="ab"), TypeError,
         "stoker.Mix: weights='ab' is not Optional[List[float]]"),
        (lambda: stoker.Mix([a, a], [1.0, "x"]), TypeError, "stoker.Mix: weights=[1.0, 'x']"),
        (lambda: stoker.VideoClips(str(tmp_path / "v"), clip_len=10**12), ValueError,
         "stoker.VideoClips: clip_len=1000000000000 is out of range"),
        (lambda: stoker.VideoClips(str(tmp_path / "v"), clips_per_video=2**40), ValueError,
         "clips_per_video=1099511627776 is out of range"),
        (lambda: stoker.VideoClips(str(tmp_path / "v"), frame_stride=2**40), ValueError,
         "frame_stride=1099511627776 is out of range"),
        (lambda: stoker.Coco(str(tmp_path), str(tmp_path / "x.json"), ignore_index="x"),
         TypeError, "stoker.Coco: ignore_index='x' is not int"),
    ]
    for call, kind, says in cases:
        with pytest.raises(kind) as e:
            call()
        assert says in str(e.value), str(e.value)
        assert "incompatible" not in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert len(stoker.Mix([a, a], [1.0, 1.0])) > 0  # the right call still works


# ------------------------------------- round 4, item 4: padded batches ----

@pytest.mark.parametrize("rows", [12000, 200000])
def test_a_padded_batch_past_max_padded_bytes_is_refused_naming_the_samples(tmp_path, rows):
    # Members (1, rows) and (rows, 1) float32 pad to [2, rows, rows]: 112 KB of shard asked
    # for a 1.1 GB batch (rows=12000) and 343 GB (rows=200000), saved only by malloc
    # failing. Now refused from the shapes, under 256 MB more address space than the loader
    # needs and a 60 s timeout.
    from conftest import npy_bytes, write_shards
    arrays = {0: np.ones((1, rows), np.float32), 1: np.ones((rows, 1), np.float32)}
    pattern = write_shards(tmp_path, 1, 2, lambda i: [
        (f"s{i:03d}.grid.npy", npy_bytes(arrays[i])), (f"s{i:03d}.cls", b"%d" % i)])
    r = run_under_address_limit(f"""
        src = stoker.Shards({pattern!r}, fields={{"grid": "grid.npy", "label": "cls"}},
                            length=2)
        l = stoker.Loader(src, batch_size=2, threads=1, collate="pad")
        it = iter(l)
    """, FIRST_BATCH_OR_ERROR, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout
    assert out.startswith("ERR"), out
    assert f"field 'grid': collate=\"pad\" would pad 2 samples to float32 [{rows}, {rows}]" \
        in out, out
    assert f"dimension 0 ({rows}) from sample 1 [{rows}, 1]" in out, out
    assert f"dimension 1 ({rows}) from sample 0 [1, {rows}]" in out, out
    assert "max_padded_bytes=1073741824" in out, out


def test_max_padded_bytes_raises_the_bound_and_is_checked(tmp_path):
    from conftest import npy_bytes, write_shards
    arrays = {0: np.arange(300, dtype=np.int16).reshape(1, 300),
              1: np.arange(300, dtype=np.int16).reshape(300, 1)}
    pattern = write_shards(tmp_path, 1, 2, lambda i: [
        (f"s{i:03d}.grid.npy", npy_bytes(arrays[i])), (f"s{i:03d}.cls", b"%d" % i)])
    fields = {"grid": "grid.npy", "label": "cls"}
    block = 2 * 300 * 300 * 2
    small = stoker.Loader(stoker.Shards(pattern, fields=fields, length=2), batch_size=2,
                          threads=1, collate="pad", max_padded_bytes=block - 1)
    with pytest.raises(stoker.StokerError, match="past max_padded_bytes=359999"):
        next(iter(small))
    fits = stoker.Loader(stoker.Shards(pattern, fields=fields, length=2), batch_size=2,
                         threads=1, collate="pad", max_padded_bytes=block)
    batch = next(iter(fits))
    grid = batch["grid"].numpy()
    assert grid.shape == (2, 300, 300)
    by_label = {int(lab): k for k, lab in enumerate(batch["label"])}
    assert (grid[by_label[0], 0, :] == arrays[0][0]).all()
    assert (grid[by_label[1], :, 0] == arrays[1][:, 0]).all()
    assert grid[by_label[0], 1:, :].sum() == 0
    for bad in (0, -1, True, 1.5):
        with pytest.raises((ValueError, TypeError), match="max_padded_bytes"):
            stoker.Loader(stoker.Shards(pattern, fields=fields, length=2), batch_size=2,
                          collate="pad", max_padded_bytes=bad)


# ---------------------- round 4, item 12: field errors name their member ----

@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_a_text_or_json_field_error_names_its_own_member(tmp_path, mode):
    # They named the image member ("member s004.jpg: field 'caption'"), not the bad one.
    import io
    from conftest import tar_bytes

    def jpeg(i):
        b = io.BytesIO()
        save_jpeg(photo(16, 12, i), b)
        return b.getvalue()
    members = []
    for i in range(6):
        k = f"s{i:03d}"
        members += [(f"{k}.jpg", jpeg(i)),
                    (f"{k}.txt", b"\xff bad" if i == 4 else b"fine"),
                    (f"{k}.json", b"{bad" if i == 3 else b"{}"), (f"{k}.cls", b"1")]
    (tmp_path / "a.tar").write_bytes(tar_bytes(members))
    for fields, want in [({"image": "jpg", "caption": "txt", "label": "cls"},
                          "a.tar: sample s004: field 'caption' (member s004.txt): "
                          "not valid UTF-8 text"),
                         ({"image": "jpg", "meta": "json", "label": "cls"},
                          "a.tar: sample s003: field 'meta' (member s003.json): "
                          "not a valid JSON document: parse error at line 1, column 2")]:
        src = stoker.Shards(str(tmp_path / "a.tar"), fields=fields, mode=mode)
        loader = stoker.Loader(src, batch_size=6, threads=2, transforms=[stoker.Resize((8, 8))])
        with pytest.raises(stoker.StokerError) as e:
            next(iter(loader))
        assert want in str(e.value), str(e.value)
        assert ".jpg" not in str(e.value), str(e.value)


def test_a_field_error_served_from_the_decoded_cache_names_the_same_member(tmp_path):
    # The decoded cache keeps a copy of each field's member name (the value's name points
    # into the worker's scratch, reused by the next sample): the second epoch's error,
    # served from the cache, reads as the first's.
    import io
    from conftest import tar_bytes
    members = []
    for i in range(8):
        k = f"s{i:03d}"
        jpeg = io.BytesIO()
        save_jpeg(photo(16, 12, i), jpeg)
        members += [(f"{k}.jpg", jpeg.getvalue()), (f"{k}.txt", b"\xff bad" if i == 5 else b"ok"),
                    (f"{k}.cls", b"%d" % i)]
    (tmp_path / "a.tar").write_bytes(tar_bytes(members))
    src = stoker.Shards(str(tmp_path / "a.tar"), mode="indexed",
                        fields={"image": "jpg", "caption": "txt", "label": "cls"})
    loader = stoker.Loader(src, batch_size=8, threads=2, cache="decoded", cache_bytes=1 << 20,
                           transforms=[stoker.Resize((8, 8))])
    seen = []
    for epoch in range(2):
        with pytest.raises(stoker.StokerError) as e:
            next(iter(loader))
        seen.append(str(e.value))
    assert loader.stats()["cache"]["hits"] > 0, loader.stats()["cache"]
    assert "sample s005: field 'caption' (member s005.txt): not valid UTF-8" in seen[0], seen
    assert seen[1] == seen[0], seen
