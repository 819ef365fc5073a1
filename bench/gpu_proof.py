#!/usr/bin/env python3
"""stoker's GPU proof: the measurements a first GPU run must show (docs/gpu.md, "First run
on a GPU machine"). bench/gpu_proof.sh runs the stages; each writes OUT/<stage>.json and
OUT/<stage>.md, and OUT/summary.md gathers every stage found in OUT.

Stages (each fits one 10-minute device command):
  copy     stoker's batch copy (pinned uint8 -> device, on its copy stream) as a fraction of
           a plain pinned cudaMemcpyAsync of the same bytes; and a CUDA-event timeline of a
           training loop: where batch k+1's copy falls against batch k's step.
  train    ResNet-50 (channels_last, bf16 autocast, SGD) and ResNet-18, batch 256, fed by
           the same batch already on the GPU (the bound), a tuned DataLoader (4-16 workers,
           pin_memory, persistent workers) and stoker.Loader(device="cuda"); stoker with its
           threads beside the trainer, and with the trainer pinned to a core of its own.
           Images/s and the fraction of the GPU's time it waits for data.
  scaling  the train pipeline into the GPU, stoker at 1, 2, 4, 8, 16 threads against the
           DataLoader at the same worker counts (no model).
  decode   nvJPEG (torchvision.io.decode_jpeg(device="cuda")) against stoker's CPU decode
           of the same files: full decode, and the whole train pipeline.
  tests-report  (bench/gpu_proof.sh runs the tests) parses the GPU tests' and the
           sanitizers' outputs into tests.json / tests.md.
  summary  OUT/summary.md from every OUT/<stage>.json.

--dry-run runs every stage here, without a GPU, on a few tiny images: the CPU, stoker's
host fallback (the device stage's maths on a host thread) and host clocks stand in for
the GPU, so the arguments, the data generation (stoker synth), the output files and the
summary writer are all exercised. Its numbers mean nothing and are marked so.

Needs torch and torchvision (torch 2.x with CUDA on the GPU machine; 1.13 CPU is enough
for --dry-run), stoker importable (PYTHONPATH) and the stoker CLI (--cli).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
STAGES = ("tests", "copy", "train", "scaling", "decode")
# What each stage records, for verify (the dry run's self-check) and the summary.
RESULT_KEYS = {
    "tests": ("gtest", "pytest", "sanitizers"),
    "copy": ("bandwidth", "timeline"),
    "train": ("dataloader_sweep", "runs"),
    "scaling": ("runs",),
    "decode": ("full_decode", "pipeline"),
}


# ----------------------------------------------------------------- clocks and devices

class Clock:
    """CUDA events on a GPU; host timestamps otherwise (the dry run). record() returns a
    marker; elapsed_ms(a, b) is the time between two markers, after synchronize()."""

    def __init__(self, cuda: bool):
        self.cuda = cuda

    def record(self, stream=None):
        if not self.cuda:
            return time.perf_counter()
        import torch
        e = torch.cuda.Event(enable_timing=True)
        e.record(stream) if stream is not None else e.record()
        return e

    def synchronize(self) -> None:
        if self.cuda:
            import torch
            torch.cuda.synchronize()

    def elapsed_ms(self, a, b) -> float:
        return a.elapsed_time(b) if self.cuda else (b - a) * 1e3


def torch_device(args):
    import torch
    if args.dry_run:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise SystemExit("gpu_proof: torch.cuda.is_available() is False (run with --dry-run "
                         "on a machine without a GPU)")
    return torch.device(args.device)


@contextlib.contextmanager
def stoker_device(args):
    """The device string stoker is given: the GPU, or in a dry run "cuda:0" through the host
    fallback (stoker._device._HOST_FALLBACK), so the DeviceLoader's plumbing still runs."""
    from stoker import _device
    if not args.dry_run:
        yield args.device
        return
    old = _device._HOST_FALLBACK
    _device._HOST_FALLBACK = True
    try:
        yield "cuda:0"
    finally:
        _device._HOST_FALLBACK = old


def environment(args) -> dict:
    env = {"python": platform.python_version(), "machine": platform.machine(),
           "cores": os.cpu_count(), "dry_run": args.dry_run, "date": time.strftime("%Y-%m-%d")}
    try:
        import torch
        import torchvision
        env.update(torch=torch.__version__, torchvision=torchvision.__version__,
                   torch_cuda=torch.version.cuda)
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            env.update(gpu=p.name, gpu_memory_gib=round(p.total_memory / 2**30, 1))
    except Exception as e:  # noqa: BLE001 (recorded, not fatal)
        env["torch_error"] = repr(e)
    try:
        import stoker
        env.update(stoker=stoker.__version__, stoker_module=stoker._C.__file__,
                   built_with_cuda=stoker._C.built_with_cuda())
    except Exception as e:  # noqa: BLE001
        env["stoker_error"] = repr(e)
    return env


# ----------------------------------------------------------------- data

def ensure_data(args) -> Path:
    """A photo-like ImageFolder made by `stoker synth` (ImageNet-like sizes), reused when a
    previous call made the same one (its stoker-synth.json). Written by one synth process
    per core, each making some of the classes with its own seed (deterministic)."""
    root = Path(args.data)
    spec = {"classes": args.classes, "per_class": args.per_class, "width": args.width,
            "height": args.height, "quality": 90, "seed": 0}
    stamp = root / "stoker-synth.json"
    if stamp.exists():
        try:
            if json.loads(stamp.read_text()).get("spec") == spec:
                return root / "images"
        except ValueError:
            pass
    if root.exists():
        shutil.rmtree(root)
    (root / "images").mkdir(parents=True)
    jobs = max(1, min(os.cpu_count() or 1, args.classes))
    t = time.perf_counter()
    procs = []
    for i in range(jobs):
        classes = args.classes // jobs + (i < args.classes % jobs)
        cmd = [args.cli, "synth", str(root / f"part{i:02d}"), "--classes", str(classes),
               "--per-class", str(args.per_class), "--width", str(args.width), "--height",
               str(args.height), "--quality", "90", "--seed", str(i), "--json"]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    made = 0
    for i, proc in enumerate(procs):
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"gpu_proof: stoker synth failed: {err.strip()}")
        made += json.loads(out.strip().splitlines()[-1])["images"]
        part = root / f"part{i:02d}"
        for cls in sorted(p for p in part.iterdir() if p.is_dir()):
            cls.rename(root / "images" / f"p{i:02d}_{cls.name}")
        shutil.rmtree(part)
    want = args.classes * args.per_class
    if made != want:
        raise SystemExit(f"gpu_proof: stoker synth wrote {made} images, not {want}")
    stamp.write_text(json.dumps({"spec": spec, "images": made, "synth_processes": jobs,
                                 "seconds": time.perf_counter() - t}, indent=1))
    return root / "images"


def image_files(data: Path, n: int) -> List[Path]:
    files = sorted(p for p in data.rglob("*.jpg"))
    if len(files) < n:
        raise SystemExit(f"gpu_proof: {data} has {len(files)} JPEGs, {n} needed")
    return files[:n]


# ----------------------------------------------------------------- feeds

def stoker_loader(args, data, threads: int, device: str):
    import stoker
    return stoker.Loader(
        stoker.ImageFolder(str(data)), batch_size=args.batch_size, shuffle=True, seed=0,
        drop_last=True, threads=threads, prefetch=4, device=device, dtype="bfloat16",
        layout="NHWC",
        transforms=[stoker.RandomResizedCrop(args.size), stoker.RandomHorizontalFlip(),
                    stoker.Normalize(MEAN, STD)])


def stoker_batches(loader) -> Iterator:
    """Batches across epochs as (NCHW channels_last view, labels): NHWC is channels_last."""
    epoch = 0
    while True:
        loader.set_epoch(epoch)
        for images, labels in loader:
            yield images.permute(0, 3, 1, 2), labels
        epoch += 1


def dataloader(args, data, workers: int, pin: bool):
    import torch
    import torchvision.datasets as tvd
    import torchvision.transforms as T
    tf = T.Compose([T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(), T.PILToTensor()])
    kw = dict(batch_size=args.batch_size, shuffle=True, drop_last=True, num_workers=workers,
              pin_memory=pin, persistent_workers=workers > 0)
    if workers > 0:
        kw["prefetch_factor"] = 4
    return torch.utils.data.DataLoader(tvd.ImageFolder(str(data), tf), **kw)


def dataloader_batches(dl, dev) -> Iterator:
    """uint8 NCHW host batches -> device, normalised there (in the timed step's stream)."""
    import torch
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1) * 255
    while True:
        for x, y in dl:
            x = x.to(dev, non_blocking=True).float().sub_(mean).div_(std)
            yield x.contiguous(memory_format=torch.channels_last), y.to(dev, non_blocking=True)


def bound_batches(args, dev) -> Iterator:
    import torch
    x = torch.randn(args.batch_size, 3, args.size, args.size, device=dev)
    x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (args.batch_size,), device=dev)
    while True:
        yield x, y


def dataloader_workers(dl) -> List[int]:
    it = getattr(dl, "_iterator", None)
    return [w.pid for w in getattr(it, "_workers", [])] if it is not None else []


def cpu_seconds(pids: List[int]) -> float:
    """utime + stime of this process and of `pids` (the DataLoader's workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = sum(os.times()[:2])
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, IndexError, ValueError):
            pass
    return total


def thread_affinities() -> Dict[str, int]:
    """Cpus_allowed_list -> number of this process's threads with it."""
    out: Dict[str, int] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    key = line.split(":", 1)[1].strip()
                    out[key] = out.get(key, 0) + 1
        except OSError:
            pass
    return out


# ----------------------------------------------------------------- the training step

def make_model_step(name: str, dev, dry: bool):
    import torch
    import torchvision.models as tvm
    model = getattr(tvm, name)(num_classes=1000).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    crit = torch.nn.CrossEntropyLoss()

    def step(x, y):
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16):
            loss = crit(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


def timed_training(batches: Iterator, step: Callable, steps: int, warmup: int, clock: Clock,
                   batch_size: int, pids: Callable[[], List[int]] = lambda: []) -> dict:
    """Runs warmup + steps; the GPU's wait fraction is 1 - (sum of the steps' GPU times) /
    (GPU time from the first timed step's start to the last one's end)."""
    for _ in range(warmup):
        step(*next(batches))
    clock.synchronize()
    marks, waits = [], []
    cpu0, t0 = cpu_seconds(pids()), time.perf_counter()
    for _ in range(steps):
        tw = time.perf_counter()
        x, y = next(batches)
        waits.append(time.perf_counter() - tw)
        a = clock.record()
        loss = step(x, y)
        marks.append((a, clock.record()))
    clock.synchronize()
    wall = time.perf_counter() - t0
    cpu = cpu_seconds(pids()) - cpu0
    busy = sum(clock.elapsed_ms(a, b) for a, b in marks)
    span = clock.elapsed_ms(marks[0][0], marks[-1][1])
    return {"steps": steps, "images_per_s": steps * batch_size / wall, "wall_s": wall,
            "gpu_wait_fraction": max(0.0, 1.0 - busy / span) if span > 0 else None,
            "step_ms_median": sorted(clock.elapsed_ms(a, b) for a, b in marks)[steps // 2],
            "host_wait_ms_median": sorted(waits)[steps // 2] * 1e3,
            "host_wait_fraction": sum(waits) / wall,
            "cpu_s_per_1000_images": cpu / (steps * batch_size) * 1000,
            "last_loss": float(loss)}


# ----------------------------------------------------------------- stage: copy

def stage_copy(args) -> dict:
    dev = torch_device(args)
    clock = Clock(dev.type == "cuda")
    data = ensure_data(args)
    with stoker_device(args) as sdev:
        bandwidth = copy_bandwidth(args, data, dev, sdev, clock)
        timeline = {mode: copy_timeline(args, data, dev, sdev, clock, sync=mode == "sync")
                    for mode in ("sync", "async")}
    checks = [check("copy_vs_memcpy", bandwidth["ratio"] >= 0.90, args.dry_run,
                    f"stoker copy+convert {bandwidth['stoker_gb_per_s']:.1f} GB/s = "
                    f"{bandwidth['ratio']:.2f} of pinned cudaMemcpyAsync "
                    f"{bandwidth['memcpy_gb_per_s']:.1f} GB/s (target >= 0.90)"),
              check("copy_under_compute",
                    timeline["async"]["copy_inside_any_step_median"] >= 0.9, args.dry_run,
                    f"median fraction of each batch's copy that runs under a training step: "
                    f"{timeline['async']['copy_inside_any_step_median']:.2f} (the loop runs "
                    f"ahead; copy of batch k+1 inside step k-{timeline['async']['lag_median']}), "
                    f"{timeline['sync']['copy_inside_step_median']:.2f} inside step k when the "
                    f"loop waits for each step; compute-stream gaps "
                    f"{timeline['async']['compute_stream_gap_fraction']:.3f} (target >= 0.9)")]
    return {"results": {"bandwidth": bandwidth, "timeline": timeline}, "checks": checks}


def copy_bandwidth(args, data, dev, sdev, clock: Clock) -> dict:
    """stoker's DeviceStage.launch (H2D of the pinned uint8 batch + the conversion kernel,
    on stoker's copy stream) against cudaMemcpyAsync of the same bytes from pinned memory,
    each `iters` times back to back between two events."""
    import torch
    loader = stoker_loader(args, data, args.threads, sdev)
    feeder = loader._feeder
    host = loader._impl              # the host Loader: uint8 NHWC batches in pinned memory
    host.start()
    try:
        images = host.next()[0]
        nbytes = int(images.nbytes)
        out_dev = dev if dev.type == "cuda" else torch.device("cpu")
        out = torch.empty(int(torch.Size(feeder.stage.output_dims(images.shape[0])).numel()) * 2,
                          dtype=torch.uint8, device=out_dev)
        labels = torch.empty(images.shape[0], dtype=torch.int64, device=out_dev)
        cuda = clock.cuda
        cur = torch.cuda.current_stream(dev).cuda_stream if cuda else 0

        def stoker_once():
            t = feeder.stage.launch(images, out.data_ptr(), labels.data_ptr(), cur)
            feeder.stage.handoff(t, cur)

        def loop(fn, stream) -> float:
            for _ in range(3):
                fn()
            clock.synchronize()
            feeder.stage.synchronize()
            a = clock.record(stream)
            for _ in range(args.iters):
                fn()
            b = clock.record(stream)
            clock.synchronize()
            feeder.stage.synchronize()
            return clock.elapsed_ms(a, b) / 1e3

        # On the consumer's stream, which each hand-off makes wait for the batch's kernel:
        # the end marker follows the last copy and the last conversion (the copy stream
        # alone would miss the kernels, which run on stoker's convert stream).
        stoker_s = loop(stoker_once, torch.cuda.current_stream(dev) if cuda else None)
        pinned = torch.empty(nbytes, dtype=torch.uint8).pin_memory() if cuda else \
            torch.empty(nbytes, dtype=torch.uint8)
        target = torch.empty(nbytes, dtype=torch.uint8, device=out_dev)
        side = torch.cuda.Stream(dev) if cuda else None

        def memcpy_once():
            with torch.cuda.stream(side) if cuda else contextlib.nullcontext():
                target.copy_(pinned, non_blocking=True)

        memcpy_s = loop(memcpy_once, side)
    finally:
        host.stop()
    gbps = lambda s: nbytes * args.iters / s / 1e9  # noqa: E731
    result = {"batch_bytes": nbytes, "iters": args.iters, "stoker_gb_per_s": gbps(stoker_s),
              "memcpy_gb_per_s": gbps(memcpy_s), "ratio": memcpy_s / stoker_s}
    if clock.cuda:
        result["profiled_copy"] = profiled_copy(args, stoker_once)
    return result


def profiled_copy(args, launch: Callable) -> dict:
    """The H2D copies alone, from torch.profiler's CUDA activity records (CUPTI sees
    stoker's stream too); the trace is kept as OUT/copy_trace.json (Perfetto)."""
    import torch
    trace = Path(args.out) / "copy_trace.json"
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                launch()
            torch.cuda.synchronize()
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text()).get("traceEvents", [])
        copies = [e for e in events if e.get("cat") == "gpu_memcpy"
                  and "HtoD" in e.get("name", "") and e.get("dur", 0) > 0]
        big = [e for e in copies if e.get("args", {}).get("bytes", 0) >= 1 << 20]
        if not big:
            return {"error": "no H2D copy >= 1 MiB in the trace", "trace": trace.name}
        rates = sorted(e["args"]["bytes"] / (e["dur"] * 1e-6) / 1e9 for e in big)
        kernels = sorted(e["dur"] for e in events if e.get("cat") == "kernel"
                         and "TransformKernel" in e.get("name", ""))
        # Do the conversion kernels overlap the next copies? The time the GPU spent on
        # the big copies and the kernels together, against the sum of their durations
        # (1: serialised; lower: overlapped).
        work = sorted((e["ts"], e["ts"] + e["dur"]) for e in big + [
            e for e in events if e.get("cat") == "kernel" and "TransformKernel" in e.get("name", "")])
        union, end = 0.0, float("-inf")
        for a, b in work:
            union += max(0.0, b - max(a, end))
            end = max(end, b)
        total = sum(b - a for a, b in work)
        return {"copies": len(big), "gb_per_s_median": rates[len(rates) // 2],
                "copy_us_median": sorted(e["dur"] for e in big)[len(big) // 2],
                "kernel_us_median": kernels[len(kernels) // 2] if kernels else None,
                "busy_over_sum": union / total if total else None,
                "trace": trace.name}
    except Exception as e:  # noqa: BLE001 (optional evidence)
        return {"error": repr(e)}


def matmul_step(dev, step_ms: float, clock: Clock, dry: bool):
    """A synthetic training step: a matmul chain sized to ~step_ms of GPU time."""
    import torch
    n = 64 if dry else 4096
    w = torch.randn(n, n, device=dev)
    a = torch.randn(n, n, device=dev)

    def chain(k):
        y = a
        for _ in range(k):
            y = (y @ w) * 1e-2
        return y
    chain(2)
    clock.synchronize()
    t0 = clock.record()
    chain(10)
    t1 = clock.record()
    clock.synchronize()
    per = max(clock.elapsed_ms(t0, t1) / 10, 1e-3)
    k = 2 if dry else max(1, round(step_ms / per))

    def step(x, y):
        chain(k).add_(x[:1].float().mean())
    return step, k * per


def copy_timeline(args, data, dev, sdev, clock: Clock, sync: bool) -> dict:
    """Events on stoker's copy stream before and after each next() (which launches batch
    k+1 and hands batch k over) and on the consumer's stream around step k. sync=True: the
    loop waits for each step (as a loop logging its loss does); False: it runs ahead."""
    import torch
    step, step_ms = matmul_step(dev, args.step_ms, clock, args.dry_run)
    loader = stoker_loader(args, data, args.threads, sdev)
    copy_stream = torch.cuda.ExternalStream(loader._feeder.stage.copy_stream) if clock.cuda \
        else None
    batches = stoker_batches(loader)
    for _ in range(3):
        step(*next(batches))
    clock.synchronize()
    rows = []
    for _ in range(args.timeline_steps):
        c0 = clock.record(copy_stream)
        x, y = next(batches)             # launches the next batch's copy + conversion
        c1 = clock.record(copy_stream)
        s0 = clock.record()
        step(x, y)
        s1 = clock.record()
        rows.append((c0, c1, s0, s1))
        if sync:
            clock.synchronize()
    clock.synchronize()
    batches.close()
    loader.close()
    origin = rows[0][2]
    t = [[clock.elapsed_ms(origin, m) for m in r] for r in rows]
    inside, inside_any, lags, gaps = [], [], [], 0.0
    steps = [(r[2], r[3]) for r in t]
    for k, (c0, c1, s0, s1) in enumerate(t):
        length = max(c1 - c0, 1e-9)
        inside.append(max(0.0, min(c1, s1) - max(c0, s0)) / length)
        inside_any.append(min(1.0, sum(max(0.0, min(c1, b) - max(c0, a)) for a, b in steps)
                              / length))
        mid = (c0 + c1) / 2          # the step running when batch k+1's copy was half done
        j = next((j for j, (a, b) in enumerate(steps) if a <= mid <= b), None)
        lags.append(None if j is None else k - j)
        if k > 0:
            gaps += max(0.0, s0 - t[k - 1][3])
    span = t[-1][3] - t[0][2]
    median = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    return {"step_ms": step_ms, "steps": len(t), "sync": sync,
            "copy_ms_median": median([r[1] - r[0] for r in t]),
            "copy_inside_step_median": median(inside), "copy_inside_step_min": min(inside),
            "copy_inside_any_step_median": median(inside_any),
            "lag_median": median([v for v in lags if v is not None] or [None]),
            "copies_in_no_step": sum(v is None for v in lags),
            "compute_stream_gap_fraction": gaps / span if span > 0 else None,
            "rows_ms": [[round(v, 3) for v in r] for r in t[:12]],
            "columns": ["copy k+1 start", "copy k+1 end", "step k start", "step k end"]}


# ----------------------------------------------------------------- stage: train

def stage_train(args) -> dict:
    import torch
    dev = torch_device(args)
    clock = Clock(dev.type == "cuda")
    torch.backends.cudnn.benchmark = True
    data = ensure_data(args)
    cores = sorted(os.sched_getaffinity(0))
    sweep = dataloader_sweep(args, data, dev)
    workers = max(sweep, key=lambda w: sweep[w]) if args.dl_workers == "auto" \
        else int(args.dl_workers)
    runs = []
    for model in args.models:
        step = make_model_step(model, dev, args.dry_run)

        def run(feed, batches, pids=lambda: [], **extra):
            r = timed_training(batches, step, args.steps, args.warmup, clock,
                               args.batch_size, pids)
            r.update(model=model, feed=feed, **extra)
            runs.append(r)
            print(f"gpu_proof train: {model} {feed}: {r['images_per_s']:.0f} images/s, "
                  f"GPU waits {r['gpu_wait_fraction']:.3f}", file=sys.stderr, flush=True)

        run("bound", bound_batches(args, dev))
        dl = dataloader(args, data, workers, pin=clock.cuda)
        run("dataloader", dataloader_batches(dl, dev), pids=lambda d=dl: dataloader_workers(d),
            workers=workers)
        del dl
        with stoker_device(args) as sdev:
            for threads, pinned in ((len(cores), False), (len(cores) - 1, False),
                                    (len(cores) - 1, True)):
                if threads < 1 or (pinned and len(cores) < 2):
                    continue
                run_stoker(args, data, sdev, threads, pinned, cores, run)
    bound = {r["model"]: r["images_per_s"] for r in runs if r["feed"] == "bound"}
    for r in runs:
        r["of_bound"] = r["images_per_s"] / bound[r["model"]]
    checks = []
    for model in args.models:
        s = max((r for r in runs if r["model"] == model and r["feed"] == "stoker"),
                key=lambda r: r["images_per_s"])
        d = next(r for r in runs if r["model"] == model and r["feed"] == "dataloader")
        checks.append(check(f"{model}_stoker_feeds_the_gpu", s["gpu_wait_fraction"] < 0.02,
                            args.dry_run,
                            f"stoker ({s['threads']} threads{', pinned' if s['pinned'] else ''}) "
                            f"{s['images_per_s']:.0f} images/s = {s['of_bound']:.2f} of the bound, "
                            f"GPU waits {s['gpu_wait_fraction']:.3f} (target < 0.02); "
                            f"DataLoader ({d['workers']} workers) {d['images_per_s']:.0f} images/s, "
                            f"waits {d['gpu_wait_fraction']:.3f}"))
    return {"results": {"dataloader_sweep": sweep, "dataloader_workers": workers,
                        "cores": len(cores), "runs": runs}, "checks": checks}


def run_stoker(args, data, sdev, threads: int, pinned: bool, cores: List[int], run) -> None:
    """stoker's threads beside the trainer (pinned=False), or the trainer's thread alone on
    the first core and stoker's threads on the others (pinned=True: set before the loader
    starts its threads, which inherit it; then the main thread moves to its own core)."""
    everything = set(cores)
    if pinned:
        os.sched_setaffinity(0, set(cores[1:]))
    loader = None
    try:
        loader = stoker_loader(args, data, threads, sdev)
        batches = stoker_batches(loader)
        next(batches)
        if pinned:
            os.sched_setaffinity(0, {cores[0]})
        run("stoker", batches, threads=threads, pinned=pinned,
            trainer_cores=[cores[0]] if pinned else cores,
            thread_affinities=thread_affinities())
        batches.close()
    finally:
        os.sched_setaffinity(0, everything)
        if loader is not None:
            loader.close()


def dataloader_sweep(args, data, dev) -> Dict[int, float]:
    """The DataLoader's images/s into the device at each worker count of --dl-sweep (the
    train stage then uses the best, unless --dl-workers names one)."""
    out = {}
    for w in args.dl_sweep:
        dl = dataloader(args, data, w, pin=dev.type == "cuda")
        out[w] = feed_rate(dataloader_batches(dl, dev), args.batch_size, args.sweep_batches,
                           dev)["images_per_s"]
        del dl
    return out


def feed_rate(batches: Iterator, batch_size: int, n: int, dev, seconds: float = 0.0,
              warmup: int = 2) -> dict:
    """images/s of a feed alone into the device: at least n batches and `seconds`."""
    import torch
    for _ in range(warmup):
        next(batches)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    sync()
    t0, count = time.perf_counter(), 0
    while count < n or time.perf_counter() - t0 < seconds:
        x, _ = next(batches)
        count += 1
    sync()
    wall = time.perf_counter() - t0
    return {"batches": count, "images_per_s": count * batch_size / wall, "wall_s": wall}


# ----------------------------------------------------------------- stage: scaling

def stage_scaling(args) -> dict:
    dev = torch_device(args)
    data = ensure_data(args)
    runs = []
    with stoker_device(args) as sdev:
        for n in args.counts:
            loader = stoker_loader(args, data, n, sdev)
            cpu0 = cpu_seconds([])
            r = feed_rate(stoker_batches(loader), args.batch_size, args.min_batches, dev,
                          args.seconds)
            r["cpu_s_per_1000_images"] = (cpu_seconds([]) - cpu0) / (
                (r["batches"] + 2) * args.batch_size) * 1000
            loader.close()
            runs.append(dict(r, feed="stoker", count=n))
            dl = dataloader(args, data, n, pin=dev.type == "cuda")
            batches = dataloader_batches(dl, dev)
            next(batches)
            cpu0 = cpu_seconds(dataloader_workers(dl))
            r = feed_rate(batches, args.batch_size, args.min_batches, dev, args.seconds, warmup=1)
            r["cpu_s_per_1000_images"] = (cpu_seconds(dataloader_workers(dl)) - cpu0) / (
                (r["batches"] + 1) * args.batch_size) * 1000
            del batches, dl
            runs.append(dict(r, feed="dataloader", count=n))
            print(f"gpu_proof scaling: {n}: stoker {runs[-2]['images_per_s']:.0f}, "
                  f"DataLoader {runs[-1]['images_per_s']:.0f} images/s", file=sys.stderr,
                  flush=True)
    for r in runs:
        r["images_per_s_per_count"] = r["images_per_s"] / r["count"]
    ratios = {n: next(r for r in runs if r["feed"] == "stoker" and r["count"] == n)["images_per_s"]
              / next(r for r in runs if r["feed"] == "dataloader" and r["count"] == n)["images_per_s"]
              for n in args.counts}
    top = max(args.counts)
    checks = [check("stoker_vs_dataloader", ratios[top] >= 1.0, args.dry_run,
                    "stoker / DataLoader images/s: " + ", ".join(
                        f"{n}: {ratios[n]:.2f}" for n in args.counts))]
    return {"results": {"runs": runs, "ratio_by_count": ratios}, "checks": checks}


# ----------------------------------------------------------------- stage: decode

def stage_decode(args) -> dict:
    import torch
    dev = torch_device(args)
    data = ensure_data(args)
    files = image_files(data, min(args.images, args.classes * args.per_class))
    encoded = [torch.frombuffer(bytearray(f.read_bytes()), dtype=torch.uint8) for f in files]
    mb = sum(e.numel() for e in encoded) / 1e6
    # stoker: the CLI's full-decode ceiling (libjpeg-turbo, `threads` threads).
    sub = data.parent / "decode-subset"
    if not sub.exists():
        for f in files:
            (sub / f.parent.name).mkdir(parents=True, exist_ok=True)
            os.link(f, sub / f.parent.name / f.name)
    done = subprocess.run([args.cli, "decode", str(sub), "--threads", str(args.threads),
                           "--epochs", "3", "--json"], check=True, capture_output=True, text=True)
    cli = json.loads(done.stdout.strip().splitlines()[-1])
    gpu_full = nvjpeg_decode(encoded, dev, args)
    full = {"images": len(files), "megabytes": mb, "stoker_cpu": cli,
            "stoker_cpu_images_per_s": cli_rate(cli), "nvjpeg": gpu_full}
    # The train pipeline (decode + RandomResizedCrop + flip + normalise) both ways.
    with stoker_device(args) as sdev:
        loader = stoker_loader(args, sub, args.threads, sdev)
        stoker_rate = feed_rate(stoker_batches(loader), args.batch_size, args.min_batches, dev,
                                args.seconds)
        loader.close()
    pipeline = {"stoker": stoker_rate,
                "nvjpeg": nvjpeg_pipeline(encoded, dev, args)}
    win = gpu_full.get("images_per_s", 0) / max(full["stoker_cpu_images_per_s"] or 1e-9, 1e-9)
    pipe = pipeline["nvjpeg"].get("images_per_s", 0) / stoker_rate["images_per_s"]
    checks = [check("gpu_decode_decision", True, args.dry_run,
                    f"nvJPEG / stoker CPU ({args.threads} threads): full decode {win:.2f}x, "
                    f"train pipeline {pipe:.2f}x (a GPU decode path wins only above 1, and "
                    "it takes GPU time from the step)")]
    return {"results": {"full_decode": full, "pipeline": pipeline,
                        "nvjpeg_over_stoker": {"full_decode": win, "pipeline": pipe}},
            "checks": checks}


def cli_rate(cli: dict) -> Optional[float]:
    for key in ("images_per_sec", "images_per_s"):
        if key in cli:
            return float(cli[key])
    return None


def decode_batch(encoded: list, dev):
    """torchvision.io.decode_jpeg on the device: batched where torchvision takes a list
    (0.19+), else one image per call."""
    from torchvision.io import decode_jpeg
    if dev.type != "cuda":
        return [decode_jpeg(e) for e in encoded]
    try:
        return decode_jpeg(encoded, device=dev)
    except (TypeError, RuntimeError):
        return [decode_jpeg(e, device=dev) for e in encoded]


def nvjpeg_decode(encoded: list, dev, args) -> dict:
    import torch
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    try:
        decode_batch(encoded[:8], dev)
        sync()
        best = None
        for _ in range(3):
            t0 = time.perf_counter()
            for i in range(0, len(encoded), args.decode_batch):
                decode_batch(encoded[i:i + args.decode_batch], dev)
            sync()
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        return {"images_per_s": len(encoded) / best, "batch": args.decode_batch,
                "device": str(dev)}
    except Exception as e:  # noqa: BLE001 (a machine without nvJPEG says so)
        return {"error": repr(e)}


def nvjpeg_pipeline(encoded: list, dev, args) -> dict:
    """Decode on the device, then per image a RandomResizedCrop (crop + bilinear resize),
    a flip and the normalisation there, stacked into [B, 3, S, S] bf16 batches."""
    import torch
    import torch.nn.functional as F
    import torchvision.transforms as T
    mean = torch.tensor(MEAN, device=dev).view(3, 1, 1) * 255
    std = torch.tensor(STD, device=dev).view(3, 1, 1) * 255
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    g = torch.Generator().manual_seed(0)

    def batch(chunk):
        out = []
        for img in decode_batch(chunk, dev):
            i, j, h, w = T.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3))
            x = img[:, i:i + h, j:j + w].unsqueeze(0).float()
            x = F.interpolate(x, size=(args.size, args.size), mode="bilinear",
                              align_corners=False, antialias=False)[0]
            if torch.rand(1, generator=g).item() < 0.5:
                x = x.flip(-1)
            out.append(((x - mean) / std).to(torch.bfloat16))
        return torch.stack(out)
    try:
        batch(encoded[:4])
        sync()
        t0, n, i = time.perf_counter(), 0, 0
        while n < args.min_batches or time.perf_counter() - t0 < args.seconds:
            chunk = encoded[i:i + args.batch_size]
            if len(chunk) < args.batch_size:
                i, chunk = 0, encoded[:args.batch_size]
            batch(chunk)
            i += args.batch_size
            n += 1
        sync()
        wall = time.perf_counter() - t0
        return {"batches": n, "images_per_s": n * args.batch_size / wall, "wall_s": wall}
    except Exception as e:  # noqa: BLE001
        return {"error": repr(e)}


# ----------------------------------------------------------------- stage: tests (report)

def stage_tests_report(args) -> dict:
    """Parses OUT/tests/: gtest JSON (cuda_test, device_test), pytest's JUnit XML
    (test_device.py, test_device_records.py) and compute-sanitizer logs. On a GPU nothing
    may be skipped for want of a device ("no CUDA device"); tests that check the no-GPU
    path skip there instead."""
    raw = Path(args.out) / "tests"
    gtest = {}
    for f in sorted(raw.glob("*_test.json")):
        gtest[f.stem] = parse_gtest(f)
    pytest_runs = {f.stem: parse_junit(f) for f in sorted(raw.glob("test_*.xml"))}
    sanitizers = {}
    for f in sorted(raw.glob("sanitizer-*.log")):
        sanitizers[f.stem.split("-", 1)[1]] = parse_sanitizer(f)
    cases = [c for g in gtest.values() for c in g["cases"]] + \
        [c for p in pytest_runs.values() for c in p["cases"]]
    no_device = [c["name"] for c in cases if c["status"] == "skipped"
                 and "no CUDA device" in c.get("reason", "")]
    failed = [c["name"] for c in cases if c["status"] == "failed"]
    required = ["DeviceStageGpuTest.MatchesHostMathsBitForBit", "EventPoolTest.ReusesEvents",
                "DeviceLoaderGpuTest.MatchesHostFallbackBitForBit",
                "DeviceLoaderGpuTest.RecordFieldsMatchTheHostBatchBitForBit",
                "DeviceLoaderGpuTest.RecordWithoutImageMatchesTheHostBatchBitForBit"]
    ran = {c["name"] for c in cases if c["status"] == "passed"}
    missing = [n for n in required if n not in ran] + \
        [p for p in ("test_gpu_loader_matches_host_maths",
                     "test_gpu_record_fields_equal_the_cpu_batch",
                     "test_gpu_record_without_an_image")
         if not any(n.startswith(p) for n in ran)]
    checks = [check("no_failures", not failed and bool(cases), args.dry_run,
                    f"{len(cases)} tests, failed: {failed or 'none'}"),
              check("gpu_tests_ran", not no_device and not missing, args.dry_run,
                    f"skipped for want of a device: {no_device or 'none'}; "
                    f"required GPU tests not passed: {missing or 'none'}")]
    for tool in ("memcheck", "racecheck"):
        s = sanitizers.get(tool)
        checks.append(check(f"compute_sanitizer_{tool}", bool(s) and s["errors"] == 0
                            and s["gtest_passed"], args.dry_run,
                            f"{tool}: " + (f"{s['errors']} errors, {s['summary']}" if s
                                           else "not run")))
    return {"results": {"gtest": gtest, "pytest": pytest_runs, "sanitizers": sanitizers},
            "checks": checks}


def parse_gtest(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except ValueError as e:
        return {"error": f"{path.name}: {e}", "cases": []}
    cases = []
    for suite in doc.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{suite['name']}.{t['name']}"
            if t.get("failures"):
                status, reason = "failed", t["failures"][0].get("failure", "")[:300]
            elif t.get("result") == "SKIPPED":
                status = "skipped"
                reason = (t.get("skipped") or [{}])[0].get("message", "") \
                    if isinstance(t.get("skipped"), list) else ""
            else:
                status, reason = "passed", ""
            cases.append({"name": name, "status": status, "reason": reason})
    log = path.with_suffix(".log")
    if log.exists():  # gtest's JSON lacks the skip message in 1.12: take it from the log
        text = log.read_text(errors="replace")
        for c in cases:
            if c["status"] == "skipped" and not c["reason"]:
                m = re.search(r"Skipped\s*\n(.*?)\n\[  SKIPPED \] " + re.escape(c["name"]), text)
                c["reason"] = m.group(1).strip() if m else ""
    return {"cases": cases, "counts": counts(cases)}


def parse_junit(path: Path) -> dict:
    cases = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        name = tc.get("name", "")
        status, reason = "passed", ""
        for tag in ("failure", "error"):
            el = tc.find(tag)
            if el is not None:
                status, reason = "failed", (el.get("message") or "")[:300]
        el = tc.find("skipped")
        if el is not None:
            status, reason = "skipped", el.get("message") or ""
        cases.append({"name": name, "status": status, "reason": reason})
    return {"cases": cases, "counts": counts(cases)}


def parse_sanitizer(path: Path) -> dict:
    text = path.read_text(errors="replace")
    m = re.search(r"ERROR SUMMARY: (\d+) error", text)
    hazards = re.search(r"RACECHECK SUMMARY: (.*)", text)
    if not m and hazards:  # racecheck prints only "N hazards displayed (E errors, W warnings)"
        m = re.search(r"\((\d+) errors?", hazards.group(1))
    return {"errors": int(m.group(1)) if m else -1,
            "summary": (hazards.group(1) if hazards else (m.group(0) if m else "no summary")),
            "gtest_passed": "[  PASSED  ]" in text and "[  FAILED  ]" not in text,
            "log": path.name}


def counts(cases: List[dict]) -> dict:
    out = {"passed": 0, "failed": 0, "skipped": 0}
    for c in cases:
        out[c["status"]] += 1
    return out


# ----------------------------------------------------------------- output

def check(name: str, ok: bool, dry: bool, detail: str) -> dict:
    """A target. In a dry run it is recorded, not judged (the numbers mean nothing)."""
    return {"name": name, "ok": None if dry else bool(ok), "detail": detail}


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.0f}"
    return str(v)


def stage_markdown(stage: str, doc: dict) -> str:
    lines = [f"## {stage}" + (" (dry run: plumbing only, the numbers mean nothing)"
                              if doc["dry_run"] else ""), ""]
    for c in doc["checks"]:
        mark = {True: "PASS", False: "FAIL", None: "dry run"}[c["ok"]]
        lines.append(f"- **{mark}** {c['name']}: {c['detail']}")
    lines.append("")
    r = doc["results"]
    if stage == "train":
        lines += table(r["runs"], ["model", "feed", "workers", "threads", "pinned",
                                   "images_per_s", "of_bound", "gpu_wait_fraction",
                                   "host_wait_ms_median", "cpu_s_per_1000_images"])
        lines += ["", "DataLoader sweep (images/s into the device by workers): " +
                  ", ".join(f"{w}: {fmt(v)}" for w, v in r["dataloader_sweep"].items())]
    elif stage == "scaling":
        lines += table(r["runs"], ["feed", "count", "images_per_s", "images_per_s_per_count",
                                   "cpu_s_per_1000_images"])
    elif stage == "copy":
        b = r["bandwidth"]
        lines += [f"- batch {b['batch_bytes']:,} bytes x {b['iters']}: stoker "
                  f"{fmt(b['stoker_gb_per_s'])} GB/s, cudaMemcpyAsync {fmt(b['memcpy_gb_per_s'])}"
                  f" GB/s, ratio {fmt(b['ratio'])}; profiled copies: {b.get('profiled_copy')}"]
        for mode, t in r["timeline"].items():
            lines += ["", f"Timeline ({mode} loop, ms from step 0's start; step "
                      f"{fmt(t['step_ms'])} ms, compute-stream gaps "
                      f"{fmt(t['compute_stream_gap_fraction'])}):", ""]
            lines += table([dict(zip(["k"] + t["columns"], [k] + row))
                            for k, row in enumerate(t["rows_ms"])], ["k"] + t["columns"])
    elif stage == "decode":
        f, p = r["full_decode"], r["pipeline"]
        lines += [f"- full decode of {f['images']} JPEGs ({fmt(f['megabytes'])} MB): stoker CPU "
                  f"{fmt(f['stoker_cpu_images_per_s'])} images/s, nvJPEG "
                  f"{fmt(f['nvjpeg'].get('images_per_s', f['nvjpeg'].get('error')))}",
                  f"- train pipeline: stoker {fmt(p['stoker']['images_per_s'])} images/s, nvJPEG "
                  f"+ GPU crop/resize {fmt(p['nvjpeg'].get('images_per_s', p['nvjpeg'].get('error')))}"]
    elif stage == "tests":
        for name, g in list(r["gtest"].items()) + list(r["pytest"].items()):
            lines.append(f"- {name}: {g.get('counts', g.get('error'))}")
            for c in g["cases"]:
                if c["status"] != "passed":
                    lines.append(f"  - {c['status']} {c['name']}: {c['reason'][:160]}")
        for tool, s in r["sanitizers"].items():
            lines.append(f"- compute-sanitizer {tool}: {s['errors']} errors ({s['summary']})")
    return "\n".join(lines) + "\n"


def table(rows: List[dict], cols: List[str]) -> List[str]:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |")
    return out


def write_stage(args, stage: str, body: dict, seconds: float) -> dict:
    doc = {"stage": stage, "dry_run": args.dry_run, "seconds": seconds,
           "environment": environment(args), **body}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stage}.json").write_text(json.dumps(doc, indent=1, default=str))
    (out / f"{stage}.md").write_text(stage_markdown(stage, doc))
    write_summary(out)
    return doc


def write_summary(out: Path) -> None:
    docs = {}
    for stage in STAGES:
        f = out / f"{stage}.json"
        if f.exists():
            docs[stage] = json.loads(f.read_text())
    lines = ["# stoker GPU proof", ""]
    if docs:
        env = next(iter(docs.values()))["environment"]
        lines += [f"{env.get('date')}; {env.get('gpu', 'no GPU')}; {env.get('cores')} cores; "
                  f"torch {env.get('torch')} (CUDA {env.get('torch_cuda')}); torchvision "
                  f"{env.get('torchvision')}; Python {env.get('python')}; stoker "
                  f"{env.get('stoker')}" + ("; DRY RUN" if env.get("dry_run") else ""), ""]
    setup = out / "setup" / "setup.json"
    if setup.exists():
        lines += [f"Set-up: {setup.read_text().strip()}", ""]
    lines += ["| stage | checks | seconds |", "|---|---|---|"]
    for stage, d in docs.items():
        marks = ", ".join(f"{c['name']}: {({True: 'PASS', False: 'FAIL', None: 'dry'})[c['ok']]}"
                          for c in d["checks"])
        lines.append(f"| {stage} | {marks} | {fmt(float(d['seconds']))} |")
    lines.append("")
    for stage, d in docs.items():
        lines.append(stage_markdown(stage, d))
    lines += ["Record these numbers, with the date and the machine, in docs/gpu.md (\"GPU "
              "results\") and docs/performance.md.", ""]
    (out / "summary.md").write_text("\n".join(lines))


def verify(args) -> None:
    """The dry run's self-check: every stage asked for wrote its files, with the keys the
    summary reads, and the summary names it."""
    out = Path(args.out)
    summary = (out / "summary.md").read_text()
    for stage in args.stages:
        doc = json.loads((out / f"{stage}.json").read_text())
        assert doc["stage"] == stage and doc["dry_run"] == args.dry_run, (stage, doc["dry_run"])
        for key in RESULT_KEYS[stage]:
            assert key in doc["results"], f"{stage}.json lacks results.{key}"
        assert doc["checks"], f"{stage}.json has no checks"
        assert (out / f"{stage}.md").read_text().startswith(f"## {stage}")
        assert f"| {stage} |" in summary, f"summary.md lacks {stage}"
    check_argument_errors()
    print(f"gpu_proof: verified {', '.join(args.stages)} in {out}", file=sys.stderr)


def check_argument_errors() -> None:
    """Bad arguments are refused (exit 2) by this script and by bench/gpu_proof.sh."""
    import io
    base = ["--out", "o", "--data", "d", "--cli", "c"]
    for bad in (["scaling", *base, "--counts", "0"], ["scaling", *base, "--counts", "1,x"],
                ["train", *base, "--steps", "0"], ["train", *base, "--models", "vgg"],
                ["copy", *base, "--bogus"], ["bogus"]):
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                main(bad)
        except SystemExit as e:
            assert e.code not in (0, None), bad
        else:
            raise AssertionError(f"accepted: {bad}")
    script = Path(__file__).with_name("gpu_proof.sh")
    for bad in (["--bogus"], [], ["nosuchstage"]):
        done = subprocess.run(["bash", str(script), *bad], capture_output=True, text=True)
        assert done.returncode == 2, (bad, done.returncode, done.stderr)


# ----------------------------------------------------------------- arguments

def int_list(text: str) -> List[int]:
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"counts must be >= 1: {text!r}")
    return values


def positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text}")
    return v


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="stage", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", required=True, help="where the JSON and markdown go")
    common.add_argument("--dry-run", action="store_true",
                        help="no GPU: tiny data, CPU and stoker's host fallback")
    data = argparse.ArgumentParser(add_help=False)
    data.add_argument("--data", required=True, help="folder for the generated images")
    data.add_argument("--cli", required=True, help="the stoker CLI (for stoker synth/decode)")
    data.add_argument("--device", default="cuda:0")
    data.add_argument("--classes", type=positive, default=100)
    data.add_argument("--per-class", type=positive, default=100)
    data.add_argument("--width", type=positive, default=500)
    data.add_argument("--height", type=positive, default=375)
    data.add_argument("--batch-size", type=positive, default=256)
    data.add_argument("--size", type=positive, default=224, help="crop size")
    data.add_argument("--threads", type=positive, default=os.cpu_count() or 1,
                      help="stoker threads (copy, decode)")
    c = sub.add_parser("copy", parents=[common, data])
    c.add_argument("--iters", type=positive, default=50)
    c.add_argument("--step-ms", type=float, default=100.0,
                   help="the synthetic step: long enough that the loop is not data-bound")
    c.add_argument("--timeline-steps", type=positive, default=40)
    t = sub.add_parser("train", parents=[common, data])
    t.add_argument("--models", type=lambda s: s.split(","), default=["resnet50", "resnet18"])
    t.add_argument("--steps", type=positive, default=200)
    t.add_argument("--warmup", type=positive, default=20)
    t.add_argument("--dl-workers", default="auto", help="'auto': the best of --dl-sweep")
    t.add_argument("--dl-sweep", type=int_list, default=[4, 8, 12, 16])
    t.add_argument("--sweep-batches", type=positive, default=8)
    s = sub.add_parser("scaling", parents=[common, data])
    s.add_argument("--counts", type=int_list, default=[1, 2, 4, 8, 16])
    s.add_argument("--seconds", type=float, default=5.0)
    s.add_argument("--min-batches", type=positive, default=6)
    d = sub.add_parser("decode", parents=[common, data])
    d.add_argument("--images", type=positive, default=2048)
    d.add_argument("--decode-batch", type=positive, default=128)
    d.add_argument("--seconds", type=float, default=5.0)
    d.add_argument("--min-batches", type=positive, default=4)
    r = sub.add_parser("tests-report", parents=[common])
    r.add_argument("--started", type=float, help="when the tests began (seconds since the epoch)")
    sub.add_parser("summary", parents=[common])
    v = sub.add_parser("verify", parents=[common])
    v.add_argument("--stages", type=lambda s: s.split(","), required=True)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.stage == "summary":
        write_summary(Path(args.out))
        return 0
    if args.stage == "verify":
        verify(args)
        return 0
    for name in getattr(args, "models", []):
        if name not in ("resnet18", "resnet34", "resnet50", "resnet101"):
            raise SystemExit(f"gpu_proof: unknown model {name!r}")
    if args.dry_run and args.stage in ("train", "copy", "scaling", "decode"):
        # Tiny work, same code: a few images, small crops and batches, few steps.
        args.batch_size, args.size = min(args.batch_size, 4), min(args.size, 32)
        args.classes, args.per_class = min(args.classes, 2), min(args.per_class, 8)
        args.width, args.height = min(args.width, 64), min(args.height, 48)
        args.threads = min(args.threads, 2)
        for key, cap in (("iters", 3), ("timeline_steps", 4), ("steps", 2), ("warmup", 1),
                         ("sweep_batches", 1), ("min_batches", 1), ("images", 16),
                         ("decode_batch", 4)):
            if hasattr(args, key):
                setattr(args, key, min(getattr(args, key), cap))
        for key in ("seconds",):
            if hasattr(args, key):
                setattr(args, key, 0.0)
        if hasattr(args, "counts"):
            args.counts = [n for n in args.counts if n <= 2] or [1]
        if hasattr(args, "dl_sweep"):
            args.dl_sweep = [1]
        if hasattr(args, "models"):
            args.models = args.models[:2]
    t0 = time.perf_counter()
    body = {"tests-report": stage_tests_report, "copy": stage_copy, "train": stage_train,
            "scaling": stage_scaling, "decode": stage_decode}[args.stage](args)
    stage = "tests" if args.stage == "tests-report" else args.stage
    seconds = time.perf_counter() - t0
    if getattr(args, "started", None):
        seconds = time.time() - args.started
    doc = write_stage(args, stage, body, seconds)
    for c in doc["checks"]:
        print(f"gpu_proof {stage}: {({True: 'PASS', False: 'FAIL', None: 'dry'})[c['ok']]} "
              f"{c['name']}: {c['detail']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
