"""derive/as_of_index.py: a resolve "as of a day" asks the first index whether it says when its files were
uploaded, on the first of the team's projects it lists (tests/fake_index.py on the loopback)."""

import pytest

from ngcbuild.derive.as_of_index import NoUploadTimes, check_dates_served
from ngcbuild.resolver.resolution import Problem
from ngcbuild.verify.web import Web

from ..fake_index import FakeIndex, Wheel


@pytest.fixture
def fake():
    served = FakeIndex()
    yield served
    served.close()


def _problem(fake: FakeIndex, day: str | None) -> Problem:
    return Problem(base="dev", team="team-y", requirements=("unknown-here>=1", "einops>=0.8", "tqdm"), kept=(),
                   released=(), stand_ins=(), protected=frozenset(), targets=(),
                   indexes=(f"{fake.url}", "https://download.pytorch.org/whl/cpu"), index_as_of=day)


def test_an_index_that_gives_upload_times_is_read_as_of_a_day(fake):
    fake.add_wheels(Wheel("einops", "0.8.2"))
    check_dates_served(_problem(fake, "2026-11-20T23:59:59Z"), "--index-as-of", Web(environ={}))
    asked = [path for path, _ in fake.requests]
    assert any("unknown-here" in p for p in asked) and any("einops" in p for p in asked)  # the first it knows decides
    assert not any("tqdm" in p for p in asked)


def test_an_index_without_upload_times_is_refused_only_when_a_day_is_asked(fake):
    fake.add_wheels(Wheel("einops", "0.8.2"))
    fake.misbehaviour.no_upload_times = True
    with pytest.raises(NoUploadTimes, match="gives no upload time for any of einops's 1 files"):
        check_dates_served(_problem(fake, "2026-11-20T23:59:59Z"), "--index-as-of", Web(environ={}))
    before = len(fake.requests)
    check_dates_served(_problem(fake, None), "--index-as-of", Web(environ={}))  # today: nothing to ask
    assert len(fake.requests) == before
