"""stoker.metrics: a PrometheusCollector scraped over real HTTP from prometheus_client's own
WSGI app on 127.0.0.1, and the every-N-batches callback.

Known answers: after one epoch the scraped counters equal the loader's own (images, batches,
bytes read), the rank label is the loader's rank, the fractions lie in [0, 1]; the callback
runs after batches N, 2N, ... with the same counters the loader reports then.
"""

from __future__ import annotations

import threading
import urllib.request
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

import stoker
from conftest import SMALL_CLASSES

prometheus_client = pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

N = sum(SMALL_CLASSES.values())


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def make(root, **kw):
    return stoker.Loader(stoker.ImageFolder(root), batch_size=8, threads=2,
                         transforms=[stoker.Resize(24), stoker.CenterCrop(24)], **kw)


def scrape(registry):
    server = make_server("127.0.0.1", 0, prometheus_client.make_wsgi_app(registry),
                         handler_class=_Quiet)
    thread = threading.Thread(target=server.handle_request)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as r:
            assert r.status == 200
            text = r.read().decode()
    finally:
        thread.join()
        server.server_close()
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = (sample.value, sample.labels)
    return out


def test_prometheus_scrape_over_http(small_root):
    registry = prometheus_client.CollectorRegistry()
    loader = make(small_root, rank=1, world_size=2)
    stoker.metrics.PrometheusCollector(loader, registry=registry)
    for _ in loader:
        pass
    stats = loader.stats()
    got = scrape(registry)
    assert got["stoker_images_total"] == (stats["images"], {"rank": "1"})
    assert got["stoker_batches_total"][0] == stats["batches"] == len(loader)
    assert got["stoker_bytes_read_total"][0] == stats["bytes_read"] > 0
    assert got["stoker_padded_samples_total"][0] == stats["padded_samples"]
    assert got["stoker_skipped_samples_total"][0] == 0
    assert got["stoker_threads"][0] == 2
    assert got["stoker_images_per_sec"][0] > 0
    for name in ("read_busy_fraction", "decode_busy_fraction", "augment_busy_fraction",
                 "consumer_wait_fraction"):
        assert 0 <= got[f"stoker_{name}"][0] <= 1, name
    assert got["stoker_decode_busy_fraction"][0] > 0
    assert "stoker_queue_batches" in got and "stoker_ready_batches" in got
    assert got["stoker_cache_hit_rate"][0] == 0


def test_cache_hit_rate_and_closed_loader(small_root):
    registry = prometheus_client.CollectorRegistry()
    loader = make(small_root, cache="output", cache_bytes=64 << 20)
    collector = stoker.metrics.PrometheusCollector(loader, registry=registry)
    for _ in range(2):
        for _ in loader:
            pass
    # The threads go on to prefetch the next epoch, from the cache (every read a hit): the
    # rate only rises while they do, so the scrape lies between two stats() around it.
    before = loader.stats()["cache"]["hit_rate"]
    got = scrape(registry)
    after = loader.stats()["cache"]["hit_rate"]
    assert before - 1e-9 <= got["stoker_cache_hit_rate"][0] <= after + 1e-9
    assert 0.4 < got["stoker_cache_hit_rate"][0] <= 1  # the second epoch hits
    loader.close()
    assert not any(k.startswith("stoker_") for k in scrape(registry))
    collector.unregister()


def test_every_n_batches(small_root):
    loader = make(small_root)
    calls = []
    remove = stoker.metrics.every(loader, 2, lambda b, m: calls.append((b, m["batches"])))
    for _ in loader:
        pass
    nb = len(loader)
    assert [c[0] for c in calls] == list(range(2, nb + 1, 2))
    # The counters are the loader's when the batch was handed out.
    assert all(batches == b for b, batches in calls)
    remove()
    for _ in loader:
        pass
    assert len(calls) == nb // 2
    with pytest.raises(ValueError):
        stoker.metrics.every(loader, 0, print)


def test_tensorboard_scalars(small_root):
    """tensorboard(loader, writer) writes each metric with SummaryWriter's add_scalar(tag,
    value, step) every n batches (torch.utils.tensorboard needs the tensorboard package,
    which Debian lacks: a writer recording the calls stands in for it)."""
    class Writer:
        def __init__(self):
            self.scalars = []

        def add_scalar(self, tag, scalar_value, global_step):
            self.scalars.append((tag, scalar_value, global_step))

    loader = make(small_root)
    w = Writer()
    remove = stoker.metrics.tensorboard(loader, w, 3)
    for _ in loader:
        pass
    nb = len(loader)
    steps = sorted({s for _, _, s in w.scalars})
    assert steps == list(range(3, nb + 1, 3))
    tags = {t for t, _, _ in w.scalars}
    assert tags == {"stoker/" + k for k in stoker.metrics.METRICS}
    # At step s the loader had delivered s batches.
    assert all(("stoker/batches", s, s) in w.scalars for s in steps)
    remove()
    with pytest.raises(TypeError, match="add_scalar"):
        stoker.metrics.tensorboard(loader, object())


def test_serve_binds_loopback_and_outlasts_a_flood_of_half_sent_requests(small_root, capfd):
    import http.client
    import socket
    import time
    import urllib.error

    registry = prometheus_client.CollectorRegistry()
    loader = make(small_root)
    before = threading.active_count()
    with stoker.metrics.serve(loader, 0, registry=registry, max_connections=4,
                              timeout_s=1.0) as server:
        assert server.address[0] == "127.0.0.1"  # loopback unless told otherwise
        assert f"serving {server.url}" in capfd.readouterr().err  # its address, said once
        # 200 clients that send half a request line, then nothing: prometheus_client's own
        # server gives each a thread for as long as it stays.
        idle = []
        for _ in range(200):
            s = socket.create_connection(server.address, timeout=5)
            s.sendall(b"GET /met")
            idle.append(s)
        # The exporter's thread plus at most max_connections serving threads.
        assert threading.active_count() - before <= 1 + 4
        for _ in loader:  # the training loop goes on meanwhile
            pass
        got, deadline = None, time.monotonic() + 30
        while got is None and time.monotonic() < deadline:
            try:  # the idle clients' slots free as their timeout_s ends
                with urllib.request.urlopen(server.url, timeout=5) as r:
                    got = {s.name: s.value for f in text_string_to_metric_families(
                        r.read().decode()) for s in f.samples}
            except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
                time.sleep(0.05)
        assert got is not None, "never answered after the flood"
        assert got["stoker_images_total"] == loader.stats()["images"] == N
        for s in idle:
            s.close()
    with pytest.raises(ValueError, match="max_connections must be an int >= 1"):
        stoker.metrics.serve(loader, 0, registry=registry, max_connections=0)
