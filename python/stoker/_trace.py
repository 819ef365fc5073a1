"""Spans of what stoker's threads do: Loader.trace() and stoker.profiler.

A trace session records, per worker thread, the read, decode (with its path), each transform
step and the caches of every sample, and on the consumer each ``next()`` (hand-off), the wait
inside it (with the stage that was short) and the batch's assembly (collate). Every span
carries the sample id, the batch and the epoch. The result is Chrome trace / Perfetto JSON.
Memory is bounded: a ring of ``spans_per_thread`` spans (48 bytes each) per recording thread
keeps the newest; the file's ``otherData.dropped_spans`` says how many were overwritten.
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Optional

from stoker import _C

# Spans per recording thread (3 MiB per thread at 48 bytes a span).
DEFAULT_SPANS_PER_THREAD = 1 << 16


def _check_writable(path: str) -> None:
    """Whether the trace can be written at `path` at the end (into a file beside it, renamed
    over it): its directory exists and is writable, and `path` is not a directory. Raises
    FileNotFoundError, PermissionError or IsADirectoryError naming the path."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"trace path {path!r}: the directory {folder!r} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"trace path {path!r} is a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(f"trace path {path!r}: the directory {folder!r} is not writable")


class TraceSession:
    """A recording in progress (Loader.trace). As a context manager it stops at the end of
    the block and writes ``path`` when one was given; otherwise call stop() and write()."""

    def __init__(self, tracer, path: Optional[str], spans_per_thread: int):
        self._tracer = tracer
        self._path = None if path is None else os.fspath(path)
        if self._path is not None:
            _check_writable(self._path)  # now, not after the whole traced run
        tracer.start(spans_per_thread=int(spans_per_thread))

    @property
    def on(self) -> bool:
        return self._tracer.on

    def stop(self) -> None:
        """Stops recording; writes the trace to the session's path, if it has one."""
        self._tracer.stop()
        if self._path is not None:
            self._tracer.write(self._path)

    def write(self, path) -> None:
        """Writes what was recorded (so far) as Chrome trace JSON."""
        self._tracer.write(os.fspath(path))

    def events(self) -> list:
        """The spans as a list of Chrome trace events (dicts), ts in µs from the start."""
        return json.loads(self._tracer.events_json())

    def dropped(self) -> int:
        """Spans overwritten in the rings before they were collected."""
        return int(self._tracer.dropped())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


_SYNC_MARKS = 8


def _sync_name(token: str) -> str:
    return f"stoker.clock_sync {token}"


def attach(prof, loader, *, spans_per_thread: int = DEFAULT_SPANS_PER_THREAD):
    """Puts ``loader``'s spans into the trace ``prof`` (an active torch.profiler.profile)
    exports: starts the loader's trace (if it is not on), marks the two clocks in the
    profiler (``stoker.clock_sync`` ranges), and wraps ``prof.export_chrome_trace`` so that
    the file it writes also holds every stoker span, on the profiler's clock, each worker on
    its own thread row. Call it inside the ``with profile(...)`` block, while it records.
    Returns ``prof``."""
    from torch.autograd.profiler import record_function

    tracer = loader._live().tracer
    if not tracer.on:
        tracer.start(spans_per_thread=int(spans_per_thread))
    # Several marks: the first range of a session can be slow to open (the profiler's own
    # set-up); merge() aligns on the shortest.
    token = secrets.token_hex(4)
    marks = []
    for i in range(_SYNC_MARKS):
        with record_function(_sync_name(f"{token}.{i}")):
            t0 = _C.trace_clock_ns()
            t1 = _C.trace_clock_ns()
        marks.append((f"{token}.{i}", t0, t1))
    loader._trace_sync = marks
    export = prof.export_chrome_trace

    def export_chrome_trace(path):
        result = export(path)
        merge(path, loader)
        return result

    prof.export_chrome_trace = export_chrome_trace
    return prof


def merge(trace_path, loader) -> int:
    """Adds ``loader``'s spans to a trace torch.profiler already exported (rewriting the
    file), on that trace's clock, aligned by the ``stoker.clock_sync`` ranges that
    ``attach(prof, loader)`` left in it. Returns the number of spans added. ValueError when
    the trace has no such range (attach was not called while the profiler recorded)."""
    path = os.fspath(trace_path)
    sync = getattr(loader, "_trace_sync", None)
    with open(path) as f:
        trace = json.load(f)
    events = trace if isinstance(trace, list) else trace.setdefault("traceEvents", [])
    by_name = {e.get("name"): e for e in events if "ts" in e}
    found = [(by_name[_sync_name(tok)], t0, t1) for tok, t0, t1 in (sync or ())
             if _sync_name(tok) in by_name]
    if not found:
        raise ValueError(f"{path}: no stoker.clock_sync range for this loader; call "
                         "stoker.profiler.attach(prof, loader) inside the profiled block, "
                         "while the profiler records")
    # The shortest range: it encloses the two clock reads most tightly, so the midpoints of
    # the range and of the reads are the same instant to within its length.
    marker, t0, t1 = min(found, key=lambda f: float(f[0].get("dur", 0)))
    mid_us = float(marker["ts"]) + float(marker.get("dur", 0)) / 2
    origin_ns = int(round((t0 + t1) / 2 - mid_us * 1000))
    tracer = loader._live().tracer
    added = json.loads(tracer.events_json(origin_ns=origin_ns,
                                          pid_json=json.dumps(marker.get("pid", os.getpid()))))
    events.extend(added)
    with open(path, "w") as f:
        json.dump(trace, f)
    return sum(1 for e in added if e.get("ph") == "X")
