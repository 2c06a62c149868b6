"""The lock check's closure (manifest/lock_check._outside_closure) is linear whatever the lock's shape (issue
54 item 1): a chain of entries each `# via` the next, in the order that made the old fixpoint reach one
entry a pass (20,000 entries: past two minutes), and the same answers as before on small locks."""

from __future__ import annotations

import time

from ngcbuild.manifest.lock import LockedPin
from ngcbuild.manifest.lock_check import _outside_closure


def _pin(name: str, *via: str, line: int = 0) -> LockedPin:
    return LockedPin(name=name, version="1.0", hashes=("0" * 64,), via=via, line=line)


def _chain(count: int, broken_at: int | None = None) -> list[LockedPin]:
    names = [f"p{number:05d}" for number in range(count)]
    return [_pin(name, "nothing" if number == broken_at else (names[number + 1] if number + 1 < count else "-r"),
                 line=number) for number, name in enumerate(names)]


def test_a_chain_of_20000_entries_each_via_the_next_is_checked_in_linear_time():
    entries = _chain(20_000)
    started = time.perf_counter()
    assert _outside_closure(entries, {"p19999"}, set()) is None
    assert time.perf_counter() - started < 2  # 0.14 s measured; the fixpoint took 42 s for 4,000
    broken = _outside_closure(_chain(20_000, broken_at=10_000), {"p19999"}, set())
    assert broken is not None and broken.name == "p00000"


def test_what_is_reached_through_via_the_roots_and_the_base():
    entries = [_pin("a", "-r"), _pin("b", "a"), _pin("c", "torch"), _pin("d", "e"), _pin("e", "d"), _pin("f", "-r")]
    assert _outside_closure(entries, {"a"}, {"torch"}).name == "d"  # a cycle reached by nothing
    assert _outside_closure(entries[:3], {"a"}, {"torch"}) is None
    assert _outside_closure([_pin("Foo_Bar", "-r"), _pin("x", "foo-bar")], {"foo-bar"}, set()) is None
    assert _outside_closure([_pin("x", "-r")], set(), set()).name == "x"  # "-r" alone is no root's name
