"""What a Loader does at interpreter exit: loaders that run Python callables are stopped,
and threads other than the main one that iterate a loader park, so that no worker or
iterating thread is inside Python while the interpreter finalises."""

from __future__ import annotations

import atexit
import threading
import time
import weakref

from stoker import _C


# Loaders that run Python callables in their worker threads. They are closed before the
# interpreter shuts down: a worker that took the GIL during shutdown would be ended by
# CPython in the middle of its sample, and the loader could never stop.
WITH_CALLABLES = weakref.WeakSet()


# How long the interpreter's exit waits for the workers of loaders that run Python callables
# to finish the samples in hand.
_EXIT_GRACE_S = 2.0


@atexit.register
def _close_loaders_with_callables() -> None:
    # Each is cancelled without waiting, then stopped on a helper thread for up to
    # _EXIT_GRACE_S (the callables need the GIL, which the waiting main thread lets go), so
    # no worker is inside Python when finalization starts. A loader still not stopped then
    # (a worker blocked in its callable: an Event never set, a long sleep after Ctrl-C) is
    # abandoned: never destroyed, its threads ended by the process exit (a worker that
    # returns from Python meanwhile parks, without the GIL).
    pending = []
    for loader in list(WITH_CALLABLES):
        impl = None
        try:
            impl = loader._impl
            it = loader._iterator() if loader._iterator is not None else None
            if it is not None:
                it._done = True
            loader._impl = loader._feeder = loader._iterator = None
            if impl is None:
                continue
            impl.cancel()
            stopper = threading.Thread(target=impl.stop, daemon=True,
                                       name="stoker exit: stop a loader")
            stopper.start()
            pending.append((impl, stopper))
        except Exception:  # pragma: no cover - best effort at exit (a thread refused)
            if impl is not None:
                impl.abandon()
    deadline = time.monotonic() + _EXIT_GRACE_S
    for impl, stopper in pending:
        stopper.join(max(0.0, deadline - time.monotonic()))
        if stopper.is_alive():
            impl.abandon()

# At interpreter exit a thread other than the main one that still iterates a loader (a
# daemon thread's `for b in loader`) parks for good at its next iter() or next(), without
# the GIL: while the interpreter finalises it runs no more Python. Left running, it could be
# inside a tensor's deallocation when finalization ends it (torch releases the GIL there:
# "terminate called without an active exception", SIGABRT). The exit waits up to
# _EXIT_PARK_S for each such thread that is alive to park (one busy elsewhere for good
# delays the exit by that much).
_EXITING = False
_ITERATING = weakref.WeakSet()  # the threads other than the main one that called next()
_PARKED_THREADS = weakref.WeakSet()
_PARKED = threading.Condition()
_EXIT_PARK_S = 1.0


def note_iterating_thread() -> None:
    # In next(): remembers a thread other than the main one, and parks it at exit.
    thread = threading.current_thread()
    if thread is not threading.main_thread():
        _ITERATING.add(thread)
        park_if_exiting()


def park_if_exiting() -> None:
    thread = threading.current_thread()
    if _EXITING and thread is not threading.main_thread():
        with _PARKED:
            _PARKED_THREADS.add(thread)
            _PARKED.notify_all()
        _C.park_forever()


@atexit.register  # after _close_loaders_with_callables: run before it (atexit is LIFO)
def _park_iterating_threads() -> None:
    global _EXITING
    with _PARKED:
        _EXITING = True
        deadline = time.monotonic() + _EXIT_PARK_S
        while any(t.is_alive() and t not in _PARKED_THREADS for t in list(_ITERATING)):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _PARKED.wait(left)
