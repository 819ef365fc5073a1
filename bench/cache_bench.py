#!/usr/bin/env python3
"""The decoded-sample cache: later epochs against the first, side by side.

From one image folder DATA (e.g. 200 photos with --repeat 5 = 1,000 images) this
writes, in a temporary directory, every photo pre-resized to shorter side --side
(Pillow, antialiased, JPEG quality 90): a dataset that fits in RAM, as a user
who pre-resizes would have. Then, on the train pipeline (RandomResizedCrop --crop +
RandomHorizontalFlip + Normalize, float32, batch 64, --threads threads, warm page
cache), it times every epoch of:
  * cached:   cache="decoded" (epoch 1 decodes and fills, later epochs hit);
  * plain:    no cache, dct_scaling=False (the same pixels as the cached run);
  * plain_dct: no cache, dct_scaling="auto" (the default; DCT-scaled decode);
interleaved over --rounds rounds (median per epoch kept). An untimed run of each then
checks (SHA-256 of every batch) that the cached run's pixels equal the uncached run's
(dct_scaling=False) in every epoch. It prints
the ratio of the later epochs' images/s to the first epoch's, and to the plain runs.

    /usr/bin/python3 bench/cache_bench.py DATA [--repeat 5] [--side 160] [--epochs 4]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parent.parent / "python"))  # an installed stoker wins
import stoker  # noqa: E402
from PIL import Image  # noqa: E402


def prepare(data: Path, out: Path, repeat: int, side: int) -> int:
    files = sorted(p for p in data.rglob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    if not files:
        raise SystemExit(f"no JPEG/PNG files under {data}")
    n = 0
    for r in range(repeat):
        for f in files:
            img = Image.open(f).convert("RGB")
            w, h = img.size
            s = side / min(w, h)
            if s < 1:
                img = img.resize((max(1, round(w * s)), max(1, round(h * s))), Image.BILINEAR)
            cls = out / f.parent.name
            cls.mkdir(parents=True, exist_ok=True)
            img.save(cls / f"{r}_{f.stem}.jpg", quality=90)
            n += 1
    return n


def run_epochs(root: str, args, digest=False, **kw):
    transforms = [stoker.RandomResizedCrop(args.crop), stoker.RandomHorizontalFlip(),
                  stoker.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
    loader = stoker.Loader(stoker.ImageFolder(root), batch_size=64, transforms=transforms,
                           threads=args.threads, prefetch=2, seed=1, dtype="float32", **kw)
    rates, sums = [], []
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        t0 = time.perf_counter()
        n = 0
        h = hashlib.sha256()
        for images, _ in loader:
            n += images.shape[0]
            if digest:  # untimed verification runs only
                h.update(images.numpy().tobytes())
        rates.append(n / (time.perf_counter() - t0))
        sums.append(h.hexdigest())
    return rates, sums, loader.stats()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--side", type=int, default=160)
    ap.add_argument("--crop", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache-bytes", type=int, default=2 << 30)
    ap.add_argument("--json")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        root = Path(tmp) / "resized"
        t0 = time.perf_counter()
        n = prepare(Path(args.data), root, args.repeat, args.side)
        print(f"prepared {n} images, shorter side {args.side}, in {time.perf_counter() - t0:.1f} s",
              flush=True)
        configs = {
            "cached": dict(cache="decoded", cache_bytes=args.cache_bytes),
            "plain": dict(dct_scaling=False),
            "plain_dct": dict(dct_scaling="auto"),
        }
        rates = {k: [] for k in configs}
        cache_stats = None
        for r in range(args.rounds):
            for name, kw in configs.items():
                rr, _, st = run_epochs(str(root), args, **kw)
                rates[name].append(rr)
                if name == "cached":
                    cache_stats = st["cache"]
                print(f"round {r + 1} {name:10s} " + " ".join(f"{x:7.0f}" for x in rr),
                      flush=True)
        # Pixels: one more (untimed) run of each, hashing every batch.
        _, a, _ = run_epochs(str(root), args, digest=True, **configs["cached"])
        _, b, _ = run_epochs(str(root), args, digest=True, **configs["plain"])
        identical = a == b
        med = {k: [statistics.median(v[r][e] for r in range(args.rounds))
                   for e in range(args.epochs)] for k, v in rates.items()}
        later = {k: statistics.median(v[1:]) for k, v in med.items()}
        print()
        print(f"{'config':10s} " + " ".join(f"epoch{e + 1:>3d}" for e in range(args.epochs))
              + "   later/first")
        for k, v in med.items():
            print(f"{k:10s} " + " ".join(f"{x:8.0f}" for x in v) + f"   {later[k] / v[0]:.2f}x")
        print(f"\ncached, later epochs / its first epoch: {later['cached'] / med['cached'][0]:.2f}x")
        print(f"cached later / plain (same pixels):      {later['cached'] / later['plain']:.2f}x")
        print(f"cached later / plain_dct (the default):  {later['cached'] / later['plain_dct']:.2f}x")
        print(f"pixels identical to the uncached run in every epoch: {identical}")
        print(f"cache: {json.dumps(cache_stats)}")
        if args.json:
            Path(args.json).write_text(json.dumps(
                {"images": n, "median_img_s": med, "identical": identical,
                 "cache": cache_stats, "args": vars(args)}, indent=1))


if __name__ == "__main__":
    main()
