#!/usr/bin/env python3
"""torchvision's "new recipe" train pipeline, stoker against a DataLoader, side by side.

Recipe: RandomResizedCrop(176) + RandomHorizontalFlip + TrivialAugmentWide + ToTensor +
Normalize + RandomErasing(0.1), float32 NCHW, batch 64. Runs, interleaved over --rounds
rounds (so drift on a shared machine hits all alike), one epoch each of:
  * stoker:        the recipe (threads = --threads);
  * stoker_no_ta:  the recipe without TrivialAugmentWide (for the TA step's cost);
  * dataloader:    torchvision ImageFolder + the recipe, num_workers = --threads,
                   persistent workers, prefetch_factor 2.
Reports median images/s per config, the ratio stoker / dataloader, and the TA step's share
of stoker's per-image busy time: 1 - busy(no TA) / busy(TA), busy = read + decode +
augment seconds summed over threads (stats()).

    /usr/bin/python3 bench/recipe_bench.py DATA [--threads 2] [--rounds 3] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "python"))  # an installed stoker wins

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def stoker_epoch(root, threads, ta):
    import stoker
    t = [stoker.RandomResizedCrop(176), stoker.RandomHorizontalFlip()]
    if ta:
        t.append(stoker.TrivialAugmentWide())
    t += [stoker.Normalize(MEAN, STD), stoker.RandomErasing(0.1)]
    loader = stoker.Loader(stoker.ImageFolder(root), batch_size=64, shuffle=True,
                           threads=threads, transforms=t)
    n = 0
    t0 = time.perf_counter()
    for x, _ in loader:
        n += len(x)
    dt = time.perf_counter() - t0
    s = loader.stats()
    busy = s["read_s"] + s["decode_s"] + s["augment_s"]
    loader.close()
    return n / dt, busy / n


def dataloader_epoch(root, threads):
    import torch
    import torchvision.datasets as tvd
    import torchvision.transforms as T
    tf = T.Compose([T.RandomResizedCrop(176), T.RandomHorizontalFlip(), T.TrivialAugmentWide(),
                    T.ToTensor(), T.Normalize(MEAN, STD), T.RandomErasing(0.1)])
    dl = torch.utils.data.DataLoader(tvd.ImageFolder(root, tf), batch_size=64, shuffle=True,
                                     num_workers=threads, prefetch_factor=2,
                                     persistent_workers=True)
    it = iter(dl)  # start workers outside the timing
    next(it)
    del it
    n = 0
    t0 = time.perf_counter()
    for x, _ in dl:
        n += len(x)
    return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1, help="link DATA's files N times")
    a = ap.parse_args()
    root = a.data
    if a.repeat > 1:
        tmp = tempfile.mkdtemp()
        for cls in sorted(os.listdir(a.data)):
            src = os.path.join(a.data, cls)
            if not os.path.isdir(src):
                continue
            os.makedirs(os.path.join(tmp, cls))
            for r in range(a.repeat):
                for f in os.listdir(src):
                    os.symlink(os.path.join(src, f), os.path.join(tmp, cls, f"{r}_{f}"))
        root = tmp
    stoker_epoch(root, a.threads, True)  # warm the page cache
    res = {"stoker": [], "stoker_no_ta": [], "dataloader": [], "busy": [], "busy_no_ta": []}
    for _ in range(a.rounds):
        ips, busy = stoker_epoch(root, a.threads, True)
        res["stoker"].append(ips)
        res["busy"].append(busy)
        ips, busy = stoker_epoch(root, a.threads, False)
        res["stoker_no_ta"].append(ips)
        res["busy_no_ta"].append(busy)
        res["dataloader"].append(dataloader_epoch(root, a.threads))
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"threads={a.threads} rounds={a.rounds}")
    for k in ("stoker", "stoker_no_ta", "dataloader"):
        print(f"{k:14s} {med[k]:8.1f} images/s")
    print(f"stoker / dataloader: {med['stoker'] / med['dataloader']:.2f}x")
    print(f"busy per image: {med['busy'] * 1e3:.2f} ms with TA, {med['busy_no_ta'] * 1e3:.2f} ms "
          f"without; TA share {1 - med['busy_no_ta'] / med['busy']:.1%}")


if __name__ == "__main__":
    main()
