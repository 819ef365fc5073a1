"""The diagnosis as one self-contained HTML page (``stoker.diagnose(..., report=)``,
``stoker diagnose --report``).

The page holds the verdict, a bar chart of the stage times, a timeline excerpt of the
loader's trace, the tuning curve when a tune ran, and the data monitor's histograms when
the loader has one. Every chart is inline SVG, styled by one inline stylesheet: the page
loads nothing (no scripts, fonts, images or stylesheets from anywhere), so it can be
mailed, archived as a CI artefact, or opened offline.
"""

from __future__ import annotations

import datetime
import html
import json
import os
from typing import Optional

# Span colours by kind (the legend of the timeline).
_KINDS = (
    ("read", "#4e79a7"),
    ("decode", "#f28e2b"),
    ("transform", "#59a14f"),
    ("cache", "#b07aa1"),
    ("collate", "#76b7b2"),
    ("hand-off", "#bab0ac"),
    ("wait for data", "#e15759"),
    ("wait for a slot", "#d4d4d4"),
)
_COLOUR = dict(_KINDS)
_SERIES = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
 max-width:1040px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#666;font-size:12px}
.verdict{border-left:6px solid #888;background:#f6f6f6;padding:10px 14px;margin:14px 0}
.verdict.fed{border-color:#59a14f}.verdict.marginal{border-color:#edc948}
.verdict.data-bound{border-color:#e15759}.verdict.undecided{border-color:#888}
.state{font-weight:700;font-size:18px;text-transform:uppercase}
svg.chart{display:block;margin:6px 0;background:#fff}
svg text{font:12px system-ui,sans-serif;fill:#333}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;border-bottom:1px solid #eee;
 text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
.shifted{color:#c0392b;font-weight:700}.skipped{color:#888}
pre{background:#f6f6f6;padding:10px;overflow-x:auto;font-size:12px}
.note{color:#555;font-size:13px}
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _num(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _bars(chart_id: str, rows, unit: str, width: int = 900) -> str:
    """A horizontal bar chart: rows of (label, value, colour)."""
    rows = [(str(label), float(v), colour) for label, v, colour in rows]
    top = max([v for _, v, _ in rows] + [0.0])
    label_w, bar_h, gap = 250, 20, 8
    plot_w = width - label_w - 110
    h = len(rows) * (bar_h + gap) + 10
    out = [f'<svg class="chart" id="{_e(chart_id)}" width="{width}" height="{h}" '
           f'viewBox="0 0 {width} {h}" role="img">']
    for i, (label, v, colour) in enumerate(rows):
        y = 5 + i * (bar_h + gap)
        w = 0.0 if top <= 0 else max(1.0, plot_w * v / top) if v > 0 else 0.0
        out.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{_e(label)}</text>')
        out.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                   f'fill="{colour}"><title>{_e(label)}: {_num(v)} {_e(unit)}</title></rect>')
        out.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 15}">{_num(v)} {_e(unit)}</text>')
    out.append("</svg>")
    return "".join(out)


def _stage_chart(diagnosis: dict) -> str:
    s = diagnosis.get("stages", {})
    rows = [
        ("read (workers)", s.get("read_s", 0), _COLOUR["read"]),
        ("decode (workers)", s.get("decode_s", 0), _COLOUR["decode"]),
        ("augment (workers)", s.get("augment_s", 0), _COLOUR["transform"]),
        ("  of it Python callables", s.get("callback_s", 0), "#8cd17d"),
        ("waiting for a batch slot (workers)", s.get("worker_wait_s", 0), "#bab0ac"),
        ("step waiting for data (consumer)", s.get("consumer_wait_s", 0),
         _COLOUR["wait for data"]),
    ]
    return _bars("stage-times", rows, "s")


def _kind(name: str) -> str:
    n = name.lower()
    if "slot" in n:
        return "wait for a slot"
    if "wait" in n:
        return "wait for data"
    if n == "read" or n.startswith("read"):
        return "read"
    if n.startswith("decode"):
        return "decode"
    if "cache" in n:
        return "cache"
    if "collate" in n:
        return "collate"
    if "hand-off" in n or n == "stoker.next":
        return "hand-off"
    return "transform"


def _timeline(events: list, window_ms: float, width: int = 960) -> str:
    spans = [e for e in events if e.get("ph") == "X" and "ts" in e and "dur" in e]
    if not spans:
        return '<p class="note">No spans were recorded.</p>'
    names = {e["tid"]: e.get("args", {}).get("name", str(e["tid"]))
             for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    start_all = min(float(e["ts"]) for e in spans)
    end_all = max(float(e["ts"]) + float(e["dur"]) for e in spans)
    window_us = window_ms * 1000.0
    # The excerpt: the window in which the most spans start (the busiest stretch, never a
    # pause between the diagnosis' rounds).
    starts = sorted(float(e["ts"]) for e in spans)
    best, lo, j = 0, starts[0], 0
    for i, t in enumerate(starts):
        while starts[j] < t - window_us:
            j += 1
        if i - j + 1 > best:
            best, lo = i - j + 1, max(start_all, t - window_us)
    hi = min(end_all, lo + window_us)
    shown = [e for e in spans if float(e["ts"]) < hi and float(e["ts"]) + float(e["dur"]) > lo]
    tids = sorted({e["tid"] for e in shown},
                  key=lambda t: (0 if "consumer" in names.get(t, "") else 1, str(names.get(t, t))))
    label_w, row_h, axis_h = 150, 22, 28
    plot_w = width - label_w - 10
    h = len(tids) * row_h + axis_h + 6
    scale = plot_w / max(hi - lo, 1e-9)
    out = [f'<svg class="chart" id="timeline" width="{width}" height="{h}" '
           f'viewBox="0 0 {width} {h}" role="img">']
    for i, tid in enumerate(tids):
        y = i * row_h + 3
        out.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">'
                   f'{_e(names.get(tid, tid))}</text>')
        out.append(f'<line x1="{label_w}" x2="{width - 10}" y1="{y + row_h - 2}" '
                   f'y2="{y + row_h - 2}" stroke="#eee"/>')
    row = {t: i for i, t in enumerate(tids)}
    for e in shown:
        a = max(float(e["ts"]), lo)
        b = min(float(e["ts"]) + float(e["dur"]), hi)
        x = label_w + (a - lo) * scale
        w = max(0.6, (b - a) * scale)
        y = row[e["tid"]] * row_h + 5
        args = e.get("args", {})
        tip = f'{e["name"]}: {float(e["dur"]) / 1000:.3f} ms' + "".join(
            f", {k} {v}" for k, v in args.items())
        out.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{row_h - 8}" '
                   f'fill="{_COLOUR[_kind(e["name"])]}"><title>{_e(tip)}</title></rect>')
    axis_y = len(tids) * row_h + 8
    out.append(f'<line x1="{label_w}" x2="{width - 10}" y1="{axis_y}" y2="{axis_y}" '
               'stroke="#999"/>')
    for k in range(6):
        t = lo + (hi - lo) * k / 5
        x = label_w + (t - lo) * scale
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{axis_y}" y2="{axis_y + 4}" '
                   'stroke="#999"/>')
        anchor = "start" if k == 0 else "end" if k == 5 else "middle"
        out.append(f'<text x="{x:.1f}" y="{axis_y + 17}" text-anchor="{anchor}">'
                   f'{(t - start_all) / 1000:.1f} ms</text>')
    out.append("</svg>")
    legend = " ".join(f'<span style="display:inline-block;width:11px;height:11px;'
                      f'background:{c};margin:0 4px 0 10px"></span>{_e(k)}' for k, c in _KINDS)
    note = (f'<p class="note">{(hi - lo) / 1000:.1f} ms of {(end_all - start_all) / 1000:.1f} ms '
            f'recorded ({len(shown)} of {len(spans)} spans; hover a span for its sample, batch '
            f'and epoch). {legend}</p>')
    return "".join(out) + note


def _tune_chart(tune: dict, width: int = 900) -> str:
    configs = [c for c in tune.get("configs", []) if not c.get("auto")]
    if not configs:
        return '<p class="note">The tune run holds no fixed configuration.</p>'
    by_series = {}
    for c in configs:
        by_series.setdefault((c.get("prefetch"), c.get("batch_size")), []).append(c)
    xs = sorted({int(c["threads"]) for c in configs})
    top = max(float(c["images_per_sec"]) for c in configs) * 1.1 or 1.0
    left, right, top_m, bottom = 70, 170, 10, 40
    h = 300
    pw, ph = width - left - right, h - top_m - bottom

    def px(t):
        return left + (pw * (xs.index(t) / max(1, len(xs) - 1)) if len(xs) > 1 else pw / 2)

    def py(v):
        return top_m + ph * (1 - v / top)

    out = [f'<svg class="chart" id="tune-curve" width="{width}" height="{h}" '
           f'viewBox="0 0 {width} {h}" role="img">',
           f'<line x1="{left}" x2="{left}" y1="{top_m}" y2="{top_m + ph}" stroke="#999"/>',
           f'<line x1="{left}" x2="{left + pw}" y1="{top_m + ph}" y2="{top_m + ph}" '
           'stroke="#999"/>']
    for k in range(5):
        v = top * k / 4
        out.append(f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{_num(v)}</text>')
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
                   'stroke="#f0f0f0"/>')
    for t in xs:
        out.append(f'<text x="{px(t):.1f}" y="{top_m + ph + 16}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{h - 6}" text-anchor="middle">threads</text>')
    out.append(f'<text x="14" y="{top_m + ph / 2}" transform="rotate(-90 14 {top_m + ph / 2})" '
               'text-anchor="middle">images/s</text>')
    recommended = tune.get("recommended")
    best = tune["configs"][recommended] if isinstance(recommended, int) and 0 <= recommended < len(
        tune.get("configs", [])) else None
    for i, ((prefetch, batch), series) in enumerate(sorted(by_series.items(), key=str)):
        colour = _SERIES[i % len(_SERIES)]
        series = sorted(series, key=lambda c: int(c["threads"]))
        points = " ".join(f'{px(int(c["threads"])):.1f},{py(float(c["images_per_sec"])):.1f}'
                          for c in series)
        out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                   'stroke-width="2"/>')
        for c in series:
            out.append(f'<circle cx="{px(int(c["threads"])):.1f}" '
                       f'cy="{py(float(c["images_per_sec"])):.1f}" r="3.5" fill="{colour}">'
                       f'<title>threads {c["threads"]}, prefetch {prefetch}, batch {batch}: '
                       f'{_num(float(c["images_per_sec"]))} images/s</title></circle>')
        ly = top_m + 14 + 18 * i
        out.append(f'<line x1="{left + pw + 14}" x2="{left + pw + 34}" y1="{ly - 4}" '
                   f'y2="{ly - 4}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{left + pw + 40}" y="{ly}">prefetch {prefetch}, batch {batch}'
                   '</text>')
    if best is not None and not best.get("auto"):
        out.append(f'<circle cx="{px(int(best["threads"])):.1f}" '
                   f'cy="{py(float(best["images_per_sec"])):.1f}" r="8" fill="none" '
                   'stroke="#222" stroke-width="1.5"><title>recommended</title></circle>')
    out.append("</svg>")
    why = tune.get("reason", "")
    rec = (f'<p class="note">Recommended (circled): threads {best["threads"]}, prefetch '
           f'{best["prefetch"]}, batch {best["batch_size"]} — {_e(why)}.</p>'
           if best is not None else "")
    return "".join(out) + rec


def _monitor_section(m: dict) -> str:
    parts = []
    ref = m.get("reference_classes", {})
    now = m.get("classes", {})
    names = sorted(set(ref) | set(now), key=lambda n: (-(ref.get(n, 0) + now.get(n, 0)), n))[:24]
    n_ref, n_now = sum(ref.values()) or 1, sum(now.values()) or 1
    if names:
        width, label_w, group_h = 900, 160, 30
        plot_w = width - label_w - 120
        top = max([ref.get(n, 0) / n_ref for n in names] + [now.get(n, 0) / n_now for n in names]
                  + [1e-9])
        h = len(names) * group_h + 10
        out = [f'<svg class="chart" id="monitor-classes" width="{width}" height="{h}" '
               f'viewBox="0 0 {width} {h}" role="img">']
        for i, name in enumerate(names):
            y = 5 + i * group_h
            out.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">'
                       f'{_e(name)}</text>')
            for j, (share, colour, what) in enumerate(
                    ((now.get(name, 0) / n_now, "#4e79a7", "delivered"),
                     (ref.get(name, 0) / n_ref, "#bab0ac", "reference"))):
                w = plot_w * share / top
                out.append(f'<rect x="{label_w}" y="{y + 12 * j}" width="{w:.1f}" height="11" '
                           f'fill="{colour}"><title>{_e(name)} {what}: {100 * share:.1f}%'
                           '</title></rect>')
                out.append(f'<text x="{label_w + w + 5:.1f}" y="{y + 12 * j + 10}" '
                           f'style="font-size:10px">{100 * share:.1f}%</text>')
        out.append("</svg>")
        parts.append('<h3>Classes: share of the images delivered (blue) and of the reference '
                     '(grey)</h3>' + "".join(out))
    if m.get("reference_mean") and m.get("sampled_images"):
        rows = []
        for stat in ("mean", "std"):
            for c, channel in enumerate("RGB"):
                rows.append((f"{stat} {channel} delivered", m[stat][c], "#4e79a7"))
                rows.append((f"{stat} {channel} reference", m[f"reference_{stat}"][c],
                             "#bab0ac"))
        parts.append("<h3>Pixel mean and std per channel (in [0, 1])</h3>"
                     + _bars("monitor-channels", rows, ""))
    verdicts = m.get("last") or []
    if verdicts:
        body = "".join(f'<tr><td>{_e(v["item"])}</td><td class="{_e(v["verdict"])}">'
                       f'{_e(v["verdict"])}</td><td>{_e(v["detail"])}</td></tr>'
                       for v in verdicts)
        parts.append("<h3>Last check</h3><table><tr><th>item</th><th>verdict</th>"
                     f"<th>test</th></tr>{body}</table>")
    warned = ", ".join(m.get("warned", [])) or "none"
    summary = (f'<p class="note">Reference {_e(m.get("reference"))}; {m.get("checks", 0)} '
               f'checks, {m.get("drift_events", 0)} drift events '
               f'(warned: {_e(warned)}); {m.get("images", 0)} images '
               f'delivered, {m.get("sampled_images", 0)} sampled; {m.get("skipped", 0)} '
               'skipped.</p>')
    return summary + "".join(parts)


def render(diagnosis: dict, *, events: Optional[list] = None, tune: Optional[dict] = None,
           monitor: Optional[dict] = None, title: str = "stoker diagnose",
           window_ms: float = 150.0) -> str:
    """The report as HTML text."""
    from stoker._version import __version__

    state = str(diagnosis.get("state", "undecided"))
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    causes = ", ".join(diagnosis.get("causes", [])) or "none"
    body = [f"<h1>{_e(title)}</h1>",
            f'<div class="meta">stoker {_e(__version__)} · {now}</div>',
            f'<div class="verdict {_e(state)}"><div class="state">{_e(state)}</div>'
            f'<div>{_e(diagnosis.get("verdict", ""))}</div>'
            f'<div class="note">step waiting for data: '
            f'{100 * float(diagnosis.get("wait_fraction", 0)):.1f}% of the time; causes: '
            f'{_e(causes)}; bottleneck: {_e(diagnosis.get("bottleneck") or "none")}</div></div>',
            "<h2>Where the time went (full pipeline, summed over threads)</h2>",
            _stage_chart(diagnosis)]
    modes = diagnosis.get("modes", [])
    if modes:
        rows = "".join(f'<tr><td>{_e(m["mode"])}</td><td class="num">'
                       f'{_num(float(m["images_per_sec"]))}</td><td class="num">'
                       f'{float(m["ratio_to_previous"]):.2f}x</td></tr>' for m in modes)
        body.append("<h2>Throughput as stages are added</h2><table><tr><th>mode</th>"
                    f"<th>images/s</th><th>cost of the stage</th></tr>{rows}</table>")
    body.append("<h2>Timeline excerpt</h2>")
    body.append(_timeline(events, window_ms) if events else
                '<p class="note">No trace was recorded.</p>')
    if tune:
        body.append("<h2>Tuning curve</h2>" + _tune_chart(tune))
    if monitor and not monitor.get("images"):
        # The monitor observes the batches a training loop takes; diagnose's rounds run
        # inside the engine, so before any iteration it has nothing to compare.
        body.append('<h2>Data monitor</h2><p class="note" id="monitor-empty">The monitor has '
                    'seen no batch yet: it observes the batches the training loop takes from '
                    'the loader, and the diagnosis\'s own rounds are not among them. Iterate '
                    'the loader (an epoch, or part of one), then diagnose, to see its class '
                    'and channel histograms against the reference.</p>')
    elif monitor:
        body.append("<h2>Data monitor</h2>" + _monitor_section(monitor))
    if diagnosis.get("table"):
        body.append(f'<h2>The diagnosis as text</h2><pre>{_e(diagnosis["table"])}</pre>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def write(path, diagnosis: dict, **kwargs) -> str:
    """Writes render(...) to ``path``; returns the path."""
    path = os.fspath(path)
    text = render(diagnosis, **kwargs)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def load_tune(tune) -> Optional[dict]:
    """A tune result: a dict (``stoker tune --json``'s object), its JSON text, or the path
    of a file holding it. ValueError naming ``tune`` otherwise."""
    if tune is None or isinstance(tune, dict):
        return tune
    if isinstance(tune, (str, bytes)) or hasattr(tune, "__fspath__"):
        text = os.fsdecode(tune) if not isinstance(tune, str) else tune
        if not text.lstrip().startswith("{"):
            try:
                with open(text, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise ValueError(f"tune: cannot read {text!r}: {e}") from None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"tune: not JSON ({e})") from None
        if not isinstance(value, dict) or "configs" not in value:
            raise ValueError("tune: not a `stoker tune --json` result (no \"configs\")")
        return value
    raise TypeError(f"tune must be a dict, JSON text or a path, got {type(tune).__name__}")
