"""``python -m localmem``: the command line."""

from .cli import main

main()
