#!/usr/bin/env python3
"""Video clips: stoker.VideoClips against a DataLoader whose workers decode with PyAV.

Both sides load the same clips: 16 frames at stride 4 from generated H.264 videos (10 s,
360p, 30 fps, a keyframe every 2 s, x264's B-frames), one random clip per video per
epoch, RandomResizedCrop(224) with the same crop on every frame of a clip, uint8
[B, 16, 3, 224, 224]. The PyAV side is the usual Python practice: each worker opens the
file, seeks to the keyframe before the clip (container.seek(..., backward=True)),
decodes forward to the clip's last frame, converts the wanted frames to RGB, and crops
and resizes the stacked clip with torchvision (antialiased bilinear). Same worker count
on both sides; the first epoch (stoker builds its per-video indexes there) is reported
apart from the steady ones.

    python3 bench/video_bench.py --videos 24 --workers 2 --epochs 3

Prints one JSON line per side and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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


class PyAVClips(torch.utils.data.Dataset):
    """One random clip per video: seek to the keyframe before it, decode forward."""

    def __init__(self, paths, clip_len, stride, size, seed):
        self.paths, self.clip_len, self.stride, self.size, self.seed = paths, clip_len, stride, size, seed
        self.epoch = 0

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        import av
        import torchvision.transforms as T
        rng = random.Random(hash((self.seed, self.epoch, i)))
        with av.open(self.paths[i]) as c:
            s = c.streams.video[0]
            s.thread_type = "NONE"
            s.codec_context.thread_count = 1
            n = s.frames
            rate = float(s.average_rate)
            span = (self.clip_len - 1) * self.stride + 1
            start = rng.randrange(0, max(1, n - span + 1))
            start_pts = int(round(start / rate / float(s.time_base))) + (s.start_time or 0)
            c.seek(start_pts, backward=True, any_frame=False, stream=s)
            want = [start + j * self.stride for j in range(self.clip_len)]
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
        top, left, h, w = T.RandomResizedCrop.get_params(clip, (0.08, 1.0), (3 / 4, 4 / 3))
        clip = T.functional.resized_crop(clip, top, left, h, w, [self.size, self.size],
                                         antialias=True)
        return clip, 0


def run_pyav(paths, args):
    ds = PyAVClips(paths, args.clip_len, args.stride, args.size, seed=0)
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True,
                                     num_workers=args.workers, persistent_workers=True,
                                     prefetch_factor=2)
    times = []
    for e in range(args.epochs):
        ds.epoch = e  # workers are persistent: the epoch only varies the order here
        t = time.perf_counter()
        n = 0
        for clip, _ in dl:
            n += clip.shape[0]
        times.append((n, time.perf_counter() - t))
    return times


def run_stoker(paths, args):
    import stoker
    clips = stoker.VideoClips(paths, clip_len=args.clip_len, frame_stride=args.stride,
                              transforms=[stoker.RandomResizedCrop(args.size)])
    loader = stoker.Loader(clips, batch_size=args.batch_size, shuffle=True, seed=0,
                           threads=args.workers)
    times = []
    for e in range(args.epochs):
        loader.set_epoch(e)
        t = time.perf_counter()
        n = 0
        for b in loader:
            n += b["video"].shape[0]
        times.append((n, time.perf_counter() - t))
    return times, clips.counters()


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
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "stoker_video_bench"))
    args = ap.parse_args()
    paths = make_videos(args.data, args.videos, args.seconds, args.height, args.fps,
                        args.gop_seconds)
    torch.set_num_threads(1)
    st, counters = run_stoker(paths, args)
    py = run_pyav(paths, args)

    def rates(times):
        first = times[0][0] / times[0][1]
        steady = sum(n for n, _ in times[1:]) / max(1e-9, sum(s for _, s in times[1:]))
        return first, steady

    sf, ss = rates(st)
    pf, ps = rates(py)
    common = {"videos": args.videos, "height": args.height, "clip_len": args.clip_len,
              "stride": args.stride, "size": args.size, "workers": args.workers,
              "epochs": args.epochs, "cpu_count": os.cpu_count()}
    print(json.dumps({"side": "stoker", "first_epoch_clips_per_s": round(sf, 2),
                      "steady_clips_per_s": round(ss, 2), "counters": counters, **common}))
    print(json.dumps({"side": "pyav_dataloader", "first_epoch_clips_per_s": round(pf, 2),
                      "steady_clips_per_s": round(ps, 2), **common}))
    print(json.dumps({"ratio_steady": round(ss / ps, 2), "ratio_first_epoch": round(sf / pf, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
