"""``python -m memci.cli``: the same as the ``memci`` command."""

from memci.cli import main

main()
