"""`python -m evalpack`: the `evalpack` command."""

from .cli.cli import main

main()
