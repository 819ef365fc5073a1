#!/usr/bin/env python3
"""Writes, or with --check verifies, the two files generated from the built Python package:

- ``docs/api.md``: the Python API reference, from the docstrings and signatures of every
  name in ``stoker.__all__`` (and their public members);
- ``python/stoker/_C.pyi``: type stubs for the extension module, from the signatures
  pybind11 writes into its docstrings.

    PYTHONPATH=python /usr/bin/python3 tools/gen_python_docs.py          # rewrite both
    PYTHONPATH=python /usr/bin/python3 tools/gen_python_docs.py --check  # exit 1 if stale

``--check`` runs in ctest (``python_docs_current``), so a changed docstring or binding
fails the tests until the files are regenerated. A public name without a docstring, or
one that no section of the reference lists, is an error too.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API_MD = ROOT / "docs" / "api.md"
STUB = ROOT / "python" / "stoker" / "_C.pyi"

# The reference's sections, in order; every name in stoker.__all__ must be in one.
SECTIONS = [
    ("Sources", "Where samples come from. Pass one to `Loader`.",
     ["ImageFolder", "Npy", "HDF5", "Shards"]),
    ("Loading", "", ["Loader", "diagnose"]),
    ("Sampling", "Which samples each epoch visits (`Loader(..., sampler=...)`); draws depend "
     "on `(seed, epoch)` only.", ["WeightedSampler", "ClassBalanced", "Subset"]),
    ("Transforms", "CPU transforms, with torchvision's names and arguments. `ToTensor` is "
     "implied; the list must end in a fixed size.",
     ["Compose", "RandomResizedCrop", "Resize", "CenterCrop", "RandomCrop",
      "RandomHorizontalFlip", "RandomVerticalFlip", "Normalize"]),
    ("Warps", "Geometric warps with Pillow's arithmetic; they run on the output-size image, "
     "after the crops, resizes and flips.",
     ["RandomRotation", "RandomAffine", "RandomPerspective"]),
    ("Colour", "Photometric transforms; they run on the output-size image, after the crop.",
     ["ColorJitter", "Grayscale", "RandomGrayscale", "RandomAutocontrast", "RandomEqualize",
      "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness", "GaussianBlur"]),
    ("Policies", "Automatic augmentation policies, torchvision's op lists and magnitude bins.",
     ["TrivialAugmentWide", "RandAugment", "AutoAugment"]),
    ("Python steps", "A Python function per sample, on the uint8 output-size image.",
     ["Lambda"]),
    ("On the output and the batch", "", ["RandomErasing", "MixUp", "CutMix"]),
    ("GPU", "", ["DeviceAugment"]),
    ("Errors", "", ["StokerError"]),
]


def clean_type(t: str) -> str:
    """pybind11's spelling of a type -> Python's (stoker._C.X and stoker::X -> X,
    List[float[3]] -> List[float], numpy.ndarray[numpy.uint8] -> numpy.ndarray)."""
    t = re.sub(r"\bstoker(?:\._C\.|::)", "", t)
    t = re.sub(r"numpy\.ndarray\[[\w.]+\]", "numpy.ndarray", t)
    t = re.sub(r"\b(int|float|bool|str)\[\d+\]", r"\1", t)
    return t


def split_params(params: str) -> list[str]:
    """Splits 'a: int, b: List[int] = 3' at the top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def method_signature(func, name: str) -> tuple[str, str, str]:
    doc = func.__doc__ or ""
    first, _, rest = doc.lstrip("\n").partition("\n")
    m = re.match(rf"^{re.escape(name)}\((.*)\)(?: -> (.+))?$", first)
    if m is None:
        raise SystemExit(f"gen_python_docs: no pybind11 signature for {name}: {first!r}")
    params = split_params(m.group(1))[1:]  # drop self
    return ", ".join(clean_type(p) for p in params), clean_type(m.group(2) or "None"), rest


def function_signature(func, name: str) -> tuple[str, str, str]:
    doc = func.__doc__ or ""
    first, _, rest = doc.lstrip("\n").partition("\n")
    m = re.match(rf"^{re.escape(name)}\((.*)\)(?: -> (.+))?$", first)
    if m is None:
        raise SystemExit(f"gen_python_docs: no pybind11 signature for {name}: {first!r}")
    return (", ".join(clean_type(p) for p in split_params(m.group(1))),
            clean_type(m.group(2) or "None"), rest)


def property_type(prop) -> str:
    doc = (prop.fget.__doc__ or "").strip().splitlines()
    m = re.match(r"^\(.*\) -> (.+)$", doc[0]) if doc else None
    return clean_type(m.group(1)) if m else "Any"


def property_doc(prop) -> str:
    """A pybind11 property's own docstring (its getter's holds only the signature)."""
    return "" if prop.__doc__ == prop.fget.__doc__ else (prop.__doc__ or "").strip()


def stub_params(params: str) -> str:
    """Defaults become `...` (their pybind11 reprs need not be valid Python)."""
    return ", ".join(re.sub(r" = .*$", " = ...", p) for p in split_params(params))


def indent_doc(doc: str, pad: str) -> list[str]:
    doc = inspect.cleandoc(doc).replace('"""', "'''")
    if not doc:
        return []
    lines = doc.splitlines()
    if len(lines) == 1:
        return [f'{pad}"""{lines[0]}"""']
    return [f'{pad}"""{lines[0]}'] + [f"{pad}{ln}" if ln else "" for ln in lines[1:]] + [
        f'{pad}"""']


# ---------------------------------------------------------------------------------------
# _C.pyi


def gen_stub(C) -> str:
    out = ["# Type stubs for stoker._C, generated by tools/gen_python_docs.py from the",
           "# signatures pybind11 records; do not edit (rerun the tool).",
           "from typing import Any, Dict, List, Optional, Tuple", "", "import numpy", ""]
    names = sorted(n for n in vars(C) if not n.startswith("__"))
    classes = [n for n in names if isinstance(getattr(C, n), type)]
    # Base classes first.
    ordered: list[str] = []
    def visit(n):
        if n in ordered:
            return
        for b in getattr(C, n).__bases__:
            if b.__module__ == C.__name__:
                visit(b.__name__)
        ordered.append(n)
    for n in classes:
        visit(n)
    for n in ordered:
        cls = getattr(C, n)
        bases = [b.__name__ for b in cls.__bases__ if b.__module__ == C.__name__]
        if issubclass(cls, BaseException):
            bases = [b.__name__ for b in cls.__bases__]
        out.append(f"class {n}({', '.join(bases)}):" if bases else f"class {n}:")
        body = indent_doc(cls.__doc__ or "", "    ")
        for m, v in vars(cls).items():
            if m.startswith("__") and m not in ("__init__", "__len__", "__iter__", "__next__"):
                continue
            if isinstance(v, property):
                body += ["    @property", f"    def {m}(self) -> {property_type(v)}: ..."]
            elif isinstance(v, staticmethod):
                params, ret, _ = function_signature(getattr(cls, m), m)
                body += ["    @staticmethod", f"    def {m}({stub_params(params)}) -> {ret}: ..."]
            elif callable(v) and (v.__doc__ or "").startswith(f"{m}("):
                params, ret, _ = method_signature(v, m)
                sep = ", " if params else ""
                body.append(f"    def {m}(self{sep}{stub_params(params)}) -> {ret}: ...")
        out += body or ["    ..."]
        out.append("")
    for n in names:
        f = getattr(C, n)
        if isinstance(f, type) or not callable(f):
            continue
        params, ret, _ = function_signature(f, n)
        out.append(f"def {n}({stub_params(params)}) -> {ret}: ...")
    text = "\n".join(out).rstrip() + "\n"
    compile(text, str(STUB), "exec")  # a stub that is not valid Python is an error here
    return text


# ---------------------------------------------------------------------------------------
# docs/api.md


def py_signature(obj, drop_self: bool = False) -> str:
    """`(a: int, *, b: str = 'x') -> R` with the annotations as written (they are strings
    under `from __future__ import annotations`) and the defaults' reprs."""
    sig = inspect.signature(obj)
    params = list(sig.parameters.values())[1 if drop_self else 0:]
    parts, star_done = [], False
    for p in params:
        if p.kind == p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.kind == p.VAR_POSITIONAL:
            star_done = True
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.annotation is not p.empty:
            text += f": {p.annotation}"
        if p.default is not p.empty:
            text += f" = {p.default!r}" if p.annotation is not p.empty else f"={p.default!r}"
        parts.append(text)
    ret = "" if sig.return_annotation in (sig.empty, None, "None") else f" -> {sig.return_annotation}"
    return f"({', '.join(parts)}){ret}"


def doc_markdown(doc: str) -> list[str]:
    """The first paragraph as text; the rest verbatim in a text block (docstrings are
    plain text with indented argument lists, which Markdown would run together)."""
    doc = inspect.cleandoc(doc)
    head, _, rest = doc.partition("\n\n")
    out = [" ".join(head.split()), ""]
    if rest.strip():
        out += ["```text", rest.strip("\n"), "```", ""]
    return out


def describe(stoker, C, name: str) -> list[str]:
    obj = getattr(stoker, name)
    doc = inspect.getdoc(obj) or ""
    out: list[str] = []
    if isinstance(obj, type) and obj.__module__ == C.__name__:  # a pybind11 class
        if issubclass(obj, BaseException):
            base = obj.__bases__[0].__name__
            out.append(f"### `stoker.{name}` (a `{base}`)")
        else:
            params, _, _ = method_signature(obj.__init__, "__init__")
            out.append(f"### `stoker.{name}({params})`")
        members = [(m, v) for m, v in vars(obj).items() if not m.startswith("_")]
        for base in obj.__mro__[1:]:
            if base.__module__ == C.__name__:
                members += [(m, v) for m, v in vars(base).items()
                            if not m.startswith("_") and m not in dict(members)]
        doc_of = lambda m, v: (property_doc(v) if isinstance(v, property)
                               else method_signature(v, m)[2].strip())
        sig_of = lambda m, v: (f"`{m}` → `{property_type(v)}`" if isinstance(v, property)
                               else "`{}({})` → `{}`".format(m, *method_signature(v, m)[:2]))
    else:
        kind = "class " if isinstance(obj, type) else ""
        out.append(f"### {kind}`stoker.{name}{py_signature(obj)}`")
        members = []
        if isinstance(obj, type):
            members = [(m, v) for m, v in vars(obj).items()
                       if not m.startswith("_") and (callable(v) or isinstance(v, property))
                       and not (hasattr(obj, "__dataclass_fields__")
                                and m in obj.__dataclass_fields__)]
        doc_of = lambda m, v: inspect.getdoc(v.fget if isinstance(v, property) else v) or ""
        sig_of = lambda m, v: (f"`{m}`" if isinstance(v, property)
                               else f"`{m}{py_signature(v, drop_self=True)}`")
    if not doc.strip():
        raise SystemExit(f"gen_python_docs: stoker.{name} has no docstring")
    out += [""] + doc_markdown(doc)
    if members:
        for m, v in members:
            d = doc_of(m, v)
            first = " ".join(d.split("\n\n")[0].split()) if d else ""
            out.append(f"- {sig_of(m, v)}" + (f": {first}" if first else ""))
        out.append("")
    return out


def gen_api(stoker, C) -> str:
    listed = [n for _, _, names in SECTIONS for n in names]
    missing = sorted(set(stoker.__all__) - set(listed))
    extra = sorted(set(listed) - set(stoker.__all__))
    if missing or extra:
        raise SystemExit(f"gen_python_docs: update SECTIONS: not listed {missing}, "
                         f"not exported {extra}")
    out = ["# Python API reference", "",
           "<!-- Generated by tools/gen_python_docs.py from the docstrings; do not edit. "
           "ctest python_docs_current fails when it is stale. -->", "",
           "Everything below is importable from the `stoker` package (`import stoker`); "
           "`stoker.__version__` is the package version (the same as `stoker --version`). "
           "The command-line tool is described by `stoker --help` and `stoker VERB --help`.",
           ""]
    for title, intro, names in SECTIONS:
        out += [f"## {title}", ""]
        if intro:
            out += [intro, ""]
        for n in names:
            out += describe(stoker, C, n)
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = ap.parse_args()
    import stoker
    from stoker import _C
    stale = []
    for path, text in ((STUB, gen_stub(_C)), (API_MD, gen_api(stoker, _C))):
        old = path.read_text() if path.exists() else ""
        if old == text:
            continue
        if args.check:
            stale.append(path)
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), str(path), "generated", n=1))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"gen_python_docs: stale: {', '.join(str(p.relative_to(ROOT)) for p in stale)}; "
              "rerun PYTHONPATH=python /usr/bin/python3 tools/gen_python_docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
