"""The ``stoker`` command of the installed package: runs the bundled C++ CLI.

The wheel carries the CLI binary as ``stoker/bin/stoker`` and the scripts it runs
(``bench --compare``, ``tune --plot``) under ``stoker/share/stoker``, where the binary
finds them relative to itself. ``STOKER_PYTHON`` tells it to run those scripts with this
interpreter (the one stoker is installed for) instead of ``/usr/bin/python3``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def binary() -> Path:
    """The path of the bundled ``stoker`` CLI binary."""
    return Path(__file__).resolve().parent / "bin" / "stoker"


def main() -> None:
    exe = binary()
    if not os.access(exe, os.X_OK):
        sys.exit(f"stoker: the CLI binary {exe} is missing; reinstall the package")
    env = dict(os.environ)
    env.setdefault("STOKER_PYTHON", sys.executable)
    os.execve(exe, ["stoker", *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
