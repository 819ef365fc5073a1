"""A node-wide shard cache smaller than what the ranks hold in it at once.

Such a cache_bytes evicts shards while they are still wanted, so every shard read again is
downloaded again: as many downloads as without a cache (or more), silently until now.
stats()["shard_cache"] gives the downloads, the hits and the floor (the largest shard x the
shards a rank holds open or opening x LOCAL_WORLD_SIZE), says too_small, and the Loader warns
once. Served by a real HTTP server that counts the GET requests."""

import collections
import functools
import http.server
import io
import threading
import warnings

import pytest

import stoker
from conftest import photo, save_jpeg, tar_bytes

SHARDS, PER = 6, 5
T = [stoker.Resize(8), stoker.CenterCrop(8)]


class _Counting(http.server.SimpleHTTPRequestHandler):
    gets = None  # a Counter, set per server

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.gets[self.path] += 1
        return super().do_GET()


@pytest.fixture()
def served(tmp_path):
    """SHARDS equal tar shards over HTTP: (URL pattern, shard size, GET counter)."""
    for s in range(SHARDS):
        members = []
        for i in range(PER):
            jpg = io.BytesIO()
            save_jpeg(photo(40, 30, s * PER + i), jpg)
            members += [(f"k{s}_{i}.jpg", jpg.getvalue()), (f"k{s}_{i}.cls", b"%d" % i)]
        (tmp_path / f"s-{s:03d}.tar").write_bytes(tar_bytes(members))
    sizes = {(tmp_path / f"s-{s:03d}.tar").stat().st_size for s in range(SHARDS)}
    gets = collections.Counter()
    handler = type("H", (_Counting,), {"gets": gets})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/s-{{000..{SHARDS - 1:03d}}}.tar"
        yield url, max(sizes), gets
    finally:
        server.shutdown()
        server.server_close()


def two_epochs(url, tmp_path, cache_bytes, **kw):
    src = stoker.Shards(url, cache_dir=str(tmp_path / "cache"), cache_bytes=cache_bytes,
                        concurrent_shards=2)
    loader = stoker.Loader(src, batch_size=4, shuffle=True, seed=1, threads=2, transforms=T,
                           **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in range(2):
            loader.set_epoch(epoch)
            assert sum(len(y) for _, y in loader) == SHARDS * PER
    return loader.stats()["shard_cache"], [w for w in caught
                                           if issubclass(w.category, RuntimeWarning)]


def test_a_cache_below_the_floor_is_reported_and_warned(served, tmp_path):
    url, size, gets = served
    # One rank, shuffled, concurrent_shards=2: 4 shards held at once; room for 2.
    cache, warned = two_epochs(url, tmp_path, 2 * size)
    assert cache["floor"] == 4 * size
    assert cache["capacity"] == 2 * size
    assert cache["too_small"] is True
    assert cache["downloads"] == sum(gets.values())
    assert cache["downloads"] > SHARDS, "the second epoch downloaded its shards again"
    assert len(warned) == 1, "warned once, not every epoch"
    msg = str(warned[0].message)
    assert f"cache_bytes={2 * size}" in msg and f"at least {4 * size}" in msg
    assert cache["advice"].split(" (")[0] in msg


@pytest.mark.parametrize("room", [0, SHARDS + 4])
def test_a_cache_that_holds_the_floor_is_quiet_and_reused(served, tmp_path, room):
    url, size, gets = served
    cache, warned = two_epochs(url, tmp_path, room * size)
    assert cache["too_small"] is False and cache["advice"] == ""
    assert warned == []
    assert cache["downloads"] == sum(gets.values()) == SHARDS, "each shard downloaded once"
    assert cache["hits"] == SHARDS, "the second epoch read them from the cache"


def test_the_floor_counts_the_local_ranks(served, tmp_path, monkeypatch):
    url, size, _ = served
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    # 2 local ranks x 4 shards: 8 shards' room needed; 6 is short (one rank reads here).
    cache, warned = two_epochs(url, tmp_path, 6 * size, rank=0, world_size=1)
    assert cache["floor"] == 8 * size and cache["too_small"] is True
    assert len(warned) == 1


def test_no_shard_cache_no_field(served):
    url, _, _ = served
    loader = stoker.Loader(stoker.Shards(url), batch_size=4, threads=2, transforms=T)
    assert sum(len(y) for _, y in loader) == SHARDS * PER
    assert "shard_cache" not in loader.stats()
