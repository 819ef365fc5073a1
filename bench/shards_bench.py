#!/usr/bin/env python3
"""Tar shards against the image folder they were made from, in one run.

Packs an ImageFolder (repeated `--repeat` times, so there are enough images)
into WebDataset shards (`key.jpg` + `key.cls`, `--per-shard` samples each),
plain `.tar` and `.tar.zst` (the zstd command), then measures images/s of
stoker.Loader (train pipeline: RandomResizedCrop 224 + flip + Normalize; or
`--pipeline val`: Resize 256 + CenterCrop 224 + Normalize, the same work for
every sample whatever its id, since stream ids, hence random crops, differ
from the folder's; float32, shuffled) on
  folder       stoker.ImageFolder on the same files
  tar-indexed  stoker.Shards(*.tar)                (index + pread, global shuffle)
  tar-stream   stoker.Shards(*.tar, mode="stream") (sequential, shuffle buffer)
  zst-stream   stoker.Shards(*.tar.zst)            (sequential, zstd decompression)
and with --resized, shards that `stoker convert --resize 256` wrote from the folder:
  r256-indexed, r256-stream (pre-resized: shorter side 256, JPEG q90)
The configurations run interleaved, `--rounds` times each (one warm-up epoch,
then `--epochs` timed), and the median img/s and CPU-ms per image (all threads
of the process) per configuration and their ratios to the folder are printed. The machines are shared and noisy: compare ratios
from one run.

    /usr/bin/python3 bench/shards_bench.py DATA [--repeat 5] [--threads 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "python"))  # an installed stoker wins
import stoker  # noqa: E402


def pack(data: Path, repeat: int, per_shard: int, out: Path):
    """Writes the folder as shards and as a folder of symlinks; returns both roots."""
    folder = out / "folder"
    files = []
    classes = sorted(p for p in data.iterdir() if p.is_dir())
    for label, cls in enumerate(classes):
        (folder / cls.name).mkdir(parents=True)
        for f in sorted(cls.iterdir()):
            for k in range(repeat):
                link = folder / cls.name / f"{f.stem}_r{k}{f.suffix}"
                link.symlink_to(f.resolve())
                files.append((f"{cls.name}_{f.stem}_r{k}", f, label))
    # Shards in the order ImageFolder lists the files (any order would do).
    files.sort(key=lambda x: (x[2], x[0]))
    shards = out / "shards"
    shards.mkdir()
    for s in range(0, len(files), per_shard):
        path = shards / f"train-{s // per_shard:06d}.tar"
        with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
            for key, f, label in files[s:s + per_shard]:
                data_bytes = f.read_bytes()
                for ext, payload in (("jpg", data_bytes), ("cls", str(label).encode())):
                    info = tarfile.TarInfo(f"{key}.{ext}")
                    info.size = len(payload)
                    t.addfile(info, io.BytesIO(payload))
        subprocess.run(["zstd", "-q", "-3", str(path), "-o", str(path) + ".zst"], check=True)
    return folder, shards, len(files)


def measure(source, args) -> float:
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    if args.pipeline == "train":
        transforms = [stoker.RandomResizedCrop(224), stoker.RandomHorizontalFlip()]
    else:  # the same work for every sample, whatever its id
        transforms = [stoker.Resize(256), stoker.CenterCrop(224)]
    loader = stoker.Loader(source, batch_size=args.batch_size, shuffle=True,
                           transforms=transforms + [stoker.Normalize(mean, std)],
                           threads=args.threads, prefetch=2)
    rates, cpu = [], []
    for epoch in range(args.epochs + 1):
        loader.set_epoch(epoch)
        n = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for images, _ in loader:
            n += images.shape[0]
        if epoch > 0:
            rates.append(n / (time.perf_counter() - t0))
            cpu.append(1e3 * (time.process_time() - c0) / n)
    loader.close()
    return statistics.median(rates), statistics.median(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--per-shard", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pipeline", choices=("train", "val"), default="train")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--resized", action="store_true",
                        help="also pre-resized shards written by `stoker convert --resize 256`")
    parser.add_argument("--stoker", default=str(ROOT / "build" / "stoker"),
                        help="the stoker CLI (for --resized)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="stoker-shards-bench-") as tmp:
        folder, shards, n = pack(args.data, args.repeat, args.per_shard, Path(tmp))
        configs = {
            "folder": lambda: stoker.ImageFolder(str(folder)),
            "tar-indexed": lambda: stoker.Shards(str(shards / "train-*.tar"), mode="indexed"),
            "tar-stream": lambda: stoker.Shards(str(shards / "train-*.tar"), mode="stream"),
            "zst-stream": lambda: stoker.Shards(str(shards / "train-*.tar.zst")),
        }
        if args.resized:
            r256 = Path(tmp) / "r256"
            subprocess.run([args.stoker, "convert", str(folder), str(r256), "--resize", "256",
                            "--samples-per-shard", str(args.per_shard),
                            "--threads", str(args.threads)], check=True, stdout=sys.stderr)
            configs["r256-indexed"] = lambda: stoker.Shards(str(r256 / "*.tar"), mode="indexed")
            configs["r256-stream"] = lambda: stoker.Shards(str(r256 / "*.tar"), mode="stream")
            configs["r256-indexed"]()
        configs["tar-indexed"]()  # build the indexes outside the timing
        results = {k: [] for k in configs}
        cpu = {k: [] for k in configs}
        for r in range(args.rounds):
            for name, make in configs.items():
                rate, ms = measure(make(), args)
                results[name].append(rate)
                cpu[name].append(ms)
                print(f"round {r}: {name:12s} {rate:8.0f} img/s {ms:6.2f} CPU-ms/img",
                      file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in results.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"{n} images, {args.threads} threads, batch {args.batch_size}, {args.pipeline} pipeline; "
          f"median of {args.rounds} rounds x {args.epochs} epochs")
    # CPU per image (all the process's threads) does not depend on how much of a shared
    # machine the run got; at full use of the cores, throughput is cores / CPU per image.
    print(f"{'source':12s} {'img/s':>8s} {'vs folder':>10s} {'CPU-ms/img':>11s} "
          f"{'folder/this':>12s}")
    for k, v in med.items():
        print(f"{k:12s} {v:8.0f} {v / med['folder']:10.3f} {med_cpu[k]:11.3f} "
              f"{med_cpu['folder'] / med_cpu[k]:12.3f}")
    if args.json:
        args.json.write_text(json.dumps({"images": n, "img_per_s": med, "cpu_ms": med_cpu,
                                         "runs": results, "cpu_runs": cpu}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
