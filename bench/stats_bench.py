#!/usr/bin/env python3
"""`stoker stats` throughput, side by side with its peer, in one run.

On one image folder this measures, interleaved over --rounds rounds (median kept):
  * `stoker stats DATA --json` at 1 and 2 threads with the default
    --resolution 64 (JPEG DCT scaling, then Resize to shorter side 64), at
    full size (--resolution 0), and with --duplicates;
  * the full-decode ceiling (`stoker decode --threads 2`);
  * the peer: what users run to get Normalize's numbers, torchvision's
    ImageFolder with Resize(64) + ToTensor through a DataLoader (2 workers,
    batch 1 as sizes differ) summing each channel and its square in float64
    (every pixel weighs the same, like stoker).
It prints images/s, CPU-s per 1,000 images (the whole process tree, so the
peer's includes importing torch), the ratio
to the peer, and how far stoker's mean/std are from the peer's (stoker decodes
at the DCT scale first, so at --resolution 64 they differ slightly; at full
size the peer would match exactly).

    /usr/bin/python3 bench/stats_bench.py DATA [--repeat 5] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"
sys.path.insert(0, str(ROOT / "bench"))
from run_bench import repeated_folder  # noqa: E402


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str]) -> tuple[dict, float, float]:
    """Runs cmd; returns (its last JSON line, wall seconds, CPU seconds of its tree)."""
    log("  $ " + " ".join(cmd))
    c0, t0 = children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    wall, cpu = time.perf_counter() - t0, children_cpu() - c0
    return json.loads(out.strip().splitlines()[-1]), wall, cpu


def peer(data: str, resolution: int, workers: int) -> int:
    """The torchvision recipe; prints one JSON line (timed loop only, after imports)."""
    import torch
    import torchvision.datasets as tvd
    import torchvision.transforms as T

    t_import = time.perf_counter()
    ds = tvd.ImageFolder(data, transform=T.Compose([T.Resize(resolution), T.ToTensor()]))
    dl = torch.utils.data.DataLoader(ds, batch_size=1, num_workers=workers)
    s = torch.zeros(3, dtype=torch.float64)
    q = torch.zeros(3, dtype=torch.float64)
    n = 0
    for x, _ in dl:
        x = x[0].double()
        s += x.sum(dim=(1, 2))
        q += (x * x).sum(dim=(1, 2))
        n += x.shape[1] * x.shape[2]
    seconds = time.perf_counter() - t_import
    mean = s / n
    std = (q / n - mean * mean).sqrt()
    print(json.dumps({"images": len(ds), "seconds": seconds, "pixels": n,
                      "mean": mean.tolist(), "std": std.tolist()}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", help="ImageFolder root")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="name every image N times (symlinks), as run_bench.py")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stoker", default=str(ROOT / "build/stoker"))
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--resolution", type=int, default=64, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        return peer(args.data, args.resolution, args.workers)
    with tempfile.TemporaryDirectory(prefix="stoker_stats_bench_") as tmp:
        data = Path(args.data)
        if args.repeat > 1:
            data = repeated_folder(data, args.repeat, Path(tmp) / "data")
        return run(args, str(data))


def run(args, data: str) -> int:
    s = args.stoker
    configs = {
        "stoker stats, 1 thread (res 64)": [s, "stats", data, "--threads", "1", "--json"],
        "stoker stats, 2 threads (res 64)": [s, "stats", data, "--threads", "2", "--json"],
        "stoker stats, 2 threads, full size": [s, "stats", data, "--threads", "2",
                                               "--resolution", "0", "--json"],
        "stoker stats, 2 threads, --duplicates": [s, "stats", data, "--threads", "2",
                                                  "--duplicates", "--json"],
        "full decode, 2 threads (ceiling)": [s, "decode", data, "--threads", "2", "--epochs",
                                             "1", "--json"],
        "peer: torchvision Resize(64)+ToTensor, 2 workers": [PY, __file__, data, "--peer"],
    }
    # Warm the page cache.
    subprocess.run([s, "stats", data, "--json"], check=True, stdout=subprocess.DEVNULL)
    rows: dict[str, list] = {k: [] for k in configs}
    for r in range(args.rounds):
        log(f"round {r + 1}/{args.rounds}")
        for name, cmd in configs.items():
            rows[name].append(timed(cmd))
    results = {}
    images = None
    for name, runs in rows.items():
        out = runs[0][0]
        n = out["images"] + out.get("unreadable", 0)
        images = images or n
        if "images_per_sec" in out and "seconds" not in out:  # stoker decode: its own timing
            rate = statistics.median(o["images_per_sec"] for o, _, _ in runs)
            cpu1k = statistics.median(o["cpu_s_per_1000"] for o, _, _ in runs)
        else:  # the timed pass (stats: after the folder scan; peer: after the imports)
            rate = statistics.median(n / o["seconds"] for o, _, _ in runs)
            cpu1k = statistics.median(1000 * c / n for _, _, c in runs)
        wall = statistics.median(w for _, w, _ in runs)
        results[name] = {"images": n, "process_wall_s": wall, "images_per_sec": rate,
                         "cpu_s_per_1000": cpu1k, "output": out}
    peer_name = [k for k in results if k.startswith("peer")][0]
    peer_rate = results[peer_name]["images_per_sec"]
    print(f"{images} images, {args.rounds} rounds, median. img/s: each tool's timed pass "
          f"(stats: after the folder scan; peer: after imports); CPU: whole process tree "
          f"(decode: its own count)")
    print(f"| measurement | img/s | x peer | CPU-s / 1,000 img |")
    print(f"|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['images_per_sec']:,.0f} | {r['images_per_sec'] / peer_rate:.2f} | "
              f"{r['cpu_s_per_1000']:.2f} |")
    pm, ps = results[peer_name]["output"]["mean"], results[peer_name]["output"]["std"]
    so = results["stoker stats, 2 threads (res 64)"]["output"]
    dm = max(abs(a - b) for a, b in zip(so["mean"], pm))
    ds = max(abs(a - b) for a, b in zip(so["std"], ps))
    print(f"stoker (res 64) mean {[round(v, 4) for v in so['mean']]} std "
          f"{[round(v, 4) for v in so['std']]}; peer mean {[round(v, 4) for v in pm]} std "
          f"{[round(v, 4) for v in ps]}; max |diff| mean {dm:.4f}, std {ds:.4f}")
    one = results["stoker stats, 1 thread (res 64)"]["output"]
    same = all(one[k] == so[k] for k in ("mean", "std", "pixels", "widths", "classes"))
    print(f"1 thread and 2 threads give the same report: {same}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
