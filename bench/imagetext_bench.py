#!/usr/bin/env python3
"""Image-text shards: stoker against webdataset's own loader, and what extra fields cost.

Writes webdataset shards from an image folder (repeated `--repeat` times): every
sample is `KEY.jpg` (the photo's own bytes), `KEY.txt` (a caption), `KEY.json`
(metadata), `KEY.cls`, and, for the record-cost rows, three `.npy` members
(float32 [512], int64 [77], float16 [16, 16]). Then measures, interleaved, `--rounds`
times each, samples/s and CPU-ms per sample (every thread of the process and of its
DataLoader workers, which are joined at the end of each epoch) of

  stoker-text    stoker.Shards(fields={"image": "jpg", "caption": "txt", "meta": "json"})
  wds-text-wN    webdataset.WebDataset(...).shuffle(1000).decode("pil")
                 .to_tuple("jpg", "txt", "json") + torchvision's transforms, inside a
                 torch DataLoader with N workers (N from --workers; the best is "tuned")
  stoker-image   stoker.Shards(image="jpg", label="cls") on the same shards
  stoker-rich    fields image + caption + three .npy arrays (declared, stacked) + label

all with the train pipeline at 224 (RandomResizedCrop + horizontal flip + Normalize,
float32), shuffled, batch `--batch`. The machines are shared and noisy: compare the
ratios of one run.

    PYTHONPATH=../shared/peers /usr/bin/python3 bench/imagetext_bench.py DATA \
        [--repeat 5] [--threads 2] [--workers 1,2,3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "python"))  # an installed stoker wins
import stoker  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def write_shards(data: Path, repeat: int, per_shard: int, out: Path) -> list[str]:
    files = []
    for label, cls in enumerate(sorted(p for p in data.iterdir() if p.is_dir())):
        for f in sorted(cls.iterdir()):
            files.append((cls.name, f, label))
    samples = [(k, f, c, label) for k in range(repeat) for (c, f, label) in files]
    rng = np.random.default_rng(0)
    urls = []
    for s in range(0, len(samples), per_shard):
        path = out / f"it-{s // per_shard:05d}.tar"
        with tarfile.open(path, "w") as tar:
            for i, (k, f, c, label) in enumerate(samples[s:s + per_shard], start=s):
                key = f"{i:08d}"
                add(tar, key + ".jpg", f.read_bytes())
                add(tar, key + ".txt", f"a photo of a {c}, copy {k}".encode())
                add(tar, key + ".json", json.dumps(
                    {"key": key, "source": f.name, "width": 0, "similarity": 0.3}).encode())
                add(tar, key + ".cls", str(label).encode())
                add(tar, key + ".emb.npy", npy_bytes(rng.standard_normal(512, np.float32)))
                add(tar, key + ".tok.npy", npy_bytes(rng.integers(0, 49408, 77, np.int64)))
                add(tar, key + ".patch.npy",
                    npy_bytes(rng.standard_normal((16, 16)).astype(np.float16)))
        urls.append(str(path))
    return urls


def train_transforms():
    return [stoker.RandomResizedCrop(224), stoker.RandomHorizontalFlip(),
            stoker.Normalize(mean=MEAN, std=STD)]


def stoker_loader(urls, fields, args):
    if fields is None:
        src = stoker.Shards(urls, image="jpg", label="cls")
    else:
        src = stoker.Shards(urls, fields=fields)
    return stoker.Loader(src, batch_size=args.batch, shuffle=True, threads=args.threads,
                         transforms=train_transforms(), drop_last=False)


def wds_loader(urls, workers, args):
    import torch
    import torchvision.transforms as T
    import webdataset as wds
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize(MEAN, STD)])
    ds = (wds.WebDataset(urls, shardshuffle=len(urls), empty_check=False)
          .shuffle(1000).decode("pil").to_tuple("jpg", "txt", "json")
          .map_tuple(tf, lambda x: x, lambda x: x))
    return torch.utils.data.DataLoader(ds, batch_size=args.batch, num_workers=workers,
                                       collate_fn=lambda b: (torch.stack([x[0] for x in b]),
                                                             [x[1] for x in b],
                                                             [x[2] for x in b]))


def first_of(batch):
    return batch["image"] if isinstance(batch, dict) else batch[0]


def epoch(make) -> tuple[float, float, int]:
    """One epoch of a fresh loader: (samples/s, CPU-ms per sample, samples)."""
    loader = make()
    t0, c0 = time.perf_counter(), os.times()
    n = 0
    for batch in loader:
        n += len(first_of(batch))
    t1, c1 = time.perf_counter(), os.times()
    del loader
    cpu = sum(getattr(c1, k) - getattr(c0, k)
              for k in ("user", "system", "children_user", "children_system"))
    return n / (t1 - t0), 1e3 * cpu / n, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", type=Path, help="an image folder (one folder per class)")
    ap.add_argument("--repeat", type=int, default=5, help="copies of each image")
    ap.add_argument("--per-shard", type=int, default=100)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workers", default="1,2,3", help="DataLoader worker counts to try")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()

    try:
        import webdataset  # noqa: F401
    except ImportError as e:
        sys.exit(f"imagetext_bench: webdataset is not importable ({e}); run with "
                 "PYTHONPATH pointing at a webdataset checkout")

    text = {"image": "jpg", "caption": "txt", "meta": "json"}
    rich = {"image": "jpg", "caption": "txt", "label": "cls",
            "emb": {"ext": "emb.npy", "dtype": "float32", "shape": (512,)},
            "tok": {"ext": "tok.npy", "dtype": "int64", "shape": (77,)},
            "patch": {"ext": "patch.npy", "dtype": "float16", "shape": (16, 16)}}
    with tempfile.TemporaryDirectory(prefix="imagetext-") as tmp:
        urls = write_shards(args.data, args.repeat, args.per_shard, Path(tmp))
        configs = {
            "stoker-text": lambda: stoker_loader(urls, text, args),
            "stoker-image": lambda: stoker_loader(urls, None, args),
            "stoker-rich": lambda: stoker_loader(urls, rich, args),
        }
        for w in (int(x) for x in args.workers.split(",")):
            configs[f"wds-text-w{w}"] = (lambda w=w: wds_loader(urls, w, args))
        # A check that the record rows deliver what they declare.
        b = next(iter(configs["stoker-rich"]()))
        assert tuple(b["emb"].shape) == (args.batch, 512) and len(b["caption"]) == args.batch
        for make in configs.values():  # warm-up: page cache, indexes, imports
            epoch(make)
        rate = {k: [] for k in configs}
        cpu = {k: [] for k in configs}
        for r in range(args.rounds):
            for name, make in configs.items():
                s, ms, n = epoch(make)
                rate[name].append(s)
                cpu[name].append(ms)
                print(f"round {r} {name:14s} {s:8.1f} samples/s {ms:7.2f} CPU-ms/sample",
                      flush=True)
    med = {k: statistics.median(v) for k, v in rate.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    wds = max((k for k in med if k.startswith("wds")), key=lambda k: med[k])
    print(f"\n{n} samples, {len(urls)} shards, threads {args.threads}, batch {args.batch}, "
          f"load {os.getloadavg()[0]:.1f}")
    print(f"{'config':14s} {'samples/s':>10s} {'CPU-ms':>8s}")
    for k in configs:
        print(f"{k:14s} {med[k]:10.1f} {med_cpu[k]:8.2f}")
    print(f"\nstoker-text / tuned webdataset ({wds}): {med['stoker-text'] / med[wds]:.2f}x "
          f"samples/s, {med_cpu['stoker-text'] / med_cpu[wds]:.2f}x CPU per sample")
    print(f"stoker-rich / stoker-image CPU per sample: "
          f"{med_cpu['stoker-rich'] / med_cpu['stoker-image']:.3f}x")
    if args.json:
        args.json.write_text(json.dumps({"samples/s": rate, "cpu_ms": cpu, "tuned_wds": wds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
