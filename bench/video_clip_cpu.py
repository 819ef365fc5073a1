#!/usr/bin/env python3
"""CPU per clip of stoker.VideoClips on one worker: for A/B runs of two engines.

The videos bench/video_bench.py made (`--data`, default its folder), 16 frames at stride 4,
RandomResizedCrop(224), `Loader(batch_size=4, seed=5, threads=1)`: one epoch builds the
indexes, then `--epochs` epochs are timed by `time.process_time()` (the process's CPU, so
less sensitive to other load than wall time). Prints ms of CPU per clip for each epoch and
the decode-video stage's split.

    PYTHONPATH=python /usr/bin/python3 bench/video_clip_cpu.py --height 360 --epochs 3
"""

from __future__ import annotations

import argparse
import glob
import os
import tempfile
import time

import stoker


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "stoker_video_bench"))
    ap.add_argument("--height", type=int, default=360)
    ap.add_argument("--videos", type=int, default=24)
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.data, f"{args.height}p_10s_30fps", "*.mp4")))
    paths = paths[: args.videos]
    if not paths:
        raise SystemExit(f"no videos under {args.data}: run bench/video_bench.py first")
    clips = stoker.VideoClips(paths, clip_len=16, frame_stride=4,
                              transforms=[stoker.RandomResizedCrop(224)])
    loader = stoker.Loader(clips, batch_size=4, seed=5, threads=1)
    for _ in loader:  # the indexes
        pass
    per = []
    for _ in range(args.epochs):
        t = time.process_time()
        for _ in loader:
            pass
        per.append((time.process_time() - t) / len(paths))
    video = loader.stats().get("video", {})
    split = {k: round(video[k], 3) for k in ("demux_s", "decode_s", "convert_s", "transform_s")
             if k in video}
    print(" ".join(f"{p * 1000:.2f}" for p in per), "ms CPU per clip; min",
          f"{min(per) * 1000:.2f};", "stage (all epochs):", split)


if __name__ == "__main__":
    main()
