"""Live metrics of a Loader: for Prometheus (PrometheusCollector), TensorBoard scalars
(tensorboard(loader, writer)), or a plain callback every N batches (every()).

    from prometheus_client import start_http_server
    stoker.metrics.PrometheusCollector(loader)   # registers in prometheus_client's REGISTRY
    start_http_server(8000)

    stoker.metrics.every(loader, 100, lambda batch, m: print(batch, m["images_per_sec"]))

Each metric comes from ``loader.stats()`` (one lock, no work in the pipeline) at the moment
it is read; busy and wait fractions are over the loader's whole run so far.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional

__all__ = ["snapshot", "PrometheusCollector", "every", "tensorboard"]

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
