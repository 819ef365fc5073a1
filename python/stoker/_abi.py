"""The one check between stoker's extension and the numpy beside it.

pybind11 older than 2.12 reads numpy's array descriptors with numpy 1's layout; beside
numpy 2 such an extension runs, but reads item sizes and flags wrongly (seen: detection
boxes kept that should have been dropped). stoker refuses to import there, naming the fix.
"""

from __future__ import annotations


def _major_minor(version: str) -> tuple:
    parts = []
    for p in version.split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts)


def numpy_mismatch(numpy_version: str, pybind11_version: tuple, module_file: str) -> str | None:
    """The error message when an extension built with `pybind11_version` cannot run beside
    numpy `numpy_version`, else None."""
    if _major_minor(numpy_version) < (2, 0) or tuple(pybind11_version[:2]) >= (2, 12):
        return None
    built = ".".join(str(v) for v in pybind11_version)
    return (f"stoker's extension {module_file} was built with pybind11 {built}, which reads "
            f"numpy 2's arrays wrongly, and this environment has numpy {numpy_version}. "
            "Rebuild stoker here (pip install --force-reinstall . from its checkout: pip's "
            "build takes pybind11 >= 2.12 from PyPI), or install numpy<2.")


def check(c_module) -> None:
    """Raises ImportError when `c_module` (stoker._C) cannot run beside this numpy."""
    import numpy
    msg = numpy_mismatch(numpy.__version__, tuple(getattr(c_module, "_pybind11_version", (0, 0))),
                         getattr(c_module, "__file__", "stoker._C"))
    if msg:
        raise ImportError(msg)
