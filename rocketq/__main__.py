"""``python -m rocketq``: the same command as ``rocketq``."""

from rocketq.cli.main import main

main()
