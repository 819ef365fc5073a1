#!/usr/bin/python3
"""What the always-on stage counters cost: `stoker bench` with and without the
per-stage clock reads (--no-stage-timing), interleaved over rounds so drift on a
shared machine hits both alike. Prints the median throughput ratio and CPU-per-image
ratio, their spread across rounds, and the cost the clock's price predicts (clock reads per image x
ns per read / ns per image).

    bench/counter_cost.py DATA [--rounds 7] [--threads 1] [--stoker build/stoker]
"""

import argparse
import json
import statistics
import subprocess
import sys

# Clock reads per image on the hot path: 2 around the read, 3 in SampleProcessor.
READS_PER_IMAGE = 5


def run(stoker, data, threads, epochs, timing):
    cmd = [stoker, "bench", data, "--threads", str(threads), "--epochs", str(epochs), "--json"]
    if not timing:
        cmd.append("--no-stage-timing")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--stoker", default="build/stoker")
    a = ap.parse_args()
    ratios, cpu_ratios, on_rates, off_rates, clock = [], [], [], [], []
    for r in range(a.rounds):
        first_on = r % 2 == 0
        results = {}
        for timing in ((True, False) if first_on else (False, True)):
            results[timing] = run(a.stoker, a.data, a.threads, a.epochs, timing)
        on, off = results[True]["images_per_sec"], results[False]["images_per_sec"]
        clock.append(results[True]["clock_ns"])
        on_rates.append(on)
        off_rates.append(off)
        ratios.append(on / off)
        # CPU time per image is steadier than wall time on a shared machine.
        cpu_ratios.append(results[True]["cpu_s_per_1000"] / results[False]["cpu_s_per_1000"])
        print(f"round {r + 1}: counters on {on:8.1f}  off {off:8.1f} images/s  on/off {on / off:.4f}"
              f"  CPU per image on/off {cpu_ratios[-1]:.4f}", file=sys.stderr)
    per_image_ns = 1e9 / statistics.median(on_rates) * a.threads
    predicted = READS_PER_IMAGE * statistics.median(clock) / per_image_ns
    print(json.dumps({
        "rounds": a.rounds, "threads": a.threads,
        "median_on_over_off": statistics.median(ratios),
        "min_ratio": min(ratios), "max_ratio": max(ratios),
        "median_cpu_on_over_off": statistics.median(cpu_ratios),
        "min_cpu_ratio": min(cpu_ratios), "max_cpu_ratio": max(cpu_ratios),
        "median_on": statistics.median(on_rates), "median_off": statistics.median(off_rates),
        "clock_ns": statistics.median(clock),
        "predicted_cost": predicted,
    }, indent=1))


if __name__ == "__main__":
    main()
