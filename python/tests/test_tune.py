"""threads="auto" / prefetch="auto", and the `stoker tune` / `stoker synth --json` CLI."""

from __future__ import annotations

import json
import os
import struct
import subprocess

import numpy as np
import pytest
from PIL import Image

import stoker
from conftest import photo

CLI = os.environ.get("STOKER_CLI", os.path.join(os.path.dirname(__file__), "..", "..",
                                                "build", "stoker"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("tune")
    for c in ("a", "b"):
        (root / c).mkdir()
        for i in range(12):
            Image.fromarray(photo(80, 60, i + (100 if c == "b" else 0))).save(
                root / c / f"{i:02d}.jpg", quality=90)
    return str(root)


def transforms():
    return [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip()]


def test_auto_loader_gives_the_same_batches_as_a_static_one(folder):
    static = stoker.Loader(stoker.ImageFolder(folder), batch_size=5, shuffle=True, seed=3,
                           transforms=transforms(), threads=2, dtype="uint8")
    tuned = stoker.Loader(stoker.ImageFolder(folder), batch_size=5, shuffle=True, seed=3,
                          transforms=transforms(), threads="auto", prefetch="auto",
                          max_threads=3, dtype="uint8")
    for epoch in range(3):
        static.set_epoch(epoch)
        tuned.set_epoch(epoch)
        for (a, la), (b, lb) in zip(static, tuned):
            assert np.array_equal(a.numpy(), b.numpy())
            assert np.array_equal(la.numpy(), lb.numpy())
    s = tuned.stats()
    assert 1 <= s["threads"] <= 3
    assert 1 <= s["prefetch"] <= 8
    assert isinstance(s["tuning"], str) and s["tuning"]
    assert s["tuning_changes"] >= 0
    assert static.stats()["tuning"] == ""


@pytest.mark.parametrize("kwargs, message", [
    ({"threads": "fast"}, "threads"),
    ({"threads": -1}, "threads"),
    ({"prefetch": 0}, "prefetch"),
    ({"prefetch": "lots"}, "prefetch"),
    ({"threads": "auto", "max_threads": -2}, "max_threads"),
])
def test_bad_tuning_options_are_value_errors(folder, kwargs, message):
    with pytest.raises(ValueError, match=message):
        stoker.Loader(stoker.ImageFolder(folder), batch_size=4, transforms=transforms(),
                      **kwargs)


def run_cli(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p


def test_synth_json(tmp_path):
    out = json.loads(run_cli("synth", str(tmp_path / "s"), "--classes", "2", "--per-class", "3",
                             "--width", "64", "--height", "48", "--json").stdout)
    assert out["tool"] == "synth"
    assert out["images"] == 6 and out["classes"] == 2
    assert out["dir"] == str(tmp_path / "s")
    assert len(list((tmp_path / "s").rglob("*.jpg"))) == 6


def test_tune_json_recommends_by_the_rule_and_plots(folder, tmp_path):
    png = tmp_path / "tune.png"
    p = run_cli("tune", folder, "--threads", "1,2", "--prefetch", "1,2", "--batch-size", "8",
                "--seconds", "0.3", "--auto-batches", "15", "--json", "--plot", str(png))
    assert "\r" not in p.stderr  # no progress bar when stderr is not a terminal
    out = json.loads(p.stdout)
    configs = out["configs"]
    assert [(c["threads"], c["prefetch"], c["auto"]) for c in configs[:4]] == [
        (1, 1, False), (1, 2, False), (2, 1, False), (2, 2, False)]
    assert configs[4]["auto"] is True and 1 <= configs[4]["threads"] <= 2
    for c in configs:
        assert c["images_per_sec"] > 0 and c["images"] > 0
        assert c["peak_rss_mib"] > 0 and 0 <= c["consumer_wait"] <= 1
    # The rule: fewest threads, then least memory, among those within 5% of the best.
    static = configs[:4]
    best = max(c["images_per_sec"] for c in static)
    ok = [i for i, c in enumerate(static) if c["images_per_sec"] >= 0.95 * best]
    expect = min(ok, key=lambda i: (static[i]["threads"], static[i]["peak_rss_mib"],
                                    static[i]["prefetch"]))
    assert out["recommended"] == expect
    assert "within 5%" in out["reason"]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 300 and height > 200


def test_tune_with_a_slow_step_picks_a_configuration_that_keeps_it_fed(folder):
    # A 60 ms step on 8 tiny images: any configuration feeds it.
    out = json.loads(run_cli("tune", folder, "--threads", "1,2", "--prefetch", "2",
                             "--batch-size", "8", "--step-ms", "60", "--seconds", "0.5",
                             "--no-auto", "--json").stdout)
    assert len(out["configs"]) == 2
    assert out["consumer_fed"] is True
    rec = out["configs"][out["recommended"]]
    assert rec["consumer_wait"] < 0.02
    assert rec["threads"] == 1 or out["configs"][0]["consumer_wait"] >= 0.02


def test_tune_rejects_bad_input(tmp_path):
    p = subprocess.run([CLI, "tune", str(tmp_path / "missing")], capture_output=True, text=True)
    assert p.returncode != 0
    assert "missing" in p.stderr
    p = subprocess.run([CLI, "tune", str(tmp_path), "--threads", "0"], capture_output=True,
                       text=True)
    assert p.returncode != 0
