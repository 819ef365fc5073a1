"""`stoker stats DATA [--against OLD]` through the CLI, on data made here.

Known answers: class counts, sizes, formats and the exact per-channel mean and
std (lossless PNGs, compared with numpy over the same pixels); every source
kind (folder, .npy, HDF5 raw and encoded, tar shards from `stoker convert`)
gives the same counts and colour statistics; corrupt files are named;
duplicates are grouped only when asked; the report is identical for any
thread count; the progress bar shows on a terminal only. Drift: a dataset
against itself (and against its saved --json report) is "same" with exit 0;
a recoloured copy, a class-imbalanced subset and a resized copy are each
flagged on the right item with exit 3.
"""

from __future__ import annotations

import io
import json
import os
import pty
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import npy_bytes, photo, save_jpeg, save_png, tar_bytes

ROOT = Path(__file__).resolve().parents[2]
DRIFT_EXIT = 3
CLASSES = ("ant", "bee", "cat")
PER_CLASS = 30


def stoker_cli() -> str:
    for p in (os.environ.get("STOKER_CLI"), ROOT / "build" / "stoker"):
        if p and os.access(p, os.X_OK):
            return str(p)
    pytest.skip("the stoker CLI is not built (set STOKER_CLI)")


def stats(*args, expect=0):
    r = subprocess.run([stoker_cli(), "stats", *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == expect, (r.returncode, r.stdout, r.stderr)
    return r


def report(*args, expect=0) -> dict:
    return json.loads(stats(*args, "--json", expect=expect).stdout)


def strip_timing(rep: dict) -> dict:
    rep = dict(rep)
    rep.pop("seconds")
    rep.pop("images_per_sec")
    rep.pop("source")
    return rep


def verdicts(rep: dict) -> dict:
    return {v["item"]: v for v in rep["drift"]}


def make_folder(root: Path, *, recolour=None, scale=1.0, keep=None) -> Path:
    """CLASSES x PER_CLASS lossless PNG photos, sizes 40..79 x 30..59. `recolour`
    maps the pixels, `scale` resizes them, `keep(c, i)` drops images."""
    for ci, c in enumerate(CLASSES):
        (root / c).mkdir(parents=True)
        for i in range(PER_CLASS):
            if keep is not None and not keep(ci, i):
                continue
            k = ci * PER_CLASS + i
            arr = photo(40 + (k * 7) % 40, 30 + (k * 11) % 30, 5000 + k)
            if recolour is not None:
                arr = recolour(arr)
            if scale != 1.0:
                h, w = arr.shape[:2]
                arr = np.asarray(Image.fromarray(arr).resize(
                    (round(w * scale), round(h * scale)), Image.BILINEAR))
            save_png(arr, root / c / f"{c}_{i:02d}.png")
    return root


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return make_folder(tmp_path_factory.mktemp("stats") / "base")


def pixels_of(folder: Path) -> np.ndarray:
    """All pixels of a folder's images, [n, 3] float64 in [0, 1]."""
    chunks = []
    for p in sorted(folder.rglob("*.png")):
        chunks.append(np.asarray(Image.open(p).convert("RGB")).reshape(-1, 3))
    return np.concatenate(chunks).astype(np.float64) / 255.0


def test_help_lists_the_options():
    r = stats("--help")
    for word in ("DATA", "--against", "--json", "--plot", "--resolution", "--duplicates",
                 "--threads", "--class-alpha", "--ks-alpha", "--colour-threshold",
                 "--format-threshold", "exit status 3", "Normalize"):
        assert word in r.stdout, word


def test_known_answers_on_a_folder(base):
    rep = report(base, "--resolution", 0)
    n = len(CLASSES) * PER_CLASS
    assert rep["stoker_stats"] == 1
    assert rep["samples"] == rep["images"] == n
    assert [(c["name"], c["count"]) for c in rep["classes"]] == [(c, PER_CLASS) for c in CLASSES]
    assert rep["imbalance_ratio"] == 1.0
    assert rep["formats"] == {"PNG": n}
    assert rep["modes"] == {"PNG RGB 8-bit": n}
    widths = {}
    for k in range(n):
        w = 40 + (k * 7) % 40
        widths[w] = widths.get(w, 0) + 1
    assert {w: c for w, c in rep["widths"]} == widths
    assert rep["errors"] == [] and rep["unreadable"] == 0
    px = pixels_of(base)
    assert rep["pixels"] == px.shape[0]
    np.testing.assert_allclose(rep["mean"], px.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(rep["std"], px.std(axis=0), rtol=0, atol=1e-12)
    # The text report says the same, ready to paste.
    text = stats(base, "--resolution", 0).stdout
    m, s = px.mean(axis=0), px.std(axis=0)
    assert (f"Normalize(mean=[{m[0]:.4f}, {m[1]:.4f}, {m[2]:.4f}], "
            f"std=[{s[0]:.4f}, {s[1]:.4f}, {s[2]:.4f}])") in text


def test_resolution_brings_images_to_the_shorter_side(base):
    rep = report(base, "--resolution", 20)
    # Every image has shorter side >= 30, so each is resized to shorter side 20.
    assert rep["resolution"] == 20
    assert rep["pixels"] < pixels_of(base).shape[0]
    full = report(base, "--resolution", 0)
    # Resizing moves the mean a little, not a lot.
    np.testing.assert_allclose(rep["mean"], full["mean"], atol=0.01)


def test_same_report_for_any_thread_count(base):
    one = strip_timing(report(base, "--threads", 1, "--duplicates"))
    for t in (2, 7):
        assert strip_timing(report(base, "--threads", t, "--duplicates")) == one


def test_corrupt_files_are_named_and_duplicates_grouped_when_asked(tmp_path, base):
    data = tmp_path / "d"
    shutil.copytree(base, data)
    arr = photo(64, 48, 1)
    save_jpeg(arr, data / "ant" / "good.jpg")
    save_jpeg(arr, data / "bee" / "copy_of_good.jpg")
    cut = (data / "ant" / "good.jpg").read_bytes()
    (data / "cat" / "truncated.jpg").write_bytes(cut[: len(cut) // 3])
    (data / "cat" / "not_an_image.png").write_bytes(b"hello, I am text\n" * 10)
    rep = report(data, "--duplicates")
    names = sorted(Path(e["name"]).name for e in rep["errors"])
    assert names == ["not_an_image.png", "truncated.jpg"]
    assert all(e["error"] for e in rep["errors"])
    assert rep["samples"] == rep["images"] + 2
    assert rep["duplicates_checked"] is True
    assert [sorted(Path(n).name for n in g) for g in rep["duplicates"]] == [
        ["copy_of_good.jpg", "good.jpg"]]
    assert rep["redundant_copies"] == 1
    assert rep["formats"] == {"JPEG": 2, "PNG": len(CLASSES) * PER_CLASS}
    text = stats(data, "--duplicates").stdout
    assert "truncated.jpg" in text and "not_an_image.png" in text and "copy_of_good.jpg" in text
    # Not asked: not checked.
    rep = report(data)
    assert rep["duplicates_checked"] is False and rep["duplicates"] == []
    assert "duplicates not checked" in stats(data).stdout


def test_every_source_kind_agrees(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(3)
    n, h, w = 24, 20, 28
    x = rng.integers(0, 256, size=(n, h, w, 3), dtype=np.uint8)
    y = (np.arange(n) % 4).astype(np.int64)
    y[:3] = 0  # unequal classes: 8, 5, 5, 6
    folder = tmp_path / "folder"
    for i in range(n):
        (folder / f"c{y[i]}").mkdir(parents=True, exist_ok=True)
        save_png(x[i], folder / f"c{y[i]}" / f"{i:03d}.png")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f.create_dataset("images", data=x)
        f.create_dataset("labels", data=y)
        enc = f.create_dataset("pngs", (n,), dtype=h5py.vlen_dtype(np.uint8))
        for i in range(n):
            enc[i] = np.frombuffer((folder / f"c{y[i]}" / f"{i:03d}.png").read_bytes(), np.uint8)
    subprocess.run([stoker_cli(), "convert", folder, tmp_path / "shards",
                    "--samples-per-shard", "10"], check=True, capture_output=True, timeout=120)
    shards = sorted((tmp_path / "shards").glob("*.tar"))
    assert len(shards) == 3
    counts = sorted(np.bincount(y).tolist(), reverse=True)
    px = x.reshape(-1, 3).astype(np.float64) / 255.0
    runs = {
        "folder": report(folder, "--resolution", 0),
        "npy": report(tmp_path / "x.npy", "--labels", tmp_path / "y.npy", "--resolution", 0),
        "hdf5 raw": report(tmp_path / "d.h5", "--resolution", 0),
        "hdf5 encoded": report(tmp_path / "d.h5", "--images", "pngs", "--resolution", 0),
        "shards": report(str(shards[0]).replace("000000", "{000000..000002}"),
                         "--resolution", 0),
    }
    for kind, rep in runs.items():
        assert rep["images"] == n, kind
        assert sorted((c["count"] for c in rep["classes"]), reverse=True) == counts, kind
        assert rep["widths"] == [[w, n]] and rep["heights"] == [[h, n]], kind
        np.testing.assert_allclose(rep["mean"], px.mean(axis=0), atol=1e-12, err_msg=kind)
        np.testing.assert_allclose(rep["std"], px.std(axis=0), atol=1e-12, err_msg=kind)
    assert runs["npy"]["formats"] == {"raw": n}
    assert runs["hdf5 raw"]["formats"] == {"raw": n}
    assert runs["hdf5 encoded"]["formats"] == {"PNG": n}
    assert runs["shards"]["formats"] == {"PNG": n}
    # The shards against the folder they came from: no drift (classes matched by label when
    # the shards carry no class names).
    pattern = str(shards[0]).replace("000000", "{000000..000002}")
    rep = report(pattern, "--against", folder)
    assert rep["shifted"] is False, rep["drift"]


def test_errors_exit_1():
    r = stats("/no/such/dir", expect=1)
    assert "/no/such/dir" in r.stderr


def test_bad_saved_report_is_refused(tmp_path, base):
    bad = tmp_path / "bad.json"
    bad.write_text('{"something": "else"}')
    r = stats(base, "--against", bad, expect=1)
    assert "not a stoker stats report" in r.stderr


def test_plot_writes_a_png(tmp_path, base):
    pytest.importorskip("matplotlib")
    out = tmp_path / "stats.png"
    stats(base, "--plot", out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out2 = tmp_path / "drift.png"
    stats(base, "--against", base, "--plot", out2)
    assert out2.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def run_on_tty(args) -> str:
    """Runs the CLI with stderr on a pseudo-terminal; returns what it wrote there."""
    master, slave = os.openpty()
    p = subprocess.Popen([stoker_cli(), "stats", *map(str, args)], stdout=subprocess.DEVNULL,
                         stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    assert p.wait(timeout=120) == 0
    os.close(master)
    return out.decode(errors="replace")


def test_progress_bar_only_on_a_terminal(base):
    tty = run_on_tty([base])
    assert "images/s" in tty and f"{len(CLASSES) * PER_CLASS}/{len(CLASSES) * PER_CLASS}" in tty
    assert "images/s" not in run_on_tty([base, "--no-progress"])
    assert stats(base).stderr == ""  # not a terminal: no bar


# ---- drift -----------------------------------------------------------------


def test_no_drift_against_itself_and_its_saved_report(tmp_path, base):
    rep = report(base, "--against", base)
    assert rep["shifted"] is False
    assert all(v["verdict"] == "same" for v in rep["drift"]), rep["drift"]
    saved = tmp_path / "old.json"
    saved.write_text(stats(base, "--json").stdout)
    rep = report(base, "--against", saved)
    assert rep["shifted"] is False and rep["against"] == str(saved)
    text = stats(base, "--against", saved).stdout
    assert "drift: none" in text


def test_recoloured_copy_is_flagged(tmp_path, base):
    warm = make_folder(tmp_path / "warm",
                       recolour=lambda a: np.clip(a.astype(np.int16) + (30, 0, -30), 0, 255)
                       .astype(np.uint8))
    rep = report(warm, "--against", base, expect=DRIFT_EXIT)
    v = verdicts(rep)
    assert v["colour mean"]["verdict"] == "shifted"
    assert v["colour mean"]["statistic"] > 0.05
    for item in ("class balance", "width", "height", "aspect", "format mix"):
        assert v[item]["verdict"] == "same", (item, v[item])
    # Against the saved report: the same verdicts.
    saved = tmp_path / "base.json"
    saved.write_text(stats(base, "--json").stdout)
    assert verdicts(report(warm, "--against", saved, expect=DRIFT_EXIT)) == v
    text = stats(warm, "--against", base, expect=DRIFT_EXIT).stdout
    assert "colour mean    SHIFTED" in text


def test_class_imbalanced_subset_is_flagged(tmp_path, base):
    # Keep 5 of 30 ants, all bees and cats: the same images otherwise.
    subset = make_folder(tmp_path / "subset", keep=lambda c, i: c != 0 or i < 5)
    rep = report(subset, "--against", base, expect=DRIFT_EXIT)
    v = verdicts(rep)
    assert v["class balance"]["verdict"] == "shifted"
    assert v["class balance"]["statistic"] < 0.01  # the p-value
    assert v["format mix"]["verdict"] == "same"
    # A looser alpha than the p-value passes it.
    rep = report(subset, "--against", base, "--class-alpha", 1e-12, "--colour-threshold", 1,
                 "--ks-alpha", 1e-12)
    assert verdicts(rep)["class balance"]["verdict"] == "same"


def test_resized_copy_is_flagged(tmp_path, base):
    half = make_folder(tmp_path / "half", scale=0.5)
    v = verdicts(report(half, "--against", base, expect=DRIFT_EXIT))
    assert v["width"]["verdict"] == "shifted" and v["width"]["statistic"] > 0.9  # 40 in both
    assert v["height"]["verdict"] == "shifted"
    assert v["class balance"]["verdict"] == "same"
    assert v["format mix"]["verdict"] == "same"


def test_format_mix_shift_is_flagged(tmp_path, base):
    jpegs = tmp_path / "jpegs"
    for p in base.rglob("*.png"):
        (jpegs / p.parent.name).mkdir(parents=True, exist_ok=True)
        save_jpeg(np.asarray(Image.open(p)), jpegs / p.parent.name / (p.stem + ".jpg"),
                  quality=95, subsampling=0)
    v = verdicts(report(jpegs, "--against", base, expect=DRIFT_EXIT))
    assert v["format mix"]["verdict"] == "shifted" and v["format mix"]["statistic"] == 1.0
    assert v["width"]["verdict"] == "same"


def test_streamed_shards_name_duplicates_and_match_any_thread_count(tmp_path, base):
    data = tmp_path / "d"
    shutil.copytree(base, data)
    shutil.copy(data / "ant" / "ant_00.png", data / "cat" / "zz_copy.png")
    subprocess.run([stoker_cli(), "convert", data, tmp_path / "zs", "--compress", "zstd",
                    "--samples-per-shard", "25"], check=True, capture_output=True, timeout=120)
    shards = sorted((tmp_path / "zs").glob("*.tar.zst"))
    assert len(shards) == 4
    pattern = str(shards[0]).replace("000000", "{000000..000003}")
    one = report(pattern, "--duplicates", "--threads", "1")
    assert "stream" in one["source"]
    assert one["images"] == len(CLASSES) * PER_CLASS + 1
    assert len(one["duplicates"]) == 1
    group = one["duplicates"][0]
    assert len(group) == 2 and all(".tar.zst" in name for name in group), group
    assert any("ant_00" in name for name in group) and any("zz_copy" in name for name in group)
    assert strip_timing(report(pattern, "--duplicates", "--threads", "3")) == strip_timing(one)
    folder = report(data)
    assert one["mean"] == folder["mean"] and one["std"] == folder["std"]


def test_image_text_record_shards_are_summarised_by_their_images(tmp_path):
    # Shards of records (img2dataset's layout: image, caption, JSON, an embedding, a class):
    # `stoker stats` reads the image and the class of each sample and the other members are
    # left alone (statistics of other fields are not computed).
    rng = np.random.default_rng(8)
    n, h, w = 12, 10, 14
    x = rng.integers(0, 256, size=(n, h, w, 3), dtype=np.uint8)
    members = []
    for i in range(n):
        png = io.BytesIO()
        Image.fromarray(x[i]).save(png, format="PNG")
        members += [(f"r/{i:04d}.png", png.getvalue()),
                    (f"r/{i:04d}.txt", f"caption {i}".encode()),
                    (f"r/{i:04d}.json", json.dumps({"i": i}).encode()),
                    (f"r/{i:04d}.emb.npy", npy_bytes(np.full(4, i, np.float32))),
                    (f"r/{i:04d}.cls", str(i % 3).encode())]
    (tmp_path / "it.tar").write_bytes(tar_bytes(members))
    rep = report(tmp_path / "it.tar", "--resolution", 0)
    assert rep["images"] == n and rep["errors"] == []
    assert sorted(c["count"] for c in rep["classes"]) == [4, 4, 4]
    assert rep["widths"] == [[w, n]] and rep["heights"] == [[h, n]]
    assert rep["formats"] == {"PNG": n}
    px = x.reshape(-1, 3).astype(np.float64) / 255.0
    np.testing.assert_allclose(rep["mean"], px.mean(axis=0), atol=1e-12)
    np.testing.assert_allclose(rep["std"], px.std(axis=0), atol=1e-12)
