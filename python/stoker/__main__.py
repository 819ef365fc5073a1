"""``python -m stoker ...`` runs the stoker CLI (the same as the ``stoker`` command)."""

from stoker._cli import main

main()
