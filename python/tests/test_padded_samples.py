"""stats()["padded_samples"]: one meaning in every case.

The samples this rank delivered that repeat a sample so that every rank yields the same
count: its own, never another rank's (summed over the ranks it is the epoch's repeats).
The top level is the loader's lifetime total, like the other top-level counters; under
"epoch" it is the running (or last) epoch's. Each case is checked against the ids the
ranks actually delivered."""

import collections
import gzip
import io

import numpy as np
import pytest

import stoker
from conftest import npy_bytes, save_jpeg, photo, tar_bytes

T = [stoker.Resize(8), stoker.CenterCrop(8)]


def epoch_ids(loader, epoch):
    loader.set_epoch(epoch)
    return [int(i) for _, _, ids in loader for i in np.asarray(ids)]


def padded(loader):
    st = loader.stats()
    return st["epoch"]["padded_samples"], st["padded_samples"]


@pytest.fixture()
def npy11(tmp_path):
    p = tmp_path / "x.npy"
    p.write_bytes(npy_bytes(np.arange(11 * 4 * 4 * 3, dtype=np.uint8).reshape(11, 4, 4, 3)))
    return stoker.Npy(images=str(p))


def test_random_access_two_ranks_uneven_n_two_epochs(npy11):
    # 11 samples over 2 ranks: 6 positions each; rank 1's last one wraps to the start.
    loaders = [stoker.Loader(npy11, batch_size=4, rank=r, world_size=2, shuffle=True, seed=2,
                             threads=2, return_indices=True, dtype="uint8") for r in range(2)]
    for epoch in range(2):
        every = []
        for r, loader in enumerate(loaders):
            every += epoch_ids(loader, epoch)
            own = 1 if r == 1 else 0
            # Per epoch: this rank's own repeat (was 1 on both ranks: the sum over ranks).
            assert padded(loader) == (own, own * (epoch + 1))
        assert len(every) == 12 and len(set(every)) == 11
        assert sum(padded(ld)[0] for ld in loaders) == len(every) - len(set(every))


def test_random_access_repeat_counted_when_delivered(npy11):
    loader = stoker.Loader(npy11, batch_size=4, rank=1, world_size=2, threads=2,
                           dtype="uint8")
    it = iter(loader)
    next(it)  # positions 0-3 of 6: the repeat (position 5) is not delivered yet
    assert padded(loader) == (0, 0)
    assert sum(1 for _ in it) == 1
    assert padded(loader) == (1, 1)


def stream_shards(tmp_path, counts):
    paths = []
    first = 0
    for s, n in enumerate(counts):
        members = []
        for i in range(first, first + n):
            jpg = io.BytesIO()
            save_jpeg(photo(12, 10, i), jpg)
            members += [(f"k{i:04d}.jpg", jpg.getvalue()), (f"k{i:04d}.cls", b"%d" % i)]
        p = tmp_path / f"s-{s}.tar.gz"
        p.write_bytes(gzip.compress(tar_bytes(members)))
        paths.append(str(p))
        first += n
    return paths


def test_stream_shards_uneven_split_two_epochs(tmp_path):
    # 3 shards of 9, 9 and 6 samples (24), length=24 over 2 ranks: 12 each. Whole shards
    # are dealt to ranks (rank 1 gets one), and a rank whose shards hold fewer than 12
    # samples reads them again: those re-reads are its padded_samples.
    src = stoker.Shards(stream_shards(tmp_path, [9, 9, 6]), length=24, shuffle_buffer=4)
    loaders = [stoker.Loader(src, batch_size=4, rank=r, world_size=2, threads=2,
                             transforms=T, dtype="uint8", seed=1) for r in range(2)]
    per_epoch = []
    for epoch in range(2):
        reread = 0
        for r, loader in enumerate(loaders):
            loader.set_epoch(epoch)
            labels = [int(x) for _, y in loader for x in np.asarray(y)]
            assert len(labels) == 12
            repeats = sum(c - 1 for c in collections.Counter(labels).values())
            assert padded(loader)[0] == repeats, f"rank {r} epoch {epoch}"
            reread += repeats
        assert reread > 0, "the split was meant to be uneven"
        per_epoch.append(reread)
    # The top level sums the epochs (was the last epoch's alone).
    assert sum(padded(ld)[1] for ld in loaders) == sum(per_epoch)


def test_under_skip_counts_this_ranks_repeats_of_both_kinds(tmp_path):
    # 11 images, one of them bad, over 2 ranks with on_error="skip": each rank delivers 6
    # samples; the repeats are rank 1's wrapped tail (1) and the stand-in for the bad
    # sample on whichever rank holds it (1).
    root = tmp_path / "folder" / "a"
    root.mkdir(parents=True)
    for i in range(11):
        if i == 4:
            (root / f"{i:02d}.jpg").write_bytes(b"not a jpeg")
        else:
            save_jpeg(photo(12, 10, i), root / f"{i:02d}.jpg")
    src = stoker.ImageFolder(str(tmp_path / "folder"))
    every, per_rank = [], []
    for r in range(2):
        loader = stoker.Loader(src, batch_size=4, rank=r, world_size=2, threads=2,
                               on_error="skip", transforms=T, dtype="uint8",
                               return_indices=True, shuffle=True, seed=5)
        for epoch in range(2):
            ids = epoch_ids(loader, epoch)
            assert len(ids) == 6
            if epoch == 0:
                every += ids
                per_rank.append(padded(loader)[0])
        first, total = per_rank[-1], padded(loader)[1]
        assert total == first + padded(loader)[0], "the total sums the epochs"
    assert len(every) - len(set(every)) == sum(per_rank) == 2
    assert len(set(every)) == 10  # every good sample
    # The old figure mixed the reader's sum over ranks (1 on each rank) with the rank's own
    # stand-ins: 3 in all, for 2 repeats.
