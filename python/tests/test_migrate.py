"""What a script migrating from torch's DataLoader meets.

Torch samplers passed as sampler= (problem 1), the two drop_last meanings under ranks
(problem 3), DataLoader's arguments and attributes, sources' constructors given
torchvision-style arguments (problem 6), len() after a resume and the default seed
(problem 7).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import stoker

N = 23
H = W = 8


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    d = tmp_path_factory.mktemp("migrate")
    rng = np.random.default_rng(0)
    np.save(d / "x.npy", rng.integers(0, 256, size=(N, H, W, 3), dtype=np.uint8))
    np.save(d / "y.npy", np.arange(N) % 3)
    return stoker.Npy(images=str(d / "x.npy"), labels=str(d / "y.npy"))


def make(source, **kw):
    kw.setdefault("batch_size", 4)
    kw.setdefault("threads", 2)
    kw.setdefault("dtype", "uint8")
    kw.setdefault("transforms", [stoker.CenterCrop(H)])
    return stoker.Loader(source, return_indices=True, **kw)


def epoch_ids(loader, epoch=None):
    if epoch is not None:
        loader.set_epoch(epoch)
    return [int(i) for _, _, ids in loader for i in ids]


def mapped(source, sampler, **kw):
    with pytest.warns(stoker.MigrationWarning, match=type(sampler).__name__):
        return make(source, sampler=sampler, **kw)


# ------------------------------------------------------------------ samplers (1) --

@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_splits_once_and_reshuffles(source, drop_last):
    per_epoch = []
    for epoch in range(2):
        union = []
        for rank in range(2):
            s = tud.DistributedSampler(source, num_replicas=2, rank=rank, shuffle=True,
                                       seed=5, drop_last=drop_last)
            loader = mapped(source, s)
            assert loader.rank_tail == ("drop" if drop_last else "pad")
            assert loader.seed == 5
            s.set_epoch(epoch)  # the training loop's call reaches the loader
            assert loader.epoch == epoch
            ids = epoch_ids(loader)
            # Each rank reads half the epoch (not a quarter: no second split).
            assert len(ids) == (N // 2 if drop_last else (N + 1) // 2)
            assert len(loader) == -(-len(ids) // 4)
            union += ids
        if drop_last:
            assert len(set(union)) == len(union) == N - 1
        else:
            assert set(union) == set(range(N)) and len(union) == N + 1
        per_epoch.append(union)
    assert per_epoch[0] != per_epoch[1], "the order must change with the epoch"


def test_distributed_sampler_contradicting_arguments(source):
    s = tud.DistributedSampler(source, num_replicas=2, rank=1)
    with pytest.raises(ValueError, match="rank=0 contradicts"):
        make(source, sampler=s, rank=0)


def test_random_and_sequential_samplers(source):
    loader = mapped(source, tud.RandomSampler(source))
    a, b = epoch_ids(loader, 0), epoch_ids(loader, 1)
    assert sorted(a) == sorted(b) == list(range(N)) and a != b
    loader = mapped(source, tud.SequentialSampler(source))
    assert epoch_ids(loader, 0) == epoch_ids(loader, 1) == list(range(N))
    loader = mapped(source, tud.RandomSampler(source, replacement=True, num_samples=40))
    a = epoch_ids(loader, 0)
    assert len(a) == 40 and len(set(a)) < 40 and a != epoch_ids(loader, 1)
    with pytest.raises(TypeError, match="num_samples=5 without replacement"):
        make(source, sampler=tud.RandomSampler(source, num_samples=5))
    with pytest.raises(TypeError, match="seed="):
        make(source, sampler=tud.RandomSampler(source, generator=torch.Generator()))


def test_subset_and_weighted_samplers(source):
    keep = [3, 5, 7, 11, 13, 17, 19]
    loader = mapped(source, tud.SubsetRandomSampler(keep))
    a, b = epoch_ids(loader, 0), epoch_ids(loader, 1)
    assert sorted(a) == sorted(b) == keep and a != b
    weights = [0.0] * N
    weights[2] = weights[9] = 1.0
    loader = mapped(source, tud.WeightedRandomSampler(weights, 30))
    a = epoch_ids(loader, 0)
    assert len(a) == 30 and set(a) == {2, 9}
    assert a != epoch_ids(loader, 1)


def test_other_samplers_and_iterators_are_refused(source):
    class EvenFirst(tud.Sampler):
        def __init__(self):
            pass

        def __iter__(self):
            return iter(list(range(0, N, 2)) + list(range(1, N, 2)))

        def __len__(self):
            return N

    with pytest.raises(TypeError, match="stoker.Subset"):
        make(source, sampler=EvenFirst())
    with pytest.raises(TypeError, match="first order every epoch"):
        make(source, sampler=iter(range(N)))
    with pytest.raises(TypeError, match="first order every epoch"):
        make(source, sampler=(i for i in range(N)))
    with pytest.raises(TypeError, match="batch_size= and drop_last="):
        make(source, sampler=tud.BatchSampler(tud.SequentialSampler(source), 4, False))
    # Sequences of indices still work, as a fixed order.
    assert epoch_ids(make(source, sampler=np.arange(5)), 0) == list(range(5))
    assert epoch_ids(make(source, sampler=torch.arange(5)), 1) == list(range(5))


# ------------------------------------------------------------ distributed eval (3) --

@pytest.mark.parametrize("world", [2, 3, 4])
def test_uneven_rank_tail_gives_every_sample_once_with_short_batches(source, world):
    union = []
    for rank in range(world):
        loader = make(source, rank=rank, world_size=world, rank_tail="uneven",
                      shuffle=True, seed=3)
        sizes = []
        for _, _, ids in loader:
            sizes.append(len(ids))
            union += [int(i) for i in ids]
        share = N // world + (1 if rank < N % world else 0)
        assert sum(sizes) == share and len(sizes) == len(loader)
        assert sizes[:-1] == [4] * (len(sizes) - 1)
        assert sizes[-1] == (share % 4 or 4)
        assert loader.stats()["padded_samples"] == 0
    assert sorted(union) == list(range(N)), "every sample exactly once"


def test_rank_tail_and_drop_last_are_separate(source):
    # DistributedSampler(drop_last=False) + DataLoader(drop_last=True): padded, no short
    # batch; the old single drop_last dropped both.
    loader = make(source, rank=1, world_size=3, rank_tail="pad", drop_last=True)
    assert [len(i) for _, _, i in loader] == [4, 4] and len(loader) == 2
    assert loader.stats()["padded_samples"] == 0  # 23 = 3 * 8 - 1: rank 2 holds the repeat
    loader = make(source, rank=2, world_size=3, rank_tail="pad", drop_last=True)
    assert [len(i) for _, _, i in loader] == [4, 4]
    assert loader.stats()["padded_samples"] == 1
    loader = make(source, rank=1, world_size=3, rank_tail="drop", drop_last=False)
    assert [len(i) for _, _, i in loader] == [4, 3]
    # The default keeps its meaning: drop_last drops both.
    assert make(source, rank=1, world_size=3, drop_last=True).rank_tail == "drop"
    with pytest.raises(ValueError, match="rank_tail"):
        make(source, rank_tail="even")


# --------------------------------------------------- DataLoader's surface (6, 7) --

def test_dataloader_arguments_are_mapped(source):
    with pytest.warns(stoker.MigrationWarning, match="num_workers=3 -> threads=3"):
        loader = make(source, threads=None, num_workers=3, prefetch_factor=2)
    assert loader.stats()["threads"] == 3
    assert loader.stats()["prefetch"] == 6
    if not torch.cuda.is_available():
        with pytest.warns(stoker.MigrationWarning, match="pin_memory=True ignored"):
            make(source, pin_memory=True)
    with pytest.raises(TypeError, match="not both"):
        make(source, threads=2, num_workers=2)


@pytest.mark.parametrize("name,value,says", [
    ("collate_fn", lambda b: b, "collate='list'"),
    ("worker_init_fn", lambda w: None, "seed="),
    ("persistent_workers", True, "always persist"),
    ("batch_sampler", None, "batch_size="),
    ("generator", torch.Generator(), "seed="),
    ("timeout", 5, "StokerError"),
    ("multiprocessing_context", "spawn", "native threads"),
])
def test_dataloader_only_arguments_name_the_equivalent(source, name, value, says):
    with pytest.raises(TypeError, match=f"no {name}=.*{says}") as e:
        make(source, **{name: value})
    assert "unexpected keyword" not in str(e.value)


def test_unknown_argument_is_still_an_error(source):
    with pytest.raises(TypeError, match="unexpected keyword argument 'bach_size'"):
        make(source, bach_size=3)


def test_dataloader_attributes(source):
    loader = make(source, batch_size=5, drop_last=True, sampler=[1, 2, 3, 4, 5, 6])
    assert loader.dataset is source and loader.source is source
    assert loader.batch_size == 5 and loader.drop_last is True
    assert loader.sampler == [1, 2, 3, 4, 5, 6]
    assert make(source).sampler is None


def test_sources_refuse_torchvision_arguments_with_a_sentence(tmp_path, source):
    import torchvision.transforms as T
    (tmp_path / "c").mkdir()
    from PIL import Image
    Image.new("RGB", (8, 8)).save(tmp_path / "c" / "a.png")
    cases = [
        (lambda: stoker.ImageFolder(str(tmp_path), T.ToTensor()), "transforms=\\[...\\]"),
        (lambda: stoker.ImageFolder(str(tmp_path), transform=T.ToTensor()), "stoker.Loader"),
        (lambda: stoker.ImageFolder(str(tmp_path), target_transform=int),
         "target_transform= to stoker.Loader"),
        (lambda: stoker.ImageFolder(root=str(tmp_path), loader=open), "decodes the files"),
        (lambda: stoker.Npy("x.npy", None, None, T.ToTensor()), "stoker.Npy takes"),
        (lambda: stoker.HDF5("x.h5", transform=T.ToTensor()), "stoker.HDF5 takes"),
        (lambda: stoker.Shards("x.tar", T.ToTensor()), "stoker.Shards takes"),
    ]
    for call, says in cases:
        with pytest.raises(TypeError, match=says) as e:
            call()
        assert "incompatible function arguments" not in str(e.value)
        assert "positional argument" in str(e.value) or "=" in str(e.value)
    assert len(stoker.ImageFolder(str(tmp_path))) == 1  # the right call still works


@pytest.mark.parametrize("world", [1, 3])
def test_len_after_a_mid_epoch_resume_is_the_whole_epoch_and_batches_left_the_rest(source,
                                                                                  world):
    # len() as DataLoader's: an LR schedule of len(loader) * epochs steps is the same
    # schedule after a resume; what is left is batches_left.
    for drop_last in (False, True):
        for rank in range(world):
            def build():
                return make(source, shuffle=True, seed=1, drop_last=drop_last, rank=rank,
                            world_size=world, batch_size=2)
            first = build()
            full = len(first)
            assert first.batches_left == full
            it = iter(first)
            next(it), next(it)
            assert first.batches_left == full - 2
            state = first.state_dict()
            del it
            resumed = build()
            resumed.load_state_dict(state)
            assert len(resumed) == full
            left = resumed.batches_left
            assert left < full
            got = 0
            for _ in resumed:
                got += 1
                assert resumed.batches_left == left - got  # 0 at the last batch
            assert got == left
            assert len(resumed) == resumed.batches_left == full  # the next epoch, whole
    # set_epoch naming another epoch cancels the resume: the whole epoch again
    whole = len(make(source, shuffle=True, seed=1, batch_size=2))
    resumed = make(source, shuffle=True, seed=1, batch_size=2)
    resumed.load_state_dict(state)
    assert resumed.batches_left < whole == len(resumed)
    resumed.set_epoch(7)
    assert resumed.batches_left == whole
    # Leaving the resumed epoch early: the next iter() runs the next epoch, whole.
    resumed = make(source, shuffle=True, seed=1, batch_size=2)
    resumed.load_state_dict(state)
    it = iter(resumed)
    assert len(it) == whole
    next(it)
    del it
    assert resumed.batches_left == whole
    it = iter(resumed)
    assert len(resumed) == len(it) == resumed.batches_left == whole


def test_a_resume_past_the_epochs_end_is_refused(source):
    loader = make(source, shuffle=True, seed=1, batch_size=2)
    state = loader.state_dict()
    n = state["num_samples"]
    with pytest.raises(ValueError, match=f"consumed={n + 1} is past the end of the epoch's "
                                         f"{n} samples"):
        loader.load_state_dict(dict(state, consumed=n + 1))
    with pytest.raises(ValueError, match="past the end"):
        loader.load_state_dict(dict(state, consumed=10**6))
    loader.load_state_dict(dict(state, consumed=n))  # taken at the end: the next epoch
    assert loader.batches_left == len(loader) and loader.epoch == state["epoch"] + 1


def test_default_seed_follows_torch(source):
    def order():
        return epoch_ids(make(source, shuffle=True), 0)
    torch.manual_seed(1234)
    a = order()
    torch.manual_seed(1234)
    assert order() == a
    assert make(source).seed == 1234
    torch.manual_seed(99)
    assert order() != a
    # An explicit seed wins over torch's.
    torch.manual_seed(1)
    x = epoch_ids(make(source, shuffle=True, seed=8), 0)
    torch.manual_seed(2)
    assert epoch_ids(make(source, shuffle=True, seed=8), 0) == x
    # With ranks the default is 0, the same on every rank (DistributedSampler's).
    assert make(source, rank=0, world_size=2).seed == 0


def test_imagefolder_docstring_lists_every_format():
    doc = stoker.ImageFolder.__doc__
    assert "JPEG and PNG files" not in doc
    for fmt in ("WebP", "TIFF", "BMP"):
        assert fmt in doc
