"""Fixtures of the unit tests that more than one module uses."""

import pytest

from ..corpus import fakes


@pytest.fixture
def served(tmp_path):
    """`serve(content, **knobs)`: a fake registry (tests/corpus/fakes.py) serving `content`, closed after the test."""
    made = []

    def serve(content, **knobs):
        made.append(fakes.FakeRegistry(tmp_path / f"registry{len(made)}.log", content, **knobs))
        return made[-1]

    yield serve
    for server in made:
        server.close()
