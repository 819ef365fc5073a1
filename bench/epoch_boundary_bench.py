#!/usr/bin/env python3
"""Consumer wait across epoch boundaries, with a training step
slower than the pipeline.

Short epochs (e.g. 4 and 16 batches) make the boundaries a large share of the
run: each epoch's first batch used to be made from scratch while the step
waited. The step is a sleep (a GPU step leaves the CPU free), `--step-factor`
times the pipeline's own time per batch (measured first, without a step), so
the pipeline is faster than the step. Reports, per epoch length, the share of
the timed epochs' wall time the consumer waited (stats()["consumer_wait_s"])
and the mean wait for each epoch's first batch.

Run it with the stoker to measure on PYTHONPATH; before/after side by side:
  for p in /work/main/python python; do PYTHONPATH=$p /usr/bin/python3 \
      bench/epoch_boundary_bench.py PHOTOS; done
"""
from __future__ import annotations

import argparse
import json
import time

import stoker


def run(data: str, batches: int, epochs: int, step_factor: float, threads: int,
        prefetch: int) -> dict:
    src = stoker.ImageFolder(data)
    n = len(src)
    bs = n // batches
    loader = stoker.Loader(src, batch_size=bs, shuffle=True, seed=1, drop_last=True,
                           threads=threads, prefetch=prefetch,
                           transforms=[stoker.RandomResizedCrop(160),
                                       stoker.RandomHorizontalFlip()])
    # The pipeline's time per batch, consumer never sleeping (2 epochs, the first warms up).
    for _ in loader:
        pass
    t0 = time.perf_counter()
    k = 0
    for _ in loader:
        k += 1
    per_batch = (time.perf_counter() - t0) / k
    step = per_batch * step_factor
    wait0 = loader.stats()["consumer_wait_s"]
    first_waits = []
    t0 = time.perf_counter()
    for _ in range(epochs):
        it = iter(loader)
        t1 = time.perf_counter()
        next(it)
        first_waits.append(time.perf_counter() - t1)
        time.sleep(step)
        for _ in it:
            time.sleep(step)
    wall = time.perf_counter() - t0
    s = loader.stats()
    wait = s["consumer_wait_s"] - wait0
    return {
        "batches_per_epoch": batches, "batch_size": bs, "epochs": epochs,
        "pipeline_ms_per_batch": round(per_batch * 1e3, 1), "step_ms": round(step * 1e3, 1),
        "consumer_wait_share": round(wait / wall, 4),
        "first_batch_wait_ms": round(1e3 * sum(first_waits) / len(first_waits), 1),
        "prefetch_discarded_batches": s.get("prefetch_discarded_batches"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="an ImageFolder directory")
    ap.add_argument("--batches", default="4,16", help="batches per epoch, comma-separated")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--step-factor", type=float, default=1.5,
                    help="step time as a multiple of the pipeline's time per batch")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prefetch", type=int, default=2)
    a = ap.parse_args()
    for b in (int(x) for x in a.batches.split(",")):
        print(json.dumps(run(a.data, b, a.epochs, a.step_factor, a.threads, a.prefetch)),
              flush=True)


if __name__ == "__main__":
    main()
