"""The one resolver's pure parts: the index setting and its order of precedence, the one list of a
release's indexes, the clean room (what uv's process is given, which lines it may read), what uv's
words are turned into before anyone sees them, and the deadline's setting. (uv itself against the
fake index: tests/corpus/resolver_hostile.py; against PyPI: tests/integration/test_derived.py and
test_resolver_agrees.py.)"""

from pathlib import Path
from types import SimpleNamespace

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.indexes import PYPI_SIMPLE, index_setting, release_indexes
from ngcbuild.resolver.clean_room import checked_line, environment, path_option
from ngcbuild.resolver.deadline import DEFAULT_S, run_deadline
from ngcbuild.resolver.uv import Uv

MIRROR, UV, PIP = "https://mirror.example/simple", "https://uv.example/simple", "https://pip.example/simple"
SECRET = "s3cr3t-T0KEN-4f9a"


@pytest.mark.parametrize("option, environ, expected, source", [
    (None, {}, PYPI_SIMPLE, "default"),
    (None, {"PIP_INDEX_URL": PIP}, PIP, "$PIP_INDEX_URL"),
    (None, {"PIP_INDEX_URL": PIP, "UV_INDEX_URL": UV}, UV, "$UV_INDEX_URL"),
    (MIRROR, {"PIP_INDEX_URL": PIP, "UV_INDEX_URL": UV}, MIRROR, "--index-url"),
    (None, {"UV_INDEX_URL": "", "PIP_INDEX_URL": PIP}, PIP, "$PIP_INDEX_URL"),  # empty: unset
    (None, {"UV_INDEX_URL": " ", "PIP_INDEX_URL": ""}, PYPI_SIMPLE, "default"),
    (MIRROR + "/", {}, MIRROR, "--index-url"),  # the trailing slash dropped
], ids=["pypi-by-default", "pip-variable", "uv-over-pip", "option-over-both", "empty-uv-is-unset", "all-empty", "trailing-slash"])
def test_the_index_option_then_uvs_variable_then_pips_then_pypi(option, environ, expected, source):
    setting = index_setting(option, None, environ)
    assert (setting.index_url, setting.index_from) == (expected, source)


def test_more_indexes_from_the_option_else_uvs_variable_else_pips_each_a_list():
    environ = {"UV_EXTRA_INDEX_URL": f"{UV} https://uv2.example/simple", "PIP_EXTRA_INDEX_URL": PIP}
    assert index_setting(None, None, environ).extra == (UV, "https://uv2.example/simple")
    assert index_setting(None, None, {"PIP_EXTRA_INDEX_URL": f"{PIP}  {MIRROR}"}).extra == (PIP, MIRROR)
    assert index_setting(None, [MIRROR, MIRROR], environ).extra == (MIRROR,)  # the option wins, once each
    assert index_setting(None, MIRROR, {}).extra == (MIRROR,)


def test_a_releases_indexes_are_the_index_its_own_then_the_users():
    release = SimpleNamespace(pip=SimpleNamespace(extra_index_urls=["https://download.pytorch.org/whl/cpu/"]))
    setting = index_setting(MIRROR, [UV], {})
    assert release_indexes(release, setting) == [MIRROR, "https://download.pytorch.org/whl/cpu", UV]
    assert release_indexes(release) == [PYPI_SIMPLE, "https://download.pytorch.org/whl/cpu"]
    assert release_indexes(release, setting, wheelhouse=True) == [MIRROR, UV]  # the wheelhouse carries the rest


@pytest.mark.parametrize("value, where, says", [
    (f"https://u:{SECRET}@mirror.example/simple?token={SECRET}", "--index-url", "query"),
    ("http://mirror.example/simple", "--index-url", "plain http://"),
    (f"ftp://u:{SECRET}@mirror.example/simple", "--index-url", "expected https://"),
    ("--extra-index-url", "--index-url", "looks like an option"),
    ("https://mirror.example/${NGCBUILD_REGISTRY_PASSWORD}/simple", "--index-url", "${...}"),
])
def test_a_bad_index_url_is_refused_in_one_line_that_never_shows_its_secret(value, where, says):
    with pytest.raises(UserError) as refused:
        index_setting(value, None, {})
    message = str(refused.value)
    assert message.startswith(where) and says in message and SECRET not in message and "\n" not in message
    with pytest.raises(UserError, match=r"^\$PIP_EXTRA_INDEX_URL: "):
        index_setting(None, None, {"PIP_EXTRA_INDEX_URL": f"{PIP} {value}"})


def test_credentials_in_an_index_url_are_taken_as_pip_and_uv_take_them():
    setting = index_setting(f"https://ops:{SECRET}@mirror.example/simple", None, {})
    assert setting.index_url == f"https://ops:{SECRET}@mirror.example/simple"  # for uv, to that host alone
    assert SECRET not in setting.described() and "***@mirror.example" in setting.described()


def test_the_clean_room_passes_the_allow_list_and_the_indexes_only():
    caller = {"PATH": "/usr/bin", "HOME": "/home/u", "HTTPS_PROXY": "http://proxy:3128", "UV_CACHE_DIR": "/c",
              "NGCBUILD_REGISTRY_PASSWORD": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET, "UV_CONSTRAINT": "/x",
              "PIP_INDEX_URL": PIP, "UV_INDEX_URL": UV, "PIP_CONFIG_FILE": "/etc/pip.conf", "UV_NO_INDEX": "1"}
    env = environment(caller, [MIRROR, "https://extra.example/simple"], Path("/ca.pem"))
    assert SECRET not in env.values() and "UV_CONSTRAINT" not in env and "PIP_CONFIG_FILE" not in env
    assert "UV_NO_INDEX" not in env and "PIP_INDEX_URL" not in env
    assert env["UV_INDEX_URL"] == MIRROR and env["UV_EXTRA_INDEX_URL"] == "https://extra.example/simple"
    assert env["PATH"] == "/usr/bin" and env["HTTPS_PROXY"] == "http://proxy:3128" and env["UV_CACHE_DIR"] == "/c"
    assert env["SSL_CERT_FILE"] == "/ca.pem"
    with pytest.raises(UserError, match="UV_KEYRING_PROVIDER"):
        environment({"UV_KEYRING_PROVIDER": "import"}, [], None)
    assert environment({"UV_KEYRING_PROVIDER": "subprocess"}, [], None)["UV_KEYRING_PROVIDER"] == "subprocess"


@pytest.mark.parametrize("line", ["einops>=${HOME}", "pkg @ https://h.example/${TOKEN}/p.tar.gz", "-r /etc/passwd",
                                  "  --index-url https://x", "einops\n--pre"])
def test_a_line_uv_would_expand_or_take_for_an_option_is_refused_unshown(line):
    with pytest.raises(UserError) as refused:
        checked_line(line, "a requirement given to the resolver")
    assert line not in str(refused.value)
    assert checked_line("einops>=0.8 ; python_version >= '3.8'", "x") == "einops>=0.8 ; python_version >= '3.8'"


def test_every_path_on_uvs_command_line_is_one_option_word(tmp_path):
    assert path_option("--find-links", tmp_path / "--no-index") == f"--find-links={tmp_path}/--no-index"
    assert path_option("--constraint", Path("-c")).startswith("--constraint=/")


def test_uvs_words_lose_every_credential_before_anyone_sees_them():
    uv = Uv([f"https://ops:{SECRET}@mirror.example/simple", "https://files.example/simple"], environ={})
    text = (f"error: Failed to fetch: `https://ops:{SECRET}@mirror.example/simple/einops/` (401); also "
            f"https://x.example/p?token={SECRET}&v=1 and the bare {SECRET}")
    scrubbed = uv.scrubbed(text)
    assert SECRET not in scrubbed and "***@mirror.example/simple/einops/" in scrubbed and "token=***" in scrubbed
    assert uv.hosts() == "mirror.example, files.example"


def test_the_runs_deadline_is_a_whole_number_of_seconds():
    assert run_deadline({}).seconds == DEFAULT_S
    assert run_deadline({"NGCBUILD_RESOLVER_DEADLINE_S": "5"}).seconds == 5
    for bad in ("0", "-5", "1.5", "soon", "9" * 12):
        with pytest.raises(UserError, match="NGCBUILD_RESOLVER_DEADLINE_S"):
            run_deadline({"NGCBUILD_RESOLVER_DEADLINE_S": bad})


@pytest.mark.parametrize("status", ["401 Unauthorized", "403 Forbidden"])
def test_an_index_that_refuses_our_credentials_is_a_failure_not_a_conflict(status, monkeypatch):
    # uv's words: "not found" under "no solution found", the refusal only in its hint
    from ngcbuild.resolver.uv import IndexRefused, UnresolvedError
    from ngcbuild.verify.target import Target

    said = ("error: No solution found when resolving dependencies\n  cause: Because einops was not found in the "
            "package registry and you require einops>=0.8, we can conclude that your requirements are "
            f"unsatisfiable.\n\nhint: An index URL (https://ops:{SECRET}@mirror.example/simple) could not be queried "
            f"due to a lack of valid authentication credentials ({status})\n")
    with Uv([f"https://ops:{SECRET}@mirror.example/simple"], environ={}) as uv:
        monkeypatch.setattr(uv, "_run", lambda command: (1, said))
        with pytest.raises(IndexRefused) as caught:
            uv.compile(["einops>=0.8"], [], Target("3.11.2", "linux/amd64", "2.36"))
    assert isinstance(caught.value, UnresolvedError) and caught.value.exit_code == 1
    message = str(caught.value)
    assert f"the index at mirror.example refused our credentials ({status})" in message and SECRET not in message


def test_uvs_other_wording_of_a_forbidden_index_is_a_refusal_too(monkeypatch):
    from ngcbuild.resolver.uv import IndexRefused
    from ngcbuild.verify.target import Target

    said = ("error: No solution found when resolving dependencies\n  cause: Because einops was not found in the "
            "package registry ... unsatisfiable.\n\nhint: An index (http://127.0.0.1:9/simple) returned a 403 "
            "Forbidden error. Check that the index URL is correct and the credentials are valid.\n")
    with Uv(["http://127.0.0.1:9/simple"], environ={}) as uv:
        monkeypatch.setattr(uv, "_run", lambda command: (1, said))
        with pytest.raises(IndexRefused, match=r"127\.0\.0\.1:9 refused our credentials \(403 Forbidden\)"):
            uv.compile(["einops>=0.8"], [], Target("3.11.2", "linux/amd64", "2.36"))
