"""on_error="skip" leaves bad samples out.

The issue's case: 800 files, 40 of them corrupt, gave 800 deliveries of which 760 were
distinct (bad slots refilled with duplicates), and stats()["skipped"] counted attempts.
Now: every good sample exactly once per epoch, each bad file counted once, every batch
full but the epoch's last, the same output for any thread count, and a state_dict taken
mid-epoch resumes without losing or repeating a sample.
"""
import io
import random

import numpy as np
import pytest
from PIL import Image

import stoker

N, N_BAD, BATCH = 800, 40, 32


@pytest.fixture(scope="module")
def folder_800(tmp_path_factory):
    root = tmp_path_factory.mktemp("skip800")
    rng = random.Random(17)
    bad_names = set(rng.sample(range(N), N_BAD))
    for c in range(4):
        (root / f"class{c}").mkdir()
    for i in range(N):
        path = root / f"class{i % 4}" / f"img{i:04d}.jpg"
        px = np.full((12, 10, 3), (i * 7 % 256, i * 13 % 256, i % 256), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(px).save(buf, format="JPEG", quality=90)
        data = buf.getvalue()
        if i in bad_names:
            # Corrupt in several ways: truncated, garbage, empty, not an image.
            data = [data[: len(data) // 3], b"\xff\xd8\xff" + bytes(50), b"", b"GIF89a"][i % 4]
        path.write_bytes(data)
    folder = stoker.ImageFolder(str(root))
    bad = {k for k in range(len(folder)) if int(folder.path(k)[-8:-4]) in bad_names}
    assert len(folder) == N and len(bad) == N_BAD
    return folder, bad


def run(folder, threads, epochs=1, **kw):
    loader = stoker.Loader(folder, batch_size=BATCH, threads=threads, on_error="skip",
                           transforms=[stoker.RandomResizedCrop(8), stoker.RandomHorizontalFlip()],
                           dtype="uint8", return_indices=True, seed=3, shuffle=True, **kw)
    out = []
    for _ in range(epochs):
        xs, ids, sizes = [], [], []
        for x, _, i in loader:
            xs.append(np.asarray(x).copy())
            ids.extend(np.asarray(i).tolist())
            sizes.append(len(i))
        out.append((np.concatenate(xs), ids, sizes, dict(loader.stats()["epoch"])))
    return loader, out


def test_800_files_40_bad_every_good_sample_once(folder_800):
    folder, bad = folder_800
    good = N - N_BAD
    results = {}
    for threads in (1, 4):
        loader, epochs = run(folder, threads, epochs=2)
        for x, ids, sizes, epoch_stats in epochs:
            assert len(ids) == good == 760
            assert len(set(ids)) == len(ids), "a sample was delivered twice"
            assert set(ids) == set(range(N)) - bad
            # Full batches but the last: 760 = 23 x 32 + 24.
            assert sizes == [BATCH] * (good // BATCH) + [good % BATCH]
            assert epoch_stats["skipped"] == N_BAD
            assert epoch_stats["skipped_files"] == N_BAD
            assert epoch_stats["images"] == good
        s = loader.stats()
        assert s["skipped"] == 2 * N_BAD  # samples: once per epoch
        assert s["skipped_files"] == N_BAD  # files: once
        results[threads] = epochs
    # The same batches, ids and pixels for any thread count.
    for (x1, i1, s1, _), (x4, i4, s4, _) in zip(results[1], results[4]):
        assert i1 == i4 and s1 == s4
        assert np.array_equal(x1, x4)
    # Epochs differ in order (the shuffle is per epoch), not in content.
    assert results[1][0][1] != results[1][1][1]


@pytest.mark.parametrize("stop_after", [1, 7, 22])
def test_state_dict_mid_epoch_under_skip_resumes_exactly_once(folder_800, stop_after):
    folder, bad = folder_800
    _, [(_, want, _, _)] = run(folder, 2)
    first = stoker.Loader(folder, batch_size=BATCH, threads=3, on_error="skip",
                          transforms=[stoker.RandomResizedCrop(8), stoker.RandomHorizontalFlip()],
                          dtype="uint8", return_indices=True, seed=3, shuffle=True)
    head = []
    for k, (_, _, i) in enumerate(first):
        head.extend(np.asarray(i).tolist())
        if k + 1 == stop_after:
            break
    state = first.state_dict()
    first.close()
    second = stoker.Loader(folder, batch_size=BATCH, threads=1, on_error="skip",
                           transforms=[stoker.RandomResizedCrop(8), stoker.RandomHorizontalFlip()],
                           dtype="uint8", return_indices=True, seed=3, shuffle=True)
    second.load_state_dict(state)
    tail = [j for _, _, i in second for j in np.asarray(i).tolist()]
    assert head + tail == want


def test_ranks_under_skip_keep_equal_batch_counts(folder_800):
    # A rank cannot know another's bad files: each rank delivers len(loader) batches (what
    # it would without bad files), repeating its first samples for its missing ones
    # (stats()["padded_samples"]), so DDP never waits on a rank that ran out.
    folder, bad = folder_800
    seen, padded = [], 0
    for rank in range(2):
        loader = stoker.Loader(folder, batch_size=BATCH, threads=2, on_error="skip",
                               transforms=[stoker.Resize(8), stoker.CenterCrop(8)],
                               dtype="uint8", return_indices=True, seed=3, shuffle=True,
                               rank=rank, world_size=2)
        sizes, ids = [], []
        for _, _, i in loader:
            sizes.append(len(i))
            ids.extend(np.asarray(i).tolist())
        assert len(sizes) == len(loader) == 13  # 400 samples per rank
        assert sizes == [BATCH] * 12 + [400 - 12 * BATCH]
        padded += loader.stats()["padded_samples"]
        distinct = set(ids)
        assert len(ids) - len(distinct) == loader.stats()["padded_samples"]
        seen.extend(distinct)
    assert len(seen) == len(set(seen))  # no good sample on both ranks
    assert set(seen) == set(range(N)) - bad
    assert padded == N_BAD


def test_streamed_shards_with_ranks_under_skip_keep_equal_batch_counts(tmp_path):
    # Stream mode (gzip shards, declared length): rank r reads shards r, r + W, ...; a bad
    # sample in one rank's shard is made up by a repeat on that rank only.
    import gzip
    import tarfile

    paths = []
    for s in range(4):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            for i in range(10):
                img = io.BytesIO()
                Image.fromarray(np.full((12, 16, 3), s * 40 + i, np.uint8)).save(img, "JPEG")
                data = img.getvalue() if (s, i) != (1, 4) else b"not a jpeg"
                for name, d in ((f"s{s}_{i:03d}.jpg", data), (f"s{s}_{i:03d}.cls", b"1")):
                    info = tarfile.TarInfo(name)
                    info.size = len(d)
                    t.addfile(info, io.BytesIO(d))
        p = tmp_path / f"shard-{s}.tar.gz"
        p.write_bytes(gzip.compress(buf.getvalue()))
        paths.append(str(p))
    src = stoker.Shards(paths, length=40)
    per_rank, padded, distinct = [], [], set()
    for rank in range(2):
        loader = stoker.Loader(src, batch_size=4, threads=2, on_error="skip", dtype="uint8",
                               transforms=[stoker.Resize(8), stoker.CenterCrop(8)],
                               return_indices=True, rank=rank, world_size=2, seed=1)
        sizes, ids = [], []
        for _, _, i in loader:
            sizes.append(len(i))
            ids.extend(np.asarray(i).tolist())
        per_rank.append(sizes)
        padded.append(loader.stats()["padded_samples"])
        assert loader.stats()["epoch"]["skipped_files"] == (1 if len(set(ids)) == 19 else 0)
        distinct |= set(ids)
    assert per_rank[0] == per_rank[1] == [4] * 5  # 20 samples per rank
    assert sorted(padded) == [0, 1]
    assert len(distinct) == 39  # every good sample
