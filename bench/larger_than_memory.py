#!/usr/bin/env python3
"""Streaming a dataset larger than the memory the process may use, against one that fits.

Writes WebDataset shards (100 samples each, plain .tar read in stream mode) from an image
folder's JPEGs repeated until the "big" dataset is `--ratio` times `--limit-mb`, and takes
its first shards, under a quarter of the limit, as the "small" dataset. Each run is a child
process in a memory cgroup (cgroup v1 memory.limit_in_bytes, or v2 memory.max) limited to
`--limit-mb`: its RSS and the page cache it fills are charged there, so the big dataset
cannot stay cached and every epoch reads it from disk, while the small one is read from
the page cache after the warm-up epoch. Before each run the shards are dropped from the
page cache (posix_fadvise DONTNEED) so that pages charged elsewhere are not hits.

The child runs stoker.Loader (val pipeline: Resize 256, CenterCrop 224, Normalize,
float32, shuffled, 2 threads by default) for a warm-up epoch plus `--epochs`, samples its
VmRSS after every batch (the previous batch released), and reports img/s per epoch, how far
RSS strays from its median over the timed epochs (max |RSS - median| / median) and its drift
(median of the last tenth of the samples against the first tenth). Configurations alternate, `--rounds` times each.

    /usr/bin/python3 bench/larger_than_memory.py DATA [--limit-mb 768] [--ratio 2.5]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, os, sys, time
sys.modules["torch"] = None  # not needed; keeps the process small
sys.path.insert(0, sys.argv[1])
import stoker
files, threads, epochs = json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for f in files:  # start with none of the shards in the page cache
    fd = os.open(f, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
def rss():
    with open("/proc/self/status") as s:
        for line in s:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
samples = []  # RSS after each batch of the timed epochs (the previous batch released)
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
loader = stoker.Loader(stoker.Shards(files, mode="stream"), batch_size=64, shuffle=True,
                       transforms=[stoker.Resize(256), stoker.CenterCrop(224),
                                   stoker.Normalize(mean, std)],
                       threads=threads, prefetch=2)
rates = []
for epoch in range(epochs + 1):
    loader.set_epoch(epoch)
    n, t0 = 0, time.perf_counter()
    for images, _ in loader:
        n += images.shape[0]
        if epoch > 0:
            samples.append(rss())
    if epoch > 0:
        rates.append(n / (time.perf_counter() - t0))
print(json.dumps({"rates": rates, "images": n, "rss": samples}))
"""


def pack(data: Path, out: Path, total_bytes: int, per_shard: int = 100):
    photos = sorted(p for p in data.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    labels = {p: i for i, p in enumerate(sorted({p.parent for p in photos}))}
    shards, written, k = [], 0, 0
    while written < total_bytes:
        path = out / f"train-{len(shards):06d}.tar"
        with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
            for _ in range(per_shard):
                p = photos[k % len(photos)]
                for ext, payload in (("jpg", p.read_bytes()),
                                     ("cls", str(labels[p.parent]).encode())):
                    info = tarfile.TarInfo(f"s{k:08d}.{ext}")
                    info.size = len(payload)
                    t.addfile(info, io.BytesIO(payload))
                k += 1
        written += path.stat().st_size
        shards.append(str(path))
    return shards, written


class MemoryCgroup:
    """A child memory cgroup of this process's own, limited to `limit` bytes."""

    def __init__(self, limit: int):
        self.path = None
        for line in open("/proc/self/cgroup"):
            _, controllers, rel = line.strip().split(":", 2)
            if "memory" in controllers.split(","):
                base = Path("/sys/fs/cgroup/memory") / rel.lstrip("/")
                self.path, self.limit_file = base / f"stoker-ltm-{os.getpid()}", "memory.limit_in_bytes"
            elif controllers == "" and self.path is None and Path("/sys/fs/cgroup/cgroup.controllers").exists():
                base = Path("/sys/fs/cgroup") / rel.lstrip("/")
                self.path, self.limit_file = base / f"stoker-ltm-{os.getpid()}", "memory.max"
        if self.path is None:
            raise RuntimeError("no memory cgroup found")
        self.path.mkdir()
        (self.path / self.limit_file).write_text(str(limit))

    def enter(self):  # preexec_fn of the child
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def max_usage(self):
        f = self.path / "memory.max_usage_in_bytes"
        return int(f.read_text()) if f.exists() else None

    def reset_max(self):
        f = self.path / "memory.max_usage_in_bytes"
        if f.exists():
            f.write_text("0")

    def remove(self):
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--limit-mb", type=int, default=768)
    parser.add_argument("--ratio", type=float, default=2.5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--small-epochs", type=int, default=0,
                        help="timed epochs of the small dataset (default: as many samples as big)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dir", type=Path, help="where to write the shards (on disk, not tmpfs)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    limit = args.limit_mb << 20
    with tempfile.TemporaryDirectory(prefix="stoker-ltm-", dir=args.dir) as tmp:
        big, big_bytes = pack(args.data, Path(tmp), int(args.ratio * limit))
        small_bytes, n_small = 0, 0
        for s in big:
            if small_bytes + os.path.getsize(s) > limit // 4:
                break
            small_bytes += os.path.getsize(s)
            n_small += 1
        small = big[:n_small]
        small_epochs = args.small_epochs or max(1, round(args.epochs * len(big) / n_small))
        print(f"limit {args.limit_mb} MiB; big {len(big)} shards, {big_bytes / 2**20:.0f} MiB "
              f"({big_bytes / limit:.2f}x the limit); small {n_small} shards, "
              f"{small_bytes / 2**20:.0f} MiB", flush=True)
        cg = MemoryCgroup(limit)
        results = {"big": [], "small": []}
        try:
            for r in range(args.rounds):
                for name, files, epochs in (("small", small, small_epochs),
                                            ("big", big, args.epochs)):
                    cg.reset_max()
                    out = subprocess.run(
                        ["/usr/bin/python3", "-c", CHILD, str(ROOT / "python"), json.dumps(files),
                         str(args.threads), str(epochs)],
                        preexec_fn=cg.enter, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        check=False)
                    if out.returncode != 0:
                        print(out.stderr.decode(errors="replace"), file=sys.stderr)
                        raise SystemExit(f"{name}: child failed ({out.returncode})")
                    res = json.loads(out.stdout)
                    rss = res["rss"]
                    med = statistics.median(rss)
                    tenth = max(1, len(rss) // 10)
                    res.update(rate=statistics.median(res["rates"]), rss_median=med,
                               rss_spread=max(abs(x - med) for x in rss) / med,
                               rss_drift=(statistics.median(rss[-tenth:]) /
                                          statistics.median(rss[:tenth]) - 1),
                               cgroup_max=cg.max_usage())
                    del res["rss"]
                    results[name].append(res)
                    print(f"round {r}: {name:5s} {res['rate']:7.0f} img/s  RSS median "
                          f"{med / 2**20:.0f} MiB, within +-{100 * res['rss_spread']:.1f}%, drift "
                          f"{100 * res['rss_drift']:+.1f}%  "
                          f"cgroup peak {(res['cgroup_max'] or 0) / 2**20:.0f} MiB", flush=True)
        finally:
            cg.remove()
    rate = {k: statistics.median(x["rate"] for x in v) for k, v in results.items()}
    print(f"big/small img/s: {rate['big'] / rate['small']:.3f} "
          f"(big {rate['big']:.0f}, small {rate['small']:.0f}; medians of {args.rounds} rounds)")
    if args.json:
        args.json.write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
