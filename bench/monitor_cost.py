#!/usr/bin/python3
"""What a stoker.Monitor costs the consumer: the time of its per-batch work (labels counted,
`samples_per_batch` images' channel sums) on real batches of the train pipeline, against the
time the loader takes per batch (the same pipeline, no monitor). The per-batch work runs on
the thread that calls next(), so its share of the batch time is the slowdown of a step the
loader feeds in time; with interleaved rounds so drift on a shared machine hits both alike.

    PYTHONPATH=python bench/monitor_cost.py DATA [--batch 64] [--size 224] [--rounds 5]
                                                  [--stoker build/stoker]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import stoker

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", help="an ImageFolder root")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--stoker", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                    "stoker"))
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "ref.json")
        with open(ref, "w") as f:
            f.write(subprocess.run([a.stoker, "stats", a.data, "--json"], check=True,
                                   capture_output=True, text=True).stdout)
        transforms = [stoker.RandomResizedCrop(a.size), stoker.RandomHorizontalFlip(),
                      stoker.Normalize(MEAN, STD)]
        observe_us, batch_ms = [], []
        for _ in range(a.rounds):
            monitor = stoker.Monitor(ref)
            loader = stoker.Loader(stoker.ImageFolder(a.data), batch_size=a.batch,
                                   shuffle=True, transforms=transforms)
            t0, n, kept = time.perf_counter(), 0, []
            for images, labels in loader:
                n += 1
                if len(kept) < 4:
                    kept.append((images, np.asarray(labels)))
            batch_ms.append(1e3 * (time.perf_counter() - t0) / n)
            loader.close()  # its threads idle: the monitor's work timed alone
            monitor._attach(loader, transforms, "float32", "NCHW")
            t0 = time.perf_counter()
            reps = 50
            for _ in range(reps):
                for images, labels in kept:
                    monitor._observe(images, labels)
            observe_us.append(1e6 * (time.perf_counter() - t0) / (reps * len(kept)))
        o, b = statistics.median(observe_us), statistics.median(batch_ms)
        print(f"monitor per batch: median {o:.0f} us (rounds {min(observe_us):.0f}-"
              f"{max(observe_us):.0f}); loader per batch of {a.batch} at {a.size} px: "
              f"median {b:.1f} ms ({min(batch_ms):.1f}-{max(batch_ms):.1f}); share "
              f"{100 * o / 1e3 / b:.2f}% of the batch time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
