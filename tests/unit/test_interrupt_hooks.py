"""An interrupt that lands where Python ignores exceptions (a weakref's callback, as the import system's
module locks run while a command imports): delivered again, so the command still ends with one line and
its status instead of printing "Exception ignored" and going on. Run in a child interpreter, whose
handlers are its own."""

import subprocess
import sys

from ..conftest import REPO

CHILD = """
import sys, time, weakref, _signal
from ngcbuild.core import interrupts

interrupts.install()


class Thing:
    pass


def callback(ref):
    _signal.raise_signal(_signal.SIGTERM)  # the handler runs here, inside the callback
    sum(range(10))


thing = Thing()
ref = weakref.ref(thing, callback)
try:
    del thing
    for _ in range(500):  # the command goes on: the signal, sent again, lands here
        time.sleep(0.01)
except interrupts.Interrupted as exc:
    print("interrupted", exc.exit_code)
    sys.exit(0)
print("lost")
sys.exit(1)
"""


def test_an_interrupt_in_a_callback_python_ignores_is_delivered_again():
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "interrupted 143"
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr
