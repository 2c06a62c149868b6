"""Issue 55: the one index rule reaches the build's pip, the logins go to the builder's netrc alone,
a derived lock records its index, the apt proxy is checked once, audit asks beside a mirror."""

import io
import tarfile

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.core.indexes import (
    IndexSetting,
    apt_proxy_setting,
    build_logins,
    index_setting,
    lock_index_problem,
    netrc_text,
    parse_netrc,
)
from ngcbuild.core.project import Project
from ngcbuild.engine.events import stages_copying
from ngcbuild.engine.image_build import machine_inputs, write_context
from ngcbuild.engine.options import BuildOptions
from ngcbuild.manifest.loader import load_release
from ngcbuild.render.context import render_files
from ngcbuild.render.image import NETRC_INPUT
from ngcbuild.supply.advisories import PYPI_JSON_API, mirror_setting
from ngcbuild.workspace.release_dir import DOCKERFILE

from ..conftest import REPO

SECRET = "s3cret-pw"
NO_NETRC = {"NETRC": "/nonexistent/netrc"}


def test_a_login_in_the_url_goes_to_its_host_and_netrc_machines_fill_the_others(tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("# ours\nmachine extra.example login bob password b0b-pw\n"
                     "default login anyone password any-pw\nmacdef init\n  cd /\n\nmachine other.example login q\n")
    logins = build_logins([f"https://alice:{SECRET}@mirror.example/simple", "https://extra.example/simple",
                           "https://pypi.org/simple"], {"NETRC": str(netrc)})
    assert sorted(logins) == ["extra.example", "mirror.example"]  # a `default` login is never carried
    assert netrc_text(logins) == (f"machine extra.example login bob password b0b-pw\n"
                                  f"machine mirror.example login alice password {SECRET}\n")
    assert SECRET not in repr(logins)


def test_netrc_words_as_curl_reads_them():
    assert parse_netrc("machine A.example\n  login u\n  password p\nmachine b login x\ndefault login d password e") \
        == {"a.example": ("u", "p"), None: ("d", "e")}


def test_two_logins_for_one_host_or_one_a_netrc_cannot_carry_are_refused_without_showing_them():
    with pytest.raises(UserError, match="two index URLs of mirror.example carry different logins") as info:
        build_logins([f"https://a:{SECRET}@mirror.example/simple", "https://a:other@mirror.example/extra"], NO_NETRC)
    assert SECRET not in str(info.value)
    with pytest.raises(UserError, match="the login for mirror.example") as info:
        build_logins(["https://a:pass%20s3cr%23x@mirror.example/simple"], NO_NETRC)
    assert "s3cr" not in str(info.value)


def test_a_lock_records_its_index_without_a_login_and_another_is_named():
    setting = index_setting(f"https://alice:{SECRET}@mirror.example/simple", ["https://extra.example/x"], {})
    header = {}
    for key, value in setting.header_lines():
        header.setdefault(key, []).append(value)
    assert header == {"index": ["https://mirror.example/simple"], "extra-index": ["https://extra.example/x"]}
    assert lock_index_problem(header, setting) is None
    problem = lock_index_problem(header, IndexSetting())
    assert problem == ("resolved against https://mirror.example/simple + https://extra.example/x; "
                       "this build reads https://pypi.org/simple")
    assert lock_index_problem({}, setting) is None  # written before locks recorded it: nothing to compare


def test_the_apt_proxy_option_then_its_variable_each_checked_and_never_shown():
    assert apt_proxy_setting(None, {}) is None
    assert apt_proxy_setting(None, {"NGCBUILD_APT_PROXY": " "}) is None
    assert apt_proxy_setting("http://cache.example:3142/", {"NGCBUILD_APT_PROXY": "bad"}) == \
        "http://cache.example:3142"
    with pytest.raises(UserError, match=r"^\$NGCBUILD_APT_PROXY: .*expected http://") as info:
        apt_proxy_setting(None, {"NGCBUILD_APT_PROXY": f"ftp://u:{SECRET}@cache.example"})
    assert SECRET not in str(info.value)
    with pytest.raises(UserError, match="^--apt-proxy: .*address alone"):
        apt_proxy_setting("http://cache.example:3142/debian", {})


def _dev():
    project = Project.at(REPO)
    return project, render_files(project, load_release(project, "dev"))


def test_the_context_sent_holds_pip_conf_without_a_login_and_the_netrc_for_the_builder_alone():
    project, rendered = _dev()
    options = BuildOptions(indexes=index_setting(f"https://alice:{SECRET}@mirror.example/simple", None, {}),
                           apt_proxy=f"http://u:{SECRET}@cache.example:3142")
    inputs = machine_inputs(rendered, options, [])
    assert inputs.login_hosts == ("mirror.example",) and SECRET not in inputs.described()
    assert inputs.build_args() == {"http_proxy": f"http://u:{SECRET}@cache.example:3142",  # Docker's predefined
                                   "no_proxy": "localhost,127.0.0.1,::1"}
    assert not inputs.host_network
    buffer = io.BytesIO()
    write_context(buffer, project, rendered, options, inputs)
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as tar:
        conf = tar.extractfile("build-inputs/pip.conf").read().decode()
        netrc = tar.getmember(NETRC_INPUT)
        assert tar.extractfile(netrc).read().decode() == f"machine mirror.example login alice password {SECRET}\n"
    assert netrc.mode == 0o600 and netrc.uid == 0
    assert "index-url = https://mirror.example/simple\n" in conf and SECRET not in conf and "alice" not in conf
    # build/R/ holds an empty netrc; only the stages that copy it in hold a login, and are kept from the cache
    assert rendered.files[NETRC_INPUT] == b""
    assert inputs.secret_stages == ("builder",)
    assert inputs.kept({"runtime": "sha256:1", "builder": "sha256:2", "final": "sha256:3"}) == \
        {"runtime": "sha256:1", "final": "sha256:3"}


def test_a_mirror_on_the_loopback_is_read_on_the_hosts_network_through_a_local_engine_only():
    from ngcbuild.core.errors import UserError
    from ngcbuild.engine.options import options_from

    project, rendered = _dev()
    for index, proxy in (("http://127.0.0.1:3141/root/pypi/+simple", None), (None, "http://localhost:3142")):
        options = BuildOptions(indexes=index_setting(index, None, {}), apt_proxy=proxy)
        inputs = machine_inputs(rendered, options, [])
        assert inputs.host_network and "steps on the host's network" in inputs.described()
    far = BuildOptions(indexes=index_setting("https://mirror.example/simple", None, {}), apt_proxy="http://cache.example:3142")
    assert not machine_inputs(rendered, far, []).host_network
    local = {"DOCKER_HOST": "unix:///run/podman.sock"}
    assert options_from(None, None, None, False, local, index_url="http://127.0.0.1:3141/simple").indexes.index_url \
        == "http://127.0.0.1:3141/simple"
    remote = {"DOCKER_HOST": "tcp://gpu-runner.example:2375"}
    for kwargs in ({"index_url": f"http://ops:{SECRET}@127.0.0.1:3141/simple"}, {"apt_proxy": "http://[::1]:3142"}):
        with pytest.raises(UserError, match="loopback, but the engine .*gpu-runner.example") as refused:
            options_from(None, None, None, False, remote, **kwargs)
        assert SECRET not in str(refused.value)
    assert options_from(None, None, None, False, remote, index_url="https://mirror.example/simple")


def test_without_a_login_every_stage_is_cached_and_pip_reads_pypi_and_the_releases_own():
    project, rendered = _dev()
    inputs = machine_inputs(rendered, BuildOptions(indexes=IndexSetting()), [])
    assert inputs.netrc == "" and inputs.kept({"builder": "x"}) == {"builder": "x"}
    assert inputs.indexes[0] == "https://pypi.org/simple" and len(inputs.indexes) >= 2  # dev's CPU torch index
    assert inputs.build_args() == {}


def test_every_stage_that_copies_the_netrc_in_is_named():
    project = Project.at(REPO)
    rendered = render_files(project, load_release(project, "25.12"))
    assert stages_copying(rendered.files[DOCKERFILE].decode(), NETRC_INPUT) == ["requirements", "builder"]


def test_audit_asks_beside_a_mirrors_simple_index_or_says_why_not():
    assert mirror_setting(None, {}, IndexSetting()) == (PYPI_JSON_API, None)
    base, why = mirror_setting(None, {}, index_setting(f"https://a:{SECRET}@mirror.example/root/simple", None, {}))
    assert base == f"https://a:{SECRET}@mirror.example/root/pypi"
    assert "beside the index https://***@mirror.example/root/simple (from --index-url)" in why and SECRET not in why
    base, why = mirror_setting(None, {}, index_setting("https://mirror.example/api/pypi/x", None, {}))
    assert base == PYPI_JSON_API and "serves no JSON API known to ngcbuild" in why
    assert mirror_setting("https://m.example/pypi", {}, index_setting("https://mirror.example/simple", None, {})) \
        == ("https://m.example/pypi", None)  # --pypi-mirror wins


def test_a_chosen_mirror_that_takes_no_connection_is_said_before_the_build():
    import socket

    from ngcbuild.core.errors import OperationError
    from ngcbuild.core.http import not_listening
    from ngcbuild.engine.options import check_mirrors_answer

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert not_listening(f"http://127.0.0.1:{port}/simple") is None
    assert not_listening(f"http://127.0.0.1:{port}/simple") == "connection refused"
    assert not_listening("https://mirror.invalid/simple") == "mirror.invalid: name not found"
    check_mirrors_answer(BuildOptions())  # PyPI by default: nothing asked
    down = BuildOptions(indexes=index_setting(f"http://ops:{SECRET}@127.0.0.1:{port}/simple", None, {}))
    with pytest.raises(OperationError, match=r"127.0.0.1:\d+/simple \(--index-url\) takes no connection") as said:
        check_mirrors_answer(down)
    assert SECRET not in str(said.value)
