"""`python -m ngcbuild TASK`: the same as `ngcbuild TASK`."""

from ngcbuild.cli import main

main()
