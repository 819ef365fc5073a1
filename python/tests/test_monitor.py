"""stoker.Monitor: a Loader's running statistics compared with a `stoker stats --json`
reference, with the tests of `stoker stats --against`."""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings

import numpy as np
import pytest
from PIL import Image

import stoker
from conftest import MEAN, STD, photo

CLI = os.environ.get("STOKER_CLI", os.path.join(os.path.dirname(__file__), "..", "..",
                                                "build", "stoker"))
needs_cli = pytest.mark.skipif(not os.access(CLI, os.X_OK), reason=f"no CLI binary at {CLI}")


def _tree(root, classes, per_class, darken=1.0):
    for c in classes:
        (root / c).mkdir(parents=True)
        for i in range(per_class):
            img = photo(64, 48, 100 * ord(c) + i).astype(np.float64) * darken
            Image.fromarray(img.astype(np.uint8)).save(root / c / f"{i:02d}.png")
    return str(root)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    base = tmp_path_factory.mktemp("monitor")
    if not os.access(CLI, os.X_OK):
        pytest.skip(f"no CLI binary at {CLI} (the reference is `stoker stats --json`'s)")
    ref = _tree(base / "ref", "ab", 16)
    out = {"ref": ref,
           "same": _tree(base / "same", "ab", 16),  # the same images, another copy
           "one_class": _tree(base / "one_class", "a", 32),
           "dark": _tree(base / "dark", "ab", 16, darken=0.4)}
    r = subprocess.run([CLI, "stats", ref, "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out["report"] = str(base / "ref.json")
    with open(out["report"], "w") as f:
        f.write(r.stdout)
    return out


# The whole image at the reference's size (its shorter side, 48, is below the report's
# resolution 64): the pixels `stoker stats` measured.
WHOLE = stoker.Resize((48, 64))


def _every_pixel(data, **kwargs):
    """A monitor that samples every pixel of every image of a batch of 8."""
    return stoker.Monitor(data["report"], samples_per_batch=8, min_sampled=1, pixel_step=1,
                          **kwargs)


def _run(root, monitor, epochs=2, **kwargs):
    kwargs.setdefault("transforms", [WHOLE])
    loader = stoker.Loader(stoker.ImageFolder(root), batch_size=8, shuffle=True, threads=2,
                           monitor=monitor, **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            for _ in loader:
                pass
    drift = [w for w in caught if issubclass(w.category, stoker.DriftWarning)]
    return loader, drift


@pytest.mark.parametrize("kwargs", [
    {"dtype": "uint8"},
    # Normalize is undone before comparing (else the means would be ~0, far from the
    # reference's), in either layout.
    {"transforms": [WHOLE, stoker.Normalize(MEAN, STD)]},
    {"transforms": [WHOLE, stoker.Normalize(MEAN, STD)], "layout": "NHWC"},
    {"transforms": [WHOLE], "dtype": "float32"},  # x / 255
    {"transforms": [WHOLE, stoker.Normalize(MEAN, STD)], "dtype": "bfloat16"},
    {"transforms": [WHOLE], "dtype": "uint8", "collate": "list"},
], ids=["uint8", "normalized", "nhwc", "float", "bfloat16", "list"])
def test_the_reference_data_does_not_drift(data, kwargs):
    # Every image sampled: the colour statistics are the reference's exactly (a few
    # images of 32 would differ by their sampling noise; see docs/diagnosis.md).
    loader, drift = _run(data["same"], _every_pixel(data), **kwargs)
    assert drift == [], [str(w.message) for w in drift]
    m = loader.stats()["monitor"]
    assert m["checks"] == 2 and m["drift_events"] == 0, m
    assert m["images"] == 64 and m["sampled_images"] == 64
    assert m["classes"] == {"a": 32, "b": 32}
    verdicts = {v["item"]: v["verdict"] for v in m["last"]}
    assert verdicts["class balance"] == "same"
    assert verdicts["colour mean"] == "same" and verdicts["colour std"] == "same"
    # Sizes and formats are not monitored: skipped, never shifted.
    assert verdicts["width"] == verdicts["format mix"] == "skipped"
    # The same pixels: the reference's mean and std (bfloat16 rounds to 3 digits).
    tol = 5e-3 if kwargs.get("dtype") == "bfloat16" else 1e-5
    assert np.allclose(m["mean"], m["reference_mean"], atol=tol), m
    assert np.allclose(m["std"], m["reference_std"], atol=tol), m


def test_a_few_images_per_batch_are_sampled(data):
    loader, _ = _run(data["same"], stoker.Monitor(data["report"]), epochs=1)
    m = loader.stats()["monitor"]
    assert m["images"] == 32 and m["sampled_images"] == 8  # 2 of each batch of 8
    # A 16th of their pixels (pixel_step 4): still close to the reference's statistics
    # (the images are the reference's, drawn from 32 photos of varied colours).
    assert np.allclose(m["mean"], m["reference_mean"], atol=0.08), m


def test_one_class_warns_once_with_the_numbers_and_counts(data):
    loader, drift = _run(data["one_class"], stoker.Monitor(data["report"], samples_per_batch=0),
                         epochs=3)
    assert len(drift) == 1, [str(w.message) for w in drift]  # once, though every epoch drifts
    message = str(drift[0].message)
    assert "drift" in message and "class balance" in message
    assert "chi2 = 32" in message and "p = " in message and "total variation 0.5000" in message
    assert issubclass(stoker.DriftWarning, UserWarning)
    m = loader.stats()["monitor"]
    assert m["checks"] == 3 and m["events"] == {"class balance": 3}
    assert m["drift_events"] == 3 and m["warned"] == ["class balance"]
    snap = stoker.metrics.snapshot(loader)
    assert snap["drift_events"] == 3.0 and snap["drift_checks"] == 3.0


def test_darker_images_warn_colour_mean(data):
    loader, drift = _run(data["dark"], _every_pixel(data),
                         transforms=[WHOLE, stoker.Normalize(MEAN, STD)])
    items = [str(w.message).split(" (")[0] for w in drift]
    # Darker by 0.4: the mean and the spread of the pixels shrink.
    assert items == ["stoker.Monitor: data drift in colour mean",
                     "stoker.Monitor: data drift in colour std"], items
    message = str(drift[0].message)
    assert "max |difference|" in message and "> 0.02" in message and "NEW" in message
    mean = loader.stats()["monitor"]["mean"]
    ref = loader.stats()["monitor"]["reference_mean"]
    assert all(0.3 * r < v < 0.5 * r for v, r in zip(mean, ref)), (mean, ref)  # 0.4x


def test_strict_raises_from_next(data):
    loader = stoker.Loader(stoker.ImageFolder(data["one_class"]), batch_size=8, shuffle=True,
                           transforms=[WHOLE],
                           monitor=stoker.Monitor(data["report"], every=2, strict=True,
                                                  samples_per_batch=0))
    it = iter(loader)
    next(it)
    with pytest.raises(stoker.DriftWarning, match=r"drift in class balance \(batches 1-2"):
        next(it)
    assert loader.stats()["monitor"]["drift_events"] == 1
    # The epoch goes on after the raise (the item is not raised again).
    assert sum(1 for _ in it) == 2
    # The same with the reference's own data: no raise.
    same = stoker.Loader(stoker.ImageFolder(data["same"]), batch_size=8, shuffle=True,
                         transforms=[WHOLE],
                         monitor=stoker.Monitor(data["report"], strict=True))
    assert sum(1 for _ in same) == 4


def test_too_few_sampled_images_skip_the_colour_tests(data):
    # 8 images of 32 per epoch (below min_sampled): no colour verdict on their noise.
    loader, drift = _run(data["dark"], stoker.Monitor(data["report"], min_sampled=9))
    assert drift == [], [str(w.message) for w in drift]
    last = {v["item"]: v for v in loader.stats()["monitor"]["last"]}
    assert last["colour mean"]["verdict"] == "skipped"
    assert "8 images sampled, fewer than min_sampled 9" in last["colour mean"]["detail"]
    loader, drift = _run(data["dark"], stoker.Monitor(data["report"], min_sampled=8))
    assert len(drift) == 2  # colour mean and std, on the same 8 images


def test_every_n_batches_checks_each_window(data):
    loader, drift = _run(data["same"], stoker.Monitor(data["report"], every=2,
                                                      samples_per_batch=0), epochs=1)
    assert drift == [] and loader.stats()["monitor"]["checks"] == 2  # 4 batches


def test_thresholds_are_the_drift_tests_own(data):
    # A colour threshold above the darkening's difference: no colour drift.
    loader, drift = _run(data["dark"], _every_pixel(data, thresholds={"colour_threshold": 0.5}))
    assert drift == [], [str(w.message) for w in drift]


def test_bad_arguments_are_named(data, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"stoker_stats": 1}')
    with pytest.raises(ValueError, match="reference .*bad.json.*not a stoker stats report"):
        stoker.Monitor(str(bad))
    with pytest.raises(ValueError, match="cannot read"):
        stoker.Monitor(str(tmp_path / "missing.json"))
    with pytest.raises(TypeError, match="reference"):
        stoker.Monitor(3)
    with pytest.raises(ValueError, match="every"):
        stoker.Monitor(data["report"], every=0)
    with pytest.raises(ValueError, match="unknown key 'colour'"):
        stoker.Monitor(data["report"], thresholds={"colour": 0.1})
    with pytest.raises(TypeError, match="monitor must be a stoker.Monitor"):
        stoker.Loader(stoker.ImageFolder(data["same"]), batch_size=8, monitor="ref.json")
    m = stoker.Monitor(data["report"])
    stoker.Loader(stoker.ImageFolder(data["same"]), batch_size=8, monitor=m,
                  transforms=[WHOLE])
    with pytest.raises(ValueError, match="already watches"):
        stoker.Loader(stoker.ImageFolder(data["same"]), batch_size=8, monitor=m,
                      transforms=[WHOLE])


def test_skipped_samples_are_counted(data, tmp_path):
    root = tmp_path / "broken"
    shutil.copytree(data["same"], root)
    (root / "a" / "zz_broken.png").write_bytes(b"not an image at all")
    loader, drift = _run(str(root), stoker.Monitor(data["report"], samples_per_batch=0),
                         epochs=1, on_error="skip")
    m = loader.stats()["monitor"]
    assert m["skipped"] == 1 and m["images"] == 32, m
    assert m["reference_unreadable_fraction"] == 0.0
    assert drift == []  # one sample of 33 left out: the class balance holds
