#!/usr/bin/env python3
"""Measure stoker.Loader from Python, the way a training script uses it.

Imports torch and stoker (their CPU time is counted), builds a Loader on an
image folder with the train or val pipeline, and reports as one JSON object:
images_per_sec (median of the timed epochs after one warm-up epoch),
first_batch_ms (Loader construction to first batch), cpu_s_per_1000 (the
process's CPU over the timed epochs per 1,000 images), import_cpu_s, and
peak_rss_mib (the process's peak RSS: torch imported, batches as tensors).

    /usr/bin/python3 bench/stoker_python.py DATA [--pipeline train|val] [--threads N]
        [--batch-size 64] [--prefetch 2] [--dtype float32] [--epochs 3]
"""

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--pipeline", choices=("train", "val"), default="train")
    parser.add_argument("--threads", type=int, default=0, help="0: one per core")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--prefetch", type=int, default=2)
    parser.add_argument("--dtype", choices=("uint8", "float32", "float16", "bfloat16"),
                        default="float32")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    import torch  # noqa: F401  (imported as in a training script; counted)
    # The checkout's python/ (also linked from the build tree's share/stoker/python);
    # absent where the package is installed, and then the installed stoker is imported.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
    import stoker
    import_cpu = cpu_seconds()

    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    if args.pipeline == "train":
        transforms = [stoker.RandomResizedCrop(224), stoker.RandomHorizontalFlip()]
    else:
        transforms = [stoker.Resize(256), stoker.CenterCrop(224)]
    if args.dtype != "uint8":
        transforms.append(stoker.Normalize(mean, std))

    t0 = time.perf_counter()
    loader = stoker.Loader(stoker.ImageFolder(str(args.data)), batch_size=args.batch_size,
                           shuffle=True, transforms=transforms, threads=args.threads or None,
                           prefetch=args.prefetch, dtype=args.dtype)
    first_batch_ms = None
    rates = []
    cpu0 = 0.0
    images = 0
    for epoch in range(args.epochs + 1):
        if epoch == 1:
            cpu0 = cpu_seconds()
        start = time.perf_counter()
        n = 0
        for images_t, labels in loader:
            if first_batch_ms is None:
                first_batch_ms = (time.perf_counter() - t0) * 1e3
            n += len(labels)
        if epoch > 0:
            rates.append(n / (time.perf_counter() - start))
            images += n
    cpu = cpu_seconds() - cpu0
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({
        "tool": "stoker.Loader (Python)", "pipeline": args.pipeline, "dtype": args.dtype,
        "threads": loader.stats()["threads"], "batch_size": args.batch_size,
        "prefetch": args.prefetch, "images_per_sec": statistics.median(rates),
        "first_batch_ms": first_batch_ms, "cpu_s_per_1000": cpu / images * 1000,
        "import_cpu_s": import_cpu, "peak_rss_mib": peak_rss_mib,
        "stats": {k: v for k, v in loader.stats().items() if not isinstance(v, dict)},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
