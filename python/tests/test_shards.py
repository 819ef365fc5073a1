"""stoker.Shards: tar shards in the WebDataset convention, local and over HTTP.

The shards are written here with Python's tarfile (pax, GNU long names,
sub-directories, gzip, zstd through the zstd command, damaged ones), except
the fixture under data/wds-written, written by the webdataset library itself.
HTTP is served by a real nginx on loopback, and by a small real TCP server
that drops connections in the middle of a shard.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import socket
import socketserver
import subprocess
import tarfile
import threading
import time

import numpy as np
import pytest
from PIL import Image

import stoker
from conftest import needs_curl, photo

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "wds-written")


def jpeg(seed: int, size: int = 40) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(photo(size, size - 8, seed)).save(buf, format="JPEG", quality=92)
    return buf.getvalue()


def noisy_jpeg(seed: int) -> bytes:  # ~10 KB, compresses poorly
    rng = np.random.default_rng(seed)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(buf, format="JPEG")
    return buf.getvalue()


def tar_bytes(members, fmt=tarfile.PAX_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o444
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def samples(shard: int, n: int, prefix: str = "", image=jpeg):
    """Members of n samples: key.jpg, key.cls (label), key.json."""
    out = []
    for i in range(n):
        g = shard * 100 + i
        key = f"{prefix}s{shard:03d}_{i:04d}"
        out += [(key + ".jpg", image(g)), (key + ".cls", str(g % 10).encode()),
                (key + ".json", b'{"g": %d}' % g)]
    return out


def write(path, data: bytes, compress: str = ""):
    if compress == "gz":
        data = gzip.compress(data)
    elif compress == "zst":
        data = subprocess.run(["zstd", "-q", "-c"], input=data, stdout=subprocess.PIPE,
                              check=True).stdout
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def collect(source, **kw):
    kw.setdefault("batch_size", 4)
    kw.setdefault("transforms", [stoker.Resize((24, 24))])
    kw.setdefault("dtype", "uint8")
    loader = stoker.Loader(source, return_indices=True, **kw)
    images, labels, ids = [], [], []
    for im, lab, idx in loader:
        images.append(np.asarray(im))
        labels += list(np.asarray(lab))
        ids += list(np.asarray(idx))
    return (np.concatenate(images) if images else np.zeros((0,))), labels, ids, loader


# ------------------------------------------------------------------ fixture

def test_shards_written_by_webdataset_load_in_both_modes(tmp_path):
    want = []  # (label, image bytes) in tar order, read with tarfile
    for name in sorted(os.listdir(FIXTURE)):
        if not name.endswith(".tar"):
            continue
        with tarfile.open(os.path.join(FIXTURE, name)) as t:
            members = {m.name: t.extractfile(m).read() for m in t.getmembers()}
        keys = list(dict.fromkeys(n.split(".", 1)[0] for n in members))
        for k in keys:
            img = members.get(k + ".jpg", members.get(k + ".png"))
            want.append((int(members[k + ".cls"]), img))
    assert len(want) == 12
    expected = np.stack([np.asarray(Image.open(io.BytesIO(b)).convert("RGB").resize(
        (24, 24), Image.BILINEAR)) for _, b in want])

    pattern = os.path.join(FIXTURE, "sample-{000000..000001}.tar")
    for mode in ("indexed", "stream"):
        src = stoker.Shards(pattern, mode=mode, cache_dir=str(tmp_path / mode))
        images, labels, ids, _ = collect(src, layout="NHWC")
        assert labels == [w[0] for w in want], mode
        assert images.shape == (12, 24, 24, 3)
        # Same decoder family as Pillow: close, not necessarily bit-identical.
        assert np.abs(images.astype(int) - expected.astype(int)).mean() < 2.0, mode
    assert not [n for n in os.listdir(FIXTURE) if n.endswith(".idx")]  # cache_dir was used


# ------------------------------------------------------------------ layouts

@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    """The same 3 shards x 5 samples written in several tar flavours."""
    root = tmp_path_factory.mktemp("variants")
    out = {}
    flavours = {
        "plain": ("", tarfile.PAX_FORMAT, "", ".tar"),
        "gnu_long": ("d" * 60 + "/" + "e" * 60 + "/", tarfile.GNU_FORMAT, "", ".tar"),
        "pax_long": ("p" * 130 + "/", tarfile.PAX_FORMAT, "", ".tar"),
        "ustar_subdir": ("a/b/", tarfile.USTAR_FORMAT, "", ".tar"),
        "gzip": ("", tarfile.PAX_FORMAT, "gz", ".tar.gz"),
        "tgz": ("", tarfile.PAX_FORMAT, "gz", ".tgz"),
        "zstd": ("", tarfile.PAX_FORMAT, "zst", ".tar.zst"),
    }
    for name, (prefix, fmt, comp, ext) in flavours.items():
        d = root / name
        d.mkdir()
        for s in range(3):
            write(d / f"train-{s:06d}{ext}", tar_bytes(samples(s, 5, prefix), fmt), comp)
        out[name] = str(d / f"train-{{000000..000002}}{ext}")
    return out


def test_every_tar_flavour_gives_the_same_samples(variants):
    ref_images, ref_labels, _, _ = collect(stoker.Shards(variants["plain"]))
    assert ref_labels == [(s * 100 + i) % 10 for s in range(3) for i in range(5)]
    for name, pattern in variants.items():
        for mode in (("stream", "indexed") if pattern.endswith(".tar") else ("stream",)):
            images, labels, _, _ = collect(stoker.Shards(pattern, mode=mode))
            assert labels == ref_labels, (name, mode)
            assert np.array_equal(images, ref_images), (name, mode)


def test_auto_mode_and_len(variants):
    indexed = stoker.Shards(variants["plain"])
    assert len(indexed) == 15 and "indexed" in repr(indexed)
    loader = stoker.Loader(indexed, batch_size=4, transforms=[stoker.Resize((8, 8))])
    assert len(loader) == 4
    stream = stoker.Shards(variants["zstd"])
    assert "stream" in repr(stream)
    with pytest.raises(TypeError):
        len(stream)
    with pytest.raises(TypeError):
        len(stoker.Loader(stream, batch_size=4, transforms=[stoker.Resize((8, 8))]))
    with pytest.raises(ValueError, match="indexed"):
        stoker.Shards(variants["zstd"], mode="indexed")
    with pytest.raises(ValueError, match="mode"):
        stoker.Shards(variants["plain"], mode="fast")


def test_patterns_lists_globs_and_nothing_matching(variants):
    d = os.path.dirname(variants["plain"])
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".tar"))
    assert len(stoker.Shards(files)) == 15
    assert len(stoker.Shards(os.path.join(d, "train-*.tar"))) == 15
    assert len(stoker.Shards([files[0], os.path.join(d, "train-00000{1,2}.tar")])) == 15
    with pytest.raises(FileNotFoundError, match="nothing-"):
        stoker.Shards(os.path.join(d, "nothing-*.tar"))
    with pytest.raises(FileNotFoundError, match="train-000003.tar: No such file"):
        stoker.Shards(os.path.join(d, "train-{000000..000009}.tar"))


def test_indexed_shuffle_is_the_folder_permutation_and_exactly_once(variants):
    src = stoker.Shards(variants["plain"])
    _, labels, ids, loader = collect(src, shuffle=True, seed=7)
    assert sorted(ids) == list(range(15)) and ids != list(range(15))
    loader.set_epoch(0)
    again = [int(i) for _, _, idx in loader for i in idx]
    assert again == ids


def test_stream_shuffle_deterministic_for_any_threads_and_per_epoch(variants):
    src = stoker.Shards(variants["zstd"], shuffle_buffer=6, concurrent_shards=2)
    runs = [collect(src, shuffle=True, seed=3, threads=t) for t in (1, 2, 4)]
    for images, labels, ids, _ in runs[1:]:
        assert ids == runs[0][2]
        assert np.array_equal(images, runs[0][0])
    ids0 = runs[0][2]
    assert len(set(ids0)) == 15
    assert ids0 != sorted(ids0)
    loader = runs[0][3]
    loader.set_epoch(1)
    ids1 = [int(i) for _, _, idx in loader for i in idx]
    assert sorted(ids1) == sorted(ids0) and ids1 != ids0


# ------------------------------------------------------------------ damage

@pytest.fixture()
def damaged(tmp_path):
    """Three shards of 60 ~10 KB samples; the middle one damaged as asked (far enough in
    that the damage is met after some members were read)."""
    def make(kind):
        d = tmp_path / kind
        d.mkdir()
        comp = {"gzip": "gz", "zstd": "zst"}.get(kind, "")
        ext = {"gzip": ".tar.gz", "zstd": ".tar.zst"}.get(kind, ".tar")
        for s in range(3):
            raw = tar_bytes(samples(s, 60, image=noisy_jpeg), tarfile.USTAR_FORMAT)
            path = write(d / f"train-{s:06d}{ext}", raw, comp)
            if s != 1:
                continue
            data = bytearray(open(path, "rb").read())
            if kind == "truncated_member":
                off = raw.find(b"s001_0032.jpg")
                data = data[:off + 512 + 3000]  # inside s001_0012.jpg's data
            elif kind == "bad_checksum":
                off = raw.find(b"s001_0032.jpg")
                data[off + 3] ^= 0x20
            else:
                data = data[:len(data) * 2 // 3]
            open(path, "wb").write(bytes(data))
        return str(d / f"train-*{ext}")
    return make


@pytest.mark.parametrize("kind", ["truncated_member", "bad_checksum", "gzip", "zstd"])
def test_damaged_shard_raise_names_shard_and_member(damaged, kind):
    pattern = damaged(kind)
    for mode in (("stream", "indexed") if pattern.endswith(".tar") else ("stream",)):
        src = stoker.Shards(pattern, mode=mode)
        with pytest.raises(stoker.StokerError) as e:
            collect(src)
        msg = str(e.value)
        assert "train-000001" in msg, (mode, msg)
        assert "member s001_00" in msg, (mode, msg)


@pytest.mark.parametrize("kind", ["truncated_member", "bad_checksum", "gzip", "zstd"])
def test_damaged_shard_skip_goes_on_and_counts(damaged, kind):
    pattern = damaged(kind)
    src = stoker.Shards(pattern, mode="stream")
    _, labels, ids, loader = collect(src, on_error="skip")
    shards = [i >> 32 for i in ids]
    assert shards.count(0) == 60 and shards.count(2) == 60  # the stream went on
    assert 0 < shards.count(1) < 60
    assert loader.stats()["epoch"]["skipped"] == 1


def test_indexed_skip_leaves_damaged_samples_out(damaged):
    src = stoker.Shards(damaged("truncated_member"), mode="indexed")
    _, _, ids, loader = collect(src, on_error="skip")
    # As for folders: the damaged entry is left out, every other sample once.
    assert loader.stats()["epoch"]["skipped"] == loader.stats()["epoch"]["skipped_files"] == 1
    assert len(ids) == len(set(ids)) == len(src) - 1


# ------------------------------------------------------------------ HTTP

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc=None, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited: " + proc.stderr.read().decode(errors="replace"))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listening on {port}")


@pytest.fixture(scope="module")
def nginx(variants, tmp_path_factory):
    """nginx serving the variants' directories on a loopback port (no daemon, temp prefix)."""
    exe = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(exe):
        pytest.skip("nginx is not installed (scripts/install-deps.sh installs it)")
    prefix = tmp_path_factory.mktemp("nginx")
    root = os.path.dirname(os.path.dirname(variants["plain"]))
    port = free_port()
    temp = " ".join(f"{k}_temp_path {prefix}/{k};" for k in
                    ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    user = "user root;" if os.geteuid() == 0 else ""
    conf = prefix / "nginx.conf"
    conf.write_text(f"""{user}
worker_processes 1;
events {{ worker_connections 64; }}
http {{
  access_log off; {temp}
  server {{ listen 127.0.0.1:{port}; root {root}; location / {{ }} }}
}}
""")
    proc = subprocess.Popen(
        [exe, "-p", str(prefix), "-c", str(conf),
         "-g", f"daemon off; pid {prefix}/nginx.pid; error_log {prefix}/error.log;"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@needs_curl
def test_http_shards_from_nginx(nginx, variants, tmp_path):
    local = collect(stoker.Shards(variants["zstd"]))
    url = nginx + "/zstd/train-{000000..000002}.tar.zst"
    cache = tmp_path / "cache"
    remote = collect(stoker.Shards(url, cache_dir=str(cache)))
    assert remote[1] == local[1]
    assert np.array_equal(remote[0], local[0])
    # Each shard read to its end is cached whole under cache_dir.
    cached = sorted(n for n in os.listdir(cache) if not n.endswith(".lock"))  # fill locks
    assert len(cached) == 3 and all(n.endswith(".tar.zst") for n in cached)
    d = os.path.dirname(variants["zstd"])
    for n in cached:
        original = os.path.join(d, n.split("-", 1)[1])
        assert open(cache / n, "rb").read() == open(original, "rb").read()
    # Uncompressed remote shards stream too (indexed needs local files).
    plain = collect(stoker.Shards(nginx + "/plain/train-{000000..000002}.tar"))
    assert plain[1] == local[1]


@pytest.mark.skipif(stoker._C.built_with_curl(), reason="stoker was built with libcurl")
def test_without_curl_remote_shards_name_the_url_and_the_reason():
    for url in ("http://127.0.0.1:1/s-0.tar", "s3://bucket/s-0.tar"):
        with pytest.raises(stoker.StokerError, match="built without libcurl"):
            collect(stoker.Shards(url, retries=1))


@needs_curl
def test_http_404_names_the_url(nginx):
    url = nginx + "/zstd/missing-000000.tar"
    with pytest.raises(stoker.StokerError, match="missing-000000.tar.*404"):
        collect(stoker.Shards(url, retries=2, backoff_ms=1))


class _DroppingHandler(socketserver.StreamRequestHandler):
    """HTTP/1.1 with Range support; per path, the first `drops` responses are cut
    off after half of their body, and the connection closed."""

    def handle(self):
        server = self.server
        line = self.rfile.readline().decode()
        headers = {}
        while True:
            h = self.rfile.readline().decode()
            if h in ("\r\n", "\n", ""):
                break
            k, _, v = h.partition(":")
            headers[k.strip().lower()] = v.strip()
        path = line.split()[1]
        with server.lock:
            server.log.append((path, headers.get("range")))
            n = server.counts.get(path, 0)
            server.counts[path] = n + 1
        file = os.path.join(server.root, path.lstrip("/"))
        if not os.path.isfile(file):
            self.wfile.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        if n < server.errors_first:
            self.wfile.write(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        data = open(file, "rb").read()
        start = 0
        status = "200 OK"
        extra = ""
        if headers.get("range", "").startswith("bytes="):
            start = int(headers["range"][6:].split("-")[0])
            status = "206 Partial Content"
            extra = f"Content-Range: bytes {start}-{len(data) - 1}/{len(data)}\r\n"
        body = data[start:]
        self.wfile.write((f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{extra}"
                          "Connection: close\r\n\r\n").encode())
        if n < server.errors_first + server.drops:
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)


@pytest.fixture()
def dropping_server(variants):
    root = os.path.dirname(os.path.dirname(variants["plain"]))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _DroppingHandler)
    server.daemon_threads = True
    server.root, server.lock, server.log, server.counts = root, threading.Lock(), [], {}
    server.drops, server.errors_first = 2, 1
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@needs_curl
def test_http_dropped_connections_resume_without_loss_or_duplicates(dropping_server, variants):
    server, base = dropping_server
    local = collect(stoker.Shards(variants["gzip"]))
    remote = collect(stoker.Shards(base + "/gzip/train-{000000..000002}.tar.gz",
                                   retries=5, backoff_ms=1))
    assert remote[1] == local[1]
    assert np.array_equal(remote[0], local[0])
    # Per shard: a 503, two cut-off bodies, then the rest fetched with a Range request.
    for s in range(3):
        path = f"/gzip/train-{s:06d}.tar.gz"
        ranges = [r for p, r in server.log if p == path]
        assert len(ranges) == 4, ranges
        assert ranges[0] is None and ranges[1] is None
        offsets = [int(r[6:].split("-")[0]) for r in ranges[2:]]
        assert 0 < offsets[0] < offsets[1]


@needs_curl
def test_http_gives_up_with_a_clear_error(dropping_server):
    server, base = dropping_server
    server.errors_first = 100
    with pytest.raises(stoker.StokerError, match=r"train-000000.tar.gz.*HTTP 503.*3 attempts"):
        collect(stoker.Shards(base + "/gzip/train-000000.tar.gz", retries=3, backoff_ms=1))


@needs_curl
def test_http_cache_completes_when_the_tar_ends_before_the_file(nginx, variants, tmp_path):
    # libarchive stops at the end-of-archive blocks; 300 KB of padding follow them here.
    root = os.path.dirname(os.path.dirname(variants["plain"]))
    os.makedirs(os.path.join(root, "padded"), exist_ok=True)
    data = tar_bytes(samples(0, 3)) + bytes(300_000)
    write(os.path.join(root, "padded", "p-000000.tar"), data)
    cache = tmp_path / "cache"
    _, labels, _, _ = collect(stoker.Shards(nginx + "/padded/p-000000.tar", cache_dir=str(cache)))
    assert labels == [0, 1, 2]
    (cached,) = [n for n in os.listdir(cache) if not n.endswith(".lock")]
    assert open(cache / cached, "rb").read() == data


def test_diagnose_runs_on_a_stream(variants):
    loader = stoker.Loader(stoker.Shards(variants["zstd"]), batch_size=4,
                           transforms=[stoker.Resize((16, 16))])
    d = stoker.diagnose(loader, None, batches=3)
    assert [m["images_per_sec"] > 0 for m in d["modes"]] == [True] * 5
