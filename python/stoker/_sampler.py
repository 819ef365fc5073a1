"""Samplers: which samples each epoch visits (random-access sources).

Each one only describes the draws; the engine makes them from ``(seed, epoch)``
when an epoch starts, so they are the same for any thread count and on every
run. Pass one as ``stoker.Loader(..., sampler=...)``.
"""

from __future__ import annotations

from typing import Optional, Sequence

from stoker import _C
from stoker._args import INT64_MAX, as_integral


def _count(name: str, value: Optional[int]) -> int:
    if value is None:
        return -1
    i = as_integral(value)
    if i is None or i < 1:
        raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    if i > INT64_MAX:
        raise ValueError(f"{name} must be at most 2**63 - 1, got {i}")
    return i


class WeightedSampler:
    """Draws samples with probability proportional to ``weights``, like
    ``torch.utils.data.WeightedRandomSampler``.

    Args:
      weights: one non-negative weight per sample of the source (need not sum to 1).
      num_samples: draws per epoch (default: the source's size).
      replacement: draw with replacement (default). Without it a sample is drawn at most
        once per epoch, and ``num_samples`` may not exceed the samples of positive weight.
    """

    def __init__(self, weights: Sequence[float], num_samples: Optional[int] = None,
                 replacement: bool = True):
        self.weights = [float(w) for w in weights]
        self.num_samples = num_samples
        self.replacement = bool(replacement)
        self._spec = _C.SamplerSpec.weighted(self.weights, _count("num_samples", num_samples),
                                             self.replacement)

    def __repr__(self) -> str:
        return (f"WeightedSampler({len(self.weights)} weights, num_samples={self.num_samples}, "
                f"replacement={self.replacement})")


class ClassBalanced:
    """Draws every class with equal probability (each sample weighted by one over its
    class's size), from the source's labels. Arguments as for ``WeightedSampler``."""

    def __init__(self, num_samples: Optional[int] = None, replacement: bool = True):
        self.num_samples = num_samples
        self.replacement = bool(replacement)
        self._spec = _C.SamplerSpec.class_balanced(_count("num_samples", num_samples),
                                                   self.replacement)

    def __repr__(self) -> str:
        return f"ClassBalanced(num_samples={self.num_samples}, replacement={self.replacement})"


class Subset:
    """Visits only ``indices`` (source indices; repeats allowed), in this order, or
    reshuffled each epoch when the loader has ``shuffle=True``."""

    def __init__(self, indices: Sequence[int]):
        out = []
        if hasattr(indices, "tolist"):  # numpy arrays and tensors: their values as ints
            indices = indices.tolist()
        for i in indices:
            j = as_integral(i)
            if j is None:
                raise TypeError(f"Subset indices must be ints, got {type(i).__name__} {i!r}")
            if not 0 <= j <= INT64_MAX:
                raise ValueError(f"Subset indices must be in [0, 2**63 - 1], got {j}")
            out.append(j)
        self.indices = out
        self._spec = _C.SamplerSpec.subset(out)

    def __repr__(self) -> str:
        return f"Subset({len(self.indices)} indices)"


class MigrationWarning(UserWarning):
    """A torch or DataLoader argument was mapped to stoker's equivalent: the warning says
    to what, and what to write instead to silence it."""


def _torch_samplers():
    try:
        import torch.utils.data as tud
    except ImportError:  # pragma: no cover - exercised only without torch
        return None
    return tud


def is_torch_sampler(sampler) -> bool:
    tud = _torch_samplers()
    return tud is not None and isinstance(sampler, (tud.Sampler, tud.BatchSampler))


def _refuse(sampler, what: str):
    raise TypeError(f"sampler={type(sampler).__name__}(...): {what}")


def from_torch(sampler, num_samples: int) -> dict:
    """The Loader settings that reproduce a torch ``Sampler``'s draws with stoker's own
    engine, as a dict: ``sampler`` (a stoker sampler or None), ``shuffle``, and for a
    DistributedSampler ``rank``, ``world_size``, ``rank_tail`` and ``seed``; ``note``: what
    to write instead. Raises TypeError for the samplers stoker cannot reproduce, saying
    what to write. ``num_samples``: the source's size."""
    tud = _torch_samplers()
    name = type(sampler).__name__
    if isinstance(sampler, tud.BatchSampler):
        _refuse(sampler, "stoker makes the batches itself: pass batch_size= and drop_last= "
                         "to stoker.Loader (and a sampler of indices, if any)")
    if getattr(sampler, "generator", None) is not None:
        _refuse(sampler, "a torch.Generator cannot drive stoker's draws: drop generator= "
                         "and pass seed= to stoker.Loader")
    if type(sampler) is tud.DistributedSampler:
        if len(sampler.dataset) != num_samples:
            _refuse(sampler, f"its dataset has {len(sampler.dataset)} samples, the source "
                             f"{num_samples}")
        tail = "drop" if sampler.drop_last else "pad"
        out = {"sampler": None, "shuffle": bool(sampler.shuffle), "rank": int(sampler.rank),
               "world_size": int(sampler.num_replicas), "rank_tail": tail,
               "seed": int(sampler.seed)}
        out["note"] = (f"rank={sampler.rank}, world_size={sampler.num_replicas}, "
                       f"shuffle={bool(sampler.shuffle)}, seed={sampler.seed}, "
                       f"rank_tail={tail!r} (DistributedSampler's rule, the loader splits "
                       "the epoch once; its own order, not torch's permutation)")
        return out
    if type(sampler) is tud.SequentialSampler:
        return {"sampler": None, "shuffle": False, "note": "shuffle=False"}
    if type(sampler) is tud.RandomSampler:
        n = int(sampler.num_samples)
        if not sampler.replacement:
            if n != num_samples:
                _refuse(sampler, f"num_samples={n} without replacement is not one "
                                 "permutation of the source: pass shuffle=True, or "
                                 "sampler=stoker.WeightedSampler([1.0] * len(source), "
                                 f"num_samples={n}, replacement=True)")
            return {"sampler": None, "shuffle": True, "note": "shuffle=True"}
        return {"sampler": WeightedSampler([1.0] * num_samples, n, True), "shuffle": False,
                "note": f"sampler=stoker.WeightedSampler([1.0] * {num_samples}, "
                        f"num_samples={n}, replacement=True)"}
    if type(sampler) is tud.SubsetRandomSampler:
        return {"sampler": Subset(list(sampler.indices)), "shuffle": True,
                "note": "sampler=stoker.Subset(indices), shuffle=True"}
    if type(sampler) is tud.WeightedRandomSampler:
        weights = [float(w) for w in sampler.weights]
        if len(weights) != num_samples:
            _refuse(sampler, f"it has {len(weights)} weights, the source {num_samples} "
                             "samples: stoker.WeightedSampler needs one weight per sample")
        return {"sampler": WeightedSampler(weights, int(sampler.num_samples),
                                           bool(sampler.replacement)),
                "shuffle": False,
                "note": f"sampler=stoker.WeightedSampler(weights, "
                        f"num_samples={sampler.num_samples}, "
                        f"replacement={bool(sampler.replacement)})"}
    _refuse(sampler, "a torch Sampler draws its order in Python every epoch, which stoker's "
                     "engine cannot call (using its first order every epoch would freeze "
                     "it). Write stoker.Subset(indices) for a fixed set of indices "
                     "(shuffle=True reshuffles it each epoch), stoker.WeightedSampler or "
                     "stoker.ClassBalanced() for weighted draws, or rank=/world_size= for "
                     "DistributedSampler-style splits")


def as_spec(sampler):
    """The engine's spec for ``sampler=``: a sampler above, or a sequence of indices (a
    list, tuple, range, numpy array or tensor). An iterator, or another object that makes
    its indices when iterated (a sampler), raises TypeError: its first order would be
    replayed every epoch."""
    if sampler is None:
        return _C.SamplerSpec()
    if isinstance(sampler, (WeightedSampler, ClassBalanced, Subset)):
        return sampler._spec
    if isinstance(sampler, (str, bytes)) or not hasattr(sampler, "__iter__"):
        raise TypeError("sampler must be stoker.WeightedSampler, stoker.ClassBalanced, "
                        f"stoker.Subset or a sequence of indices, got {type(sampler).__name__}")
    if not _is_index_sequence(sampler):
        raise TypeError(
            f"sampler={type(sampler).__name__}: not a sequence of indices (a list, tuple, "
            "range, numpy array or tensor). An object that makes its indices when iterated "
            "would give its first order every epoch: pass stoker.Subset(list(indices)) for a "
            "fixed set, or stoker.WeightedSampler / stoker.ClassBalanced() for random draws")
    if hasattr(sampler, "tolist"):  # numpy arrays and tensors
        sampler = sampler.tolist()
    return Subset(sampler)._spec


def _is_index_sequence(obj) -> bool:
    import collections.abc
    if isinstance(obj, (list, tuple, range, collections.abc.Sequence)):
        return True
    if type(obj).__module__ == "numpy" and getattr(obj, "ndim", None) == 1:
        return True
    tud = _torch_samplers()
    if tud is not None:
        import torch
        if isinstance(obj, torch.Tensor) and obj.dim() == 1:
            return True
    return False
