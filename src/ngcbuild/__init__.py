"""ngcbuild: NGC-style PyTorch container images from one manifest per release."""

# The package's first instruction, before anything slower is imported: when the process is one of our
# commands, Ctrl-C and SIGTERM are one line and exit 130/143 from here on (core/interrupts.py).
from ngcbuild.core.interrupts import install_if_a_command

install_if_a_command()
