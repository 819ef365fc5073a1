"""Issue 32, the I/O items: names that are not UTF-8 (stats, convert and Shards' class
names), shards cut at a member boundary, every CLI error a JSON object under --json,
and a checkpoint resumed with its data at another path. Real files, a real HTTP server
on loopback, the real CLI."""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest

import stoker
from conftest import photo, save_jpeg

ROOT = Path(__file__).resolve().parents[2]
VAL = [stoker.Resize(40), stoker.CenterCrop(32)]
LATIN1 = b"caf\xe9"  # "cafe" with e-acute, in Latin-1: not UTF-8


def stoker_cli() -> str:
    for p in (os.environ.get("STOKER_CLI"), ROOT / "build" / "stoker"):
        if p and os.access(p, os.X_OK):
            return str(p)
    pytest.skip("the stoker CLI is not built (set STOKER_CLI)")


def run_cli(*args, timeout: float = 120):
    return subprocess.run([os.fsencode(stoker_cli())] + [os.fsencode(str(a)) if not
                                                         isinstance(a, bytes) else a
                                                         for a in args],
                          capture_output=True, timeout=timeout)


def folder(root: Path, classes=(b"ant", LATIN1), n: int = 3) -> Path:
    k = 0
    for c in classes:
        d = os.path.join(os.fsencode(root), c)
        os.makedirs(d, exist_ok=True)
        for i in range(n):
            save_jpeg(photo(48, 40, 300 + k), os.fsdecode(os.path.join(d, b"img%d.jpg" % i)))
            k += 1
    return root


# ------------------------------------------------- item 3: stats on non-UTF-8 names ----

@pytest.mark.parametrize("as_json", [False, True])
def test_stats_names_that_are_not_utf8(tmp_path, as_json):
    root = folder(tmp_path / "f")
    # An unreadable file whose name is not UTF-8 either.
    (Path(os.fsdecode(os.path.join(os.fsencode(root), b"ant", b"bad\xff.jpg")))).write_bytes(b"x")
    r = run_cli("stats", root, *(["--json"] if as_json else []), "--no-progress")
    assert r.returncode == 0, (r.returncode, r.stderr)  # was SIGABRT (type_error 316)
    if as_json:
        rep = json.loads(r.stdout.decode("utf-8"))  # valid UTF-8 JSON
        assert [c["name"] for c in rep["classes"]] == ["ant", "caf\\xe9"]
        assert rep["unreadable"] == 1 and "bad\\xff.jpg" in rep["errors"][0]["name"]
        # The report reads back: the dataset against itself is the same.
        (tmp_path / "rep.json").write_bytes(r.stdout)
        again = run_cli("stats", root, "--against", tmp_path / "rep.json", "--json",
                        "--no-progress")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["shifted"] is False
    else:
        assert b"caf" in r.stdout


# ------------------------------------ item 25: convert, then Shards, with such names ----

def test_converted_latin1_class_names_load_in_shards(tmp_path):
    root = folder(tmp_path / "f")
    out = tmp_path / "shards"
    r = run_cli("convert", root, out, "--json", "--no-progress")
    assert r.returncode == 0, r.stderr
    text = (out / "classes.json").read_bytes()
    names = json.loads(text.decode("utf-8"))  # was raw Latin-1 bytes: not UTF-8, not JSON
    assert names == ["ant", os.fsdecode(LATIN1)]  # the str os.fsdecode gives, "caf\udce9"
    shards = stoker.Shards(str(out / "shard-*.tar"))
    assert shards.classes == names  # was UnicodeDecodeError
    assert stoker.ImageFolder(str(root)).classes == names
    loader = stoker.Loader(shards, batch_size=2, transforms=VAL, threads=1)
    assert sorted(int(x) for _, labels in loader for x in labels) == [0, 0, 0, 1, 1, 1]


# ---------------------------------- item 18: a shard cut at a member boundary ----

def shard_bytes(n: int, first: int = 0, end_blocks: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        offsets = []
        for i in range(first, first + n):
            jpg = io.BytesIO()
            save_jpeg(photo(24, 20, i), jpg)
            for name, data in ((f"k{i:03d}.jpg", jpg.getvalue()), (f"k{i:03d}.cls", b"%d" % i)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            offsets.append(t.offset)  # where sample i's members end
    data = buf.getvalue()
    return data if end_blocks else data[:offsets[-1]]


@pytest.fixture()
def cut_shards(tmp_path):
    """train-000 whole (5 samples); train-001 cut after 3 of its samples, at a member
    boundary, without end-of-archive blocks (what a copy interrupted there leaves)."""
    d = tmp_path / "cut"
    d.mkdir()
    whole, cut = shard_bytes(5, 0), shard_bytes(5, 5)
    cut = cut[:len(shard_bytes(3, 5, end_blocks=False))]
    assert cut == shard_bytes(3, 5, end_blocks=False)
    for name, data in (("train-000", whole), ("train-001", cut)):
        (d / f"{name}.tar").write_bytes(data)
        (d / f"{name}.tar.gz").write_bytes(gzip.compress(data))
    return d


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def http_dir(cut_shards):
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(cut_shards)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def labels_of(loader):
    return sorted(int(x) for _, labels in loader for x in labels)


@pytest.mark.parametrize("where", ["gzip", "http"])
def test_stream_shard_without_end_blocks_is_counted(cut_shards, http_dir, where):
    url = (str(cut_shards) if where == "gzip" else http_dir) + "/train-{000..001}.tar" + (
        ".gz" if where == "gzip" else "")
    loader = stoker.Loader(stoker.Shards(url), batch_size=4, transforms=VAL, threads=2)
    assert labels_of(loader) == list(range(8))  # what the shards hold, as before
    assert loader.stats()["truncated_shards"] == 1  # was not reported at all
    assert labels_of(loader) == list(range(8))
    assert loader.stats()["truncated_shards"] == 2  # counted each time it is read


@pytest.mark.parametrize("where", ["gzip", "http"])
def test_stream_shard_without_end_blocks_under_a_declared_length_is_an_error(
        cut_shards, http_dir, where):
    url = (str(cut_shards) if where == "gzip" else http_dir) + "/train-{000..001}.tar" + (
        ".gz" if where == "gzip" else "")
    loader = stoker.Loader(stoker.Shards(url, length=10), batch_size=4, transforms=VAL,
                           threads=2)
    with pytest.raises(stoker.StokerError, match=r"train-001\.tar.*end-of-archive"):
        labels_of(loader)


def test_indexed_shard_without_end_blocks_is_an_error(cut_shards):
    url = str(cut_shards) + "/train-{000..001}.tar"
    loader = stoker.Loader(stoker.Shards(url), batch_size=4, transforms=VAL, threads=2)
    with pytest.raises(stoker.StokerError, match=r"train-001\.tar.*end-of-archive"):
        labels_of(loader)
    skip = stoker.Loader(stoker.Shards(url), batch_size=4, transforms=VAL, threads=2,
                         on_error="skip")
    assert labels_of(skip) == list(range(8))
    assert skip.stats()["skipped"] == 1


# ------------------------------- item 35: every CLI error is JSON under --json ----

@pytest.mark.parametrize("args", [
    ["bench", "{missing}"],                                  # CLI11: not an existing directory
    ["decode", "{missing}"],
    ["diagnose", "{missing}"],
    ["tune", "{missing}"],
    ["stats", "{missing}"],                                  # stoker's own error
    ["convert", "{missing}", "{out}"],
    ["bench", "{root}", "--batch-size", "0"],                # CLI11: a validator
    ["bench", "{root}", "--no-such-option"],                 # CLI11: an unknown option
    ["stats", "{root}", "--against", "{missing}.json"],
    ["synth", "{root}/a/img0.jpg/x"],                         # a file where a folder must go
])
def test_cli_errors_are_json_objects_under_json(tmp_path, args):
    root = folder(tmp_path / "f", classes=(b"a", b"b"), n=1)
    subst = dict(missing=tmp_path / "missing", out=tmp_path / "out", root=root)
    argv = [a.format(**subst) for a in args] + ["--json"]
    r = run_cli(*argv)
    assert r.returncode not in (0, 3), r
    out = json.loads(r.stdout)  # was CLI11's plain text, or nothing, on stdout
    assert isinstance(out, dict) and out["error"] and out["tool"] == args[0], out
    assert "code" in out
    assert r.stderr  # the message still goes to stderr for people


def test_cli_json_help_and_version_are_unchanged():
    assert run_cli("--version").returncode == 0
    r = run_cli("bench", "--help", "--json")
    assert r.returncode == 0 and b"DATA" in r.stdout


# ------------------------------ item 37: resume with the data at another path ----

def epoch_labels_and_pixels(loader, start=0):
    it = iter(loader)
    out = []
    for images, labels in it:
        out.append((labels.numpy().copy(), images.numpy().copy()))
    return out


def resumed_matches(make, before: Path, after: Path, head: int = 2):
    """Runs `head` batches on the data at `before`, checkpoints, moves the data to
    `after`, resumes there: head + tail must equal an uninterrupted epoch."""
    full = epoch_labels_and_pixels(make(before))
    a = make(before)
    it = iter(a)
    got = [next(it) for _ in range(head)]
    got = [(l.numpy().copy(), x.numpy().copy()) for x, l in got]
    state = a.state_dict()
    del it, a
    shutil.move(str(before), str(after))
    b = make(after)
    b.load_state_dict(state)  # was "fingerprint of sample names differs"
    got += epoch_labels_and_pixels(b)
    assert len(got) == len(full)
    for (la, xa), (lb, xb) in zip(got, full):
        assert np.array_equal(la, lb) and np.array_equal(xa, xb)


def test_resume_after_moving_an_image_folder(tmp_path):
    root = folder(tmp_path / "a" / "train", classes=(b"x", b"y", b"z"), n=4)

    def make(p):
        return stoker.Loader(stoker.ImageFolder(str(p)), batch_size=3, shuffle=True, seed=4,
                             transforms=VAL, threads=2)

    resumed_matches(make, root.parent, tmp_path / "mounted" / "elsewhere")


@pytest.mark.parametrize("mode", ["indexed", "stream"])
def test_resume_after_moving_shards(tmp_path, mode):
    d = tmp_path / "staging"
    d.mkdir()
    for s in range(2):
        (d / f"train-{s:03d}.tar").write_bytes(shard_bytes(6, 6 * s))

    def make(p):
        return stoker.Loader(stoker.Shards(str(p / "train-{000..001}.tar"), mode=mode,
                                           length=12 if mode == "stream" else None,
                                           shuffle_buffer=4),
                             batch_size=3, shuffle=True, seed=4, transforms=VAL, threads=2)

    resumed_matches(make, d, tmp_path / "scratch" / "job42")


def test_another_dataset_is_still_refused(tmp_path):
    a = folder(tmp_path / "a", classes=(b"x", b"y"), n=3)
    b = folder(tmp_path / "b", classes=(b"x", b"y"), n=3)
    os.rename(b / "y" / "img2.jpg", b / "y" / "img9.jpg")  # same count, another file
    la = stoker.Loader(stoker.ImageFolder(str(a)), batch_size=2, transforms=VAL)
    lb = stoker.Loader(stoker.ImageFolder(str(b)), batch_size=2, transforms=VAL)
    with pytest.raises(ValueError, match="another dataset"):
        lb.load_state_dict(la.state_dict())


def test_a_cached_shard_the_server_cannot_validate_warns_once_and_is_counted(tmp_path):
    import warnings
    from conftest import write_shards
    served = tmp_path / "served"
    write_shards(str(served), 2, 3, lambda i: [(f"s{i:03d}.cls", str(i).encode()),
                                              (f"s{i:03d}.txt", b"t")])
    head_fails = threading.Event()

    class Handler(_QuietHandler):
        def do_HEAD(self):
            if head_fails.is_set():
                self.send_error(501)  # the check gets no answer
                return
            super().do_HEAD()

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/shard-{{0..1}}.tar"
        src = stoker.Shards(url, fields={"label": "cls", "t": "txt"},
                            cache_dir=str(tmp_path / "cache"), retries=1)
        loader = stoker.Loader(src, batch_size=3)

        def epoch():
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                labels = sorted(int(x) for b in loader for x in b["label"])
            return labels, [str(x.message) for x in w if "without checking" in str(x.message)]
        assert epoch() == (list(range(6)), [])  # downloaded into the cache
        head_fails.set()
        labels, warned = epoch()
        assert labels == list(range(6))  # still served from the cache, as documented
        assert len(warned) == 2 and all("501" in m for m in warned), warned  # one per shard
        assert {m.split(" (")[0].split()[-1] for m in warned} == {
            url.replace("{0..1}", "0"), url.replace("{0..1}", "1")}
        assert loader.stats()["shard_cache"]["unvalidated"] == 2
        assert epoch() == (list(range(6)), [])  # named once
        assert loader.stats()["shard_cache"]["unvalidated"] == 4
    finally:
        server.shutdown()
        server.server_close()
