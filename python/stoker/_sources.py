"""Sources' constructors refuse misplaced torchvision-style arguments with a sentence.

``torchvision.datasets.ImageFolder(root, transform, target_transform, loader,
is_valid_file)`` takes the transforms; a stoker source only reads samples, and the
Loader applies the transforms. Without this, ``stoker.ImageFolder(root, transform)``
would end in a binding's signature dump.
"""

from __future__ import annotations

import functools

# Where each torchvision dataset argument goes in stoker.
_HINTS = {
    "transform": "pass transforms=[...] to stoker.Loader (stoker's transforms keep "
                 "torchvision's names)",
    "transforms": "pass transforms=[...] to stoker.Loader",
    "target_transform": "pass target_transform= to stoker.Loader",
    "loader": "stoker decodes the files itself (JPEG, PNG, WebP, TIFF, BMP, PNM); a custom "
              "loader has no place in the native pipeline",
    "is_valid_file": "stoker.ImageFolder takes every file with an image extension; choose "
                     "samples with sampler=stoker.Subset(indices) on the Loader",
    "download": "stoker reads files already on disk",
    "train": "point the source at the split's own folder or file",
}


def _describe(name: str, params, limit: int, args, kwargs) -> str:
    extra = [repr(a) if not callable(a) else type(a).__name__ for a in args[limit:]]
    unknown = [k for k in kwargs if k not in params]
    parts = [f"{len(extra)} extra positional argument(s) ({', '.join(extra)})"] if extra else []
    got = ", ".join(parts + [f"{k}=" for k in unknown])
    hints = [f"{k}: {_HINTS[k]}" for k in unknown if k in _HINTS]
    if extra:
        hints.append("a torchvision dataset's transform, target_transform and loader "
                     "arguments belong elsewhere: transforms=[...] and target_transform= go "
                     "to stoker.Loader, and stoker decodes the files itself")
    return (f"stoker.{name} takes ({', '.join(params)}), got {got}. "
            + ("; ".join(hints) + "." if hints else ""))


def refuse_misplaced(name: str, params, func, is_method: bool = False,
                     max_positional: int = -1):
    """Wraps `func` (a source's constructor, or a class's __init__ taking self first) so
    that positional arguments beyond `params` or unknown keywords raise a TypeError that
    says where they go."""

    @functools.wraps(func)
    def checked(*args, **kwargs):
        own = args[1:] if is_method else args
        limit = len(params) if max_positional < 0 else max_positional
        if len(own) > limit or any(k not in params for k in kwargs):
            raise TypeError(_describe(name, params, limit, own, kwargs))
        return func(*args, **kwargs)
    return checked


def guard_class(cls, params, max_positional: int = -1) -> None:
    """Installs refuse_misplaced on a binding class's __init__ (at most `max_positional`
    positional arguments when given: the rest keyword-only)."""
    cls.__init__ = refuse_misplaced(cls.__name__, tuple(params), cls.__init__, is_method=True,
                                    max_positional=max_positional)
