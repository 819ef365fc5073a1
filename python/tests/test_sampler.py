"""Samplers (stoker.WeightedSampler, ClassBalanced, Subset, sampler=<indices>) and the
in-memory cache (cache="decoded" / "output").

The samplers' frequencies are checked with chi-square tests over >= 50,000 draws; the
cache must never change a pixel, only skip work.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from scipy import stats as sps

import stoker
from conftest import photo

# A small imbalanced dataset: class c has COUNTS[c] samples.
COUNTS = [50, 25, 15, 10]
LABELS = np.repeat(np.arange(len(COUNTS)), COUNTS).astype(np.int64)
N = len(LABELS)
H = W = 8


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    d = tmp_path_factory.mktemp("sampler")
    rng = np.random.default_rng(0)
    np.save(d / "x.npy", rng.integers(0, 256, size=(N, H, W, 3), dtype=np.uint8))
    np.save(d / "y.npy", LABELS)
    return d


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    # JPEGs of different sizes in 3 classes: a cache must hold whole images.
    d = tmp_path_factory.mktemp("cachefolder")
    for i in range(18):
        cls = d / f"c{i % 3}"
        cls.mkdir(exist_ok=True)
        Image.fromarray(photo(64 + 8 * (i % 5), 48 + 4 * (i % 4), 900 + i)).save(
            cls / f"{i:02d}.jpg", quality=90)
    return str(d)


def npy(arrays):
    return stoker.Npy(images=str(arrays / "x.npy"), labels=str(arrays / "y.npy"))


def drawn_indices(source, sampler, epochs, threads=2, seed=7, batch_size=500, **kw):
    """The source indices each epoch visits, in order."""
    loader = stoker.Loader(source, batch_size=batch_size, transforms=[stoker.CenterCrop(H)],
                           threads=threads, seed=seed, sampler=sampler, return_indices=True,
                           **kw)
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        out.append(torch.cat([i.clone() for _, _, i in loader]).numpy())
    return out


def chi_square_p(observed, proportions):
    observed = np.asarray(observed, dtype=np.float64)
    expected = np.asarray(proportions, dtype=np.float64)
    expected = expected / expected.sum() * observed.sum()
    return sps.chisquare(observed, expected).pvalue


def test_weighted_sampler_frequencies_match_the_weights(arrays):
    # Weights per class 1, 2, 3, 4 (per sample); 10,000 draws x 5 epochs = 50,000.
    class_weight = np.array([1.0, 2.0, 3.0, 4.0])
    weights = class_weight[LABELS]
    sampler = stoker.WeightedSampler(weights.tolist(), num_samples=10_000)
    epochs = drawn_indices(npy(arrays), sampler, 5)
    draws = np.concatenate(epochs)
    assert len(draws) == 50_000
    assert all(len(e) == 10_000 for e in epochs)
    # Per sample and per class: frequency proportional to the weight.
    per_sample = np.bincount(draws, minlength=N)
    assert chi_square_p(per_sample, weights) > 1e-3
    per_class = np.bincount(LABELS[draws], minlength=len(COUNTS))
    assert chi_square_p(per_class, class_weight * COUNTS) > 1e-3
    # And a wrong hypothesis is rejected by the same test (it has power here).
    assert chi_square_p(per_class, COUNTS) < 1e-6


def test_class_balanced_draws_each_class_equally(arrays):
    sampler = stoker.ClassBalanced(num_samples=12_500)
    draws = np.concatenate(drawn_indices(npy(arrays), sampler, 4))
    assert len(draws) == 50_000
    per_class = np.bincount(LABELS[draws], minlength=len(COUNTS))
    assert chi_square_p(per_class, [1, 1, 1, 1]) > 1e-3
    # Within a class every sample is equally likely.
    for c in range(len(COUNTS)):
        members = np.flatnonzero(LABELS == c)
        assert chi_square_p(np.bincount(draws, minlength=N)[members],
                            np.ones(len(members))) > 1e-3


def test_weighted_without_replacement_draws_each_sample_at_most_once(arrays):
    weights = np.linspace(1, 10, N)
    weights[:5] = 0  # never drawn
    sampler = stoker.WeightedSampler(weights.tolist(), num_samples=60, replacement=False)
    for e in drawn_indices(npy(arrays), sampler, 3):
        assert len(e) == 60 and len(set(e.tolist())) == 60
        assert not set(e.tolist()) & set(range(5))
    with pytest.raises(ValueError, match="num_samples"):
        drawn_indices(npy(arrays), stoker.WeightedSampler(weights.tolist(), num_samples=N,
                                                          replacement=False), 1)


def test_draws_depend_on_seed_and_epoch_only(arrays):
    sampler = stoker.WeightedSampler(np.ones(N).tolist(), num_samples=300)
    one = drawn_indices(npy(arrays), sampler, 3, threads=1)
    three = drawn_indices(npy(arrays), sampler, 3, threads=3)
    for a, b in zip(one, three):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(one[0], one[1])  # a new draw each epoch
    other_seed = drawn_indices(npy(arrays), sampler, 1, seed=8)
    assert not np.array_equal(one[0], other_seed[0])


def test_subset_and_index_sequences(arrays):
    idx = [5, 3, 3, 90, 0, 42]
    # shuffle=False: exactly these, in this order, every epoch.
    for e in drawn_indices(npy(arrays), stoker.Subset(idx), 2, shuffle=False):
        assert e.tolist() == idx
    # A plain sequence (numpy too) is a Subset; shuffled epochs permute it.
    for e in drawn_indices(npy(arrays), np.array(idx), 2, shuffle=True):
        assert sorted(e.tolist()) == sorted(idx)
    loader = stoker.Loader(npy(arrays), batch_size=4, transforms=[stoker.CenterCrop(H)],
                           sampler=idx)
    assert len(loader) == 2  # 6 samples in batches of 4
    with pytest.raises(ValueError, match="index 100 is out of range"):
        drawn_indices(npy(arrays), [1, N], 1)
    with pytest.raises(TypeError, match="ints"):
        stoker.Subset([1, 2.5])


def test_sampler_arguments_are_checked(arrays):
    with pytest.raises(ValueError, match="num_samples"):
        stoker.WeightedSampler([1.0, 2.0], num_samples=0)
    with pytest.raises(ValueError, match="one weight per sample"):
        drawn_indices(npy(arrays), stoker.WeightedSampler([1.0, 2.0]), 1)  # not one per sample
    with pytest.raises(ValueError, match="weight"):
        drawn_indices(npy(arrays), stoker.WeightedSampler([-1.0] + [1.0] * (N - 1)), 1)


def pixels_per_epoch(source, transforms, epochs, **kw):
    loader = stoker.Loader(source, batch_size=4, transforms=transforms, seed=3,
                           return_indices=True, **kw)
    out = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        xs, ids = [], []
        for x, _, i in loader:
            xs.append(x.clone())
            ids.append(i.clone())
        out.append((torch.cat(xs), torch.cat(ids)))
    return out, loader.stats()


TRAIN = [stoker.RandomResizedCrop(24), stoker.RandomHorizontalFlip()]
VAL = [stoker.Resize(32), stoker.CenterCrop(24)]


def test_decoded_cache_gives_the_uncached_pixels_and_hits(folder):
    plain, _ = pixels_per_epoch(stoker.ImageFolder(folder), TRAIN, 3, dct_scaling=False)
    cached, stats = pixels_per_epoch(stoker.ImageFolder(folder), TRAIN, 3, cache="decoded",
                                     cache_bytes=64 << 20, threads=3)
    for (a, ia), (b, ib) in zip(plain, cached):
        torch.testing.assert_close(ia, ib, rtol=0, atol=0)
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    c = stats["cache"]
    assert c["kind"] == "decoded"
    # Epoch 0 fills, epochs 1-2 hit; epoch 3's first batches (prefetch=2, 4 samples each)
    # may be prefetched, hits too, by the time stats() is read.
    assert c["misses"] == 18 and 36 <= c["hits"] <= 36 + 2 * 4
    assert c["entries"] == 18 and 0 < c["bytes"] <= c["capacity"] == 64 << 20
    assert c["evicted"] == 0 and c["advice"] == ""
    assert c["hit_rate"] == pytest.approx(c["hits"] / (c["hits"] + 18))
    assert c["hit_rate"] >= 36 / 54


def test_small_decoded_cache_evicts_stays_bounded_and_says_so(folder):
    plain, _ = pixels_per_epoch(stoker.ImageFolder(folder), TRAIN, 2, dct_scaling=False)
    bound = 3 * 96 * 60 * 3  # room for about three of the 18 images
    cached, stats = pixels_per_epoch(stoker.ImageFolder(folder), TRAIN, 2, cache="decoded",
                                     cache_bytes=bound)
    for (a, _), (b, _) in zip(plain, cached):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    c = stats["cache"]
    assert c["bytes"] <= bound and c["evicted"] > 0
    assert c["hit_rate"] < 0.5
    assert "too small" in c["advice"] and "cache_bytes" in c["advice"]


def test_output_cache_for_a_validation_pipeline(folder):
    plain, _ = pixels_per_epoch(stoker.ImageFolder(folder), VAL, 2, shuffle=False)
    cached, stats = pixels_per_epoch(stoker.ImageFolder(folder), VAL, 2, shuffle=False,
                                     cache="output", cache_bytes=16 << 20)
    for (a, _), (b, _) in zip(plain, cached):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert stats["cache"]["kind"] == "output"
    # Epoch 2's prefetched first batches (2 of 4 samples) may hit too.
    assert 18 <= stats["cache"]["hits"] <= 18 + 2 * 4 and stats["cache"]["misses"] == 18


def test_cache_arguments_are_checked(folder, arrays):
    src = stoker.ImageFolder(folder)
    with pytest.raises(ValueError, match="cache_bytes"):
        stoker.Loader(src, batch_size=4, transforms=VAL, cache="decoded")
    with pytest.raises(ValueError, match="without cache"):
        stoker.Loader(src, batch_size=4, transforms=VAL, cache_bytes=1 << 20)
    with pytest.raises(ValueError, match="cache must be"):
        stoker.Loader(src, batch_size=4, transforms=VAL, cache="pixels", cache_bytes=1 << 20)
    with pytest.raises(ValueError, match="dct_scaling"):
        stoker.Loader(src, batch_size=4, transforms=TRAIN, cache="decoded", cache_bytes=1 << 20,
                      dct_scaling=True)
    # 'auto' becomes off with the decoded cache.
    loader = stoker.Loader(src, batch_size=4, transforms=TRAIN, cache="decoded",
                           cache_bytes=1 << 20)
    assert loader.dct_scaling is False
    # A random transform would be frozen by the output cache: refused.
    with pytest.raises(ValueError, match="random"):
        stoker.Loader(src, batch_size=4, transforms=TRAIN, cache="output", cache_bytes=1 << 20)


def test_diagnose_reports_a_cache_too_small_to_help(tmp_path):
    import os
    import subprocess
    from pathlib import Path
    cli = os.environ.get("STOKER_CLI") or str(Path(__file__).resolve().parents[2] / "build" /
                                              "stoker")
    for i in range(12):  # 12 images of 360 KB decoded; 1 MiB holds two
        cls = tmp_path / f"c{i % 2}"
        cls.mkdir(exist_ok=True)
        Image.fromarray(photo(400, 300, 70 + i)).save(cls / f"{i:02d}.jpg", quality=85)
    base = [cli, "diagnose", str(tmp_path), "--batch-size", "4", "--batches", "12",
            "--threads", "2"]
    small = subprocess.run(base + ["--cache", "decoded", "--cache-mib", "1"],
                           capture_output=True, text=True, timeout=300)
    assert small.returncode == 0, small.stderr
    assert "cache: hit rate" in small.stdout
    assert "cache too small to help" in small.stdout, small.stdout
    big = subprocess.run(base + ["--cache", "decoded", "--cache-mib", "64"],
                         capture_output=True, text=True, timeout=300)
    assert big.returncode == 0, big.stderr
    assert "cache: hit rate" in big.stdout and "too small" not in big.stdout, big.stdout
    alone = subprocess.run(base + ["--cache", "decoded"], capture_output=True, text=True,
                           timeout=60)
    assert alone.returncode != 0 and "--cache-mib" in alone.stderr
