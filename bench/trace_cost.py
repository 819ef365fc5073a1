#!/usr/bin/python3
"""What recording a trace costs: `stoker bench` with and without `--trace FILE`,
interleaved over rounds so drift on a shared machine hits both alike; with
--baseline BIN also the same bench by another build (e.g. main's, from before the
span sites existed), to show what tracing costs when it is off. Prints the median
throughput ratios (below 1: slower) and CPU-per-image
ratios (above 1: costlier) and their spread across rounds.

    bench/trace_cost.py DATA [--rounds 7] [--threads 1] [--stoker build/stoker]
                             [--baseline /path/to/other/stoker]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(stoker, data, threads, epochs, trace_path):
    cmd = [stoker, "bench", data, "--threads", str(threads), "--epochs", str(epochs), "--json"]
    if trace_path:
        cmd += ["--trace", trace_path]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def summary(name, ratios, cpu_ratios):
    return {f"{name}_median": statistics.median(ratios), f"{name}_min": min(ratios),
            f"{name}_max": max(ratios),
            f"{name}_cpu_per_image_median": statistics.median(cpu_ratios)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--stoker", default="build/stoker")
    ap.add_argument("--baseline", help="another stoker binary, run with tracing off")
    a = ap.parse_args()
    trace = os.path.join(tempfile.mkdtemp(), "trace.json")
    modes = ["on", "off"] + (["baseline"] if a.baseline else [])
    rates = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    for r in range(a.rounds):
        order = modes[r % len(modes):] + modes[:r % len(modes)]  # rotate who goes first
        for m in order:
            res = run(a.baseline if m == "baseline" else a.stoker, a.data, a.threads, a.epochs,
                      trace if m == "on" else None)
            rates[m].append(res["images_per_sec"])
            cpu[m].append(res["cpu_s_per_1000"])
        line = "  ".join(f"{m} {rates[m][-1]:8.1f}" for m in modes)
        print(f"round {r + 1}: images/s {line}", file=sys.stderr)
    out = {"rounds": a.rounds, "threads": a.threads,
           "trace_bytes": os.path.getsize(trace)}
    on_off = [x / y for x, y in zip(rates["on"], rates["off"])]
    out.update(summary("on_over_off", on_off, [x / y for x, y in zip(cpu["on"], cpu["off"])]))
    if a.baseline:
        off_base = [x / y for x, y in zip(rates["off"], rates["baseline"])]
        out.update(summary("off_over_baseline", off_base,
                           [x / y for x, y in zip(cpu["off"], cpu["baseline"])]))
    for m in modes:
        out[f"median_{m}"] = statistics.median(rates[m])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
