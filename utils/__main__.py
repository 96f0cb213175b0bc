"""`python -m evalpack`: the `evalpack` command."""

from .commands.cli import main

main()
