#!/usr/bin/python3
"""Draws `stoker tune --plot OUT.png`: images/s against threads, one line per
(prefetch, batch size), the recommended configuration circled and the
auto-tuned runs as stars. Reads `stoker tune --json` output from stdin."""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: plot_tune.py OUT.png < tune.json", file=sys.stderr)
        return 2
    data = json.load(sys.stdin)
    configs = data["configs"]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    lines = {}
    for c in configs:
        if not c["auto"]:
            lines.setdefault((c["prefetch"], c["batch_size"]), []).append(c)
    batch_sizes = {b for _, b in lines}
    for (prefetch, batch), rows in sorted(lines.items()):
        rows.sort(key=lambda c: c["threads"])
        label = f"prefetch {prefetch}" + (f", batch {batch}" if len(batch_sizes) > 1 else "")
        ax.plot([c["threads"] for c in rows], [c["images_per_sec"] for c in rows],
                marker="o", label=label)
    for c in configs:
        if c["auto"]:
            ax.plot([c["threads"]], [c["images_per_sec"]], marker="*", markersize=14,
                    linestyle="none", color="black",
                    label=f"auto (ended at {c['threads']} threads, prefetch {c['prefetch']})")
    rec = data.get("recommended", -1)
    if 0 <= rec < len(configs):
        c = configs[rec]
        ax.plot([c["threads"]], [c["images_per_sec"]], marker="o", markersize=16,
                markerfacecolor="none", markeredgecolor="red", markeredgewidth=2,
                linestyle="none", label="recommended")
    threads = sorted({c["threads"] for c in configs})
    ax.set_xticks(threads)
    ax.set_xlabel("worker threads")
    ax.set_ylabel("images/s")
    title = "stoker tune"
    if data.get("step_ms", 0) > 0:
        title += f" (simulated step {data['step_ms']:.1f} ms)"
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[1], format="png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
