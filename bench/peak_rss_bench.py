"""Peak RSS of a Loader over four huge PNGs against four ordinary photo-sized images
(the target: peak RSS for those four files <= 1.3x that of four ordinary photos).

    PYTHONPATH=python /usr/bin/python3 bench/peak_rss_bench.py [--dir DIR] [--size 16000]

Makes (once, under --dir, default a temporary directory) a folder of --count noise-free
gradient PNGs of --size x --size pixels (written row by row with zlib, so the generator
never holds the pixels) and a folder of --count ordinary 500x375 images (--photo-format
png or jpeg). Each (folder, pipeline) runs in a fresh process: Loader(threads=--threads,
batch_size=2) over the folder for --epochs epochs, then the process's own peak RSS
(VmHWM, what `/usr/bin/time -v` calls "Maximum resident set size"; getrusage's
ru_maxrss is not used: it keeps the parent's peak across exec).
Pipelines: Resize(40) + CenterCrop(32), and RandomResizedCrop(224).

--python-path LABEL=DIR (repeatable) runs the children with PYTHONPATH=DIR, to compare
builds side by side in one run (e.g. before=/path/to/old/python after=python); default:
the current PYTHONPATH, labelled "this".
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

PIPELINES = {
    "resize40_center32": "[stoker.Resize(40), stoker.CenterCrop(32)]",
    "rrc224": "[stoker.RandomResizedCrop(224)]",
}

CHILD = r"""
import json, sys
import stoker
folder, pipeline, threads, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
loader = stoker.Loader(stoker.ImageFolder(folder), batch_size=2, threads=threads,
                       transforms=eval(pipeline), seed=1)
n = 0
for _ in range(epochs):
    n += sum(len(b[1]) for b in loader)
s = loader.stats()
# VmHWM: this process's own peak RSS (ru_maxrss would carry the parent's over exec).
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"samples": n, "maxrss_kib": hwm,
                  "scratch_releases": s.get("scratch_releases")}))
"""


def gradient_png(path: Path, w: int, h: int) -> None:
    """A w x h RGB gradient PNG (8 bits, not interlaced, Sub-filtered rows, so it
    compresses to a few MB like the issue's 746 KB file), streamed to disk: the
    generator never holds the pixels or the compressed data."""
    import numpy as np
    x = np.arange(w)
    base = np.stack([x & 255, (x >> 6) & 255, np.zeros_like(x)], -1).astype(np.uint8)
    c = zlib.compressobj(9)
    with open(path, "wb") as f:
        ihdr = b"IHDR" + struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
        f.write(b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr +
                struct.pack(">I", zlib.crc32(ihdr)))

        def idat(data: bytes) -> None:
            if data:
                f.write(struct.pack(">I", len(data)) + b"IDAT" + data +
                        struct.pack(">I", zlib.crc32(b"IDAT" + data)))
        for y in range(h):
            row = base.copy()
            row[:, 2] = (y >> 6) & 255  # the blue ramp moves down the image
            raw = row.reshape(-1)
            sub = raw.copy()
            sub[3:] = raw[3:] - raw[:-3]  # PNG filter 1 (Sub), mod 256
            idat(c.compress(b"\x01" + sub.tobytes()))
        idat(c.flush())
        f.write(struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND")))


def photo(path: Path, seed: int, fmt: str) -> None:
    import numpy as np
    from PIL import Image
    y, x = np.mgrid[0:375, 0:500]
    rng = np.random.default_rng(seed)
    px = np.stack([(x * 0.5 + y * 0.3 + seed * 40) % 256, (np.sin(x / 17.0) * 100 + 128),
                   (y * 0.6 + rng.integers(0, 20, size=x.shape))], -1).astype(np.uint8)
    Image.fromarray(px).save(path, format=fmt.upper(), **({"quality": 90} if fmt == "jpeg" else {}))


def gradient_jpeg(path: Path, w: int, h: int) -> None:
    """The same gradient as a baseline JPEG (Pillow; the generator holds the pixels)."""
    import numpy as np
    from PIL import Image
    x = np.arange(w)
    px = np.empty((h, w, 3), np.uint8)
    px[:, :, 0] = x & 255
    px[:, :, 1] = (x >> 6) & 255
    px[:, :, 2] = ((np.arange(h) >> 6) & 255)[:, None]
    Image.fromarray(px).save(path, format="JPEG", quality=90)


def make_data(root: Path, size: int, count: int, photo_format: str,
              huge_format: str = "png") -> dict:
    huge = root / (f"huge{size}" if huge_format == "png" else f"huge{size}_jpeg") / "a"
    photos = root / f"photos_{photo_format}" / "a"
    for d in (huge, photos):
        d.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        p = huge / f"huge{i}.{'png' if huge_format == 'png' else 'jpg'}"
        if not p.exists():
            if huge_format == "png":
                gradient_png(p, size, size)
            elif i == 0:
                gradient_jpeg(p, size, size)
            else:
                p.write_bytes((huge / "huge0.jpg").read_bytes())
        q = photos / f"photo{i}.{'jpg' if photo_format == 'jpeg' else 'png'}"
        if not q.exists():
            photo(q, i, photo_format)
    return {"huge": huge.parent, "photos": photos.parent}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--dir", help="where the generated folders go (kept; reused if present)")
    ap.add_argument("--size", type=int, default=16000, help="side of the huge PNGs")
    ap.add_argument("--count", type=int, default=4, help="images per folder")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--photo-format", choices=["png", "jpeg"], default="png")
    ap.add_argument("--huge-format", choices=["png", "jpeg"], default="png",
                    help="the huge images as PNG (default) or baseline JPEG")
    ap.add_argument("--python-path", action="append", default=[], metavar="LABEL=DIR")
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = ap.parse_args()

    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="peak_rss_"))
    folders = make_data(root, args.size, args.count, args.photo_format, args.huge_format)
    builds = [tuple(s.split("=", 1)) for s in args.python_path] or [
        ("this", os.environ.get("PYTHONPATH", ""))]
    results = []
    print(f"{args.count} images per folder, threads={args.threads}, batch_size=2, "
          f"{args.epochs} epoch(s); huge: {args.size}x{args.size} gradient {args.huge_format}; photos: "
          f"500x375 {args.photo_format}")
    print(f"{'build':10} {'pipeline':18} {'photos MiB':>10} {'huge MiB':>9} {'ratio':>6}")
    for label, path in builds:
        env = dict(os.environ, PYTHONPATH=path)
        for name, pipeline in PIPELINES.items():
            rss = {}
            for kind, folder in folders.items():
                r = subprocess.run([sys.executable, "-c", CHILD, str(folder), pipeline,
                                    str(args.threads), str(args.epochs)],
                                   env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"{label} {name} {kind} failed:\n{r.stderr[-3000:]}")
                rss[kind] = json.loads(r.stdout.strip().splitlines()[-1])
            ratio = rss["huge"]["maxrss_kib"] / rss["photos"]["maxrss_kib"]
            print(f"{label:10} {name:18} {rss['photos']['maxrss_kib'] / 1024:10.0f} "
                  f"{rss['huge']['maxrss_kib'] / 1024:9.0f} {ratio:6.2f}")
            results.append({"build": label, "pipeline": name, "photos": rss["photos"],
                            "huge": rss["huge"], "ratio": ratio})
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
