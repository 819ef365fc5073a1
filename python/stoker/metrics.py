"""Live metrics of a Loader: for Prometheus (PrometheusCollector), TensorBoard scalars
(tensorboard(loader, writer)), or a plain callback every N batches (every()).

    server = stoker.metrics.serve(loader, 8000)  # http://127.0.0.1:8000/metrics
    ...
    server.close()

    stoker.metrics.PrometheusCollector(loader)   # or register in prometheus_client's REGISTRY

    stoker.metrics.every(loader, 100, lambda batch, m: print(batch, m["images_per_sec"]))

Each metric comes from ``loader.stats()`` (one lock, no work in the pipeline) at the moment
it is read; busy and wait fractions are over the loader's whole run so far.
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, Optional

__all__ = ["snapshot", "PrometheusCollector", "serve", "MetricsServer", "every", "tensorboard"]

# name -> (help, kind): "gauge" or "counter" (a running total).
METRICS = {
    "images_per_sec": ("Images delivered per second since the loader started", "gauge"),
    "read_busy_fraction": ("Worker time reading, as a fraction of the workers' time", "gauge"),
    "decode_busy_fraction": ("Worker time decoding, as a fraction of the workers' time",
                             "gauge"),
    "augment_busy_fraction": ("Worker time transforming, as a fraction of the workers' time",
                              "gauge"),
    "consumer_wait_fraction": ("Time the consumer waited inside next(), as a fraction of the "
                               "run", "gauge"),
    "queue_batches": ("Batches being filled or waiting in the queue", "gauge"),
    "ready_batches": ("Complete batches the consumer can take without waiting", "gauge"),
    "threads": ("Worker threads in use", "gauge"),
    "cache_hit_rate": ("Cache hits over lookups (0 without a cache)", "gauge"),
    "images": ("Images delivered", "counter"),
    "batches": ("Batches delivered", "counter"),
    "skipped_samples": ("Samples left out under on_error='skip'", "counter"),
    "padded_samples": ("Samples this rank repeated so that every rank yields the same count",
                       "counter"),
    "bytes_read": ("Encoded bytes read from the source", "counter"),
    "drift_checks": ("Comparisons a stoker.Monitor made with its reference (0 without one)",
                     "counter"),
    "drift_events": ("Checks that found an item drifted from the stoker.Monitor's reference "
                     "(one per item and check)", "counter"),
}


def snapshot(loader) -> Dict[str, float]:
    """The METRICS of ``loader`` now, as name -> value."""
    s = loader.stats()
    seconds = s["seconds"]
    worker_s = seconds * max(1, s["threads"])
    frac = (lambda x: x / worker_s) if worker_s > 0 else (lambda x: 0.0)
    cache = s.get("cache")
    monitor = s.get("monitor") or {}
    return {
        "images_per_sec": float(s["images_per_sec"]),
        "read_busy_fraction": frac(s["read_s"]),
        "decode_busy_fraction": frac(s["decode_s"]),
        "augment_busy_fraction": frac(s["augment_s"]),
        "consumer_wait_fraction": s["consumer_wait_s"] / seconds if seconds > 0 else 0.0,
        "queue_batches": float(s["batches_in_flight"]),
        "ready_batches": float(s["ready_batches"]),
        "threads": float(s["threads"]),
        "cache_hit_rate": float(cache["hit_rate"]) if cache else 0.0,
        "images": float(s["images"]),
        "batches": float(s["batches"]),
        "skipped_samples": float(s["skipped"]),
        "padded_samples": float(s["padded_samples"]),
        "bytes_read": float(s["bytes_read"]),
        "drift_checks": float(monitor.get("checks", 0)),
        "drift_events": float(monitor.get("drift_events", 0)),
    }


class PrometheusCollector:
    """A prometheus_client collector of ``loader``'s METRICS, each named
    ``<namespace>_<metric>`` (counters end in ``_total``) with the loader's rank as the
    ``rank`` label. Registers itself in ``registry`` (prometheus_client's default REGISTRY
    when None); unregister() takes it out. A closed loader exports nothing."""

    def __init__(self, loader, *, registry=None, namespace: str = "stoker"):
        from prometheus_client import REGISTRY

        self._loader = loader
        self._namespace = namespace
        self._registry = REGISTRY if registry is None else registry
        self._registry.register(self)

    def unregister(self) -> None:
        self._registry.unregister(self)

    def describe(self):
        return []  # collect() is cheap but needs a live loader: no names at registration

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        if getattr(self._loader, "_impl", None) is None:
            return
        values = snapshot(self._loader)
        rank = str(self._loader.stats()["rank"])
        for name, (help_text, kind) in METRICS.items():
            family = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            m = family(f"{self._namespace}_{name}", help_text, labels=["rank"])
            m.add_metric([rank], values[name])
            yield m


class MetricsServer:
    """The exporter that ``serve()`` starts: ``address`` (host, port), ``url``, ``close()``.
    Its own daemon thread accepts connections; each is served on a thread of its own, at
    most ``max_connections`` at once (more are closed at once, unanswered), and a client
    that sends nothing for ``timeout_s`` is dropped, so idle or half-sent requests cannot
    pile up threads or hold the exporter (prometheus_client's own server has no bound)."""

    def __init__(self, registry, addr: str, port: int, max_connections: int, timeout_s: float):
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        slots = threading.BoundedSemaphore(max_connections)

        class Handler(BaseHTTPRequestHandler):
            timeout = timeout_s  # the socket's: a silent client is dropped

            def do_GET(self):
                if self.path.split("?")[0] not in ("/", "/metrics"):
                    self.send_error(404)
                    return
                body = generate_latest(registry)
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # no line per scrape on stderr
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # a burst is accepted (and the excess closed) at once

            def process_request(self, request, client_address):
                if not slots.acquire(blocking=False):
                    self.shutdown_request(request)  # over the limit: closed, not queued
                    return
                super().process_request(request, client_address)

            def process_request_thread(self, request, client_address):
                try:
                    super().process_request_thread(request, client_address)
                finally:
                    slots.release()

        self._server = Server((addr, port), Handler)
        self.address = self._server.server_address[:2]
        host = self.address[0]
        self.url = f"http://{'[' + host + ']' if ':' in host else host}:{self.address[1]}/metrics"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="stoker.metrics exporter")
        self._thread.start()

    def close(self) -> None:
        """Stops accepting and closes the listening socket."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def serve(loader=None, port: int = 8000, addr: str = "127.0.0.1", *, registry=None,
          max_connections: int = 16, timeout_s: float = 5.0) -> MetricsServer:
    """Serves Prometheus metrics at ``http://addr:port/metrics`` from a thread of its own
    and returns the MetricsServer; with ``loader``, a PrometheusCollector of it is
    registered first (in ``registry``; default: prometheus_client's REGISTRY, which
    ``registry`` is also what is served). Binds loopback by default: anyone who can reach
    ``addr`` reads the metrics (dataset size, throughput, rank), so give ``addr="0.0.0.0"``
    only on a network you trust, for a scraper on another host. ``port=0`` picks a free
    port (``server.address``). Prints the address it serves on to stderr, once."""
    from prometheus_client import REGISTRY

    for name, value, low in (("max_connections", max_connections, 1), ("port", port, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    registry = REGISTRY if registry is None else registry
    if loader is not None:
        PrometheusCollector(loader, registry=registry)
    server = MetricsServer(registry, addr, port, max_connections, float(timeout_s))
    print(f"stoker.metrics: serving {server.url}", file=sys.stderr)
    return server


def every(loader, n: int, fn: Callable[[int, Dict[str, float]], None]) -> Callable[[], None]:
    """Calls ``fn(batches, metrics)`` on the consumer's thread after every ``n``-th batch
    the loader delivers (``batches``: delivered so far by this Loader object; ``metrics``:
    snapshot(loader)). For TensorBoard:
    ``every(loader, 100, lambda b, m: [writer.add_scalar(f"stoker/{k}", v, b) for k, v in
    m.items()])``. Returns a function that removes the callback."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    hook = (n, fn)
    loader._batch_hooks.append(hook)

    def remove():
        if hook in loader._batch_hooks:
            loader._batch_hooks.remove(hook)
    return remove


def tensorboard(loader, writer, n: int = 100, prefix: str = "stoker/") -> Callable[[], None]:
    """Writes every METRIC of ``loader`` as a TensorBoard scalar after every ``n``-th batch:
    ``writer.add_scalar(prefix + name, value, batches)`` for a
    ``torch.utils.tensorboard.SummaryWriter`` (or anything with its ``add_scalar(tag,
    scalar_value, global_step)``), the step being the batches this Loader object delivered.
    Returns a function that removes the hook. ``every()`` with your own callback does the
    same for other loggers."""
    add = getattr(writer, "add_scalar", None)
    if not callable(add):
        raise TypeError(f"writer must have add_scalar(tag, value, step) like torch's "
                        f"SummaryWriter, got {type(writer).__name__}")

    def write(batches: int, metrics: Dict[str, float]) -> None:
        for name, value in metrics.items():
            add(prefix + name, value, batches)
    return every(loader, n, write)


def _run_hooks(loader) -> None:
    loader._batches_delivered += 1
    count = loader._batches_delivered
    due = [fn for n, fn in loader._batch_hooks if count % n == 0]
    if due:
        values = snapshot(loader)
        for fn in due:
            fn(count, dict(values))
