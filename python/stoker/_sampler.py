"""Samplers: which samples each epoch visits (random-access sources).

Each one only describes the draws; the engine makes them from ``(seed, epoch)``
when an epoch starts, so they are the same for any thread count and on every
run. Pass one as ``stoker.Loader(..., sampler=...)``.
"""

from __future__ import annotations

import numbers
from typing import Optional, Sequence

from stoker import _C


def _count(name: str, value: Optional[int]) -> int:
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int or None, got {value!r}")
    return int(value)


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
        for i in indices:
            if isinstance(i, bool) or not isinstance(i, numbers.Integral):
                raise TypeError(f"Subset indices must be ints, got {i!r}")
            out.append(int(i))
        self.indices = out
        self._spec = _C.SamplerSpec.subset(out)

    def __repr__(self) -> str:
        return f"Subset({len(self.indices)} indices)"


def as_spec(sampler):
    """The engine's spec for ``sampler=``: a sampler above, or any sequence of indices."""
    if sampler is None:
        return _C.SamplerSpec()
    if isinstance(sampler, (WeightedSampler, ClassBalanced, Subset)):
        return sampler._spec
    if isinstance(sampler, (str, bytes)) or not hasattr(sampler, "__iter__"):
        raise TypeError("sampler must be stoker.WeightedSampler, stoker.ClassBalanced, "
                        f"stoker.Subset or a sequence of indices, got {type(sampler).__name__}")
    return Subset(sampler)._spec
