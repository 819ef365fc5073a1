#!/usr/bin/env python3
"""Array sources and pre-resized shards against the image folder, side by side.

From one image folder DATA (e.g. 200 photos with --repeat 5)
this prepares, in a temporary directory:
  * folder:      DATA itself (the baseline: original JPEGs);
  * resized256:  the JPEGs that `stoker convert DATA --resize 256` writes into its
                 tar shard (shorter side 256, quality 90, 4:4:4), unpacked into an
                 ImageFolder (class directory = label): pre-resizing's effect on the
                 training read path, without needing the shard reader;
  * npy:         Resize(256) + CenterCrop(256) of every image (Pillow) as one
                 uint8 [N, 256, 256, 3] .npy, memory-mapped (zero copy);
  * npy_nchw:    the same pixels as [N, 3, 256, 256] (interleaved per sample);
  * hdf5:        the same pixels as an HDF5 dataset (hyperslab reads under the
                 HDF5 mutex) -- with --hdf5;
and measures stoker.Loader images/s on each, train (RandomResizedCrop 224 + flip +
Normalize, float32) and val (Resize 256 + CenterCrop 224 + Normalize), batch 64,
prefetch 2, --threads threads, warm page cache: one warm-up epoch, then the median
of --epochs timed epochs, all sources interleaved over --rounds rounds (median
kept). It also times the conversion itself. Prints a table and the ratios to the
folder; --json FILE saves everything.

    /usr/bin/python3 bench/arrays_bench.py DATA [--repeat 5] [--threads 2] [--rounds 3]
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

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "python"))  # an installed stoker wins
sys.path.insert(0, str(ROOT / "bench"))
import stoker  # noqa: E402
from run_bench import repeated_folder  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def pipelines():
    return {
        "train": [stoker.RandomResizedCrop(224), stoker.RandomHorizontalFlip(),
                  stoker.Normalize(MEAN, STD)],
        "val": [stoker.Resize(256), stoker.CenterCrop(224), stoker.Normalize(MEAN, STD)],
    }


def measure(source, transforms, threads: int, epochs: int) -> float:
    loader = stoker.Loader(source, batch_size=64, shuffle=True, transforms=transforms,
                           threads=threads, prefetch=2, dtype="float32")
    rates = []
    for e in range(epochs + 1):
        t0 = time.perf_counter()
        n = 0
        for x, _ in loader:
            n += len(x)
        if e > 0:
            rates.append(n / (time.perf_counter() - t0))
    loader.close()
    return statistics.median(rates)


def prepare(args, tmp: Path) -> dict:
    data = Path(args.data)
    if args.repeat > 1:
        data = repeated_folder(data, args.repeat, tmp / "repeated")
    stoker_cli = args.stoker
    out = {"folder": str(data)}
    # Pre-resized shard, then unpacked into an ImageFolder.
    cmd = [stoker_cli, "convert", str(data), str(tmp / "shards"), "--resize", "256",
           "--quality", "90", "--threads", str(args.threads), "--json"]
    log("  $ " + " ".join(cmd))
    conv = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    cmd = [stoker_cli, "convert", str(data), str(tmp / "shards_plain"), "--threads",
           str(args.threads), "--json"]
    log("  $ " + " ".join(cmd))
    plain = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    resized = tmp / "resized256"
    for shard in conv["paths"]:
        with tarfile.open(shard) as tf:
            pending = {}
            for m in tf.getmembers():
                key, ext = m.name.split(".", 1)
                pending.setdefault(key, {})[ext] = tf.extractfile(m).read()
            for key, parts in pending.items():
                d = resized / f"c{int(parts['cls']):04d}"
                d.mkdir(parents=True, exist_ok=True)
                ext = "png" if "png" in parts else "jpg"
                (d / f"{key}.{ext}").write_bytes(parts[ext])
    out["resized256"] = str(resized)
    out["convert_resize"] = conv
    out["convert_plain"] = plain
    # Fixed-size pixels for the arrays.
    folder = stoker.ImageFolder(str(data))
    n = len(folder)
    pix = np.empty((n, 256, 256, 3), np.uint8)
    labels = np.empty(n, np.int64)
    for i in range(n):
        img = Image.open(folder.path(i)).convert("RGB")
        w, h = img.size
        s = 256 / min(w, h)
        img = img.resize((max(256, round(w * s)), max(256, round(h * s))), Image.BILINEAR)
        w, h = img.size
        left, top = (w - 256) // 2, (h - 256) // 2
        pix[i] = np.asarray(img.crop((left, top, left + 256, top + 256)))
        labels[i] = folder.label(i)
    np.save(tmp / "x.npy", pix)
    np.save(tmp / "c.npy", np.ascontiguousarray(pix.transpose(0, 3, 1, 2)))
    np.save(tmp / "y.npy", labels)
    out["npy_bytes"] = os.path.getsize(tmp / "x.npy")
    if args.hdf5:
        import h5py
        with h5py.File(tmp / "d.h5", "w") as f:
            f.create_dataset("images", data=pix, chunks=(1, 256, 256, 3))
            f.create_dataset("labels", data=labels)
    return out


def sources(prep: dict, tmp: Path, hdf5: bool) -> dict:
    s = {
        "folder": lambda: stoker.ImageFolder(prep["folder"]),
        "resized256": lambda: stoker.ImageFolder(prep["resized256"]),
        "npy": lambda: stoker.Npy(str(tmp / "x.npy"), str(tmp / "y.npy")),
        "npy_nchw": lambda: stoker.Npy(str(tmp / "c.npy"), str(tmp / "y.npy")),
    }
    if hdf5:
        s["hdf5"] = lambda: stoker.HDF5(str(tmp / "d.h5"))
    return s


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--hdf5", action="store_true")
    p.add_argument("--stoker", default=str(ROOT / "build" / "stoker"), help="the CLI binary")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="stoker-arrays-") as t:
        tmp = Path(t)
        log("preparing the sources")
        prep = prepare(args, tmp)
        srcs = sources(prep, tmp, args.hdf5)
        results = {name: {pl: [] for pl in pipelines()} for name in srcs}
        for r in range(args.rounds):
            for pl, transforms in pipelines().items():
                for name, make in srcs.items():
                    rate = measure(make(), transforms, args.threads, args.epochs)
                    results[name][pl].append(rate)
                    log(f"  round {r + 1} {pl:5s} {name:10s} {rate:8.1f} img/s")
    table = {name: {pl: statistics.median(v) for pl, v in d.items()} for name, d in results.items()}
    n = prep["convert_resize"]["samples"]
    print(f"{n} images, {args.threads} threads, batch 64, float32, median of {args.rounds} "
          f"interleaved rounds")
    print(f"{'source':12s} {'train img/s':>12s} {'x folder':>9s} {'val img/s':>10s} {'x folder':>9s}")
    for name, d in table.items():
        print(f"{name:12s} {d['train']:12.1f} {d['train'] / table['folder']['train']:9.2f} "
              f"{d['val']:10.1f} {d['val'] / table['folder']['val']:9.2f}")
    cr, cp = prep["convert_resize"], prep["convert_plain"]
    print(f"convert --resize 256: {cr['samples_per_sec']:.0f} samples/s, "
          f"{cr['input_bytes'] / 1e6:.1f} MB -> {cr['output_bytes'] / 1e6:.1f} MB; "
          f"convert (no resize): {cp['samples_per_sec']:.0f} samples/s")
    if args.json:
        args.json.write_text(json.dumps({"rates": results, "median": table, "prepare": {
            k: v for k, v in prep.items() if k.startswith("convert") or k == "npy_bytes"}},
            indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
