"""How even is the rank split of streamed shards? Streamed shards are dealt whole
to ranks, every rank yields exactly ceil(length / W) samples (equal batch counts), a rank
whose shards run short repeats them and a rank with more shards leaves its tail for the next
epoch. This runs real Loaders (one per rank, in one process) over small generated gzip
shards and prints, per (shards, samples per shard, W): the distinct samples one epoch
delivers (coverage), the repeats (padded_samples) and the batches per rank.

  PYTHONPATH=python /usr/bin/python3 bench/rank_split_bench.py
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import tarfile
import tempfile

import numpy as np
from PIL import Image

import stoker


def write_shards(d, counts):
    img = io.BytesIO()
    Image.fromarray(np.full((8, 8, 3), 128, np.uint8)).save(img, format="PNG")
    img = img.getvalue()
    paths = []
    for s, per in enumerate(counts):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            for i in range(per):
                for name, data in ((f"s{s}_{i:04d}.png", img), (f"s{s}_{i:04d}.cls", b"0")):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        p = os.path.join(d, f"shard-{s:04d}.tar.gz")
        with open(p, "wb") as f:
            f.write(gzip.compress(buf.getvalue(), 1))
        paths.append(p)
    return paths


def one(paths, length, world):
    src = stoker.Shards(paths, length=length, shuffle_buffer=0)
    seen, padded, batches = set(), 0, []
    for r in range(world):
        ld = stoker.Loader(src, batch_size=16, transforms=[stoker.Resize((8, 8))],
                           return_indices=True, rank=r, world_size=world, threads=1,
                           shuffle=True, seed=0)
        n = 0
        for _, _, ids in ld:
            seen.update(ids.tolist())
            n += 1
        padded += ld.stats()["padded_samples"]
        batches.append(n)
    return len(seen), padded, batches


def main():
    print(f"{'shards':>6} {'per shard':>12} {'W':>2} {'coverage':>9} {'repeats':>8} "
          f"batches/rank")
    cases = [(64, [50] * 64), (64, list(np.random.default_rng(0).integers(40, 61, 64))),
             (147, [50] * 147), (16, [50] * 16)]
    with tempfile.TemporaryDirectory() as d:
        for shards, counts in cases:
            sub = os.path.join(d, str(len(os.listdir(d))))
            os.mkdir(sub)
            paths = write_shards(sub, counts)
            length = int(sum(counts))
            label = "50" if len(set(counts)) == 1 else "40..60"
            for world in (2, 3, 4, 8):
                distinct, padded, batches = one(paths, length, world)
                print(f"{shards:>6} {label:>12} {world:>2} {distinct / length:>9.1%} "
                      f"{padded:>8} {sorted(set(batches))}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
