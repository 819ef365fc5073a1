"""What on_error="skip" costs: the same folder clean, with one bad
file first (every later batch of the epoch is shifted by one sample, so the consumer
copies it: the worst case per bad file), and with 5% bad files; images/s side by side in
one run, interleaved, as ratios to the clean folder.

    PYTHONPATH=python /usr/bin/python3 bench/skip_bench.py [--images 1024] [--batch 128]

Writes its folders under a temporary directory (`stoker synth`-like JPEGs via the CLI's
`synth` verb, STOKER_CLI or build/stoker).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import stoker


def make_variants(tmp: Path, images: int) -> dict:
    cli = os.environ.get("STOKER_CLI", "build/stoker")
    clean = tmp / "clean"
    subprocess.run([cli, "synth", str(clean), "--classes", "4", "--per-class", str(images // 4),
                    "--width", "256", "--height", "192"], check=True, capture_output=True)
    files = sorted(p for p in clean.rglob("*.jpg"))
    out = {"clean": clean}
    for name, bad in (("one_bad_first", files[:1]), ("bad_5pct", files[::20])):
        d = tmp / name
        shutil.copytree(clean, d)
        for f in bad:
            (d / f.relative_to(clean)).write_bytes(b"not an image")
        out[name] = d
    return out


def epoch_rate(loader) -> float:
    t0 = time.perf_counter()
    n = 0
    for x, _ in loader:
        n += len(x)
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="skip_bench"))
    try:
        variants = make_variants(tmp, args.images)
        loaders = {}
        for name, root in variants.items():
            loaders[name] = stoker.Loader(
                stoker.ImageFolder(str(root)), batch_size=args.batch, shuffle=False,
                transforms=[stoker.Resize(224), stoker.CenterCrop(224)], dtype="float32",
                on_error="skip", **({"threads": args.threads} if args.threads else {}))
            epoch_rate(loaders[name])  # warm-up (page cache, buffers)
        rates = {name: [] for name in variants}
        for _ in range(args.reps):
            for name, loader in loaders.items():
                rates[name].append(epoch_rate(loader))
        base = statistics.median(rates["clean"])
        for name, r in rates.items():
            med = statistics.median(r)
            s = loaders[name].stats()
            print(f"{name:14s} {med:8.0f} images/s  ratio {med / base:5.3f}  "
                  f"skipped/epoch {s['epoch']['skipped']}  batch {args.batch}x3x224x224 float32")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
