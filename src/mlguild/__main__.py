"""`python -m mlguild` runs the CLI."""

from .cli.app import main

main()
