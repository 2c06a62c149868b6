"""The release workflow's dispatch input: releases named by hand narrow the plan; bad names stop it."""

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.workflow.choose import narrow, parse_names

PLAN = {"releases": ["25.12", "cuda-dev", "dev"], "changed_files": None,
        "jobs": [{"release": "25.12", "platform": "linux/amd64"}, {"release": "cuda-dev", "platform": "linux/amd64"},
                 {"release": "dev", "platform": "linux/amd64"}, {"release": "dev", "platform": "linux/arm64"}]}


@pytest.mark.parametrize("text, names", [("", []), ("  ", []), ("dev", ["dev"]), ("dev, 25.12", ["dev", "25.12"]),
                                         ("dev\n25.12 dev", ["dev", "25.12"]), (",dev,,", ["dev"])])
def test_names(text, names):
    assert parse_names(text) == names


def test_blank_keeps_every_release():
    assert narrow(PLAN, "") == PLAN and narrow(PLAN, None) == PLAN


def test_narrowed_to_the_named_releases_every_platform():
    plan = narrow(PLAN, "dev")
    assert plan["releases"] == ["dev"]
    assert [job["platform"] for job in plan["jobs"]] == ["linux/amd64", "linux/arm64"]


def test_unknown_name_fails_naming_it_and_the_choices():
    with pytest.raises(UserError) as caught:
        narrow(PLAN, "dev nope")
    message = str(caught.value)
    assert message.startswith("--releases: nope: no buildable release") and "cuda-dev, dev" in message
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("text", ["dev;rm", "../dev", "DEV", "a" * 40, "x" * 5000, "dev\x00"])
def test_malformed_names_are_refused_short(text):
    with pytest.raises(UserError) as caught:
        parse_names(text)
    assert len(str(caught.value)) < 300 and "\n" not in str(caught.value)
