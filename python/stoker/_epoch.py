"""One epoch of a Loader: the iterator that iter(loader) returns."""

from __future__ import annotations

import threading
import warnings

from stoker import _C, _exit, _monitor
from stoker import metrics as _metrics

try:  # torch is optional
    from torch.autograd import _profiler_enabled
    from torch.autograd.profiler import record_function
except ImportError:  # pragma: no cover - exercised only without torch
    def _profiler_enabled():
        return False

SUPERSEDED = ("this epoch's iterator was stopped by a newer iter() over the same loader (a "
               "nested for loop over one loader, or another thread iterating it?); use one "
               "iterator at a time")


class EpochIterator:
    """One epoch. Deleting it (e.g. on ``break``) stops the epoch's work."""

    def __init__(self, loader):
        self._loader = loader
        self._impl = loader._impl
        self._feeder = loader._feeder  # device loaders: the C++ DeviceLoader's wrapper
        self._done = False
        self._why = None  # set when the epoch was stopped from outside: next() raises it
        self._lock = threading.Lock()  # next() from several threads, one at a time
        self._epoch = int(self._impl.epoch)  # the epoch this iterator runs (the monitor's)
        # The run its start() began: a next() still waiting when another thread starts a
        # newer epoch ends instead of taking that epoch's batches.
        self._run = int(self._impl.run) if self._feeder is None else 0

    def __iter__(self):
        return self

    def __next__(self):
        # Before the lock: a Lambda calling next() would wait for it, and for itself.
        _C.refuse_in_worker_thread("next() on a loader's iterator")
        _exit.note_iterating_thread()  # interpreter exit: parks a thread that iterates
        with self._lock:
            if _profiler_enabled():  # a torch.profiler session records: a named range
                with record_function("stoker.next"):
                    return self._next_locked()
            return self._next_locked()

    def _next_locked(self):
        if self._why is not None:
            raise RuntimeError(self._why)
        if self._done:
            raise StopIteration
        try:
            if self._feeder is not None:  # already device tensors
                arrays = self._feeder.next()
                if arrays is not None:
                    if self._loader._batch_hooks:
                        _metrics._run_hooks(self._loader)
                    if self._loader._records:  # device tensors and host values
                        return _mix(self._loader, self._loader._convert.record(*arrays))
                    if self._loader._monitor is not None:
                        self._loader._monitor._observe(arrays[0], arrays[1])
                    return _mix(self._loader,
                                arrays if self._loader._return_indices else arrays[:2])
            else:
                arrays = self._impl.next(self._run)
        except BaseException as e:
            if isinstance(e, _monitor.DriftWarning):  # strict monitor: the epoch goes on
                raise
            if self._feeder is None and not isinstance(e, Exception):
                # Ctrl-C (or another interrupt): raised now, without waiting for a worker
                # inside a Python callable, which finishes its sample in the background.
                self._done = True
                self._impl.cancel()
            else:
                self._finish()
            raise
        if arrays is None:
            if self._why is not None:  # stopped from another thread while we waited
                raise RuntimeError(self._why)
            self._done = True
            warn_shard_cache(self._loader)
            if self._loader._monitor is not None:  # strict: raises DriftWarning instead
                self._loader._monitor._end_epoch(self._epoch)
            raise StopIteration
        if self._loader._batch_hooks:
            _metrics._run_hooks(self._loader)
        batch = self._loader._convert(arrays)
        if self._loader._monitor is not None and len(arrays) == 3:
            # The images as delivered, the labels as the source gave them (before
            # target_transform and batch_transform).
            self._loader._monitor._observe(batch[0], arrays[1])
        return _mix(self._loader, batch)

    def __len__(self) -> int:
        return len(self._loader)

    def _finish(self):
        if not self._done:
            self._done = True
            (self._feeder or self._impl).stop()

    def __del__(self):
        try:
            if not self._done:
                self._finish()
        except Exception:  # interpreter shutdown
            pass


def warn_shard_cache(loader) -> None:
    """At an epoch's end: a RuntimeWarning, once per loader, when Shards(cache_bytes=) is
    below what the node's ranks hold in the cache at once
    (stats()["shard_cache"]["too_small"]); and one per cached object that was served
    without its due check because the server did not answer it
    (stats()["shard_cache"]["unvalidated_objects"])."""
    if loader._impl is None:
        return
    cache = loader._impl.stats().get("shard_cache")
    if cache is None:
        return
    if cache["too_small"] and not loader._shard_cache_warned:
        loader._shard_cache_warned = True
        warnings.warn("Shards(cache_dir=...): " + cache["advice"], RuntimeWarning,
                      stacklevel=4)
    warned = loader.__dict__.setdefault("_unvalidated_warned", set())
    for what in cache["unvalidated_objects"]:
        if what not in warned:
            warned.add(what)
            warnings.warn(f"Shards(cache_dir=...): served the cached copy of {what} without "
                          "checking that the server still has that object (it did not "
                          "answer the check); counted in stats()['shard_cache']"
                          "['unvalidated']", RuntimeWarning, stacklevel=4)


def _mix(loader, batch):
    """The loader's batch_transform (MixUp, CutMix, ...) on (images, labels, ...)."""
    if loader._batch_transform is None:
        return batch
    images, labels = loader._batch_transform(batch[0], batch[1])
    return (images, labels) + tuple(batch[2:])
