"""PyTorch DataLoader's arguments and samplers in stoker's terms: the ones stoker maps
(num_workers, pin_memory, prefetch_factor, torch samplers) with a MigrationWarning that says
what to write, and a TypeError naming the equivalent for the ones it has none for."""

from __future__ import annotations

import warnings
import weakref

from stoker import _C, _sampler
from stoker._args import bool_arg as _bool_arg
from stoker._args import int_arg as _int_arg

try:  # torch is optional
    import torch
except ImportError:  # pragma: no cover - exercised only without torch
    torch = None

_INT_MAX = 2**31 - 1

# DataLoader arguments stoker has no counterpart for: each gets a TypeError saying what
# to write instead (the ones it maps, num_workers, pin_memory, prefetch_factor and a torch
# sampler, are arguments of Loader).
DATALOADER_ONLY = {
    "collate_fn": "stoker makes each batch itself: collate='list' keeps each sample's own "
                  "size (detection, segmentation), target_transform= maps labels, and "
                  "stoker.MixUp / stoker.CutMix / stoker.RandomChoice work on the batch",
    "worker_init_fn": "stoker's workers are native threads that run no Python per worker; "
                      "every sample's randomness comes from (seed, epoch, index): pass seed=",
    "persistent_workers": "stoker's threads always persist across epochs (and prefetch the "
                          "next epoch's first batches): remove the argument",
    "batch_sampler": "pass batch_size= and drop_last=, and sampler= for the indices",
    "generator": "pass seed= (by default the seed follows torch.initial_seed(), so "
                 "torch.manual_seed controls it)",
    "timeout": "the loader has no worker processes to time out; a stalled read raises "
               "StokerError from the source's own timeouts",
    "multiprocessing_context": "stoker's workers are native threads, not processes: remove "
                               "the argument",
    "pin_memory_device": "pass device='cuda:N' to make batches on that GPU, or "
                         "pin_memory=True for page-locked host batches",
}



def refuse_dataloader_only(kwargs) -> None:
    """A TypeError for the first of ``kwargs``: a DataLoader argument without a stoker
    counterpart (naming what to write instead), or an unknown keyword."""
    for name in kwargs:
        if name in DATALOADER_ONLY:
            raise TypeError(f"Loader() has no {name}= (a DataLoader argument): "
                            f"{DATALOADER_ONLY[name]}")
        raise TypeError(f"Loader() got an unexpected keyword argument {name!r}")


def map_dataloader_args(threads, prefetch, num_workers, pin_memory, prefetch_factor):
    """DataLoader's num_workers, pin_memory and prefetch_factor as stoker's threads,
    prefetch and batch allocator, with a MigrationWarning naming them."""
    notes, allocator = [], None
    if num_workers is not None:
        num_workers = _int_arg("num_workers", num_workers, 0, _INT_MAX)
        if threads is not None:
            raise TypeError("give threads= or num_workers= (DataLoader's name), not both")
        threads = max(1, num_workers)
        notes.append(f"num_workers={num_workers} -> threads={threads}")
    if prefetch_factor is not None:
        prefetch_factor = _int_arg("prefetch_factor", prefetch_factor, 1, _INT_MAX)
        if prefetch != 2:
            raise TypeError("give prefetch= or prefetch_factor= (DataLoader's name), not "
                            "both")
        workers = threads if isinstance(threads, int) and threads > 0 else 1
        prefetch = prefetch_factor * workers
        notes.append(f"prefetch_factor={prefetch_factor} -> prefetch={prefetch} (batches "
                     "in flight)")
    if pin_memory is not None and _bool_arg("pin_memory", pin_memory):
        if torch is not None and torch.cuda.is_available():
            allocator = _C.pinned_allocator(torch.cuda.current_device())
            notes.append("pin_memory=True -> batches in page-locked memory (or pass "
                         "device='cuda' to have them on the GPU)")
        else:
            notes.append("pin_memory=True ignored: no CUDA device (as DataLoader does)")
    if notes:
        warnings.warn("DataLoader arguments mapped: " + "; ".join(notes) + ". Write "
                      "stoker's names to silence this warning", _sampler.MigrationWarning,
                      stacklevel=3)
    return threads, prefetch, allocator


def map_torch_sampler(sampler, source, shuffle, rank, world_size, rank_tail, seed):
    """A torch sampler as stoker's arguments: (sampler, shuffle, rank, world_size, rank_tail,
    seed, torch_sampler), torch_sampler being the DistributedSampler whose set_epoch the
    loader follows (else None); a MigrationWarning says what to write. ValueError when an
    explicit argument contradicts the sampler."""
    try:
        size = len(source)
    except TypeError:
        raise TypeError(f"sampler={type(sampler).__name__}(...) needs a source of "
                        f"known length; {source!r} is a stream") from None
    mapped = _sampler.from_torch(sampler, size)
    for key, given in (("shuffle", shuffle), ("rank", rank), ("world_size", world_size),
                       ("rank_tail", rank_tail), ("seed", seed)):
        if key in mapped and given is not None and given != mapped[key]:
            raise ValueError(f"{key}={given!r} contradicts sampler="
                             f"{type(sampler).__name__}(...), which means "
                             f"{key}={mapped[key]!r}: give one of them")
    torch_sampler = None
    if "rank" in mapped:
        rank, world_size = mapped["rank"], mapped["world_size"]
        rank_tail, seed = mapped["rank_tail"], mapped["seed"]
        torch_sampler = sampler
    warnings.warn(f"sampler={type(sampler).__name__}(...) is mapped to stoker's "
                  f"equivalent: {mapped['note']}; write that instead to silence "
                  "this warning", _sampler.MigrationWarning, stacklevel=3)
    return (mapped["sampler"], mapped["shuffle"], rank, world_size, rank_tail, seed,
            torch_sampler)


def forward_set_epoch(torch_sampler, loader) -> None:
    """Makes torch_sampler.set_epoch(e) also set the loader's epoch (weakly: the sampler
    does not keep the loader alive)."""
    ref = weakref.ref(loader)
    original = torch_sampler.set_epoch

    def set_epoch(epoch):
        original(epoch)
        target = ref()
        if target is not None and target._impl is not None:
            target.set_epoch(epoch)
    torch_sampler.set_epoch = set_epoch
