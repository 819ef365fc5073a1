"""Transforms with torchvision's names, arguments and meaning.

Every transform is declared once, in C++ (src/ops/*_transforms.cc): its name, its parameters
with their types, defaults and accepted values, and the stage it runs at. The classes here are
made from those declarations (``_C.transform_schemas()``): ``stoker.RandomCrop(32, padding=4)``
passes its arguments to ``_C.Transform``, which binds, converts and checks them in C++ and raises
ValueError (or TypeError) naming the transform, the argument and what it accepts. The engine
compiles the list into one region decode and one fused resample/flip/normalise/convert pass per
sample. Resampling reproduces Pillow's antialiased bilinear filter, the one torchvision uses on
PIL images. Photometric transforms (ColorJitter, RandomGrayscale, ...) run, with Pillow's
arithmetic, on the output-size image: after all crops and resizes, wherever they sit in the list.

``transforms=`` takes one transform, a list of them, ``stoker.Compose([...])`` or
``torchvision.transforms.Compose([...])`` holding stoker transforms. A Python callable (or
``stoker.Lambda(fn)``) runs per sample on the uint8 output-size image, in list order with the
photometric transforms, under the GIL.
"""

from __future__ import annotations

import inspect
from typing import Dict, Sequence

import numpy as np

from stoker import _C


def _class_doc(schema: dict) -> str:
    """The declaration's docstring, then its arguments: what each accepts and its default."""
    lines = [schema["doc"], "", "Args:"]
    for p in schema["params"]:
        default = "" if p["required"] else f" (default {p['default']!r})"
        lines.append(f"  {p['name']}: {p['accepts']}{default}.")
    return "\n".join(lines)


class _TransformClass(type):
    """The type of the classes made from declarations: calling one returns a _C.Transform
    (made, checked, by the C++ declaration), and isinstance(t, stoker.RandomCrop) holds for
    the transforms it made."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _C.Transform) and obj.name == cls.__name__


def _make_class(schema: dict) -> type:
    """stoker.<Name>: a class whose call takes the declared parameters."""
    name = schema["name"]
    params = [inspect.Parameter(p["name"], inspect.Parameter.KEYWORD_ONLY if p["keyword_only"]
                                else inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=(inspect.Parameter.empty if p["required"]
                                         else p["default"]),
                                annotation=p["annotation"])
              for p in schema["params"]]

    def __new__(cls, *args, **kwargs):
        return _C.Transform(name, args, kwargs)

    __new__.__signature__ = inspect.Signature(
        [inspect.Parameter("cls", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + params)
    __new__.__qualname__ = f"{name}.__new__"
    namespace = {"__new__": __new__, "__doc__": _class_doc(schema), "__module__": "stoker",
                 "__qualname__": name, "__signature__": inspect.Signature(params)}
    return _TransformClass(name, (), namespace)


# One class per declaration, in declaration order (geometry, warps, colour, policies, output).
TRANSFORMS: Dict[str, type] = {s["name"]: _make_class(s) for s in _C.transform_schemas()
                               if s["python"]}
globals().update(TRANSFORMS)


class Lambda:
    """A Python step per sample: ``fn(image)`` on the sample's uint8 ``[H, W, 3]`` numpy array
    of the output size (RGB), after all crops and resizes, in list order with the photometric
    transforms and before Normalize and the dtype conversion. ``fn`` returns a uint8 array of
    the same shape (or anything ``numpy.asarray`` turns into one, e.g. a CPU tensor), or None
    after changing ``image`` in place (it is the sample's own copy).

    It runs in the worker threads under the GIL, so Python steps do not run in parallel (numpy
    calls that release the GIL do); its time, GIL waits included, is ``stats()["callback_s"]``,
    summed over threads and part of ``augment_s``. A plain callable in ``transforms=`` is
    wrapped in a Lambda. An exception, or a result of another type, dtype or shape, fails the
    sample: StokerError naming the sample and the exception under ``on_error="raise"``, a
    skipped sample (left out, counted) under ``on_error="skip"``.

    Randomness: with ``rng=True`` it is called as ``fn(image, rng)``, ``rng`` a
    ``numpy.random.Generator`` seeded from ``(seed, epoch, sample, place in the list)``, so
    the output is the same for any thread count. ``fn``'s own random state (``np.random``,
    ``random``) is shared by the threads and makes the output depend on scheduling.
    ``torchvision.transforms.Lambda`` objects are refused: their function expects PIL images
    or tensors; wrap a function of numpy arrays as ``stoker.Lambda(fn)``.

    Records: ``stoker.Lambda(fn, fields=["caption", "emb"], adds={"tokens": "int64"})`` runs
    ``fn(d)`` per sample on a dict of those fields of a record source (after the read,
    before the fields are checked and batched; the transformed image and the primary label
    cannot be named): arrays as writable numpy copies, text as ``str``, bytes as ``bytes``,
    json parsed, labels as ``int``. ``fn`` returns a dict of any of its fields (or None
    after changing ``d``); a field left out keeps its value. Each returned value must suit
    its field's declared kind (``str`` for text, ``bytes``, a JSON-serialisable object, an
    ``int`` label, an array -- anything ``numpy.asarray`` takes -- of the declared dtype,
    and of the declared shape for a fixed-shape field): else the sample fails naming the
    field. ``adds`` declares new fields, which ``fn`` must return for every sample:
    ``"text"``, ``"bytes"``, ``"json"``, ``"label"``, ``"scalar"`` (a float per sample,
    float64 ``[B]`` per batch; ``("scalar", "int64")`` for an int), a numpy dtype (an array of any shape:
    a list per batch, padded under ``collate="pad"``) or ``(dtype, shape)`` (``None`` where
    a dimension varies; a fully given shape is stacked). Several steps run in list order (a
    later one may name an earlier one's additions). Errors and ``on_error`` as above. With
    ``rng=True`` it is called as ``fn(d, rng)``, ``rng`` a ``numpy.random.Generator`` seeded
    from ``(seed, epoch, sample, the step's place among the field steps)``, the same for any
    thread count and apart from the image transforms' draws."""

    def __init__(self, lambd, *, rng: bool = False, fields=None, adds=None):
        if not callable(lambd):
            raise TypeError(f"Lambda: {type(lambd).__name__} object is not callable")
        self.lambd = lambd
        self.rng = bool(rng)
        self.name = (getattr(lambd, "__qualname__", None) or getattr(lambd, "__name__", None)
                     or type(lambd).__name__)
        self.fields = None
        if fields is not None or adds is not None:
            self.fields = _field_names(fields)
            self.adds = _added_fields(adds)
            fn = lambd
            if self.rng:
                def fn(d, seed, _fn=lambd):
                    return _fn(d, np.random.default_rng(seed))
            self._native = _C.FieldStep(fn, self.name, self.fields, self.adds, self.rng)
            return
        if self.rng:
            def run(image, seed, _fn=lambd):
                return _fn(image, np.random.default_rng(seed))
            self._native = _C.Transform.callback(run, self.name, True)
        else:
            self._native = _C.Transform.callback(lambd, self.name, False)

    def __repr__(self) -> str:
        if self.fields is not None:
            return (f"Lambda({self.name}, fields={self.fields!r}"
                    f"{', rng=True' if self.rng else ''})")
        return f"Lambda({self.name}{', rng=True' if self.rng else ''})"


class Compose:
    """A list of stoker transforms, as ``torchvision.transforms.Compose``."""

    def __init__(self, transforms: Sequence):
        self.transforms = list(transforms)

    def __repr__(self) -> str:
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose([{inner}\n])"


# What to use instead of the torchvision transforms stoker does not provide (declared in C++
# beside the family each would belong to).
_INSTEAD: Dict[str, str] = _C.torchvision_notes()

__all__ = sorted(TRANSFORMS) + ["Compose", "Lambda"]


def _field_names(fields) -> list:
    """Lambda(fields=) as a list of field names."""
    if fields is None:
        return []
    if isinstance(fields, str):
        fields = [fields]
    if not isinstance(fields, (list, tuple)) or not all(isinstance(f, str) and f for f in fields):
        raise TypeError(f"Lambda: fields must be a list of field names, got {fields!r}")
    return list(fields)


_ADDED_KINDS = ("text", "bytes", "json", "label")


def _added_fields(adds) -> list:
    """Lambda(adds=) as [(name, kind, dtype, shape or None)]: a dict name -> "text", "bytes",
    "json", "label", a numpy dtype (an array of any shape) or (dtype, shape) (None or -1
    where it varies)."""
    if adds is None:
        return []
    if not isinstance(adds, dict):
        raise TypeError(f"Lambda: adds must be a dict of field name -> kind, got {adds!r}")
    out = []
    for name, what in adds.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"Lambda: adds: a field name must be a non-empty str, got {name!r}")
        if isinstance(what, str) and what in _ADDED_KINDS:
            out.append((name, what, "", None))
            continue
        if what == "scalar" or (isinstance(what, tuple) and len(what) == 2 and
                                what[0] == "scalar"):
            dtype = "float64" if what == "scalar" else what[1]
            if dtype not in ("int64", "float64"):
                raise ValueError(f"Lambda: adds[{name!r}]: a scalar is 'int64' or 'float64', "
                                 f"got {dtype!r}")
            out.append((name, "scalar", dtype, None))
            continue
        shape = None
        if isinstance(what, tuple) and len(what) == 2:
            what, shape = what
            try:
                shape = [-1 if d is None else int(d) for d in shape]
            except TypeError as e:
                raise TypeError(f"Lambda: adds[{name!r}]: shape must be a sequence of ints "
                                f"(None where it varies), got {shape!r}") from e
        try:
            dtype = np.dtype(what).name
        except TypeError as e:
            raise ValueError(f"Lambda: adds[{name!r}] must be one of {_ADDED_KINDS}, 'scalar', "
                             f"a numpy dtype or (dtype, shape), got {what!r}") from e
        out.append((name, "array", dtype, shape))
    return out


def _transform_list(transforms, path: str = "transforms") -> list:
    """Flattens one transform, a list/tuple, stoker.Compose or torchvision's Compose into a list
    of native transforms; anything else is a TypeError naming it and what to use instead."""
    if isinstance(transforms, _C.Transform):
        return [transforms]
    if isinstance(transforms, Lambda):
        return [transforms._native]
    if transforms is None:
        return []
    inner = getattr(transforms, "transforms", None)
    if isinstance(transforms, Compose) or (
            type(transforms).__name__ == "Compose" and isinstance(inner, (list, tuple))):
        transforms = inner
    if isinstance(transforms, (list, tuple)):
        out = []
        for i, t in enumerate(transforms):
            out.extend(_transform_list(t, f"{path}[{i}]"))
        return out
    if (callable(transforms) and not isinstance(transforms, type)
            and not (type(transforms).__module__ or "").startswith("torchvision")):
        return [Lambda(transforms)._native]
    raise TypeError(_unsupported(transforms, path))


def _unsupported(obj, path: str) -> str:
    cls = type(obj)
    name = cls.__name__
    module = cls.__module__ or ""
    what = f"{path}: {module + '.' if module != 'builtins' else ''}{name}"
    if module.startswith("torchvision"):
        import stoker
        if name in _INSTEAD:
            return f"{what} is not supported: {_INSTEAD[name]}"
        if hasattr(stoker, name):
            return (f"{what} is a torchvision transform: use stoker.{name} (same arguments), "
                    "which runs in the native pipeline")
        return (f"{what} is not supported by stoker; see the table of torchvision transforms "
                "in docs/torchvision.md for what to use instead")
    return (f"{what} is not a stoker transform: transforms= takes stoker transforms "
            "(stoker.RandomResizedCrop(224), ...), a list of them, or stoker.Compose / "
            "torchvision.transforms.Compose of them")
