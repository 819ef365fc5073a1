#!/usr/bin/env python3
"""Measure stoker's GPU stage on a CUDA machine (docs/gpu.md, "Checking a GPU run").

Two measurements, one JSON object on stdout:

h2d
    Bandwidth of stoker's per-batch device work (H2D copy of the uint8 batch from
    pinned memory on stoker's copy stream, plus the conversion kernel) against a plain
    ``cudaMemcpyAsync`` of the same bytes from pinned memory (``tensor.to(device,
    non_blocking=True)`` of a pinned torch tensor). Timed with CUDA events over
    ``--iters`` back-to-back batches. Target: ratio >= 0.90.
idle
    GPU idle fraction of a synthetic training step (a chain of matmuls sized to take
    ``--step-ms`` on this GPU) fed by ``stoker.Loader(device="cuda")`` and by
    ``torch.utils.data.DataLoader(pin_memory=True)`` + ``.to(device, non_blocking=True)``
    with the same transforms (uint8 on the bus for both; normalisation on the GPU
    for stoker, in the workers for torch). idle = 1 - (sum of step GPU times) /
    (wall time of the timed steps). Target: stoker idle < 0.02.

    /usr/bin/python3 bench/gpu_bench.py [DATA] [--batch-size 256] [--step-ms 20]
        [--threads N] [--workers N] [--steps 100] [--iters 50] [--device cuda:0]

Without DATA a synthetic ImageFolder (JPEG, 320x240) is written to a temp directory.
Without a usable CUDA device it exits with status 2 and "gpu_bench: no CUDA device: ...".
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "python"))  # an installed stoker wins

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def fail(msg: str) -> int:
    print(f"gpu_bench: {msg}", file=sys.stderr)
    return 2


def require_cuda(device: str):
    import torch
    import stoker
    from stoker import _C
    try:
        _C.check_cuda_device(_C.parse_device(device))
    except stoker.StokerError as e:
        raise SystemExit(fail(f"no CUDA device: {e}"))
    if not torch.cuda.is_available():
        raise SystemExit(fail("no CUDA device: torch.cuda.is_available() is False"))


def synth_folder(root: Path, n: int = 2048) -> None:
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(0)
    for c in range(8):
        d = root / f"class{c}"
        d.mkdir(parents=True)
        for i in range(n // 8):
            base = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
            img = Image.fromarray(base).resize((320, 240), Image.BICUBIC)
            img.save(d / f"{i:05d}.jpg", quality=90)


def bench_h2d(args, data) -> dict:
    import torch
    import stoker
    dev = torch.device(args.device)
    loader = stoker.Loader(stoker.ImageFolder(data), batch_size=args.batch_size,
                           transforms=[stoker.RandomResizedCrop(224), stoker.Normalize(MEAN, STD)],
                           device=args.device, threads=args.threads)
    feeder = loader._feeder
    impl = loader._impl
    impl.start()
    images, labels, ids = impl.next()          # one uint8 NHWC batch in pinned memory
    nbytes = images.nbytes
    out = torch.empty(feeder.stage.output_dims(images.shape[0]), device=dev)
    labels_d = torch.empty(images.shape[0], dtype=torch.int64, device=dev)
    cur = torch.cuda.current_stream(dev)

    def stoker_once():
        t = feeder.stage.launch(images, out.data_ptr(), labels_d.data_ptr(), cur.cuda_stream)
        feeder.stage.handoff(t, cur.cuda_stream)

    def timed(fn, stream):
        for _ in range(5):
            fn()
        torch.cuda.synchronize(dev)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        for _ in range(args.iters):
            fn()
        end.record(stream)
        torch.cuda.synchronize(dev)
        return start.elapsed_time(end) / 1e3

    # stoker: events on the consumer's stream, which each hand-off makes wait for the
    # batch's copy and kernel (the kernels run on stoker's convert stream).
    stoker_s = timed(stoker_once, cur)
    pinned = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    target = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    side = torch.cuda.Stream(dev)

    def memcpy_once():
        with torch.cuda.stream(side):
            target.copy_(pinned, non_blocking=True)

    memcpy_s = timed(memcpy_once, side)
    impl.stop()
    gbps = lambda s: nbytes * args.iters / s / 1e9
    return {"batch_bytes": nbytes, "stoker_gb_per_s": gbps(stoker_s),
            "memcpy_gb_per_s": gbps(memcpy_s), "ratio": memcpy_s / stoker_s,
            "target_ratio": 0.90}


def make_step(dev, step_ms: float):
    """A matmul chain calibrated to ~step_ms of GPU time; returns step(x) -> None."""
    import torch
    n = 4096
    w = torch.randn(n, n, device=dev)
    a = torch.randn(n, n, device=dev)

    def chain(k):
        y = a
        for _ in range(k):
            y = y @ w
            y = y * 1e-2
        return y

    torch.cuda.synchronize(dev)
    t0 = torch.cuda.Event(enable_timing=True)
    t1 = torch.cuda.Event(enable_timing=True)
    chain(2)
    t0.record()
    chain(10)
    t1.record()
    torch.cuda.synchronize(dev)
    per = t0.elapsed_time(t1) / 10
    k = max(1, round(step_ms / per))

    def step(images):
        s = images.float().mean()  # consume the batch
        chain(k).add_(s)
    return step, k * per


def consume(batches, dev, step, steps: int) -> dict:
    import torch
    busy = 0.0
    events = []
    it = iter(batches)
    for _ in range(5):  # warm-up
        x, _ = next(it)
        step(x.to(dev, non_blocking=True))
    torch.cuda.synchronize(dev)
    wall0 = time.perf_counter()
    for _ in range(steps):
        x, _ = next(it)
        x = x.to(dev, non_blocking=True)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        step(x)
        e1.record()
        events.append((e0, e1))
    torch.cuda.synchronize(dev)
    wall = time.perf_counter() - wall0
    busy = sum(a.elapsed_time(b) for a, b in events) / 1e3
    return {"wall_s": wall, "gpu_busy_s": busy, "idle": max(0.0, 1 - busy / wall)}


def forever(make_iter):
    while True:
        yield from make_iter()


def bench_idle(args, data) -> dict:
    import torch
    import torchvision.datasets as tvd
    import torchvision.transforms as T
    import stoker
    dev = torch.device(args.device)
    step, step_ms = make_step(dev, args.step_ms)
    loader = stoker.Loader(stoker.ImageFolder(data), batch_size=args.batch_size, shuffle=True,
                           drop_last=True, threads=args.threads, prefetch=4, device=args.device,
                           transforms=[stoker.RandomResizedCrop(224),
                                       stoker.RandomHorizontalFlip(),
                                       stoker.Normalize(MEAN, STD)])
    s = consume(forever(lambda: iter(loader)), dev, step, args.steps)
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()])
    dl = torch.utils.data.DataLoader(tvd.ImageFolder(data, tf), batch_size=args.batch_size,
                                     shuffle=True, drop_last=True, num_workers=args.workers,
                                     pin_memory=True, persistent_workers=args.workers > 0)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1) * 255

    def torch_batches():
        for x, y in dl:
            yield x, y

    def torch_step(x):
        step((x.float() - mean) / std)

    t = consume(forever(torch_batches), dev, torch_step, args.steps)
    return {"step_ms": step_ms, "stoker": s, "torch": t, "target_stoker_idle": 0.02}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", nargs="?")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--step-ms", type=float, default=20.0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1))
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--iters", type=int, default=50)
    args = p.parse_args()
    require_cuda(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data
        if data is None:
            data = os.path.join(tmp, "data")
            synth_folder(Path(data))
        result = {"device": args.device, "h2d": bench_h2d(args, data),
                  "idle": bench_idle(args, data)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
