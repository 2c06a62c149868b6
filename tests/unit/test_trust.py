"""The pure parts of the trust chain, and the registry client against the fake registry of
tests/corpus/fakes.py: untrusted text escaped, URLs masked, one registry named two ways, challenges
and token realms, credentials scoped to their host, manifests identified by their bytes, lists read
once with each entry once, uploads never sent elsewhere, workers that stop at once."""

import base64
import json
import threading
import time

import pytest

from ngcbuild.core.references import parse_index_url, same_registry, shown_url
from ngcbuild.core.text import safe
from ngcbuild.core.workers import Workers
from ngcbuild.registry.auth import Challenge, Credentials, DockerConfig, Keychain, realm_may_get_credentials
from ngcbuild.registry.client import DigestMismatch, Manifest, Registry, RegistryError, ShapeError, read_token

from ..corpus import fakes


def test_untrusted_text_is_escaped_and_shortened():
    assert safe("plain text") == "plain text"
    assert safe("a\x1b[2Jb\r\nc\u202ed\x00") == "a\\x1b[2Jb\\x0d\\x0ac\\u202ed\\x00"
    assert safe("x" * 500, 20).startswith("x" * 20) and "(500 characters)" in safe("x" * 500, 20)
    assert safe(12) == "12"


def test_urls_in_messages_show_no_credentials_or_tokens():
    shown = shown_url("https://u:pw@h.example/v2/x?token=T0K&digest=sha256:1&X-Amz-Signature=S1G&sig=S"
                      "#access_token=FR4G&state=1")
    assert "pw" not in shown and "T0K" not in shown and "S1G" not in shown and "FR4G" not in shown
    assert "digest=sha256:1" in shown and shown.startswith("https://***@h.example/")
    assert shown_url("http://h/\x1b[2J") == "http://h/\\x1b[2J"


@pytest.mark.parametrize("one, other, same", [
    ("localhost:5000", "127.0.0.1:5000", True), ("127.0.0.2:5000", "[::1]:5000", True),
    ("registry.example", "registry.example:443", True), ("localhost", "127.0.0.1:80", True),
    ("localhost:5000", "localhost:5001", False), ("a.example", "b.example", False),
])
def test_one_registry_named_two_ways_is_one(one, other, same):
    assert same_registry(one, other) is same


def test_a_mirror_url_is_https_or_loopback_http():
    assert parse_index_url("https://u:p@m.example/pypi/") == "https://u:p@m.example/pypi"
    assert parse_index_url("http://127.0.0.1:8080/pypi") == "http://127.0.0.1:8080/pypi"
    for bad in ("http://m.example/pypi", "ftp://m.example/", "--x", "https://m.example/p?x=1", "https:///p", ""):
        with pytest.raises(ValueError):
            parse_index_url(bad)


def test_challenges_are_parsed_and_realms_judged():
    challenge = Challenge.parse('Bearer realm="https://auth.example/token",service="reg",scope="repository:a:pull"')
    assert challenge.scheme == "bearer" and challenge.params["realm"] == "https://auth.example/token"
    assert Challenge.parse('Basic realm="x"').scheme == "basic"
    assert Challenge.parse('Bearer realm="a\\"b"').params["realm"] == 'a"b'
    assert realm_may_get_credentials("https://auth.example/token", "https://reg.example")
    assert realm_may_get_credentials("http://127.0.0.1:5000/token", "http://127.0.0.1:5000")
    assert not realm_may_get_credentials("http://127.0.0.2:5000/token", "http://127.0.0.1:5000")
    assert not realm_may_get_credentials("http://127.0.0.1:5001/token", "http://127.0.0.1:5000")
    assert not realm_may_get_credentials("http://auth.example/token", "https://reg.example")
    assert not realm_may_get_credentials("file:///etc/passwd", "http://127.0.0.1:5000")


def test_our_variables_are_for_their_host_only_and_the_docker_config_for_its_own(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"auths": {"https://other.example/v1/": {"auth": base64.b64encode(b"o:pw").decode()},
                                            "token.example": {"identitytoken": "refresh"}}}))
    environ = {"NGCBUILD_REGISTRY_USER": "u", "NGCBUILD_REGISTRY_PASSWORD": "s3cr3t", "NGCBUILD_REGISTRY_HOST": "reg.example",
               "DOCKER_CONFIG": str(tmp_path)}
    keychain = Keychain(environ)
    assert keychain.for_host("reg.example").username == "u"
    assert keychain.for_host("other.example").username == "o"  # the config's, never ours
    assert keychain.for_host("token.example").identity_token == "refresh"
    assert keychain.for_host("third.example") is None
    assert keychain.engine_auth("reg.example") == {"username": "u", "password": "s3cr3t"}
    assert keychain.engine_auth("other.example") is None  # docker-py reads the config for it itself
    assert "s3cr3t" not in repr(keychain.for_host("reg.example")) + str(keychain.for_host("reg.example"))
    with pytest.raises(Exception, match="NGCBUILD_REGISTRY_HOST"):
        Keychain({"NGCBUILD_REGISTRY_USER": "u", "NGCBUILD_REGISTRY_PASSWORD": "p"})
    assert DockerConfig.read(tmp_path / "none.json").credentials("reg.example") is None


def _list(entries) -> Manifest:
    body = json.dumps({"schemaVersion": 2, "mediaType": fakes.OCI_INDEX, "manifests": entries}).encode()
    return Manifest(body, fakes.OCI_INDEX, fakes.digest_of(body), "reg/x@list")


def test_a_list_is_read_once_each_entry_once():
    digest = "sha256:" + "a" * 64
    entry = {"mediaType": fakes.OCI_MANIFEST, "digest": digest, "size": 10, "platform": {"os": "linux",
                                                                                        "architecture": "arm64"}}
    entries = _list([entry] * 3000 + [{**entry, "digest": "sha256:" + "b" * 64}]).entries()
    assert [e.digest for e in entries] == [digest, "sha256:" + "b" * 64] and str(entries[0].platform) == "linux/arm64"
    for bad, words in [("x", "no list of manifests"), ([1], "manifests.0"), ([{**entry, "digest": "../x"}], "sha256"),
                       ([{**entry, "size": -1}], "size"), ([{**entry, "annotations": {"a": 1}}], "annotations"),
                       ([{**entry, "digest": f"sha256:{i:064x}"} for i in range(1100)], "more than")]:
        with pytest.raises(ShapeError, match=words):
            _list(bad).entries()


def test_read_token_takes_a_word_of_printable_ascii_only():
    assert read_token(b'{"token": "abc.def"}', "t") == "abc.def"
    assert read_token(b'{"access_token": "x"}', "t") == "x"
    for body in (b'{"token": 5}', b'{"token": "a\\r\\nb"}', b"<html>", b"[]", b'{"token": ""}'):
        with pytest.raises(RegistryError, match="not a token"):
            read_token(body, "t")


def test_a_manifest_is_its_bytes_whatever_the_headers_say(served):
    content = fakes.Content()
    digest = content.add_manifest(fakes.image_manifest("a"), fakes.OCI_MANIFEST, tag="t")
    other = fakes.image_manifest("b")
    assert Registry(served(content).address).manifest(fakes.REPOSITORY, digest).digest == digest
    with pytest.raises(DigestMismatch, match="its bytes are"):
        Registry(served(content, lie="sha256:" + "0" * 64).address).manifest(fakes.REPOSITORY, "t")
    with pytest.raises(DigestMismatch, match="not the digest asked for"):
        Registry(served(content, swap={digest: other}).address).manifest(fakes.REPOSITORY, digest)


def test_credentials_go_only_where_the_registry_asked(served, tmp_path):
    content = fakes.Content()
    content.add_manifest(fakes.image_manifest("a"), fakes.OCI_MANIFEST, tag="t")
    basic = served(content, auth=("basic", {"u": "pw"}))
    registry = Registry(basic.address, Credentials("u", "pw"))
    assert registry.manifest(fakes.REPOSITORY, "t") is not None
    sent = [r["authorization"] for r in basic.requests()]
    assert sent[0] is None and sent[1].startswith("Basic ")  # after the 401, not before
    anonymous = served(content)
    Registry(anonymous.address, Credentials("u", "pw")).manifest(fakes.REPOSITORY, "t")
    assert [r["authorization"] for r in anonymous.requests()] == [None]


def test_an_upload_sent_elsewhere_is_refused_before_any_byte_goes(served):
    content = fakes.Content()
    made = served(content, raw={f"/v2/{fakes.REPOSITORY}/blobs/uploads/": lambda h: fakes.send(
        h, 202, b"", {"Location": "http://127.0.0.2:9/v2/upload?token=SECRET"})})
    with pytest.raises(RegistryError, match="sent elsewhere") as caught:
        Registry(made.address).put_blob(fakes.REPOSITORY, b"data")
    assert "SECRET" not in str(caught.value)


def test_workers_hand_out_no_job_after_a_stop_and_raise_a_job_s_failure():
    started = []

    def work(item):
        started.append(item)
        if item == 3:
            raise ValueError("three")
        time.sleep(0.05)
        return item * 2

    assert Workers(range(5), lambda i: i * 2, 3).results() == [0, 2, 4, 6, 8]
    with pytest.raises(ValueError, match="three"):
        Workers(range(100), work, 2).results()
    time.sleep(0.2)
    assert len(started) < 100  # the rest never started
    gate = threading.Event()
    workers = Workers(range(10), lambda i: gate.wait(5), 2)
    threading.Thread(target=lambda: list(workers.as_done()), daemon=True).start()
    time.sleep(0.1)
    workers.stop()
    gate.set()
    assert workers.wait(5)


def test_workers_start_no_job_before_as_done_so_a_job_may_use_the_workers_object():
    # mutate's jobs read `workers.stopping`; a job that ran while Workers() was still being assigned
    # met an unbound name (CI: NameError in a planted-defect run)
    ran = threading.Event()
    workers = Workers(range(3), lambda i: (ran.set(), workers.stopping())[1], 3)
    time.sleep(0.2)
    assert not ran.is_set()
    assert workers.results() == [False, False, False]
    idle = Workers(range(3), lambda i: i, 2)
    assert idle.wait(0.1)  # never started: nothing to wait for


def test_the_one_writer_never_writes_through_a_link_into_a_fifo_or_outside(tmp_path):
    import os

    from ngcbuild.core.outputs import OutputError, UnsafeOutput, write_file

    project = tmp_path / "project"
    (project / "build").mkdir(parents=True)
    (project / "manifest.yaml").write_text("kept\n")
    os.symlink("../manifest.yaml", project / "build" / "audit.json")
    with pytest.raises(UnsafeOutput, match="symbolic link"):
        write_file(project / "build" / "audit.json", "{}", within=project)
    assert (project / "manifest.yaml").read_text() == "kept\n"
    os.mkfifo(project / "build" / "sbom.json")
    with pytest.raises(UnsafeOutput, match="FIFO"):
        write_file(project / "build" / "sbom.json", "{}", within=project)
    (project / "build" / "notes.md").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        write_file(project / "build" / "notes.md", "x", within=project)
    os.symlink(tmp_path, project / "out")
    with pytest.raises(UnsafeOutput, match="leads outside"):
        write_file(project / "out" / "x.txt", "x", within=project)
    assert not (tmp_path / "x.txt").exists()
    written = write_file(project / "build" / "deep" / "ok.json", "{}", within=project, mode=0o600)
    assert written.read_text() == "{}" and oct(written.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in written.parent.iterdir()] == ["ok.json"]  # no temporary file left
