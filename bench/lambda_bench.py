#!/usr/bin/env python3
"""The cost of a Python step per sample (stoker.Lambda), side by side in one run.

Pipeline: RandomResizedCrop(224) + RandomHorizontalFlip + [step] + Normalize, float32 NCHW,
batch 64, threads = --threads. Configs, interleaved over --rounds rounds (drift on a shared
machine hits all alike), one epoch each:
  * none:      no Python step;
  * identity:  stoker.Lambda(lambda img: None): the fixed cost (GIL, the copies, the call);
  * numpy:     a brightness shift in numpy (int16 add, clip, cast): a typical small step.
Reports median images/s per config, its ratio to `none`, and stats()["callback_s"] per
image (milliseconds; busy time in the callable, GIL waits included, summed over threads).

    /usr/bin/python3 bench/lambda_bench.py DATA [--threads 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "python"))  # an installed stoker wins

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def brighten(img):
    import numpy as np
    return np.clip(img.astype(np.int16) + 20, 0, 255).astype(np.uint8)


STEPS = {
    "none": None,
    "identity": lambda img: None,
    "numpy": brighten,
}


def epoch(root, threads, step):
    import stoker
    t = [stoker.RandomResizedCrop(224), stoker.RandomHorizontalFlip()]
    if step is not None:
        t.append(stoker.Lambda(step))
    t.append(stoker.Normalize(MEAN, STD))
    loader = stoker.Loader(stoker.ImageFolder(root), batch_size=64, shuffle=True,
                           threads=threads, transforms=t)
    n = 0
    start = time.perf_counter()
    for images, _ in loader:
        n += images.shape[0]
    seconds = time.perf_counter() - start
    s = loader.stats()
    loader.close()
    return n / seconds, 1e3 * s["callback_s"] / max(1, s["images"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rates = {k: [] for k in STEPS}
    cb_ms = {k: [] for k in STEPS}
    epoch(args.data, args.threads, None)  # warm the page cache
    for _ in range(args.rounds):
        for name, step in STEPS.items():
            r, c = epoch(args.data, args.threads, step)
            rates[name].append(r)
            cb_ms[name].append(c)
    base = statistics.median(rates["none"])
    print(f"threads={args.threads} rounds={args.rounds}")
    print(f"{'config':10s} {'img/s':>8s} {'ratio':>6s} {'callback ms/img':>16s}")
    for name in STEPS:
        r = statistics.median(rates[name])
        print(f"{name:10s} {r:8.1f} {r / base:6.3f} {statistics.median(cb_ms[name]):16.3f}")


if __name__ == "__main__":
    main()
