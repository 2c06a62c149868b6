"""`--engine URL`: which URLs are taken (the connection itself: tests/integration/test_remote_engine.py)."""

import pytest

from ngcbuild.core.errors import UserError
from ngcbuild.engine.client import select


@pytest.mark.parametrize("url", ["unix:///var/run/docker.sock", "tcp://127.0.0.1:2376", "ssh://builder@gpu-runner-7"])
def test_an_engine_url_becomes_docker_host(url):
    environ = {"DOCKER_HOST": "unix:///elsewhere.sock"}
    select(url, environ)
    assert environ["DOCKER_HOST"] == url


@pytest.mark.parametrize("url", ["http://127.0.0.1:2375", "tcp://", "127.0.0.1:2376", "npipe:////./pipe/docker"])
def test_anything_else_is_bad_input_naming_the_option(url):
    environ = {}
    with pytest.raises(UserError, match=r"--engine .*expected unix:///path/to/docker.sock, tcp://HOST:PORT"):
        select(url, environ)
    assert environ == {}


def test_no_engine_given_leaves_docker_host_alone():
    environ = {"DOCKER_HOST": "tcp://a:1"}
    select(None, environ)
    assert environ == {"DOCKER_HOST": "tcp://a:1"}
