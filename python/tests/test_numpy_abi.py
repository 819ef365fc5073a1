"""stoker refuses to import an extension built with a pybind11 that misreads numpy 2
(stoker/_abi.py), and runs one that does not. Both lanes run this: Debian's (numpy 1.24,
pybind11 2.10) and the torch 2.x venv (numpy 2, pip's pybind11)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from stoker import _C, _abi


@pytest.mark.parametrize("numpy_version, pybind11_version, refused", [
    ("1.24.2", (2, 10, 3), False),
    ("1.26.4", (2, 11, 1), False),
    ("2.0.0", (2, 11, 1), True),
    ("2.0.0rc1", (2, 10, 3), True),
    ("2.4.6", (2, 12, 0), False),
    ("2.4.6", (3, 1, 0), False),
])
def test_mismatch_rule(numpy_version, pybind11_version, refused):
    msg = _abi.numpy_mismatch(numpy_version, pybind11_version, "/x/_C.so")
    assert (msg is not None) == refused, msg
    if refused:
        built = ".".join(map(str, pybind11_version))
        assert f"pybind11 {built}" in msg and f"numpy {numpy_version}" in msg, msg
        assert "/x/_C.so" in msg and "numpy<2" in msg, msg


def test_this_build_fits_this_numpy():
    v = _C._pybind11_version
    assert isinstance(v, tuple) and len(v) == 3 and all(isinstance(x, int) for x in v), v
    assert _abi.numpy_mismatch(np.__version__, v, _C.__file__) is None
    if int(np.__version__.split(".")[0]) >= 2:
        assert v[:2] >= (2, 12), v  # the torch 2.x lane's build must use pip's pybind11


def test_an_old_build_beside_this_numpy():
    old = types.SimpleNamespace(_pybind11_version=(2, 10, 3), __file__="/old/_C.so")
    if int(np.__version__.split(".")[0]) >= 2:
        with pytest.raises(ImportError, match=r"/old/_C.so was built with pybind11 2\.10\.3"):
            _abi.check(old)
    else:
        _abi.check(old)  # numpy 1: nothing to refuse
