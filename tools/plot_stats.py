#!/usr/bin/python3
"""Draws `stoker stats DATA --plot OUT.png`: width, height and aspect
histograms, class counts and colour modes. Reads a `stoker stats --json`
report from stdin, or {"new": report, "old": report} (with --against), in
which case OLD is overlaid (each side as a fraction of its images, so drops
of different sizes compare)."""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def expand(pairs, scale=1.0):
    """[[value, count], ...] -> (values, weights)."""
    return [v / scale for v, _ in pairs], [c for _, c in pairs]


def hist(ax, reports, key, scale, title):
    values = [v / scale for r, _ in reports for v, _ in r[key]]
    if not values:
        ax.set_title(title + " (no images)")
        return
    lo, hi = min(values), max(values)
    bins = 40 if hi > lo else 1
    for r, label in reports:
        v, w = expand(r[key], scale)
        total = sum(w) or 1
        ax.hist(v, bins=bins, range=(lo, hi if hi > lo else lo + 1),
                weights=[x / total for x in w], alpha=0.5, label=label)
    ax.set_title(title)
    ax.set_ylabel("fraction of images")
    if len(reports) > 1:
        ax.legend(fontsize=8)


def bars(ax, reports, counts_of, title, limit=30):
    keys = []
    for r, _ in reports:
        for k in counts_of(r):
            if k not in keys:
                keys.append(k)
    keys = keys[:limit]
    width = 0.8 / len(reports)
    for i, (r, label) in enumerate(reports):
        c = counts_of(r)
        total = sum(c.values()) or 1
        ax.bar([x + i * width for x in range(len(keys))], [c.get(k, 0) / total for k in keys],
               width=width, label=label)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(keys))])
    ax.set_xticklabels(keys, rotation=60, ha="right", fontsize=7)
    ax.set_title(title)
    ax.set_ylabel("fraction of images")
    if len(reports) > 1:
        ax.legend(fontsize=8)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: plot_stats.py OUT.png < stats.json", file=sys.stderr)
        return 2
    data = json.load(sys.stdin)
    if "new" in data:
        reports = [(data["new"], "NEW"), (data["old"], "OLD")]
    else:
        reports = [(data, None)]
    fig, axes = plt.subplots(2, 3, figsize=(14, 8), dpi=100)
    hist(axes[0][0], reports, "widths", 1, "width (pixels)")
    hist(axes[0][1], reports, "heights", 1, "height (pixels)")
    hist(axes[0][2], reports, "aspects_milli", 1000, "aspect (width / height)")
    bars(axes[1][0], reports, lambda r: {c["name"]: c["count"] for c in r["classes"]},
         "classes (first 30)")
    bars(axes[1][1], reports, lambda r: r["modes"], "colour modes")
    ax = axes[1][2]
    for i, (r, label) in enumerate(reports):
        xs = [c + i * 0.35 for c in range(3)]
        ax.bar(xs, r["mean"], width=0.35, yerr=r["std"], capsize=4,
               color=["tab:red", "tab:green", "tab:blue"], alpha=1.0 if i == 0 else 0.45,
               label=label)
    ax.set_xticks([0.17, 1.17, 2.17] if len(reports) > 1 else [0, 1, 2])
    ax.set_xticklabels(["R", "G", "B"])
    ax.set_ylim(0, 1)
    ax.set_title("per-channel mean ± std")
    fig.suptitle("stoker stats  " + reports[0][0].get("source", ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[1], format="png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
