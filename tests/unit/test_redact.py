"""core/redact.py: the one function through which a value that may carry a credential is shown."""

from __future__ import annotations

import time

import pytest

from ngcbuild.core.errors import excerpt
from ngcbuild.core.redact import mask, redact
from ngcbuild.core.references import shown_url
from ngcbuild.core.text import safe

SECRET = "S3CR3T"


@pytest.mark.parametrize("value, kept", [
    (f"https://user:{SECRET}@index.example/simple", "https://***@index.example/simple"),
    (f"https://{SECRET}@index.example/simple", "https://***@index.example/simple"),
    (f"https://user:pa@{SECRET}@index.example/simple", "https://***@index.example/simple"),  # a raw @ in it
    (f"pkg @ https://u:{SECRET}@files.example/pkg-1.0.whl", "pkg @ https://***@files.example/pkg-1.0.whl"),
    (f"-ihttps://u:{SECRET}@host.example/simple", "-ihttps://***@host.example/simple"),  # a joined short option
    (f"--extra-index-url=https://u:{SECRET}@h.example/", "--extra-index-url=https://***@h.example/"),
    (f"PIP_INDEX_URL=https://u:{SECRET}@h.example/s", "PIP_INDEX_URL=https://***@h.example/s"),
    (f"u:{SECRET}@registry.example:5000/nvidia/pytorch:1", "***@registry.example:5000/nvidia/pytorch:1"),
    (f"--registry-image '{SECRET}@ghcr.io/team/img:1'", "--registry-image '***@ghcr.io/team/img:1'"),
    (f"https://h.example/v2/x?token={SECRET}&n=1", "https://h.example/v2/x?token=***&n=1"),
    (f"https://s.example/b?X-Amz-Signature={SECRET}&X-Amz-Credential={SECRET}&X-Amz-Date=1",
     "https://s.example/b?X-Amz-Signature=***&X-Amz-Credential=***&X-Amz-Date=1"),
    (f"https://h.example/cb#access_token={SECRET}&state=1", "https://h.example/cb#access_token=***&state=1"),
    (f"https://h.example/b?sig={SECRET}", "https://h.example/b?sig=***"),
])
def test_every_kind_of_credential_is_masked(value, kept):
    assert redact(value) == kept
    for shown in (redact(value), safe(value), shown_url(value), excerpt(value, 400), mask(value)):
        assert SECRET not in shown


@pytest.mark.parametrize("value", [
    "nvidia/pytorch:25.12-py3@sha256:" + "a" * 64,  # a digest is no login
    "pytorch@sha256:" + "0" * 64,
    "git+https://github.com/org/repo@v1.0#egg=repo",  # a ref in a VCS URL's path
    "write to t@example.com", "expected key=value", "localhost:5000/nvidia/pytorch:dev",
    "https://docs.example/page#install", "https://pypi.org/simple/torch/?format=json",
])
def test_what_is_no_credential_is_shown_as_it_is(value):
    assert redact(value, 400) == value


def test_redact_escapes_and_shortens_as_safe_did():
    assert redact("a\x1b[2Jb\r\nc\u202ed\x00") == "a\\x1b[2Jb\\x0d\\x0ac\\u202ed\\x00"
    assert redact("x" * 500, 20).startswith("x" * 20) and "(500 characters)" in redact("x" * 500, 20)
    assert redact(12) == "12"
    assert "\n" not in redact(f"https://u:{SECRET}@h/\nsecond line") and SECRET not in redact(f"https://u:{SECRET}@h/\n")


@pytest.mark.parametrize("hostile", [
    "a" * 300_000 + "@/", "a" * 300_000 + "/@", "https://" + "a" * 300_000, "@" * 300_000 + "/", "a@" * 150_000 + "/",
    "?" + "k" * 300_000, "x:1" * 100_000 + "@/", "=a" * 150_000, "a=" * 150_000 + "@/", "&token=" * 40_000,
])
def test_masking_takes_linear_time_on_hostile_text(hostile):
    from ngcbuild.core.redact import mask_reference

    started = time.perf_counter()
    mask(hostile)
    mask_reference(hostile)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("value, kept", [
    (f"host/p:dev@{SECRET}", "host/***@***"),  # a token where the digest goes
    (f"host/p:{SECRET}@x/nvidia/pytorch:1", "host/***@***/nvidia/pytorch:1"),  # a login after the host
    (f"u:{SECRET}@registry.example:5000/nvidia/pytorch:1", "***@registry.example:5000/nvidia/pytorch:1"),
    (f"https://u:{SECRET}@index.example/simple", "https://***@index.example/simple"),
    ("nvidia/pytorch:1@sha256:" + "a" * 64, "nvidia/pytorch:1@sha256:" + "a" * 64),  # a digest is no login
])
def test_a_reference_hides_every_at_that_starts_no_digest(value, kept):
    from ngcbuild.core.redact import mask_reference

    assert mask_reference(value) == kept
    assert SECRET not in excerpt(value, reference=True)


@pytest.mark.parametrize("limit", range(10, 90, 3))
def test_excerpt_masks_before_it_cuts(limit):
    # a login cut in two matches no pattern: cut first, half the password was shown
    value = f"https://user:{SECRET}-and-much-more-of-the-password@host.example/simple/"
    for shown in (excerpt(value, limit), excerpt(value, limit, reference=True), excerpt(value.encode(), limit)):
        assert SECRET[:4] not in shown


def test_the_epoch_masks_a_url_before_it_cuts():
    from ngcbuild.core.errors import UserError
    from ngcbuild.engine.epoch import parse_epoch

    with pytest.raises(UserError) as caught:
        parse_epoch(f"https://ci-bot:{SECRET}{'x' * 60}@host.example/epoch", "SOURCE_DATE_EPOCH")
    assert SECRET[:3] not in str(caught.value) and "SOURCE_DATE_EPOCH" in str(caught.value)


def test_no_value_is_cut_before_it_is_masked():
    """A value cut by a slice and then shown (`{value[:40]!r}`, `repr(value)[:80]`) escapes the mask: the
    product shows values through core.errors.excerpt or core.redact.redact, which mask first."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / "ngcbuild"
    cut = re.compile(r"\[:\d+\]!r\}|repr\([^()]*\)\[:\d+\]")
    # image/config.py: the engine's own time stamp (no value of a user); owned by another change
    found = [f"{path.relative_to(src)}:{number}" for path in sorted(src.rglob("*.py"))
             if path.relative_to(src).as_posix() != "image/config.py"
             for number, line in enumerate(path.read_text().splitlines(), 1) if cut.search(line)]
    assert not found, found
