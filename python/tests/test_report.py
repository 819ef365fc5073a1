"""The HTML report of stoker.diagnose / `stoker diagnose --report`, loaded in a real
headless browser (Debian's chromium): no errors, no requests, every chart drawn."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
from PIL import Image

import stoker
from conftest import MEAN, STD, photo

CLI = os.environ.get("STOKER_CLI", os.path.join(os.path.dirname(__file__), "..", "..",
                                                "build", "stoker"))
needs_cli = pytest.mark.skipif(not os.access(CLI, os.X_OK), reason=f"no CLI binary at {CLI}")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _needs_chromium():
    if CHROMIUM is None:
        if os.environ.get("CI"):  # CI ran `make deps`, which installs chromium
            pytest.fail("chromium is not installed (scripts/install-deps.sh installs it)")
        pytest.skip("no chromium on PATH: the report is not checked in a browser")


# Injected at the top of <head> of a copy of the page: collects error events (script
# errors and failed loads, caught in the capture phase), every resource the page fetched,
# and each chart's drawn size and its shapes with a non-zero box; writes them as JSON into
# <pre id="probe"> once the page has loaded, for --dump-dom.
_PROBE = """<script>
(function () {
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message || (e.target && (e.target.src || e.target.href)) || "error"));
  }, true);
  window.addEventListener("load", function () {
    var out = {errors: errors, charts: [],
               resources: performance.getEntriesByType("resource").map(function (r) {
                 return r.name; })};
    document.querySelectorAll("svg.chart").forEach(function (s) {
      var box = s.getBoundingClientRect(), shapes = 0;
      s.querySelectorAll("rect, polyline, line, circle, path").forEach(function (e) {
        var b = e.getBoundingClientRect();
        if (b.width > 0 && b.height > 0) shapes++;
      });
      out.charts.push({id: s.id, width: box.width, height: box.height, shapes: shapes});
    });
    var pre = document.createElement("pre");
    pre.id = "probe";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  });
})();
</script>"""


def _browse(page: str, tmp_path):
    """Loads `page` (HTML text) in headless chromium. Returns (probe dict, console error
    lines)."""
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("<head>", "<head>" + _PROBE, 1), encoding="utf-8")
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                        "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0",
                        f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                        probed.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    m = re.search(r'<pre id="probe">(.*?)</pre>', r.stdout, re.S)
    assert m, f"the probe did not run: {r.stdout[:500]} {r.stderr[-2000:]}"
    probe = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<")
                       .replace("&gt;", ">").replace("&amp;", "&"))
    console = [line for line in r.stderr.splitlines()
               if "CONSOLE" in line and ("Error" in line or "Uncaught" in line)]
    return probe, console


def _screenshot(path: str, out, tmp_path, height=2600):
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", f"--window-size=1100,{height}",
                    f"--user-data-dir={tmp_path / 'profile-shot'}", f"--screenshot={out}",
                    "file://" + os.path.abspath(path)],
                   capture_output=True, text=True, timeout=120, check=True)


# Anything that would make a browser fetch: attributes naming a resource, CSS urls and
# imports, scripts and stylesheets by reference.
_EXTERNAL = re.compile(r"""\b(?:src|href|xlink:href|srcset|action|data)\s*=|url\(|@import|"""
                       r"""<script|<link|<iframe|<object|<embed""", re.I)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("report_data")
    for c in "ab":
        (root / c).mkdir()
        for i in range(12):
            Image.fromarray(photo(96, 72, 50 * ord(c) + i)).save(root / c / f"{i:02d}.jpg",
                                                                 quality=90)
    return str(root)


@pytest.fixture(scope="module")
def report(data, tmp_path_factory):
    """A report with every section: a monitored loader that ran an epoch, a tune."""
    if not os.access(CLI, os.X_OK):
        pytest.skip(f"no CLI binary at {CLI} (the monitor's reference is `stoker stats`')")
    d = tmp_path_factory.mktemp("report")
    ref = d / "ref.json"
    ref.write_text(subprocess.run([CLI, "stats", data, "--json"], capture_output=True,
                                  text=True, timeout=120, check=True).stdout)
    loader = stoker.Loader(stoker.ImageFolder(data), batch_size=8, shuffle=True, threads=2,
                           transforms=[stoker.RandomResizedCrop(48), stoker.Normalize(MEAN, STD)],
                           monitor=stoker.Monitor(str(ref), min_sampled=1))
    with warnings.catch_warnings():  # crops of 48 pixels may drift from whole images
        warnings.simplefilter("ignore", stoker.DriftWarning)
        for _ in loader:
            pass
    assert loader.stats()["monitor"]["checks"] == 1
    tune = json.loads(stoker._C.tune(loader._impl, [1, 2], [1], [], 0.2, 0.0, False)["json"])
    path = str(d / "report.html")
    r = stoker.diagnose(loader, None, batches=3, agree=2, max_rounds=3, report=path, tune=tune)
    assert r["report"] == path and r["state"] in ("fed", "marginal", "data-bound", "undecided")
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def test_the_report_holds_every_part_and_refers_to_nothing(report):
    _, page = report
    assert page.startswith("<!DOCTYPE html>")
    for part in ('id="stage-times"', 'id="timeline"', 'id="tune-curve"',
                 'id="monitor-classes"', 'id="monitor-channels"', "Last check",
                 "stoker worker 0", "stoker consumer"):
        assert part in page, part
    assert not _EXTERNAL.search(page), _EXTERNAL.search(page)
    assert "http:" not in page and "https:" not in page


def test_tune_goes_with_a_report(data, tmp_path):
    loader = stoker.Loader(stoker.ImageFolder(data), batch_size=8,
                           transforms=[stoker.CenterCrop(48)])
    with pytest.raises(ValueError, match="tune= goes with report="):
        stoker.diagnose(loader, batches=2, tune={"configs": []})
    with pytest.raises(ValueError, match="tune= goes with report="):
        stoker.diagnose(loader, batches=2, tune=True)
    with pytest.raises(ValueError, match="not a `stoker tune --json` result"):
        stoker.diagnose(loader, batches=2, report=str(tmp_path / "r.html"), tune='{"a": 1}')


def test_the_browser_check_catches_a_broken_page(tmp_path):
    # The check itself: a page with an external image, a script error and an invalid SVG
    # attribute must fail each of its tests.
    _needs_chromium()
    page = ('<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
            '<svg class="chart" id="c" width="100" height="50">'
            '<rect x="0" y="0" width="-5" height="10"/></svg>'
            '<img src="http://127.0.0.1:9/none.png"><script>nosuchfunction();</script>'
            '</body></html>')
    probe, console = _browse(page, tmp_path)
    assert any("127.0.0.1:9" in r for r in probe["resources"]), probe
    assert any("nosuchfunction" in e for e in probe["errors"]), probe
    assert any("negative value" in line for line in console), console
    assert probe["charts"] == [{"id": "c", "width": 100, "height": 50, "shapes": 0}]


def test_the_report_renders_in_a_browser(report, tmp_path):
    _needs_chromium()
    path, page = report
    probe, console = _browse(page, tmp_path)
    assert probe["errors"] == [] and console == [], (probe["errors"], console)
    # The page fetched nothing (the probed copy is a file: URL with no resources).
    assert probe["resources"] == [], probe["resources"]
    charts = {c["id"]: c for c in probe["charts"]}
    assert set(charts) == {"stage-times", "timeline", "tune-curve", "monitor-classes",
                           "monitor-channels"}, charts
    for c in charts.values():
        assert c["width"] > 100 and c["height"] > 20 and c["shapes"] > 0, c
    assert charts["timeline"]["shapes"] >= 20  # spans of the consumer and both workers
    assert charts["tune-curve"]["shapes"] >= 2 + 2  # axes and two points
    shot = tmp_path / "report.png"
    _screenshot(path, shot, tmp_path)
    img = np.asarray(Image.open(shot).convert("RGB"))
    assert img.shape[1] == 1100 and img.std() > 10  # drawn, not blank
    target = os.environ.get("STOKER_REPORT_SCREENSHOT")  # docs/diagnosis_report.png
    if target:
        top = Image.open(shot).convert("RGB").crop((0, 0, 1100, 1700))
        top.quantize(colors=64).save(target, optimize=True)


@needs_cli
def test_cli_writes_the_report(data, tmp_path):
    out = tmp_path / "cli.html"
    env = dict(os.environ, STOKER_PYTHON=sys.executable)
    r = subprocess.run([CLI, "diagnose", data, "--pipeline", "val", "--batch-size", "8",
                        "--batches", "2", "--report", str(out)], capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert f"report written to {out}" in r.stderr and "verdict:" in r.stdout
    page = out.read_text(encoding="utf-8")
    assert 'id="stage-times"' in page and 'id="timeline"' in page
    assert 'id="tune-curve"' not in page and not _EXTERNAL.search(page)
    r = subprocess.run([CLI, "diagnose", data, "--tune"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "go with --report" in r.stderr


def test_a_monitor_that_saw_nothing_says_so_instead_of_empty_histograms(data, tmp_path):
    # Before: every class showed "delivered: 0.0 %" when the loader was not iterated first.
    if not os.access(CLI, os.X_OK):
        pytest.skip(f"no CLI binary at {CLI} (the monitor's reference is `stoker stats`')")
    ref = tmp_path / "ref.json"
    ref.write_text(subprocess.run([CLI, "stats", data, "--json"], capture_output=True,
                                  text=True, timeout=120, check=True).stdout)
    loader = stoker.Loader(stoker.ImageFolder(data), batch_size=8, threads=2,
                           transforms=[stoker.CenterCrop(48)],
                           monitor=stoker.Monitor(str(ref), min_sampled=1))
    path = str(tmp_path / "report.html")
    stoker.diagnose(loader, None, batches=2, agree=1, max_rounds=1, report=path)
    page = open(path, encoding="utf-8").read()
    assert 'id="monitor-empty"' in page and "seen no batch yet" in page
    assert 'id="monitor-classes"' not in page and "0.0 %" not in page
