#!/usr/bin/python3
"""Repeats one soak round kind (bench/soak.py) in one process and reports, every
--every rounds, the process's RSS beside glibc's own figures: the bytes malloc has handed
out and not had back (in use) and the bytes it keeps free for reuse, over all its arenas.
In use that grows is a leak; RSS that grows with free bytes while in use stays flat is the
allocator keeping memory (fragmentation), which malloc_trim(0) at the end shows by giving
it back.

    nice -n 19 /usr/bin/python3 bench/heap_rounds.py --kind records_stream --rounds 2000
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import random
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, "..", "python"))  # an installed stoker wins

import soak  # noqa: E402  (bench/soak.py: the data and the round's pipeline)
import stoker  # noqa: E402

libc = ctypes.CDLL("libc.so.6")
libc.fmemopen.restype = ctypes.c_void_p
libc.fmemopen.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def heap_mib() -> tuple[float, float]:
    """(in use, free) over every arena, from malloc_info's totals."""
    buf = ctypes.create_string_buffer(1 << 20)
    f = libc.fmemopen(buf, len(buf), b"w")
    libc.malloc_info(0, f)
    libc.fclose(f)
    xml = buf.value.decode()
    # The last <total type="rest"> and <system type="current"> are the whole heap's.
    free = sum(int(x) for x in re.findall(r'<total type="(?:fast|rest)" count="\d+" size="(\d+)"/>',
                                           xml.rsplit("</heap>", 1)[-1]))
    current = int(re.findall(r'<system type="current" size="(\d+)"/>', xml)[-1])
    mmap = int(re.findall(r'<total type="mmap" count="\d+" size="(\d+)"/>', xml)[-1])
    return (current - free + mmap) / 2**20, free / 2**20


def one_round(kind: str, rec: dict, rng: random.Random) -> None:
    want = rec["shards"] * rec["per_shard"]
    pattern = rec["pattern"] + (".gz" if kind == "records_stream" else "")
    src = stoker.Shards(pattern, fields=soak.FIELDS, shuffle_buffer=64,
                        length=want if kind == "records_stream" else None)
    loader = stoker.Loader(src, batch_size=rng.choice([8, 16]), shuffle=True, threads=2,
                           transforms=[stoker.RandomResizedCrop(32)],
                           seed=rng.randrange(1 << 30))
    for epoch in range(2):
        loader.set_epoch(epoch)
        n = soak.count_records(loader)
        if n != want:
            raise RuntimeError(f"{kind}: {n} records, expected {want}")
    loader.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=["records_stream", "records_shards"],
                   default="records_stream", help="the soak round to repeat")
    p.add_argument("--rounds", type=int, default=2000)
    p.add_argument("--every", type=int, default=250, help="report every N rounds")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as root:
        rec = soak.make_records(root, shards=4, per_shard=40, rows=256, seed=args.seed)
        rng = random.Random(args.seed)
        t0 = time.monotonic()
        for r in range(args.rounds + 1):
            if r % args.every == 0 or r == args.rounds:
                gc.collect()
                used, free = heap_mib()
                print(f"round {r:5d} {time.monotonic() - t0:6.0f} s  RSS {rss_mib():6.1f} MiB  "
                      f"heap in use {used:6.1f} MiB  free {free:5.1f} MiB", flush=True)
            if r < args.rounds:
                one_round(args.kind, rec, rng)
        libc.malloc_trim(0)
        print(f"after malloc_trim(0): RSS {rss_mib():.1f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
