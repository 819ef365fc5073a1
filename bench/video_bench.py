#!/usr/bin/env python3
"""Video clips: stoker.VideoClips against PyAV and torchvision DataLoaders and FFmpeg's ceiling.

Every side loads the same kind of clip: 16 frames at stride 4 from generated H.264 videos
(10 s, 30 fps, a keyframe every 2 s, x264's B-frames), one random clip per video per
epoch, RandomResizedCrop(224) with the same crop on every frame of a clip, uint8
[B, 16, 3, 224, 224]. Side by side, in one run, on the same cores:

- stoker: `stoker.VideoClips` in a `stoker.Loader` (`--workers` threads, FFmpeg threads
  `--codec-threads`);
- pyav: a DataLoader (`--workers` workers) whose workers do the usual Python practice:
  open the file, seek to the keyframe before the clip (container.seek(...,
  backward=True)), decode forward to the clip's last frame, convert the wanted frames to
  RGB, crop and resize the stacked clip with torchvision (antialiased bilinear);
- torchvision: the same DataLoader, each clip read by `torchvision.io.read_video(path,
  start, end, pts_unit="sec")` (every frame in the clip's span converted, every 4th kept);
- ceiling: the frames stoker's steady-epoch clips need (their timestamps from
  `VideoClips.frames_of`), decoded by FFmpeg alone (build/video_ceiling, bench/
  video_ceiling.cc: the same seek plan and non-reference skipping, `--workers` threads,
  no conversion, resize or copy); stoker / ceiling is the share of the decode ceiling
  stoker reaches;
- memory: stoker alone in a fresh process for `--rss-epochs` epochs, its RSS after each.

The first epoch (stoker builds its per-video indexes there; the DataLoaders start their
workers) is reported apart from the steady ones.

    python3 bench/video_bench.py --videos 24 --height 360 --workers 2 --epochs 3

Prints one JSON line per side and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch


def make_videos(folder: str, n: int, seconds: int, height: int, fps: int, gop_s: float) -> list:
    os.makedirs(folder, exist_ok=True)
    width = (height * 16 // 9) // 2 * 2
    paths = []
    for i in range(n):
        p = os.path.join(folder, f"v{i:04d}.mp4")
        if not os.path.exists(p):
            # A moving pattern that differs per video (testsrc2 offset by i frames).
            subprocess.run(
                ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                 f"testsrc2=size={width}x{height}:rate={fps}:duration={seconds + 1}",
                 "-ss", f"{(i % fps) / fps:.3f}", "-t", str(seconds),
                 "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p",
                 "-g", str(int(gop_s * fps)), "-keyint_min", str(int(gop_s * fps)),
                 "-sc_threshold", "0", p], check=True)
        paths.append(p)
    return paths


def clip_plan(n_frames, rate, clip_len, stride, rng):
    span = (clip_len - 1) * stride + 1
    start = rng.randrange(0, max(1, n_frames - span + 1))
    return start, [min(start + j * stride, n_frames - 1) for j in range(clip_len)]


def crop_resize(clip, size):
    import torchvision.transforms as T
    top, left, h, w = T.RandomResizedCrop.get_params(clip, (0.08, 1.0), (3 / 4, 4 / 3))
    return T.functional.resized_crop(clip, top, left, h, w, [size, size], antialias=True)


class EpochSampler(torch.utils.data.Sampler):
    """Shuffled indices i + epoch * n: the workers (persistent) see the epoch in the index."""

    def __init__(self, n):
        self.n, self.epoch = n, 0

    def __len__(self):
        return self.n

    def __iter__(self):
        order = list(range(self.n))
        random.Random(self.epoch).shuffle(order)
        return iter([i + self.epoch * self.n for i in order])


class PyAVClips(torch.utils.data.Dataset):
    """One random clip per video: seek to the keyframe before it, decode forward."""

    def __init__(self, paths, clip_len, stride, size, seed):
        self.paths, self.clip_len, self.stride, self.size, self.seed = paths, clip_len, stride, size, seed

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, k):
        import av
        epoch, i = divmod(k, len(self.paths))
        rng = random.Random(hash((self.seed, epoch, i)))
        with av.open(self.paths[i]) as c:
            s = c.streams.video[0]
            s.thread_type = "NONE"
            s.codec_context.thread_count = 1
            rate = float(s.average_rate)
            start, want = clip_plan(s.frames, rate, self.clip_len, self.stride, rng)
            start_pts = int(round(start / rate / float(s.time_base))) + (s.start_time or 0)
            c.seek(start_pts, backward=True, any_frame=False, stream=s)
            frames = []
            for f in c.decode(s):
                k = int(round((f.pts - (s.start_time or 0)) * float(s.time_base) * rate))
                if k < want[len(frames)]:
                    continue
                while len(frames) < len(want) and k >= want[len(frames)]:
                    frames.append(f.to_ndarray(format="rgb24"))
                if len(frames) == len(want):
                    break
            while len(frames) < len(want):
                frames.append(frames[-1])
        clip = torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2)  # [T, 3, H, W]
        return crop_resize(clip, self.size), 0


class TorchvisionClips(PyAVClips):
    """One random clip per video read by torchvision.io.read_video(start, end)."""

    def __init__(self, paths, clip_len, stride, size, seed, meta):
        super().__init__(paths, clip_len, stride, size, seed)
        self.meta = meta  # (frames, fps) per video, read once in the parent

    def __getitem__(self, k):
        import torchvision
        epoch, i = divmod(k, len(self.paths))
        rng = random.Random(hash((self.seed, epoch, i)))
        n, rate = self.meta[i]
        start, want = clip_plan(n, rate, self.clip_len, self.stride, rng)
        video, _, _ = torchvision.io.read_video(self.paths[i], start_pts=start / rate,
                                                end_pts=want[-1] / rate, pts_unit="sec",
                                                output_format="TCHW")
        idx = [min(w - start, video.shape[0] - 1) for w in want]
        return crop_resize(video[idx], self.size), 0


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_dataloader(ds, args):
    """Per-epoch (clips, seconds), and the workers' CPU seconds over all epochs (they
    are forked, so no import cost; counted when they exit)."""
    cpu0 = children_cpu()
    sampler = EpochSampler(len(ds))
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, sampler=sampler,
                                     num_workers=args.workers, persistent_workers=True,
                                     prefetch_factor=2)
    times = []
    for e in range(args.epochs):
        sampler.epoch = e
        t = time.perf_counter()
        n = 0
        for clip, _ in dl:
            n += clip.shape[0]
        times.append((n, time.perf_counter() - t))
    del dl  # the workers exit: their CPU time is counted
    return times, children_cpu() - cpu0


def make_clips(paths, args):
    import stoker
    return stoker.VideoClips(paths, clip_len=args.clip_len, frame_stride=args.stride,
                             codec_threads=args.codec_threads,
                             transforms=[stoker.RandomResizedCrop(args.size)])


def run_stoker(paths, args):
    import stoker
    clips = make_clips(paths, args)
    loader = stoker.Loader(clips, batch_size=args.batch_size, shuffle=True, seed=0,
                           threads=args.workers)
    # CPU per clip is per clip *decoded* (clips.counters()): the loader also decodes the
    # next epoch's first batches ahead, during this epoch's time.
    times, cpu, decoded = [], [], []
    for e in range(args.epochs):
        loader.set_epoch(e)
        t = time.perf_counter()
        c = time.process_time()
        d = clips.counters()["clips"]
        n = 0
        for b in loader:
            n += b["video"].shape[0]
        times.append((n, time.perf_counter() - t))
        cpu.append(time.process_time() - c)
        decoded.append(clips.counters()["clips"] - d)
    stage = loader.stats()["video"]
    stage["cpu_s_per_clip_steady"] = round(sum(cpu[1:]) / max(1, sum(decoded[1:])), 4)
    stage["cpu_s_per_clip_all"] = round(sum(cpu) / max(1, sum(decoded)), 4)
    # The steady epochs' clips, as the ceiling decodes them.
    plan = [(clips.video_path(i), clips.frames_of(i, 0, e)[0])
            for e in range(1, args.epochs) for i in range(len(paths))]
    loader.close()
    return times, stage, plan


def rss_mib():
    with open("/proc/self/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


def run_rss(paths, args):
    """stoker alone for --rss-epochs epochs: RSS after each (MiB) and the peak."""
    import stoker
    loader = stoker.Loader(make_clips(paths, args), batch_size=args.batch_size, shuffle=True,
                           seed=0, threads=args.workers)
    after = []
    for e in range(args.rss_epochs):
        loader.set_epoch(e)
        for b in loader:
            pass
        after.append(round(rss_mib()[0], 1))
    return {"side": "stoker_memory", "epochs": args.rss_epochs, "rss_mib_after_each": after,
            "peak_rss_mib": round(rss_mib()[1], 1),
            "growth_after_epoch_2_mib": round(max(after[1:]) - after[1], 1) if len(after) > 2 else 0}


def run_ceiling(plan, args):
    exe = args.ceiling or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                       "video_ceiling")
    if not os.path.exists(exe):
        return {"side": "ffmpeg_ceiling", "error": f"{exe} not built (cmake --build build "
                                                   "--target video_ceiling)"}
    with tempfile.NamedTemporaryFile("w", suffix=".plan", delete=False) as f:
        for path, pts in plan:
            f.write(path + "\t" + " ".join(str(p) for p in pts) + "\n")
    cpu0 = children_cpu()
    try:
        out = subprocess.run([exe, "--plan", f.name, "--threads", str(args.workers),
                              "--codec-threads", str(args.codec_threads)],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    result = json.loads(out)
    result["cpu_s_per_clip"] = round((children_cpu() - cpu0) / max(1, result["clips"]), 4)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--videos", type=int, default=24)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--height", type=int, default=360)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--gop-seconds", type=float, default=2.0)
    ap.add_argument("--clip-len", type=int, default=16)
    ap.add_argument("--stride", type=int, default=4)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--codec-threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rss-epochs", type=int, default=20,
                    help="epochs of stoker alone (a fresh process) for its memory; 0: skip")
    ap.add_argument("--sides", default="stoker,pyav,torchvision,ceiling",
                    help="comma-separated subset of stoker,pyav,torchvision,ceiling")
    ap.add_argument("--ceiling", default=None, help="the video_ceiling binary "
                    "(default: build/video_ceiling)")
    ap.add_argument("--rss-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "stoker_video_bench"))
    args = ap.parse_args()
    folder = os.path.join(args.data, f"{args.height}p_{args.seconds}s_{args.fps}fps")
    paths = make_videos(folder, args.videos, args.seconds, args.height, args.fps,
                        args.gop_seconds)
    if args.rss_only:
        print(json.dumps(run_rss(paths, args)))
        return 0
    torch.set_num_threads(1)
    sides = set(args.sides.split(","))
    common = {"videos": args.videos, "height": args.height, "clip_len": args.clip_len,
              "stride": args.stride, "size": args.size, "workers": args.workers,
              "codec_threads": args.codec_threads, "epochs": args.epochs,
              "cpu_count": os.cpu_count(), "loadavg": os.getloadavg()[0]}

    def rates(times):
        first = times[0][0] / times[0][1]
        steady = sum(n for n, _ in times[1:]) / max(1e-9, sum(s for _, s in times[1:]))
        return first, steady

    results = {}
    st, stage, plan = run_stoker(paths, args)
    results["stoker"] = rates(st)
    print(json.dumps({"side": "stoker", "first_epoch_clips_per_s": round(results["stoker"][0], 2),
                      "steady_clips_per_s": round(results["stoker"][1], 2),
                      "video_stage": stage, **common}), flush=True)
    cpu = {}
    if "pyav" in sides:
        times, cpu["pyav"] = run_dataloader(
            PyAVClips(paths, args.clip_len, args.stride, args.size, 0), args)
        results["pyav"] = rates(times)
    if "torchvision" in sides:
        import av
        meta = []
        for p in paths:
            with av.open(p) as c:
                meta.append((c.streams.video[0].frames, float(c.streams.video[0].average_rate)))
        times, cpu["torchvision"] = run_dataloader(
            TorchvisionClips(paths, args.clip_len, args.stride, args.size, 0, meta), args)
        results["torchvision"] = rates(times)
    for side in ("pyav", "torchvision"):
        if side in results:
            f, s = results[side]
            print(json.dumps({"side": side + "_dataloader", "first_epoch_clips_per_s": round(f, 2),
                              "steady_clips_per_s": round(s, 2),
                              "cpu_s_per_clip_all": round(cpu[side] / (args.epochs * len(paths)),
                                                          4)}), flush=True)
    ratios = {}
    if "ceiling" in sides and args.epochs > 1:
        c = run_ceiling(plan, args)
        print(json.dumps(c), flush=True)
        if "clips_per_s" in c:
            ratios["stoker_over_ceiling_steady"] = round(results["stoker"][1] / c["clips_per_s"], 2)
            # CPU per clip: steadier than wall clock on a shared machine.
            ratios["ceiling_cpu_over_stoker_cpu_steady"] = round(
                c["cpu_s_per_clip"] / stage["cpu_s_per_clip_steady"], 2)
    for side in ("pyav", "torchvision"):
        if side in results:
            ratios[f"stoker_over_{side}_steady"] = round(results["stoker"][1] / results[side][1], 2)
            ratios[f"stoker_over_{side}_first_epoch"] = round(results["stoker"][0] /
                                                              results[side][0], 2)
    print(json.dumps(ratios), flush=True)
    if args.rss_epochs > 0:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss-only",
                              *sys.argv[1:]], capture_output=True, text=True, check=True).stdout
        print(out.strip(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
