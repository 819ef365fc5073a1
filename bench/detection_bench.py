#!/usr/bin/env python3
"""Detection recipe, stoker against a tuned DataLoader, side by side.

Data (made by the script, in --data or a temporary folder): --images JPEGs (quality 90) of
1280 x 960 (every third one 960 x 1280), photo-like (smooth colour gradients plus noise),
and a COCO instances JSON with 3 to 8 boxes per image over 5 categories (ids 1, 3, 7, 9,
12: not contiguous).

Recipe, float32 NCHW 640 x 640, batch 16, boxes xyxy in output pixels, a label per box:
    ScaleJitter(target_size=(640, 640), scale_range=(0.1, 2.0))   # v2's
    RandomHorizontalFlip()
    Letterbox(640, fill=114)       # resize keeping the aspect into 640, centred pad
    Normalize(ImageNet mean, std)
  * stoker:     stoker.Coco(images, json) + Loader(targets=...), threads = T;
  * dataloader: a CocoDetection-like Dataset (PIL decode, the json read once), the same
                steps with torchvision 0.14's functional ops (F.resize, F.hflip, F.pad,
                F.to_tensor, F.normalize) and the box maths written out (scale, mirror,
                scale + shift, clamp, drop empty boxes), num_workers = T, persistent
                workers, prefetch_factor 2, a collate stacking images and listing targets.
For T in --threads (default 1 2 3), --rounds rounds interleaved (drift on a shared machine
hits all alike), one epoch each: stoker's timed from the source's construction, the
DataLoader's second epoch (persistent workers already started) from iter(). Reports the median samples/s and CPU-ms per sample
(stoker: the process's CPU time; DataLoader: the main process plus its workers, read from
/proc), the ratio, and the load average around each round.

    /usr/bin/python3 bench/detection_bench.py [--images 96] [--rounds 3] [--threads 1 2 3]
                                              [--no-dct]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "python"))  # an installed stoker wins

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
SIZE = 640
BATCH = 16
CATEGORIES = [1, 3, 7, 9, 12]


def make_data(root, n):
    import numpy as np
    from PIL import Image
    os.makedirs(os.path.join(root, "images"), exist_ok=True)
    rng = np.random.default_rng(0)
    images, anns = [], []
    for i in range(n):
        w, h = (960, 1280) if i % 3 == 2 else (1280, 960)
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        c = rng.uniform(0, 1, (3, 3))
        img = np.stack([(c[k, 0] * 255 * xx / w + c[k, 1] * 255 * yy / h) / 2 +
                        60 * np.sin(xx / (40 + 30 * c[k, 2]) + yy / 70) for k in range(3)], -1)
        img += rng.normal(0, 12, img.shape)
        name = f"{i:06d}.jpg"
        Image.fromarray(img.clip(0, 255).astype(np.uint8)).save(
            os.path.join(root, "images", name), quality=90)
        images.append({"id": i + 1, "file_name": name, "width": w, "height": h})
        for _ in range(int(rng.integers(3, 9))):
            bw, bh = rng.uniform(20, w / 2), rng.uniform(20, h / 2)
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            anns.append({"id": len(anns) + 1, "image_id": i + 1,
                         "category_id": int(rng.choice(CATEGORIES)),
                         "bbox": [x, y, bw, bh], "area": bw * bh, "iscrowd": 0})
    cats = [{"id": c, "name": f"c{c}"} for c in CATEGORIES]
    path = os.path.join(root, "instances.json")
    with open(path, "w") as f:
        json.dump({"images": images, "annotations": anns, "categories": cats}, f)
    return os.path.join(root, "images"), path


# ------------------------------------------------------------------------- stoker --

DCT = "auto"


def stoker_epoch(images, ann, threads):
    import stoker
    # Timed from the source's construction (the JSON parse, the threads' start): no warm-up.
    c0, t0 = time.process_time(), time.perf_counter()
    src = stoker.Coco(images, ann)  # COCO's xywh boxes; labels, iscrowd, area follow them
    transforms = [stoker.ScaleJitter((SIZE, SIZE), scale_range=(0.1, 2.0)),
                  stoker.RandomHorizontalFlip(), stoker.Letterbox(SIZE, fill=114),
                  stoker.Normalize(MEAN, STD)]
    loader = stoker.Loader(src, batch_size=BATCH, shuffle=True, threads=threads,
                           transforms=transforms, dct_scaling=DCT,
                           targets={"boxes": {"target": "boxes", "format": "xywh",
                                              "min_size": 1}})
    n = nb = 0
    for batch in loader:
        n += len(batch["image"])
        nb += sum(len(b) for b in batch["boxes"])
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    loader.close()
    return n / dt, 1000 * cpu / n, nb / n


# --------------------------------------------------------------------- DataLoader --

class CocoDetectionRecipe:
    """torchvision's CocoDetection (PIL decode, the json read once) with the recipe."""

    def __init__(self, images, ann):
        with open(ann) as f:
            d = json.load(f)
        self.images = images
        self.files = {im["id"]: im["file_name"] for im in d["images"]}
        self.ids = sorted(self.files)
        self.anns = {i: [] for i in self.ids}
        for a in d["annotations"]:
            self.anns[a["image_id"]].append(a)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, idx):
        import torch
        import torchvision.transforms.functional as F
        from PIL import Image
        i = self.ids[idx]
        img = Image.open(os.path.join(self.images, self.files[i])).convert("RGB")
        anns = self.anns[i]
        boxes = torch.tensor([[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2],
                               a["bbox"][1] + a["bbox"][3]] for a in anns],
                             dtype=torch.float64).reshape(-1, 4)
        # The category ids as labels, as torchvision's references and stoker.Coco's default.
        labels = torch.tensor([a["category_id"] for a in anns], dtype=torch.int64)
        w, h = img.size
        # ScaleJitter (v2): scale = min(th / h, tw / w) * r.
        r = 0.1 + random.random() * (2.0 - 0.1)
        s = min(SIZE / h, SIZE / w) * r
        nw, nh = max(1, int(w * s)), max(1, int(h * s))
        img = F.resize(img, [nh, nw])
        boxes *= torch.tensor([nw / w, nh / h, nw / w, nh / h], dtype=torch.float64)
        w, h = nw, nh
        if random.random() < 0.5:  # RandomHorizontalFlip
            img = F.hflip(img)
            boxes[:, [0, 2]] = w - boxes[:, [2, 0]]
        # Letterbox: fit 640 keeping the aspect, pad centred with 114.
        if SIZE * w <= SIZE * h:
            nh, nw = SIZE, int(SIZE * w / h)
        else:
            nw, nh = SIZE, int(SIZE * h / w)
        left, top = (SIZE - nw) // 2, (SIZE - nh) // 2
        img = F.pad(F.resize(img, [nh, nw]), [left, top, SIZE - nw - left, SIZE - nh - top],
                    fill=114)
        boxes *= torch.tensor([nw / w, nh / h, nw / w, nh / h], dtype=torch.float64)
        boxes += torch.tensor([left, top, left, top], dtype=torch.float64)
        boxes[:, 0::2] = boxes[:, 0::2].clamp(0, SIZE)
        boxes[:, 1::2] = boxes[:, 1::2].clamp(0, SIZE)
        keep = ((boxes[:, 2] - boxes[:, 0]) >= 1) & ((boxes[:, 3] - boxes[:, 1]) >= 1)
        x = F.normalize(F.to_tensor(img), MEAN, STD)
        return x, {"boxes": boxes[keep].float(), "labels": labels[keep]}


def collate(samples):
    import torch
    return torch.stack([s[0] for s in samples]), [s[1] for s in samples]


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dataloader_epoch(images, ann, threads):
    import torch
    dl = torch.utils.data.DataLoader(CocoDetectionRecipe(images, ann), batch_size=BATCH,
                                     shuffle=True, num_workers=threads, prefetch_factor=2,
                                     persistent_workers=True, collate_fn=collate)
    # An untimed first epoch starts the persistent workers; the second is timed from
    # iter(), when the workers begin its prefetch.
    for _ in dl:
        pass
    pids = [w.pid for w in dl._iterator._workers]
    w0 = sum(proc_cpu(p) for p in pids)
    n = nb = 0
    c0, t0 = time.process_time(), time.perf_counter()
    it = iter(dl)
    for x, targets in it:
        n += len(x)
        nb += sum(len(t["boxes"]) for t in targets)
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0 + sum(proc_cpu(p) for p in pids) - w0
    del it, dl
    return n / dt, 1000 * cpu / n, nb / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="folder for the generated data (default: a temporary one)")
    ap.add_argument("--images", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--no-dct", action="store_true",
                    help="stoker with dct_scaling=False (F.resize's pixels exactly)")
    args = ap.parse_args()
    global DCT
    DCT = False if args.no_dct else "auto"
    tmp = None
    root = args.data
    if root is None:
        tmp = tempfile.TemporaryDirectory()
        root = tmp.name
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    t0 = time.perf_counter()
    images, ann = make_data(root, args.images)
    print(f"data: {args.images} JPEGs 1280x960 / 960x1280 + instances.json "
          f"({time.perf_counter() - t0:.1f} s to make)")
    import torch
    import torchvision
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"cpus {os.cpu_count()}")
    results = {}
    for rnd in range(args.rounds):
        for t in args.threads:
            for name, fn in (("stoker", stoker_epoch), ("dataloader", dataloader_epoch)):
                la0 = os.getloadavg()[0]
                sps, cpu_ms, boxes = fn(images, ann, t)
                results.setdefault((name, t), []).append((sps, cpu_ms))
                print(f"round {rnd} {name:10s} T={t}: {sps:6.1f} samples/s, "
                      f"{cpu_ms:6.1f} CPU-ms/sample, {boxes:.2f} boxes/sample kept, "
                      f"load {la0:.2f} -> {os.getloadavg()[0]:.2f}", flush=True)
    print()
    print("| T | stoker samples/s | DataLoader samples/s | ratio | stoker CPU-ms/sample "
          "| DataLoader CPU-ms/sample |")
    print("|---|---|---|---|---|---|")
    for t in args.threads:
        s = [r[0] for r in results[("stoker", t)]]
        d = [r[0] for r in results[("dataloader", t)]]
        sc = [r[1] for r in results[("stoker", t)]]
        dc = [r[1] for r in results[("dataloader", t)]]
        ms, md = statistics.median(s), statistics.median(d)
        print(f"| {t} | {ms:.1f} | {md:.1f} | {ms / md:.2f}x | {statistics.median(sc):.1f} "
              f"| {statistics.median(dc):.1f} |")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
