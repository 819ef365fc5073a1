"""Argument checks shared by the Python layer: a TypeError or ValueError naming the
argument and the value, never a binding's signature dump or a silent coercion."""

from __future__ import annotations

import operator

import numpy as np

INT64_MAX = 2**63 - 1


def as_integral(v):
    """``v`` as a Python int when it is an integer (int, numpy integer, an integer
    torch/numpy scalar: anything with ``__index__``), else None. Bools are not integers
    here, and floats are never truncated."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if getattr(v, "dtype", None) is not None and str(v.dtype) in ("bool", "torch.bool"):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def int_arg(name: str, v, lo: int, hi: int) -> int:
    """An integer argument, checked: TypeError for a non-integer (no silent truncation of
    2.5 or parsing of "8"), ValueError out of [lo, hi]."""
    i = as_integral(v)
    if i is None:
        raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    if i < lo:
        raise ValueError(f"{name} must be >= {lo}, got {i}")
    if i > hi:
        raise ValueError(f"{name} must be <= {hi}, got {i}")
    return i


def bool_arg(name: str, v) -> bool:
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(v).__name__} {v!r}")
    return bool(v)
