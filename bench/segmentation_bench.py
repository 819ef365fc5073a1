#!/usr/bin/env python3
"""Segmentation recipe: stoker against a tuned DataLoader, side by side.

Data, made here (--data DIR, or a temporary folder): --n photos-like 2048x1024 JPEGs
(quality 90: gradients, filled shapes, Gaussian noise, so the files have a camera photo's
size) in DIR/img and their label maps as greyscale PNGs in DIR/ann (the shapes' classes,
0-18, 255 on a few thin borders), Cityscapes-sized.

Recipe, the same for both (image + mask, float32 NCHW, batch --batch):
  RandomResizedCrop(512, scale=(1/32, 1/2)): a crop of 256..1024 px on a side of the
      2048x1024 photo resized to 512x512, the range of torchvision's segmentation references'
      0.5..2.0 scale jitter followed by a 512 crop; the image bilinear, the mask NEAREST;
  RandomHorizontalFlip (both), ColorJitter(0.4, 0.4, 0.4) (image), Normalize (image).
  * stoker:     SegmentationFolder(DIR/img, DIR/ann) + Loader(transforms=...): the mask is a
                target of the source, moved with the image's draw (decode-only-the-crop and
                DCT scaling for the image, as by default); the masks come stacked, uint8
                [B, 512, 512] (SegmentationFolder's mask_dtype="uint8"), as the
                DataLoader's collate stacks them.
  * dataloader: a Dataset reading both files with PIL, RandomResizedCrop.get_params, then
                torchvision.transforms.functional: resized_crop (BILINEAR / NEAREST), hflip,
                ColorJitter, to_tensor, normalize; the mask torch.as_tensor(np.asarray(m)).
                num_workers = workers, persistent_workers, prefetch_factor 4; the clock
                starts before iter() (the workers' start counts, as a Loader's threads').
For workers in --workers (stoker threads = workers), --rounds rounds interleaved (drift on a
shared machine hits all configurations alike): samples/s of one epoch, and CPU ms per
sample (user + system of the process and its DataLoader workers, /proc/PID/stat, over the
epoch). Medians printed, with `uptime` before and after.

Crop-decode (--crop-decode): CPU per sample, one thread, of stoker decoding each JPEG
  * whole:  CenterCrop((1024, 2048)) (the full decode, nothing resized), uint8;
  * crop:   RandomCrop(512) (a 512x512 region decoded, no resize), uint8;
  * recipe: the recipe's RandomResizedCrop(512, scale=(1/32, 1/2)) alone, uint8;
  the image only (stoker.ImageFolder over DIR/decode, whose one class links to DIR/img).

    /usr/bin/python3 bench/segmentation_bench.py [--data DIR] [--n 64] [--batch 8]
        [--workers 1 2 3] [--rounds 3] [--crop-decode]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "python"))  # an installed stoker wins

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
W, H = 2048, 1024
SIZE = 512
SCALE = (1 / 32, 1 / 2)
RATIO = (3 / 4, 4 / 3)
JITTER = (0.4, 0.4, 0.4)


def make_data(root, n):
    import numpy as np
    from PIL import Image, ImageDraw
    img_dir, ann_dir = os.path.join(root, "img"), os.path.join(root, "ann")
    os.makedirs(img_dir, exist_ok=True)
    os.makedirs(ann_dir, exist_ok=True)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    for i in range(n):
        path = os.path.join(img_dir, f"{i:05d}.jpg")
        if os.path.exists(path) and os.path.exists(os.path.join(ann_dir, f"{i:05d}.png")):
            continue
        rng = np.random.default_rng(i)
        base = np.stack([rng.uniform(40, 200) + rng.uniform(-60, 60) * xx / W +
                         rng.uniform(-60, 60) * yy / H for _ in range(3)], axis=2)
        img = Image.fromarray(base.clip(0, 255).astype(np.uint8))
        mask = Image.new("L", (W, H), 0)
        di, dm = ImageDraw.Draw(img), ImageDraw.Draw(mask)
        for _ in range(40):
            x0, y0 = rng.uniform(-200, W), rng.uniform(-100, H)
            w, h = rng.uniform(40, 600), rng.uniform(30, 400)
            cls = int(rng.integers(1, 19))
            colour = tuple(int(c) for c in rng.integers(0, 256, 3))
            box = [x0, y0, x0 + w, y0 + h]
            if rng.random() < 0.5:
                di.ellipse(box, fill=colour)
                dm.ellipse(box, fill=cls, outline=255, width=2)
            else:
                di.rectangle(box, fill=colour)
                dm.rectangle(box, fill=cls, outline=255, width=2)
        a = np.asarray(img).astype(np.float32)
        a += rng.normal(0, 10, a.shape).astype(np.float32)
        Image.fromarray(a.clip(0, 255).astype(np.uint8)).save(path, quality=90)
        mask.save(os.path.join(ann_dir, f"{i:05d}.png"))
    return img_dir, ann_dir


def cpu_seconds(pids):
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        except FileNotFoundError:
            pass
    return total


def stoker_transforms():
    import stoker
    return [stoker.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO),
            stoker.RandomHorizontalFlip(), stoker.ColorJitter(*JITTER),
            stoker.Normalize(MEAN, STD)]


def stoker_epoch(img_dir, ann_dir, workers, batch, seed):
    import stoker
    import torch
    loader = stoker.Loader(stoker.SegmentationFolder(img_dir, ann_dir), batch_size=batch,
                           shuffle=True, seed=seed, threads=workers,
                           transforms=stoker_transforms())
    n = 0
    c0, t0 = cpu_seconds([os.getpid()]), time.perf_counter()
    for b in loader:
        mask = b["mask"]
        assert b["image"].shape[1:] == (3, SIZE, SIZE) and mask.shape[1:] == (SIZE, SIZE)
        n += len(b["image"])
    dt, cpu = time.perf_counter() - t0, cpu_seconds([os.getpid()]) - c0
    loader.close()
    return n / dt, 1000 * cpu / n


class PilSegmentation:
    """The recipe with PIL and torchvision's functional ops, image and mask together."""

    def __init__(self, img_dir, ann_dir):
        self.images = sorted(os.path.join(img_dir, f) for f in os.listdir(img_dir))
        self.masks = sorted(os.path.join(ann_dir, f) for f in os.listdir(ann_dir))
        assert len(self.images) == len(self.masks)
        import torchvision.transforms as T
        self.jitter = T.ColorJitter(*JITTER)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        import numpy as np
        import torch
        import torchvision.transforms as T
        import torchvision.transforms.functional as F
        from PIL import Image
        from torchvision.transforms import InterpolationMode
        img = Image.open(self.images[i]).convert("RGB")
        mask = Image.open(self.masks[i])
        top, left, h, w = T.RandomResizedCrop.get_params(img, SCALE, RATIO)
        img = F.resized_crop(img, top, left, h, w, [SIZE, SIZE], InterpolationMode.BILINEAR)
        mask = F.resized_crop(mask, top, left, h, w, [SIZE, SIZE], InterpolationMode.NEAREST)
        if torch.rand(1).item() < 0.5:
            img, mask = F.hflip(img), F.hflip(mask)
        img = F.normalize(F.to_tensor(self.jitter(img)), MEAN, STD)
        return img, torch.as_tensor(np.asarray(mask).copy())


def dataloader_epoch(img_dir, ann_dir, workers, batch, seed):
    import torch
    torch.manual_seed(seed)
    dl = torch.utils.data.DataLoader(PilSegmentation(img_dir, ann_dir), batch_size=batch,
                                     shuffle=True, num_workers=workers, prefetch_factor=4,
                                     persistent_workers=True)
    n = 0
    c0, t0 = cpu_seconds([os.getpid()]), time.perf_counter()
    it = iter(dl)  # the workers' start counts, as a stoker Loader's threads' does
    pids = [w.pid for w in it._workers]  # forked now: their CPU time starts at 0
    for img, mask in it:
        n += len(img)
    dt = time.perf_counter() - t0
    cpu = cpu_seconds([os.getpid()] + pids) - c0
    del it, dl
    return n / dt, 1000 * cpu / n


def crop_decode(root, rounds):
    import stoker
    configs = {
        "whole": [stoker.CenterCrop((H, W))],
        "crop": [stoker.RandomCrop(SIZE)],
        "recipe": [stoker.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO)],
    }
    got = {k: [] for k in configs}
    for r in range(rounds):
        for name, t in configs.items():
            loader = stoker.Loader(stoker.ImageFolder(root), batch_size=8, threads=1,
                                   shuffle=True, seed=r, dtype="uint8", transforms=t)
            n = 0
            c0 = cpu_seconds([os.getpid()])
            for x, _ in loader:
                n += len(x)
            got[name].append(1000 * (cpu_seconds([os.getpid()]) - c0) / n)
            loader.close()
    med = {k: statistics.median(v) for k, v in got.items()}
    for k, v in got.items():
        print(f"crop-decode {k:7s} CPU ms/sample median {med[k]:7.2f}  runs "
              + " ".join(f"{x:.2f}" for x in v))
    print(f"crop-decode ratio crop/whole {med['crop'] / med['whole']:.3f}  "
          f"recipe/whole {med['recipe'] / med['whole']:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--crop-decode", action="store_true",
                    help="also the CPU per sample of a 512 crop against the full decode")
    ap.add_argument("--no-recipe", action="store_true", help="only --crop-decode")
    args = ap.parse_args()
    tmp = None
    root = args.data
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="segbench-")
        root = tmp.name
    t0 = time.perf_counter()
    img_dir, ann_dir = make_data(root, args.n)
    sizes = [os.path.getsize(os.path.join(img_dir, f)) for f in os.listdir(img_dir)]
    print(f"data: {len(sizes)} JPEGs {W}x{H}, median {statistics.median(sizes) / 1e3:.0f} kB "
          f"(made or found in {time.perf_counter() - t0:.0f} s) in {root}")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if not args.no_recipe:
        res = {}
        for r in range(args.rounds):
            for w in args.workers:
                for name, fn in (("stoker", stoker_epoch), ("dataloader", dataloader_epoch)):
                    sps, cpu = fn(img_dir, ann_dir, w, args.batch, r)
                    res.setdefault((name, w), []).append((sps, cpu))
                    print(f"round {r} {name:10s} workers {w}: {sps:6.2f} samples/s, "
                          f"{cpu:7.1f} CPU ms/sample", flush=True)
        print(f"{'loader':10s} {'workers':>7s} {'samples/s':>10s} {'CPU ms/sample':>14s}"
              f" {'x DataLoader (samples/s)':>25s} {'x (CPU)':>8s}")
        for w in args.workers:
            med = {}
            for name in ("stoker", "dataloader"):
                v = res[(name, w)]
                med[name] = (statistics.median(x[0] for x in v),
                             statistics.median(x[1] for x in v))
            for name in ("stoker", "dataloader"):
                sps, cpu = med[name]
                ratio = sps / med["dataloader"][0]
                cratio = med["dataloader"][1] / cpu
                print(f"{name:10s} {w:7d} {sps:10.2f} {cpu:14.1f} {ratio:25.2f} {cratio:8.2f}")
    if args.crop_decode:
        # ImageFolder wants class folders: a folder whose one class is a link to DIR/img.
        only = os.path.join(root, "decode")
        os.makedirs(only, exist_ok=True)
        if not os.path.exists(os.path.join(only, "img")):
            os.symlink(os.path.abspath(img_dir), os.path.join(only, "img"))
        crop_decode(only, args.rounds)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
