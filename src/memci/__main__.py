"""``python -m memci``: the same as the ``memci`` command."""

from memci.cli import main

main()
