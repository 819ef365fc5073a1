"""stoker.diagnose: the stage-caching diagnosis from Python, with the user's step."""

from __future__ import annotations

import time

import pytest
import torch
from PIL import Image

import stoker
from conftest import photo


@pytest.fixture(scope="module")
def small_jpegs(tmp_path_factory):
    root = tmp_path_factory.mktemp("diag_small")
    (root / "a").mkdir()
    for i in range(24):
        Image.fromarray(photo(64, 48, i)).save(root / "a" / f"{i:02d}.jpg", quality=90)
    return str(root)


@pytest.fixture(scope="module")
def big_progressive(tmp_path_factory):
    # Progressive JPEGs are entropy-decoded whole even for a tiny crop: decode-bound.
    root = tmp_path_factory.mktemp("diag_big")
    (root / "a").mkdir()
    big = root / "big.jpg"
    Image.fromarray(photo(900, 700, 3)).save(big, quality=90, progressive=True)
    for i in range(16):
        (root / "a" / f"{i:02d}.jpg").symlink_to(big)
    return str(root)


def test_slow_step_is_not_data_bound_and_sees_tensors(small_jpegs):
    loader = stoker.Loader(stoker.ImageFolder(small_jpegs), batch_size=8, threads=2,
                           transforms=[stoker.CenterCrop(16)])
    seen = []

    def step(images, labels):
        seen.append((tuple(images.shape), images.dtype, labels.dtype))
        # a "GPU step" far slower than the pipeline (the CPU is free meanwhile), so
        # a loaded machine's hiccups cannot make the pipeline look too slow
        time.sleep(0.15)

    r = stoker.diagnose(loader, step, batches=8)
    assert not r["data_bound"], r["table"]
    assert r["bottleneck"] == ""
    assert "not data-bound" in r["verdict"]
    assert [m["mode"][0] for m in r["modes"]] == ["1", "2", "3", "4", "5"]
    assert seen and seen[0] == ((8, 3, 16, 16), torch.float32, torch.int64)
    assert "verdict: " in r["table"]
    # The loader is usable afterwards: a full epoch.
    assert sum(len(y) for _, y in loader) == 24


def test_heavy_decode_is_named(big_progressive):
    loader = stoker.Loader(stoker.ImageFolder(big_progressive), batch_size=8, threads=2,
                           transforms=[stoker.CenterCrop(16)])
    r = stoker.diagnose(loader, batches=6)
    assert r["data_bound"], r["table"]
    assert r["bottleneck"] == "decode", r["table"]
    assert r["stages"]["decode_s"] > r["stages"]["augment_s"]


def test_an_error_in_the_step_propagates(small_jpegs):
    loader = stoker.Loader(stoker.ImageFolder(small_jpegs), batch_size=8, threads=2,
                           transforms=[stoker.CenterCrop(16)])

    def step(images, labels):
        raise ValueError("bad step")

    with pytest.raises(ValueError, match="bad step"):
        stoker.diagnose(loader, step, batches=4)
