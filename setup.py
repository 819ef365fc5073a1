"""stoker's setuptools glue: the wheel's contents come from the CMake build.

pyproject.toml holds the metadata; this file adds what setuptools cannot say there:
- the version, read from include/stoker/version.h (the one place it is written; CMake
  reads it there too);
- a ``build_ext`` that runs CMake for the ``_C`` extension and the ``stoker`` CLI, and
  puts them in the package: ``stoker/_C*.so``, ``stoker/_version.py``, ``stoker/bin/stoker``
  and the scripts the CLI runs, ``stoker/share/stoker/{bench,tools}/*.py``.

Build trees, both inside the checkout so that ccache (``base_dir``) reuses the objects of
``make``'s build/:
- a wheel (``pip install .``, ``python3 -m build --wheel``): ``build-wheel/`` (or
  ``$STOKER_WHEEL_BUILD_DIR``), configured without the tests;
- an editable install (``pip install -e .``): ``build/`` itself, the tree ``make`` uses;
  the package in ``python/stoker`` is used in place and ``python/stoker/bin/stoker`` links
  to ``build/stoker``, so a later ``make`` updates the installed package.
Parallel jobs: ``$CMAKE_BUILD_PARALLEL_LEVEL``, else one per core.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def read_version() -> str:
    """MAJOR.MINOR.PATCH from include/stoker/version.h, where CMake reads it too."""
    text = (ROOT / "include" / "stoker" / "version.h").read_text()
    parts = [re.search(rf"^#define STOKER_VERSION_{p} +([0-9]+)$", text, re.M)
             for p in ("MAJOR", "MINOR", "PATCH")]
    if None in parts:
        raise RuntimeError("include/stoker/version.h: no STOKER_VERSION_MAJOR/MINOR/PATCH")
    return ".".join(m.group(1) for m in parts)


def cache_value(build_dir: Path, name: str) -> str | None:
    """The value of `name` in build_dir's CMakeCache.txt, or None."""
    for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return None


def run(cmd: list[str]) -> None:
    print("stoker setup:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


class CMakeBuild(build_ext):
    """Builds the extension (and the CLI) with CMake instead of compiling sources itself."""

    def run(self) -> None:
        # setuptools clears `inplace` while build_ext runs and copies the extension into
        # the source tree afterwards; remember whether this is an editable/in-place build.
        self._stoker_in_place = bool(self.inplace or getattr(self, "editable_mode", False))
        super().run()

    def build_extension(self, ext: Extension) -> None:
        if shutil.which("cmake") is None:
            sys.exit("stoker: building needs cmake (Debian: apt-get install cmake; or `make deps`)")
        in_place = self._stoker_in_place
        build_dir = (ROOT / "build" if in_place else
                     Path(os.environ.get("STOKER_WHEEL_BUILD_DIR", ROOT / "build-wheel")))
        build_dir = build_dir.resolve()
        configured = (build_dir / "CMakeCache.txt").exists()
        # The interpreter's real path: a venv's python may be deleted later, the build tree
        # kept (the extension is the same for the venv and its base interpreter).
        python = os.path.realpath(sys.executable)
        args = ["-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={python}"]
        if not configured and shutil.which("ninja"):
            args += ["-G", "Ninja"]
        # The pybind11 of the building environment (pip's, in an isolated build or a venv)
        # rather than whichever CMake finds first (Debian's 2.10 predates numpy 2).
        try:
            import pybind11
            args.append(f"-Dpybind11_DIR={pybind11.get_cmake_dir()}")
        except ImportError:
            pass
        if not in_place:
            args += ["-DSTOKER_BUILD_TESTS=OFF",
                     f"-DSTOKER_PYTHON_OUTPUT_DIR={build_dir / 'python' / 'stoker'}"]
        if not (in_place and configured):  # `make`'s tree keeps its own configuration
            run(["cmake", "-S", str(ROOT), "-B", str(build_dir), *args])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        run(["cmake", "--build", str(build_dir), "--target", "_C", "stoker_cli", "-j", jobs])

        out_dir = Path(cache_value(build_dir, "STOKER_PYTHON_OUTPUT_DIR"))
        module = out_dir / ("_C" + sysconfig.get_config_var("EXT_SUFFIX"))
        if not module.exists():
            found = ", ".join(p.name for p in out_dir.glob("_C*")) or "nothing"
            sys.exit(f"stoker: {build_dir} built {found} in {out_dir}, not {module.name} for "
                     f"{sys.executable}; configure it for this Python (-DPython_EXECUTABLE=...)")
        dest = Path(self.get_ext_fullpath(ext.name))  # <build_lib>/stoker/_C<suffix>
        pkg = dest.parent
        pkg.mkdir(parents=True, exist_ok=True)
        shutil.copy2(module, dest)
        shutil.copy2(out_dir / "_version.py", pkg / "_version.py")
        (pkg / "bin").mkdir(exist_ok=True)
        shutil.copy2(build_dir / "stoker", pkg / "bin" / "stoker")
        shutil.copytree(build_dir / "share" / "stoker", pkg / "share" / "stoker",
                        dirs_exist_ok=True, symlinks=False,
                        ignore=shutil.ignore_patterns("python", "__pycache__"))
        if in_place:
            # Used in place: python/stoker/bin/stoker -> build/stoker (the binary finds its
            # scripts beside its real path, build/share/stoker).
            src_pkg = ROOT / "python" / "stoker"
            if out_dir.resolve() != src_pkg.resolve():
                shutil.copy2(out_dir / "_version.py", src_pkg / "_version.py")
            link = src_pkg / "bin" / "stoker"
            link.parent.mkdir(exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(os.path.relpath(build_dir / "stoker", link.parent))

    def copy_extensions_to_source(self) -> None:
        """As setuptools does, but leaves an identical module alone and replaces a changed
        one by a rename: `make`'s tree writes _C into python/stoker itself, and a process
        that has the module mapped (a running test) must not see it truncated."""
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace_file, regular_file = self._get_inplace_equivalent(build_py, ext)
            if os.path.exists(inplace_file) and filecmp.cmp(inplace_file, regular_file,
                                                            shallow=False):
                continue
            tmp = inplace_file + ".tmp"
            shutil.copy2(regular_file, tmp)
            os.replace(tmp, inplace_file)


setup(
    version=read_version(),
    ext_modules=[Extension("stoker._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # setuptools' own staging folder, beside the CMake trees (not in `make`'s build/).
    options={"build": {"build_base": str(Path("build-wheel") / "setuptools")}},
)
