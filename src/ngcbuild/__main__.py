"""`python -m ngcbuild TASK`: the same as `ngcbuild TASK`."""

from .cli import main

main()
