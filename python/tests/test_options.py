"""Loader options are checked once, by the engine and its binding (_C.LoaderOptions): each
wrong argument gets a TypeError or ValueError naming it, the choices are the engine's
tables (stoker/choice.h) that the CLI reads too, and dct_scaling="auto" is resolved in C++."""

from __future__ import annotations

import pytest

import stoker
from test_robust import VAL, run_cli, small_folder

TRAIN = [stoker.RandomResizedCrop(32), stoker.RandomHorizontalFlip()]


@pytest.mark.parametrize("kw,exc,msg", [
    (dict(dtype="float64"), ValueError,
     "dtype must be one of 'uint8', 'float32', 'float16', 'bfloat16', got 'float64'"),
    (dict(dtype=32), TypeError, "dtype must be one of .*got int 32"),
    (dict(layout="CHW"), ValueError, "layout must be one of 'NCHW', 'NHWC', got 'CHW'"),
    (dict(on_error="ignore"), ValueError, "on_error must be one of 'raise', 'skip'"),
    (dict(rank_tail="wrap"), ValueError, "rank_tail must be one of 'pad', 'drop', 'uneven'"),
    (dict(collate="stack"), ValueError, "collate must be one of 'batch', 'list', 'pad'"),
    (dict(collate={"x": 3}), TypeError, r"collate\['x'\] must be one of .*got int 3"),
    (dict(cache="pixels", cache_bytes=1 << 20), ValueError, "cache must be one of 'decoded'"),
    (dict(cache="decoded"), ValueError, "cache='decoded' needs cache_bytes.*got None"),
    (dict(cache_bytes=1 << 20), ValueError, "cache_bytes given without cache="),
    (dict(cache_validate=True), ValueError, "cache_validate=True given without cache="),
    (dict(cache_validate="yes"), TypeError, "cache_validate must be True or False, got str"),
    (dict(dct_scaling="maybe"), ValueError, "dct_scaling must be True, False or 'auto', got"),
    (dict(dct_scaling=1), TypeError, "dct_scaling must be True, False or 'auto', got int 1"),
    (dict(seed=-1), ValueError, "seed must be >= 0, got -1"),
    (dict(batch_size=10**12), ValueError, "batch_size must be <= "),
    (dict(batch_size=2.5), TypeError, "batch_size must be an int, got float"),
    (dict(batch_size="8"), TypeError, "batch_size must be an int, got str"),
    (dict(max_pixels=-1), ValueError, "max_pixels must be >= 0"),
    (dict(shuffle="yes"), TypeError, "shuffle must be True or False"),
    (dict(on_error=None), TypeError, "on_error must be one of"),
    (dict(seed=2**64), ValueError, "seed must be <= 18446744073709551615"),
    (dict(seed=1.0), TypeError, "seed must be an int, got float 1.0"),
    (dict(batch_size=True), TypeError, "batch_size must be an int, got bool True"),
    (dict(threads=2.5), ValueError, "threads must be a non-negative int, None or 'auto'"),
    (dict(prefetch=0), ValueError, "prefetch must be a positive int or 'auto', got 0"),
    (dict(max_prefetch=0), ValueError, "max_prefetch must be >= 1, got 0"),
    (dict(pad_value="0"), ValueError, "pad_value must be a finite number, got '0'"),
    (dict(pad_value=float("nan")), ValueError, "pad_value must be a finite number"),
    (dict(drop_last=None), TypeError, "drop_last must be True or False, got NoneType None"),
])
def test_each_wrong_option_is_named_by_the_engine(tmp_path, kw, exc, msg):
    folder = stoker.ImageFolder(str(small_folder(tmp_path / "f", n=1)))
    args = dict(batch_size=2, transforms=VAL)
    args.update(kw)
    with pytest.raises(exc, match=msg) as e:
        stoker.Loader(folder, **args)
    assert "incompatible" not in str(e.value)  # not a pybind signature dump


def test_dct_scaling_auto_is_resolved_by_the_engine(tmp_path):
    folder = stoker.ImageFolder(str(small_folder(tmp_path / "f", n=1)))
    assert stoker.Loader(folder, batch_size=2, transforms=TRAIN).dct_scaling is True
    assert stoker.Loader(folder, batch_size=2, transforms=VAL).dct_scaling is False
    assert stoker.Loader(folder, batch_size=2, transforms=VAL, dct_scaling=True).dct_scaling
    # The decoded cache keeps full-size images: auto is off there, True is refused.
    cached = dict(batch_size=2, transforms=TRAIN, cache="decoded", cache_bytes=1 << 20)
    assert stoker.Loader(folder, **cached).dct_scaling is False
    with pytest.raises(ValueError, match="cache='decoded' keeps full-size images"):
        stoker.Loader(folder, dct_scaling=True, **cached)


def test_the_cli_takes_the_same_names(tmp_path):
    root = small_folder(tmp_path / "f", n=2)
    help_text = run_cli("bench", "--help").stdout
    assert "--dct-scaling" in help_text and "auto" in help_text
    bad = run_cli("bench", root, "--dct-scaling", "maybe")
    assert bad.returncode != 0 and "maybe" in bad.stderr and "auto" in bad.stderr, bad
    bad = run_cli("bench", root, "--on-error", "ignore")
    assert bad.returncode != 0 and "raise" in bad.stderr, bad
    ok = run_cli("bench", root, "--pipeline", "val", "--dct-scaling", "on", "--batch-size", "2",
                 "--epochs", "1", "--threads", "1")
    assert ok.returncode == 0, ok


def test_diagnose_takes_on_error_and_counts_what_it_skipped(tmp_path):
    import json
    root = small_folder(tmp_path / "f", n=4)
    bad = root / "a" / "a1.jpg"
    bad.write_bytes(b"not an image")
    args = ("diagnose", root, "--batch-size", "2", "--batches", "2", "--step-ms", "1",
            "--threads", "1", "--pipeline", "val")
    stops = run_cli(*args, "--json")
    assert stops.returncode != 0 and "a1.jpg" in json.loads(stops.stdout)["error"], stops
    skips = run_cli(*args, "--json", "--on-error", "skip")
    assert skips.returncode == 0, skips
    out = json.loads(skips.stdout)
    assert out["skipped"] >= 1 and out["skipped_files"] == 1, out
    text = run_cli(*args, "--on-error", "skip")
    assert "unreadable samples, 1 distinct files" in text.stdout, text
