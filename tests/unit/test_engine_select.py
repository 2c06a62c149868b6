"""`--engine URL`: which URLs are taken, and which engines the standard-library client reaches (the
connections themselves: tests/integration/test_remote_engine.py, test_local_engine.py)."""

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.engine.client import select
from ngcbuild.engine.local_engine import LocalEngine


@pytest.mark.parametrize("url", ["unix:///var/run/docker.sock", "tcp://127.0.0.1:2376", "tcp://[::1]:2376"])
def test_an_engine_url_becomes_docker_host(url):
    environ = {"DOCKER_HOST": "unix:///elsewhere.sock"}
    select(url, environ)
    assert environ["DOCKER_HOST"] == url


@pytest.mark.parametrize("url", ["http://127.0.0.1:2375", "tcp://", "127.0.0.1:2376", "npipe:////./pipe/docker"])
def test_anything_else_is_bad_input_naming_the_option(url):
    environ = {}
    with pytest.raises(UserError, match=r"--engine: .*expected (unix:///path/to/docker.sock or )?tcp://HOST:PORT"):
        select(url, environ)
    assert environ == {}


@pytest.mark.parametrize("url", ["tcp://ops:pw-4f9a@127.0.0.1:2376", "tcp://pw-4f9a@127.0.0.1:2376",
                                 "ssh://ops:pw-4f9a@builder"])
def test_credentials_in_an_engine_url_are_refused_and_never_shown(url):
    with pytest.raises(UserError) as caught:
        select(url, {})
    assert "pw-4f9a" not in str(caught.value)


def test_ssh_engines_are_refused_with_the_way_to_reach_one():
    with pytest.raises(UserError, match="ssh:// engines are not offered: forward"):
        select("ssh://builder@gpu-runner-7", {})


@pytest.mark.parametrize("docker_host", ["tcp://ops:pw-4f9a@127.0.0.1:2376", "unix://relative", "tcp://h:0"])
def test_docker_host_goes_through_the_same_parser(docker_host):
    with pytest.raises(UserError, match="^DOCKER_HOST: ") as caught:
        LocalEngine.for_environment({"DOCKER_HOST": docker_host})
    assert "pw-4f9a" not in str(caught.value)


def test_no_engine_given_leaves_docker_host_alone():
    environ = {"DOCKER_HOST": "tcp://a:1"}
    select(None, environ)
    assert environ == {"DOCKER_HOST": "tcp://a:1"}


@pytest.mark.parametrize("docker_host, socket_path", [
    (None, "/var/run/docker.sock"),
    ("", "/var/run/docker.sock"),
    ("unix:///run/user/1000/docker.sock", "/run/user/1000/docker.sock"),
])
def test_a_local_socket_is_reached_without_the_sdk(docker_host, socket_path):
    environ = {} if docker_host is None else {"DOCKER_HOST": docker_host}
    local = LocalEngine.for_environment(environ)
    assert local is not None and local.socket_path == socket_path and local.where == f"unix://{socket_path}"


@pytest.mark.parametrize("docker_host", ["tcp://127.0.0.1:2376"])
def test_tls_engines_are_left_to_the_sdk(docker_host):
    assert LocalEngine.for_environment({"DOCKER_HOST": docker_host}) is None
