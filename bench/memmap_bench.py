#!/usr/bin/env python3
"""Memory-mapped feature arrays: stoker's Npy records against the classic recipe.

Writes (once, into --dir) a float32 features array [N, D] (default 1,000,000 x 256,
1.0 GB) and int64 targets [N] as .npy files, warms the page cache, then measures rows/s
over --batches shuffled batches of --batch-size rows for:

  * stoker:      stoker.Loader(stoker.Npy({"x": features, "y": targets}), shuffle=True),
                 --threads threads; dict batches of torch tensors;
  * dataloader:  the classic recipe: a torch Dataset over np.load(mmap_mode="r") whose
                 __getitem__ returns (torch.from_numpy(x[i].copy()), y[i]), in a
                 DataLoader(shuffle=True) with num_workers in --workers (best kept);
  * np.take:     np.take(features, idx, axis=0, out=buf) and the same for the targets,
                 for the same shuffled index batches, one thread (the copy of the rows,
                 the memory-bandwidth bound the issue compares against).

Contestants are interleaved over --rounds rounds; the median per contestant is kept.
Prints a table and the ratios; --json FILE saves everything.

    /usr/bin/python3 bench/memmap_bench.py [--rows 1000000] [--dim 256] [--batches 200]
        [--threads 2] [--workers 0,1,2] [--rounds 3] [--dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "python"))  # an installed stoker wins
import stoker  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_arrays(d: Path, rows: int, dim: int) -> tuple[Path, Path]:
    x_path, y_path = d / f"features_{rows}x{dim}.npy", d / f"targets_{rows}.npy"
    if not x_path.exists():
        log(f"writing {x_path} ({rows * dim * 4 / 1e9:.2f} GB)")
        x = np.lib.format.open_memmap(x_path, mode="w+", dtype=np.float32, shape=(rows, dim))
        rng = np.random.default_rng(0)
        step = 65536
        for a in range(0, rows, step):
            b = min(rows, a + step)
            x[a:b] = rng.standard_normal((b - a, dim), dtype=np.float32)
        x.flush()
        del x
        np.save(y_path, rng.integers(0, 1000, size=rows, dtype=np.int64))
    return x_path, y_path


def warm(path: Path) -> None:
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


class MemmapDataset(torch.utils.data.Dataset):
    """The classic recipe: open the memmaps lazily (per worker), one row per item."""

    def __init__(self, x_path: Path, y_path: Path):
        self.x_path, self.y_path = x_path, y_path
        self.x = self.y = None
        self.n = np.load(y_path, mmap_mode="r").shape[0]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.x is None:
            self.x = np.load(self.x_path, mmap_mode="r")
            self.y = np.load(self.y_path, mmap_mode="r")
        return torch.from_numpy(np.array(self.x[i])), int(self.y[i])


def time_batches(it, batches: int) -> tuple[float, int]:
    """Seconds for `batches` batches after the first (start-up excluded), and rows seen."""
    first = next(it)
    del first
    rows = 0
    t0 = time.perf_counter()
    for _ in range(batches):
        b = next(it)
        x = b["x"] if isinstance(b, dict) else b[0]
        rows += int(x.shape[0])
    return time.perf_counter() - t0, rows


def run_stoker(x_path, y_path, args, seed) -> float:
    src = stoker.Npy({"x": str(x_path), "y": str(y_path)})
    loader = stoker.Loader(src, batch_size=args.batch_size, shuffle=True, seed=seed,
                           threads=args.threads)
    it = iter(loader)
    s, rows = time_batches(it, args.batches)
    loader.close()
    return rows / s


def run_dataloader(x_path, y_path, args, seed, workers: int) -> float:
    g = torch.Generator()
    g.manual_seed(seed)
    dl = torch.utils.data.DataLoader(MemmapDataset(x_path, y_path), batch_size=args.batch_size,
                                     shuffle=True, num_workers=workers, generator=g,
                                     persistent_workers=False)
    it = iter(dl)
    s, rows = time_batches(it, args.batches)
    del it
    return rows / s


def run_take(x_path, y_path, args, seed) -> float:
    x = np.load(x_path, mmap_mode="r")
    y = np.load(y_path, mmap_mode="r")
    order = np.random.default_rng(seed).permutation(x.shape[0])
    bx = np.empty((args.batch_size, x.shape[1]), dtype=x.dtype)
    by = np.empty(args.batch_size, dtype=y.dtype)

    def gen():
        for k in range(0, len(order) - args.batch_size + 1, args.batch_size):
            idx = order[k:k + args.batch_size]
            np.take(x, idx, axis=0, out=bx)
            np.take(y, idx, out=by)
            yield (torch.from_numpy(bx), torch.from_numpy(by))
    s, rows = time_batches(gen(), args.batches)
    return rows / s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--batches", type=int, default=200, help="timed batches per run")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workers", default="0,1,2", help="DataLoader num_workers to try")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where the arrays live (kept)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.batches * args.batch_size > args.rows:
        ap.error("--batches x --batch-size exceeds --rows")
    tmp = None
    d = args.dir
    if d is None:
        tmp = tempfile.TemporaryDirectory(prefix="memmap_bench_")
        d = Path(tmp.name)
    d.mkdir(parents=True, exist_ok=True)
    x_path, y_path = make_arrays(d, args.rows, args.dim)
    warm(x_path)
    warm(y_path)
    workers = [int(w) for w in args.workers.split(",") if w != ""]
    results: dict[str, list[float]] = {"stoker": [], "np.take": []}
    for w in workers:
        results[f"dataloader w={w}"] = []
    for r in range(args.rounds):
        seed = 100 + r
        results["stoker"].append(run_stoker(x_path, y_path, args, seed))
        results["np.take"].append(run_take(x_path, y_path, args, seed))
        for w in workers:
            results[f"dataloader w={w}"].append(run_dataloader(x_path, y_path, args, seed, w))
        log(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in results.items()))
    med = {k: statistics.median(v) for k, v in results.items()}
    best_dl = max((k for k in med if k.startswith("dataloader")), key=lambda k: med[k])
    print(f"rows/s, median of {args.rounds} rounds; {args.batches} batches of "
          f"{args.batch_size} rows of {args.dim} float32 + int64 target; "
          f"stoker threads {args.threads}")
    print(f"| contestant | rows/s | stoker / it |\n|---|---|---|")
    for k, v in med.items():
        print(f"| {k} | {v:,.0f} | {med['stoker'] / v:.2f} |")
    print(f"stoker / best DataLoader ({best_dl}): {med['stoker'] / med[best_dl]:.2f}; "
          f"stoker / np.take: {med['stoker'] / med['np.take']:.2f}")
    if args.json:
        args.json.write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d %H:%M"), "machine": platform.node(),
            "cpus": os.cpu_count(), "args": {k: str(v) for k, v in vars(args).items()},
            "rounds": results, "median": med, "best_dataloader": best_dl}, indent=1))
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
