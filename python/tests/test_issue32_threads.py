"""Issue 32, the threads-and-shutdown items: interpreter exit while a daemon thread
iterates (1), Ctrl-C while a Lambda runs (4), a Lambda calling next() on its own loader
(5), close() / iter() / load_state_dict() from another thread while one iterates (13), and
a Lambda's interrupts under on_error="skip" (23). The hang and crash cases run in child
processes under timeouts."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import stoker
from conftest import SMALL_CLASSES, stoker_python_dir

N = sum(SMALL_CLASSES.values())


def run_child(body: str, root: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs `body` in a fresh interpreter with `folder` (an ImageFolder of `root`); a hang
    fails the test by its timeout."""
    script = textwrap.dedent(f"""
        import sys, os, signal, threading, time, gc, queue
        sys.path.insert(0, {stoker_python_dir()!r})
        import numpy as np
        import stoker
        # SIGINT may come ignored from a parent (a background job of a script):
        # install Python's handler, as an interactive run has it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        folder = stoker.ImageFolder(sys.argv[1])
    """) + textwrap.dedent(body)
    try:
        return subprocess.run([sys.executable, "-c", script, root], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child hung ({timeout} s); stderr: {e.stderr!r}")


# ---------------------------------------------------------------- item 1 ----

@pytest.mark.parametrize("with_lambda", [False, True])
def test_interpreter_exit_while_a_daemon_thread_iterates(small_root, with_lambda):
    # The daemon thread is inside next() (the GIL released) or its Ctrl-C poll when the
    # interpreter finalises; taking the GIL back then ended the thread inside a
    # destructor: SIGABRT, "terminate called without an active exception".
    transforms = "[stoker.Resize((16, 16))" + (", lambda img: 255 - img]" if with_lambda
                                               else "]")
    body = f"""
        L = stoker.Loader(folder, batch_size=2, threads=2, transforms={transforms})
        q = queue.Queue()
        def run():
            while True:
                for b in L:
                    q.put(b)
        threading.Thread(target=run, daemon=True).start()
        for _ in range(20):
            q.get()
        print("done", flush=True)
    """
    for _ in range(4):
        r = run_child(body, small_root)
        assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
        assert r.stdout.strip() == "done"
        assert "terminate" not in r.stderr


# ---------------------------------------------------------------- item 4 ----

BLOCKED_LAMBDA = """
    never = threading.Event()
    started = threading.Event()
    def blocked(img):
        started.set()
        never.wait()  # never set: only an abandoned worker lets the process end
        return img
    L = stoker.Loader(folder, batch_size=4, threads=2,
                      transforms=[stoker.Resize((16, 16)), blocked])
    it = iter(L)
    main = threading.get_ident()
    def interrupt():
        started.wait()
        # SIGINT once the main thread waits inside next()
        while True:
            frame = sys._current_frames().get(main)
            if frame is not None and frame.f_code.co_name == "_next_locked":
                break
            time.sleep(0.001)
        global t_sigint
        t_sigint = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=interrupt, daemon=True).start()
"""


def test_ctrl_c_does_not_wait_for_a_lambda_blocked_for_good(small_root):
    # The Lambda never returns. Before: next() raised KeyboardInterrupt only after the
    # epoch's stop, which waited for the worker forever (a second Ctrl-C too).
    r = run_child(BLOCKED_LAMBDA + """
    try:
        next(it)
        print("no interrupt", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted after {time.monotonic() - t_sigint:.3f} s", flush=True)
    # the loader stays usable for what does not wait for the worker
    print("state", L.state_dict()["consumed"], flush=True)
    """, small_root)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.split("\n")
    assert lines[0].startswith("interrupted after"), r.stdout
    assert lines[1] == "state 0"
    print(lines[0])  # reported, not asserted (no timing assertions)


def test_uncaught_ctrl_c_with_a_blocked_lambda_ends_the_process(small_root):
    # Uncaught: the interpreter exits by SIGINT, abandoning the blocked worker (the
    # exit does not wait for it).
    r = run_child(BLOCKED_LAMBDA + """
    next(it)
    """, small_root)
    assert r.returncode == -2, (r.returncode, r.stderr[-2000:])
    assert "KeyboardInterrupt" in r.stderr
    assert "terminate" not in r.stderr


def test_after_ctrl_c_iter_and_close_wait_for_a_blocked_lambda_interruptibly(small_root):
    # After a caught Ctrl-C the worker is still in the Lambda. Before: the next iter() and
    # close() waited for it without polling for signals, so a second Ctrl-C was ignored
    # and a Lambda blocked for good hung them for good. Now each wait is interruptible,
    # and once the Lambda returns the loader serves a whole epoch.
    r = run_child("""
    release = threading.Event()
    started = threading.Event()
    def blocked(img):
        started.set()
        release.wait()
        return img
    L = stoker.Loader(folder, batch_size=4, threads=2,
                      transforms=[stoker.Resize((16, 16)), blocked])
    main = threading.get_ident()
    def sigint_inside(name, after=None):
        def run():
            if after is not None:
                after.wait()
            while True:
                frame = sys._current_frames().get(main)
                if frame is not None and frame.f_code.co_name == name:
                    break
                time.sleep(0.001)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=run, daemon=True).start()
    it = iter(L)
    sigint_inside("_next_locked", after=started)
    for what, call, frame in (("next", lambda: next(it), None),
                              ("iter", lambda: iter(L), "_iter_locked"),
                              ("close", L.close, "close")):
        if frame is not None:
            sigint_inside(frame)
        try:
            call()
            print(what, "returned", flush=True)
        except KeyboardInterrupt:
            print(what, "interrupted", flush=True)
    release.set()
    print("epoch", sum(len(batch[1]) for batch in L), flush=True)
    L.close()
    print("closed", flush=True)
    """, small_root)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[:5] == ["next interrupted", "iter interrupted",
                                         "close interrupted", f"epoch {N}", "closed"], r.stdout


# ---------------------------------------------------------------- item 5 ----

def test_a_lambda_calling_next_on_its_own_loader_raises(small_root):
    # Before: a deadlock (the worker waited for the iterator's lock, held by the main
    # thread waiting for the worker's sample).
    r = run_child("""
        ready = threading.Event()
        def reentrant(img):
            ready.wait()
            next(it)
            return img
        L = stoker.Loader(folder, batch_size=4, threads=2,
                          transforms=[stoker.Resize((16, 16)), reentrant])
        it = iter(L)
        ready.set()
        try:
            next(it)
            print("no error", flush=True)
        except stoker.StokerError as e:
            cause = e.__cause__
            print(type(cause).__name__, "|", cause, flush=True)
    """, small_root)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("RuntimeError |"), r.stdout
    assert "called from a worker thread" in r.stdout


@pytest.mark.parametrize("call", ["L.close()", "iter(L)", "L.load_state_dict(L.state_dict())",
                                  "L.set_epoch(3)"])
def test_loader_methods_inside_a_lambda_raise(small_root, call):
    # Before: close() and iter() inside a Lambda waited for the worker itself.
    r = run_child(f"""
        seen = []
        def inside(img):
            try:
                {call}
            except RuntimeError as e:
                seen.append(str(e))
            return img
        L = stoker.Loader(folder, batch_size=4, threads=2,
                          transforms=[stoker.Resize((16, 16)), inside])
        n = sum(len(y) for _, y in L)
        # every call refused (N of them, and the next epoch's prefetched first samples')
        print(n, len(seen) >= n, all("called from a worker thread" in m for m in seen),
              flush=True)
    """, small_root)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == [str(N), "True", "True"]  # a whole epoch; each call refused


# --------------------------------------------------------------- item 13 ----

@pytest.mark.parametrize("action", ["L.close()", "iter(L)",
                                    "L.load_state_dict(L.state_dict())"])
def test_an_iteration_stopped_from_another_thread_raises(small_root, action):
    # The main thread waits inside next() for a sample a gate holds; another thread then
    # closes, re-iterates or restores the loader. Before: that next() returned the
    # epoch's end and the for loop ended normally, short.
    r = run_child(f"""
        block, reached, go = threading.Event(), threading.Event(), threading.Event()
        def gate(img):
            if block.is_set():
                reached.set()
                go.wait()
            return img
        L = stoker.Loader(folder, batch_size=4, threads=2, prefetch=1,
                          transforms=[stoker.Resize((16, 16)), gate])
        main = threading.get_ident()

        def main_waits_in_next():
            frame = sys._current_frames().get(main)
            return frame is not None and frame.f_code.co_name == "_next_locked"

        def other():
            reached.wait()
            # every later sample is held: once the main thread is in next() with no
            # batch ready, it waits there until the action
            while not (main_waits_in_next() and L.stats()["ready_batches"] == 0):
                time.sleep(0.001)
            {action}
        t = threading.Thread(target=other)
        t.start()
        n = 0
        try:
            for x, y in L:
                n += len(y)
                block.set()
            print("ended normally with", n, flush=True)
        except RuntimeError as e:
            print("raised |", e, flush=True)
        go.set()
        t.join()
    """, small_root)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("raised |"), r.stdout


def test_four_threads_iterating_one_loader_never_end_short(small_root):
    loader = stoker.Loader(stoker.ImageFolder(small_root), batch_size=2, threads=2,
                           transforms=[stoker.Resize((16, 16))])
    outcomes = [None] * 4

    def run(k):
        n = 0
        try:
            for _, y in loader:
                n += len(y)
            outcomes[k] = ("ended", n)
        except RuntimeError as e:
            outcomes[k] = ("raised", str(e))
    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(o is not None for o in outcomes), outcomes
    for kind, value in outcomes:
        if kind == "ended":
            assert value == N, outcomes  # a whole epoch, or ...
        else:
            assert "newer iter()" in value  # ... an error naming what happened
    loader.close()


def test_a_stale_iterators_next_takes_nothing_from_the_newer_epoch(small_root):
    # What the four threads above race into, made deterministic: a thread whose next()
    # passed its checks just before another thread's iter() restarted the loader.
    loader = stoker.Loader(stoker.ImageFolder(small_root), batch_size=2, threads=2,
                           transforms=[stoker.Resize((16, 16))])
    old = iter(loader)
    next(old)
    new = iter(loader)
    assert new._run != old._run
    n = 0
    for _, y in new:
        assert loader._impl.next(old._run) is None  # the stale run's next() ends at once
        n += len(y)
    assert n == N
    with pytest.raises(RuntimeError, match="newer iter"):
        next(old)
    loader.close()


# --------------------------------------------------------------- item 23 ----

@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError])
def test_a_lambdas_interrupt_is_not_skipped(small_root, exc):
    calls, lock = [0], threading.Lock()

    def third_raises(img):
        with lock:
            calls[0] += 1
            k = calls[0]
        if k == 3:
            raise exc("from the Lambda")
        return img
    loader = stoker.Loader(stoker.ImageFolder(small_root), batch_size=4, threads=2,
                           on_error="skip", transforms=[stoker.Resize((16, 16)), third_raises])
    with pytest.raises(exc) as info:
        for _ in loader:
            pass
    assert "from the Lambda" in str(info.value)
    assert loader.stats()["skipped"] == 0
    loader.close()


def test_a_lambdas_exception_is_still_skipped(small_root):
    # The control: an ordinary exception is a bad sample under skip.
    def odd(img):
        if int(img.sum()) % 3 == 0:
            raise ValueError("bad sample")
        return img
    loader = stoker.Loader(stoker.ImageFolder(small_root), batch_size=4, threads=2,
                           on_error="skip", transforms=[stoker.Resize((16, 16)), odd])
    n = sum(len(y) for _, y in loader)
    assert n + loader.stats()["skipped"] == N
    loader.close()
