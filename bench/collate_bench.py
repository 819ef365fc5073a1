"""What collate="list" costs: images/s side by side in one run,
interleaved, as ratios to the fixed-size path.

  batch        Resize(256) + CenterCrop(224) + Normalize, collate="batch" (the reference)
  list_fixed   the same pipeline, collate="list" (the list path's own overhead)
  list_resize  Resize(256) + Normalize, collate="list" (each image its own size: more
               pixels per image than 224x224, so not the same work)
  torch_list   (with --torch) torchvision ImageFolder + Resize(256) + ToTensor + Normalize
               in a DataLoader with a list collate_fn, num_workers = --threads

    PYTHONPATH=python /usr/bin/python3 bench/collate_bench.py [--root DIR] [--images 512]
        [--batch 64] [--threads 2] [--reps 3] [--torch]

Without --root it writes JPEGs of mixed sizes (synth verb of STOKER_CLI or build/stoker)
under a temporary directory.
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

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def make_folder(tmp: Path, images: int) -> Path:
    cli = os.environ.get("STOKER_CLI", "build/stoker")
    root = tmp / "mixed"
    for k, (w, h) in enumerate([(500, 375), (375, 500), (640, 427), (333, 250)]):
        subprocess.run([cli, "synth", str(root / f"c{k}"), "--classes", "1", "--per-class",
                        str(images // 4), "--width", str(w), "--height", str(h),
                        "--seed", str(k)], check=True, capture_output=True)
    return root


def epoch_rate(loader) -> float:
    t0 = time.perf_counter()
    n = 0
    for x, _ in loader:
        n += len(x)
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root")
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--torch", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="collate_bench"))
    try:
        root = Path(args.root) if args.root else make_folder(tmp, args.images)
        folder = stoker.ImageFolder(str(root))
        kw = dict(batch_size=args.batch, threads=args.threads, dct_scaling=False)
        fixed = [stoker.Resize(256), stoker.CenterCrop(224), stoker.Normalize(MEAN, STD)]
        runs = {
            "batch": stoker.Loader(folder, transforms=fixed, **kw),
            "list_fixed": stoker.Loader(folder, transforms=fixed, collate="list", **kw),
            "list_resize": stoker.Loader(folder, collate="list", **kw,
                                         transforms=[stoker.Resize(256),
                                                     stoker.Normalize(MEAN, STD)]),
        }
        if args.torch:
            import torch
            import torchvision.datasets as tvd
            import torchvision.transforms as T
            ds = tvd.ImageFolder(str(root), T.Compose([T.Resize(256), T.ToTensor(),
                                                       T.Normalize(MEAN, STD)]))
            runs["torch_list"] = torch.utils.data.DataLoader(
                ds, batch_size=args.batch, num_workers=args.threads,
                collate_fn=lambda b: ([x for x, _ in b], torch.tensor([y for _, y in b])),
                persistent_workers=args.threads > 0)
        for loader in runs.values():  # warm-up: page cache, pools, worker start
            epoch_rate(loader)
        rates = {name: [] for name in runs}
        for _ in range(args.reps):
            for name, loader in runs.items():
                rates[name].append(epoch_rate(loader))
        base = statistics.median(rates["batch"])
        print(f"{len(folder)} images, batch {args.batch}, threads {args.threads}, "
              f"{args.reps} reps (median images/s)")
        for name, r in rates.items():
            m = statistics.median(r)
            print(f"  {name:12s} {m:9.1f} images/s  ratio {m / base:5.3f}")
        # Busy time per image (summed over threads, all epochs): independent of the
        # machine's other load, unlike images/s.
        for name in ("batch", "list_fixed", "list_resize"):
            s = runs[name].stats()
            print(f"  {name:12s} decode {s['decode_s'] / s['images'] * 1e3:6.3f} ms/image, "
                  f"augment {s['augment_s'] / s['images'] * 1e3:6.3f} ms/image, "
                  f"batch_buffers {s['batch_buffers']}, "
                  f"region allocations {s['batch_region_allocations']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
