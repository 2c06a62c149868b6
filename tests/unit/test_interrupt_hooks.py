"""An interrupt that lands where Python ignores exceptions (a weakref's callback, as the import system's
module locks run while a command imports): delivered again, so the command still ends with one line and
its status instead of printing "Exception ignored" and going on. Run in a child interpreter, whose
handlers are its own."""

import subprocess
import sys

import pytest

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


# A signal that came while the package imported core/interrupts.py (held by ngcbuild/__init__.py): a
# command ends with one line and its status; any other program gets it as it would have, under its own
# handler (a KeyboardInterrupt for Ctrl-C), never swallowed.
HELD = """
import sys, _signal
sys.orig_argv = [sys.executable, *{argv!r}]
from ngcbuild.core.interrupts import settle
settle([_signal.{name}], {{_signal.SIGINT: _signal.default_int_handler, _signal.SIGTERM: _signal.SIG_DFL}})
import time
time.sleep(5)
print("lost")
"""


def _held(argv: list[str], name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HELD.format(argv=argv, name=name)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


def test_a_signal_held_while_a_command_imported_is_one_line_and_its_status():
    for name, status, line in (("SIGINT", 130, "ngcbuild: interrupted"), ("SIGTERM", 143, "ngcbuild: terminated")):
        result = _held(["-m", "ngcbuild", "render"], name)
        assert (result.returncode, result.stderr.strip(), result.stdout) == (status, line, ""), result


def test_a_signal_held_while_another_program_imported_ngcbuild_reaches_its_own_handler():
    interrupted = _held(["-c", "import ngcbuild"], "SIGINT")
    # Python ends an uncaught KeyboardInterrupt by the signal itself (-2), after its traceback
    assert interrupted.returncode == -2 and "KeyboardInterrupt" in interrupted.stderr, interrupted
    assert "lost" not in interrupted.stdout
    terminated = _held(["-c", "import ngcbuild"], "SIGTERM")
    assert terminated.returncode == -15 and "lost" not in terminated.stdout, terminated


# A signal that lands in a class body's `__set_name__` (pydantic's models, while a command imports them)
# reaches the command as a RuntimeError caused by the interrupt: still one line and its status.
SET_NAME = """
import sys, _signal
sys.orig_argv = [sys.executable, "-m", "ngcbuild", "render"]
from ngcbuild.core import interrupts
interrupts.install()


class Field:
    def __set_name__(self, owner, name):
        _signal.raise_signal(_signal.SIGTERM)
        sum(range(10))


class Model:
    field = Field()


print("lost")
"""


def test_an_interrupt_python_wrapped_in_another_exception_is_one_line_and_its_status():
    done = subprocess.run([sys.executable, "-c", SET_NAME], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr.strip(), done.stdout) == (143, "ngcbuild: terminated", ""), done


def test_a_task_that_raises_a_wrapped_interrupt_raises_the_interrupt():
    from ngcbuild.cli.guard import guarded
    from ngcbuild.core.interrupts import Interrupted, within

    def task():
        try:
            raise Interrupted(2)
        except Interrupted as exc:
            raise RuntimeError("Error calling __set_name__") from exc

    with pytest.raises(Interrupted) as raised:
        guarded(task)()
    assert raised.value.exit_code == 130
    assert within(ValueError("another failure")) is None


def test_a_failure_that_took_a_raised_signals_place_is_the_interrupt(monkeypatch):
    # pydantic-core turns an exception raised while it builds a schema into a SchemaError holding only its
    # text (CI: SIGINT at 0.65 s while `invoke render` imported the manifest model): no chain to follow
    from ngcbuild.core import interrupts

    failure = ValueError("Error building `nullable` serializer:\n  SchemaError: ...\n  Interrupted: 2")
    assert interrupts.within(failure) is None  # no signal came: another failure
    monkeypatch.setattr(interrupts, "_first", [2])
    found = interrupts.within(failure)
    assert isinstance(found, interrupts.Interrupted) and found.exit_code == 130
