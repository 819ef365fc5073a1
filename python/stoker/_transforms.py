"""Transforms with torchvision's names, arguments and meaning.

Each function returns a plain description; the engine compiles the list into
one region decode and one fused resample/flip/normalise/convert pass per
sample. Resampling reproduces Pillow's antialiased bilinear filter, the one
torchvision uses on PIL images.
"""

from __future__ import annotations

import math

from typing import Sequence, Tuple, Union

from stoker import _C

Size = Union[int, Sequence[int]]


def _pair(size: Size, name: str) -> Tuple[int, int]:
    if isinstance(size, int):
        return size, size
    size = tuple(int(s) for s in size)
    if len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(f"{name}: size must be an int or (height, width), got {size!r}")
    return size


def RandomResizedCrop(size: Size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0)):
    """Crop a random area (fraction `scale` of the image, aspect `ratio`) and resize it to `size`."""
    h, w = _pair(size, "RandomResizedCrop")
    lo_hi = []
    for name, v in (("scale", scale), ("ratio", ratio)):
        try:
            lo, hi = (float(x) for x in v)
        except (TypeError, ValueError):
            raise TypeError(f"RandomResizedCrop: {name} must be a pair of numbers, got {v!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)):  # the order: checked by the Loader
            raise ValueError(f"RandomResizedCrop: {name} must be finite numbers, got {v!r}")
        lo_hi += [lo, hi]
    return _C.Transform.random_resized_crop(h, w, *lo_hi)


def Resize(size: Size):
    """Resize: an int sets the shorter side (aspect kept); (h, w) sets both."""
    if isinstance(size, int):
        return _C.Transform.resize(size)
    h, w = _pair(size, "Resize")
    return _C.Transform.resize_hw(h, w)


def CenterCrop(size: Size):
    """Crop the centre `size` (zero-padded when the image is smaller, as torchvision does)."""
    h, w = _pair(size, "CenterCrop")
    return _C.Transform.center_crop(h, w)


def RandomHorizontalFlip(p: float = 0.5):
    """Mirror the image left-right with probability `p`."""
    return _C.Transform.random_horizontal_flip(float(p))


def Normalize(mean: Sequence[float], std: Sequence[float]):
    """(x / 255 - mean) / std per channel, exactly as ToTensor + Normalize compute it in float32."""
    if len(mean) != 3 or len(std) != 3:
        raise ValueError("Normalize: mean and std need 3 values (RGB)")
    return _C.Transform.normalize([float(m) for m in mean], [float(s) for s in std])
