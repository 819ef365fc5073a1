#!/usr/bin/env python3
"""Measure torch.utils.data.DataLoader on an image folder: stoker's benchmark peer.

The dataset is ``torchvision.datasets.ImageFolder(DATA)`` with one of the
standard torchvision pipelines:

* ``train``: RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(),
  Normalize(ImageNet mean/std)                       -> float32 CHW in [-2.2, 2.7]
* ``val``:   Resize(256), CenterCrop(224), ToTensor(), Normalize(ImageNet mean/std)

With ``--dtype uint8`` the ToTensor() + Normalize() tail is replaced by
PILToTensor(), which yields uint8 CHW tensors (comparable to a loader that
emits uint8 output and normalises later, e.g. on the GPU).

For every configuration -- each ``--workers`` value, and for workers > 0 each
``--prefetch`` value (``persistent_workers=True``); workers = 0 runs once,
prefetch not applicable -- the script builds
``DataLoader(shuffle=True, batch_size=B, drop_last=False, pin_memory=False)``
with the platform's default multiprocessing start method (fork on Linux),
runs one warm-up epoch and then ``--epochs`` timed epochs.  It reports:

images_per_sec
    median over the timed epochs of (images in epoch / epoch wall seconds);
    an epoch runs from ``iter(loader)`` to the last batch.
first_batch_ms
    wall time from constructing the DataLoader to receiving its first batch
    (includes worker start-up); measured at the start of the warm-up epoch.
cpu_s_per_1000
    CPU seconds (user + system) of the whole process tree -- this process and
    all its descendants -- over the timed epochs, per 1,000 images.  Live
    processes are sampled from /proc/<pid>/stat before and after the timed
    epochs (persistent workers are alive during the measurement); children
    that exit and are reaped meanwhile are covered by
    getrusage(RUSAGE_CHILDREN).  The CPU time of the memory-sampling thread
    is measured and subtracted.
pss_mib, rss_mib
    peak of the summed PSS and of the summed RSS of the process tree, in MiB,
    sampled by a background thread during the timed epochs.  PSS splits
    pages shared between the forked workers fairly; the RSS sum counts them
    once per process.  RSS is read every 50 ms from /proc/<pid>/statm.  PSS
    comes from /proc/<pid>/smaps_rollup, which costs the kernel several ms per
    torch process (a page-table walk), so those reads are spaced to use at
    most 5% of one core -- every few hundred ms, plus one read at the start
    and one at the end of the timed epochs; each also refreshes the RSS peak.
    (Reading smaps_rollup every 50 ms would take ~half a core on a small
    machine and distort the throughput being measured.)

The configuration with the highest images/s is reported as ``best``.
``import_cpu_s`` is the CPU time this process spent before the benchmark
started (interpreter start-up and importing torch/torchvision).

Output: with ``--json``, a single JSON object on stdout::

    {"peer": "torch.DataLoader", "pipeline": "train", "batch_size": 64,
     "dtype": "float32", "images": 200, "epochs": 3,
     "configs": [{"workers": 0, "prefetch": null, "images_per_sec": ...,
                  "cpu_s_per_1000": ..., "pss_mib": ..., "rss_mib": ...,
                  "first_batch_ms": ...}, ...],
     "best": {...same fields...}, "import_cpu_s": ...,
     "torch_version": "...", "torchvision_version": "...",
     "torch_threads": ..., "cpu_count": ...}

otherwise a readable table.  Progress lines go to stderr unless ``--quiet``.

Example::

    python3 bench/torch_baseline.py DATA --pipeline val \\
        --workers 0,2 --prefetch 2 --epochs 2 --json

Linux only (relies on /proc).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import threading
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_PERIOD_S = 0.05   # RSS sampling period
PSS_DUTY = 0.05          # max share of one core spent on smaps_rollup passes
PID_REFRESH_S = 1.0      # how often the sampler rescans /proc for workers
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024
MIB = 1024 * 1024


# --------------------------------------------------------------------------
# /proc helpers
# --------------------------------------------------------------------------

def _read_stat(pid: int) -> tuple[int, float] | None:
    """Return (ppid, utime + stime in seconds) of ``pid``, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) is parenthesised and may contain spaces or
    # ')' itself, so split after the *last* ')'.  Fields from 3 on follow.
    fields = data[data.rindex(b")") + 2:].split()
    ppid = int(fields[1])            # field 4
    ticks = int(fields[11]) + int(fields[12])  # fields 14 (utime), 15 (stime)
    return ppid, ticks / CLK_TCK


def descendants(root: int) -> list[int]:
    """PIDs of all live (or not yet reaped) descendants of ``root``."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        st = _read_stat(int(entry.name))
        if st is not None:
            children.setdefault(st[0], []).append(int(entry.name))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and all its descendants.

    Live descendants are read from /proc; exited-and-reaped ones from
    getrusage(RUSAGE_CHILDREN).  A process is in exactly one of those two sets
    at any instant, so differences between two calls are consistent.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    for pid in descendants(os.getpid()):
        st = _read_stat(pid)
        if st is not None:
            total += st[1]
    return total


def _rss_kib(pid: int) -> int | None:
    """Resident set size of ``pid`` in KiB from /proc/<pid>/statm (cheap)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE_KIB
    except (OSError, ValueError, IndexError):
        return None


def _pss_rss_kib(pid: int) -> tuple[int, int] | None:
    """(Pss, Rss) of ``pid`` in KiB from /proc/<pid>/smaps_rollup (costly)."""
    pss = rss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith(b"Rss:"):
                    rss = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pss, rss


class MemorySampler(threading.Thread):
    """Background thread tracking the peak summed PSS and RSS of the tree.

    Every ``period_s`` it sums the RSS of this process and its descendants
    from /proc/<pid>/statm.  Summed PSS needs /proc/<pid>/smaps_rollup, which
    makes the kernel walk the whole address space (several ms per torch
    process); those passes are therefore spaced so that they take at most
    ``pss_duty`` of one core, and one is always taken at start (``start()``
    returns after it) and at stop.
    Every pass also updates the RSS peak.  The thread's own CPU time is
    recorded in ``cpu_s`` so that callers can subtract it.
    """

    def __init__(self, period_s: float = SAMPLE_PERIOD_S,
                 pss_duty: float = PSS_DUTY) -> None:
        super().__init__(name="mem-sampler", daemon=True)
        self.period_s = period_s
        self.pss_duty = pss_duty
        self.peak_pss_kib = 0
        self.peak_rss_kib = 0
        self.samples = 0       # RSS samples
        self.pss_samples = 0   # smaps_rollup passes
        self.cpu_s = 0.0       # CPU time this thread itself used
        self._stop_event = threading.Event()
        self._ready = threading.Event()
        self._pids: list[int] = []
        self._pids_at = float("-inf")

    def _tree(self, now: float) -> list[int]:
        # Scanning /proc costs ~2 ms, so refresh the PID list once a second;
        # persistent workers do not come and go during the timed epochs.
        if now - self._pids_at >= PID_REFRESH_S:
            root = os.getpid()
            self._pids = [root, *descendants(root)]
            self._pids_at = now
        return self._pids

    def _sample_rss(self, now: float) -> None:
        total = sum(filter(None, map(_rss_kib, self._tree(now))))
        self.peak_rss_kib = max(self.peak_rss_kib, total)
        self.samples += 1

    def _sample_pss(self, now: float) -> float:
        """Take a smaps_rollup pass; return its CPU cost in seconds."""
        cost = time.thread_time()
        pss = rss = 0
        for mem in filter(None, map(_pss_rss_kib, self._tree(now))):
            pss += mem[0]
            rss += mem[1]
        self.peak_pss_kib = max(self.peak_pss_kib, pss)
        self.peak_rss_kib = max(self.peak_rss_kib, rss)
        self.pss_samples += 1
        return time.thread_time() - cost

    def run(self) -> None:
        start = time.thread_time()
        now = time.monotonic()
        next_pss = now + self._sample_pss(now) / self.pss_duty
        self._ready.set()
        while not self._stop_event.wait(self.period_s):
            now = time.monotonic()
            if now >= next_pss:
                next_pss = now + self._sample_pss(now) / self.pss_duty
            else:
                self._sample_rss(now)
        self._sample_pss(time.monotonic())
        self.cpu_s = time.thread_time() - start

    def start(self) -> None:
        """Start sampling; return once the first (costly) pass is done, so
        that it does not compete with the measurement that follows."""
        super().start()
        self._ready.wait()

    def stop(self) -> None:
        """Stop after a final pass (taken once the measurement is over)."""
        self._stop_event.set()
        self.join()


# --------------------------------------------------------------------------
# Benchmark
# --------------------------------------------------------------------------

@dataclass
class ConfigResult:
    workers: int
    prefetch: int | None
    images_per_sec: float
    cpu_s_per_1000: float
    pss_mib: float
    rss_mib: float
    first_batch_ms: float


def build_transform(pipeline: str, dtype: str):
    from torchvision import transforms as T

    if pipeline == "train":
        ops: list[Any] = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
    else:
        ops = [T.Resize(256), T.CenterCrop(224)]
    if dtype == "uint8":
        ops.append(T.PILToTensor())
    else:
        ops += [T.ToTensor(), T.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD)]
    return T.Compose(ops)


def run_epoch(batches: Iterable) -> tuple[int, float]:
    """Consume one epoch; return (images, wall seconds)."""
    n = 0
    start = time.perf_counter()
    for images, _labels in batches:
        n += len(images)
    return n, time.perf_counter() - start


def bench_config(dataset, args: argparse.Namespace, workers: int,
                 prefetch: int | None, log: Callable[[str], None]) -> ConfigResult:
    """Benchmark one DataLoader configuration on ``dataset``."""
    from torch.utils.data import DataLoader

    kwargs: dict[str, Any] = {}
    if workers > 0:
        kwargs.update(prefetch_factor=prefetch, persistent_workers=True)

    # Warm-up epoch, which also times construction -> first batch.
    start = time.perf_counter()
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                        num_workers=workers, drop_last=False,
                        pin_memory=False, **kwargs)
    it = iter(loader)
    images, _ = next(it)
    first_batch_ms = (time.perf_counter() - start) * 1e3
    warm_n, warm_s = run_epoch(it)
    warm_n += len(images)
    del it, images
    log(f"  warm-up: first batch {first_batch_ms:.0f} ms, "
        f"{warm_n} images in {warm_s + first_batch_ms / 1e3:.2f} s")

    # Timed epochs.
    sampler = MemorySampler()
    rates: list[float] = []
    total_images = 0
    cpu_before = tree_cpu_seconds()
    sampler.start()
    for epoch in range(args.epochs):
        n, secs = run_epoch(loader)
        rates.append(n / secs)
        total_images += n
        log(f"  epoch {epoch + 1}/{args.epochs}: {n} images, {secs:.3f} s, "
            f"{n / secs:.1f} img/s")
    sampler.stop()
    cpu_s = tree_cpu_seconds() - cpu_before - sampler.cpu_s
    log(f"  memory: {sampler.samples} RSS + {sampler.pss_samples} PSS samples, "
        f"sampler CPU {sampler.cpu_s * 1e3:.0f} ms (excluded from CPU s/1000)")

    # Shut the persistent workers down before the next configuration.
    del loader
    gc.collect()

    return ConfigResult(
        workers=workers,
        prefetch=prefetch,
        images_per_sec=round(statistics.median(rates), 2),
        cpu_s_per_1000=round(cpu_s / total_images * 1000, 4),
        pss_mib=round(sampler.peak_pss_kib / 1024, 1),
        rss_mib=round(sampler.peak_rss_kib / 1024, 1),
        first_batch_ms=round(first_batch_ms, 2),
    )


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError("empty list")
    return values


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    first_line = __doc__.splitlines()[0]
    parser = argparse.ArgumentParser(
        prog="torch_baseline.py",
        description=first_line,
        epilog=__doc__[len(first_line):],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("data", metavar="DATA", type=Path,
                        help="image folder in ImageFolder layout (DATA/<class>/<image>)")
    parser.add_argument("--pipeline", choices=("train", "val"), default="train",
                        help="torchvision pipeline (default: %(default)s)")
    parser.add_argument("--batch-size", type=positive_int, default=64,
                        help="images per batch (default: %(default)s)")
    parser.add_argument("--workers", type=int_list, default=[0, 1, 2, 4],
                        help="comma-separated num_workers values (default: 0,1,2,4)")
    parser.add_argument("--prefetch", type=int_list, default=[2, 4],
                        help="comma-separated prefetch_factor values, used for "
                             "workers > 0 (default: 2,4)")
    parser.add_argument("--epochs", type=positive_int, default=3,
                        help="timed epochs per configuration, after one warm-up "
                             "epoch (default: %(default)s)")
    parser.add_argument("--dtype", choices=("float32", "uint8"), default="float32",
                        help="float32: ToTensor+Normalize; uint8: PILToTensor "
                             "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0,
                        help="torch RNG seed for shuffling and augmentation "
                             "(default: %(default)s)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout instead of a table")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines on stderr")
    args = parser.parse_args(argv)
    if any(w < 0 for w in args.workers):
        parser.error("--workers values must be >= 0")
    if any(p < 1 for p in args.prefetch):
        parser.error("--prefetch values must be >= 1")
    if not args.data.is_dir():
        parser.error(f"{args.data} is not a directory")
    return args


def print_table(report: dict[str, Any]) -> None:
    print(f"peer: {report['peer']} (torch {report['torch_version']}, "
          f"torchvision {report['torchvision_version']})")
    print(f"pipeline: {report['pipeline']}, dtype: {report['dtype']}, "
          f"batch size: {report['batch_size']}, images: {report['images']}, "
          f"timed epochs: {report['epochs']}, import CPU: {report['import_cpu_s']:.2f} s")
    header = (f"{'workers':>7} {'prefetch':>8} {'img/s':>9} {'CPU s/1k':>9} "
              f"{'PSS MiB':>8} {'RSS MiB':>8} {'1st batch ms':>12}")
    print(header)
    print("-" * len(header))
    for c in report["configs"]:
        prefetch = "-" if c["prefetch"] is None else str(c["prefetch"])
        mark = "  <- best" if c == report["best"] else ""
        print(f"{c['workers']:>7} {prefetch:>8} {c['images_per_sec']:>9.1f} "
              f"{c['cpu_s_per_1000']:>9.2f} {c['pss_mib']:>8.1f} "
              f"{c['rss_mib']:>8.1f} {c['first_batch_ms']:>12.1f}{mark}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    # Imported here so that --help and argument errors are instant.
    import torch
    import torchvision
    from torchvision.datasets import ImageFolder

    own = resource.getrusage(resource.RUSAGE_SELF)
    import_cpu_s = own.ru_utime + own.ru_stime

    def log(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    # Sweeping more workers than cores is deliberate; say so once, briefly,
    # instead of torch's multi-line warning per configuration.
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    cpus = len(os.sched_getaffinity(0))
    if max(args.workers) > cpus:
        log(f"note: up to {max(args.workers)} workers on {cpus} usable CPUs")

    torch.manual_seed(args.seed)
    try:
        dataset = ImageFolder(str(args.data),
                              transform=build_transform(args.pipeline, args.dtype))
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"torch_baseline.py: error: {args.data}: {exc}", file=sys.stderr)
        return 2
    log(f"{len(dataset)} images in {len(dataset.classes)} classes under "
        f"{args.data}; pipeline {args.pipeline}, dtype {args.dtype}, "
        f"batch size {args.batch_size}; import CPU {import_cpu_s:.2f} s")

    plan = [(w, None) if w == 0 else (w, p)
            for w in dict.fromkeys(args.workers)
            for p in (dict.fromkeys(args.prefetch) if w else [None])]
    results: list[ConfigResult] = []
    for workers, prefetch in plan:
        log(f"workers={workers} prefetch={'-' if prefetch is None else prefetch}")
        results.append(bench_config(dataset, args, workers, prefetch, log))
        r = results[-1]
        log(f"  -> {r.images_per_sec:.1f} img/s, {r.cpu_s_per_1000:.2f} CPU s/1000, "
            f"PSS {r.pss_mib:.0f} MiB, RSS {r.rss_mib:.0f} MiB")

    leftover = descendants(os.getpid())
    if leftover:
        log(f"warning: child processes still alive: {leftover}")

    configs = [asdict(r) for r in results]
    best = max(configs, key=lambda c: c["images_per_sec"])
    report = {
        "peer": "torch.DataLoader",
        "pipeline": args.pipeline,
        "batch_size": args.batch_size,
        "dtype": args.dtype,
        "images": len(dataset),
        "epochs": args.epochs,
        "configs": configs,
        "best": best,
        "import_cpu_s": round(import_cpu_s, 3),
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
    }
    if args.json:
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
