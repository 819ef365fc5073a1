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
        try:
            return func(*args, **kwargs)
        except TypeError as e:
            if "incompatible constructor arguments" not in str(e) and \
                    "incompatible function arguments" not in str(e):
                raise
            kind, why = _name_the_bad_argument(name, params, own, kwargs, str(e))
            raise kind(why) from None
    return checked


def keyword_names(cls) -> list:
    """The parameters of a binding class's constructor, from its pybind11 signature."""
    first = (cls.__init__.__doc__ or "").strip().splitlines()[0]
    return [k for k in _parameters(first) if k != "self"]


def _signature(message: str) -> dict:
    """{parameter: annotation} from the first signature of pybind11's "incompatible
    arguments" message ("1. stoker._C.Mix(sources: object, weights: Optional[...] = None,
    *, stop: ...)")."""
    line = next((ln for ln in message.splitlines() if ln.strip().startswith("1. ")), "")
    return _parameters(line)


def _split_top(text: str, sep: str) -> list:
    """`text` split on `sep` outside brackets."""
    parts, depth, cur, i = [], 0, "", 0
    while i < len(text):
        ch = text[i]
        depth += 1 if ch in "[(" else -1 if ch in "])" else 0
        if depth == 0 and text.startswith(sep, i):
            parts.append(cur)
            cur, i = "", i + len(sep)
            continue
        cur += ch
        i += 1
    parts.append(cur)
    return [p.strip() for p in parts]


def _plain(ann: str) -> str:
    """pybind11 3's annotations ("typing.SupportsInt | typing.SupportsIndex",
    "collections.abc.Sequence[...] | None") in pybind11 2's words ("int", "Optional[List[...]]")."""
    for long, short in (("typing.SupportsInt | typing.SupportsIndex", "int"),
                        ("typing.SupportsFloat | typing.SupportsIndex", "float"),
                        ("collections.abc.Sequence[", "List["), ("list[", "List[")):
        ann = ann.replace(long, short)
    alternatives = _split_top(ann, " | ")
    if len(alternatives) == 2 and "None" in alternatives:
        return f"Optional[{next(a for a in alternatives if a != 'None')}]"
    return ann


def _parameters(line: str) -> dict:
    """{parameter: annotation} of a pybind11 signature line "f(a: int = 1, *, b: str)"."""
    inner = line[line.find("(") + 1:line.rfind(")")]
    out = {}
    for part in _split_top(inner, ","):
        head = part.split("=")[0].strip()
        if ":" in head:
            key, ann = head.split(":", 1)
            out[key.strip()] = _plain(ann.strip())
    return out


def _fits(value, ann: str) -> bool:
    """Whether `value` converts to a pybind11 annotation (the common ones; any other: yes)."""
    import numbers
    if ann.startswith("Optional[") and ann.endswith("]"):
        return value is None or _fits(value, ann[9:-1])
    if ann.startswith(("List[", "Sequence[")) and ann.endswith("]"):
        inner = ann[ann.index("[") + 1:-1]
        return isinstance(value, (list, tuple)) and all(_fits(v, inner) for v in value)
    if ann == "int":
        return isinstance(value, numbers.Integral) and not isinstance(value, bool) and \
            -2**63 <= int(value) < 2**64
    if ann == "float":
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ann == "bool":
        return isinstance(value, bool)
    if ann == "str":
        return isinstance(value, str)
    return True


def _name_the_bad_argument(name: str, params, args, kwargs, message: str):
    """A pybind11 "incompatible arguments" TypeError as (TypeError, one sentence naming the
    argument that does not convert), or (ValueError, ...) for an integer beyond the native
    type's range when every type fits."""
    ann = _signature(message)
    given = dict(zip(params, args))
    given.update(kwargs)
    bad = [f"{k}={v!r:.80} is not {ann[k]}" for k, v in given.items()
           if k in ann and not _fits(v, ann[k])]
    if bad:
        return TypeError, f"stoker.{name}: " + "; ".join(bad)
    big = [f"{k}={v!r:.80} is out of range" for k, v in given.items()
           if k in ann and "int" in ann[k] and isinstance(v, int) and abs(v) >= 2**31]
    if big:
        return ValueError, f"stoker.{name}: " + "; ".join(big)
    return TypeError, (f"stoker.{name}: " + ", ".join(f"{k}={v!r:.40}" for k, v in given.items())
                       + " do not convert")


def guard_class(cls, params, max_positional: int = -1) -> None:
    """Installs refuse_misplaced on a binding class's __init__ (at most `max_positional`
    positional arguments when given: the rest keyword-only)."""
    cls.__init__ = refuse_misplaced(cls.__name__, tuple(params), cls.__init__, is_method=True,
                                    max_positional=max_positional)
