"""A private Docker engine, a private registry and a fault-injecting proxy, for fault tests.

The shared engine and registry serve other builds: the faults (a daemon killed mid-build, a registry
restarted mid-push) are done to these private ones, which the fixtures start and always clean up.
"""

from __future__ import annotations

import http.client
import http.server
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
import requests


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait(check, timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:]) if log and log.exists() else ""
    raise RuntimeError(f"{what} did not come up in {timeout:.0f}s\n{tail}")


class PrivateEngine:
    """A second dockerd with its own socket, data root, exec root and bridge; no iptables of its own.

    Never `--bridge=none`: a dockerd started so deletes the host's docker0, cutting the shared engine
    (when it uses docker0) off the network. The private bridge has no NAT, so its builds are offline,
    unless `online`: then its subnet is masqueraded and forwarded by rules of its own (added on start,
    removed on close; never the dockerd's, which would rebuild the shared engine's chains) and its
    containers ask the host's resolver, as the shared engine's do: a fresh runner that builds."""

    def __init__(self, online: bool = False):
        self.online = online
        self.root = Path(tempfile.mkdtemp(prefix="ngcbuild-engine-"))
        self.bridge = "ngcp" + format(abs(hash(str(self.root))) % 16 ** 8, "08x")  # at most 15 characters
        self.socket = self.root / "docker.sock"
        self.log = self.root / "dockerd.log"
        self.process: subprocess.Popen | None = None
        self.extra_args: list[str] = []  # e.g. a TCP listener with TLS, besides the socket

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"

    def client(self, timeout: int = 120) -> docker.APIClient:
        return docker.APIClient(base_url=self.host, timeout=timeout)

    def start(self) -> None:
        (self.root / "docker.pid").unlink(missing_ok=True)  # left by a killed daemon
        subnet = 100 + int(self.bridge[-2:], 16) % 100
        network = f"172.{31 if self.online else 30}.{subnet}"
        if subprocess.run(["ip", "link", "show", self.bridge], capture_output=True).returncode != 0:
            for command in (["ip", "link", "add", self.bridge, "type", "bridge"],
                            ["ip", "addr", "add", f"{network}.1/24", "dev", self.bridge],
                            ["ip", "link", "set", self.bridge, "up"]):
                subprocess.run(command, check=True, capture_output=True)
        if self.online:
            for table, chain, rule in self._rules(network):
                if subprocess.run(["iptables", "-t", table, "-C", chain, *rule], capture_output=True).returncode:
                    subprocess.run(["iptables", "-t", table, "-I", chain, "1", *rule], check=True, capture_output=True)
        resolver = _host_resolver() if self.online else f"{network}.1"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                ["dockerd", "-H", self.host, "--data-root", str(self.root / "data"),
                 "--exec-root", str(self.root / "exec"), "--pidfile", str(self.root / "docker.pid"),
                 f"--bridge={self.bridge}", "--iptables=false", "--ip-masq=false", "--storage-driver=overlay2",
                 # offline, a step's name lookup goes to the bridge's own address, where nothing
                 # answers, and fails at once instead of waiting out the host's resolvers
                 f"--dns={resolver}", *self.extra_args],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        _wait(self._answers, 60, "the private dockerd", self.log)

    def _rules(self, network: str) -> list[tuple[str, str, list[str]]]:
        """(table, chain, rule): an online engine's NAT and forwarding."""
        return [("nat", "POSTROUTING", ["-s", f"{network}.0/24", "!", "-o", self.bridge, "-j", "MASQUERADE"]),
                ("filter", "FORWARD", ["-i", self.bridge, "-j", "ACCEPT"]),
                ("filter", "FORWARD", ["-o", self.bridge, "-j", "ACCEPT"])]

    def _answers(self) -> bool:
        try:
            return self.client(timeout=5).ping()
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            return False

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (a clean stop: the engine stops its containers first) or SIGKILL (a crash)."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            self.process.wait(timeout=60)
        self.process = None
        self._end_containerd()

    def _end_containerd(self) -> None:
        """The engine's own containerd outlives a killed dockerd for a while, and a new dockerd
        times out waiting for it: wait for it to go (end it if it does not), as an init system would."""
        pidfile = self.root / "exec" / "containerd" / "containerd.pid"
        try:
            pid = int(pidfile.read_text().strip())
        except (OSError, ValueError):
            return
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and str(self.root).encode() in _cmdline(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline += 10
            time.sleep(0.2)
        pidfile.unlink(missing_ok=True)

    def load_image(self, source: docker.APIClient, ref: str) -> None:
        """Copy `ref` from another engine (docker save | docker load)."""
        self.client().load_image(b"".join(source.get_image(ref)))

    def reset(self, keep: str) -> None:
        """Back to what a fresh runner has: running, no container, no image but `keep` (the base image)
        under its own name only. One engine serves the session; each user empties it first."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        client = self.client()
        kept = client.inspect_image(keep)["Id"]
        empty(client, kept)
        for tag in client.inspect_image(kept)["RepoTags"]:
            if tag != keep:
                client.remove_image(tag)  # an untag: the image stays under `keep`
        left = [image["Id"] for image in client.images(all=True)]
        assert left == [kept], f"the private engine could not be emptied: {left}"

    def close(self) -> None:
        try:
            if self.process is None:
                self.start()  # a clean stop unmounts and stops what a killed daemon left running
            self.stop()
        finally:
            for pid in _processes_mentioning(str(self.root)):  # shims of a killed daemon
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for mount in reversed(_mounts_under(self.root)):
                subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
            shutil.rmtree(self.root, ignore_errors=True)
            if self.online:
                subnet = 100 + int(self.bridge[-2:], 16) % 100
                for table, chain, rule in self._rules(f"172.31.{subnet}"):
                    subprocess.run(["iptables", "-t", table, "-D", chain, *rule], check=False, capture_output=True)
            subprocess.run(["ip", "link", "delete", self.bridge], check=False, capture_output=True)


def empty(client: docker.APIClient, kept: str | None) -> None:
    """Every container of an engine removed, and every image but the one of id `kept`."""
    for container in client.containers(all=True):
        client.remove_container(container["Id"], force=True, v=True)
    for _ in range(5):  # an image with children goes once they have gone
        images = [image for image in client.images(all=True) if image["Id"] != kept]
        if not images:
            break
        for image in images:
            try:
                client.remove_image(image["Id"], force=True)
            except docker.errors.APIError:
                pass  # a parent of one still there, or gone with a child already


class StartedEngine(PrivateEngine):
    """The second engine `.ci/engine` starts (its own data root, socket and bridge, online: a fresh runner's
    engine), used as it is: never started or stopped here, emptied before use and after."""

    def __init__(self, socket: str):
        super().__init__(online=True)
        shutil.rmtree(self.root, ignore_errors=True)  # nothing of its own on disk: the engine's are .ci/engine's
        self.socket = Path(socket)

    def answers(self) -> bool:
        return Path(self.socket).exists() and self._answers()

    def start(self) -> None:
        if not self.answers():
            raise RuntimeError(f"the second engine at {self.host} stopped answering")

    def reset(self, keep: str | None = None) -> None:
        """Empty: no container, no image but `keep` (when given), no build cache."""
        client = self.client()
        empty(client, client.inspect_image(keep)["Id"] if keep else None)
        client.prune_builds()

    def close(self) -> None:
        self.reset()


def _host_resolver() -> str:
    """The first name server of the host's resolv.conf that a container can reach (not a loopback one)."""
    for line in Path("/etc/resolv.conf").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "nameserver" and not fields[1].startswith("127."):
            return fields[1]
    raise RuntimeError("no name server in /etc/resolv.conf that a container can reach")


class PrivateRegistry:
    """`docker-registry serve` on its own port and storage; optionally with htpasswd users."""

    def __init__(self, users: dict[str, str] | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="ngcbuild-registry-"))
        self.port = free_port()
        self.log = self.root / "registry.log"
        self.process: subprocess.Popen | None = None
        self.starts = 0
        auth = ""
        if users:
            lines = []
            for user, password in users.items():
                made = subprocess.run(["htpasswd", "-nbB", user, password], capture_output=True, text=True,
                                      check=True)
                lines.append(made.stdout.strip())
            (self.root / "htpasswd").write_text("\n".join(lines) + "\n")
            auth = f"auth:\n  htpasswd:\n    realm: ngcbuild-test\n    path: {self.root / 'htpasswd'}\n"
        (self.root / "config.yml").write_text(
            f"version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {self.root / 'data'}\n"
            f"http:\n  addr: 127.0.0.1:{self.port}\n{auth}")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(["docker-registry", "serve", str(self.root / "config.yml")],
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        self.starts += 1
        _wait(self._answers, 30, "the private registry", self.log)

    def _answers(self) -> bool:
        try:
            urllib.request.urlopen(f"http://{self.address}/v2/", timeout=2).read()
            return True
        except urllib.error.HTTPError:  # 401 without credentials: it is up
            return True
        except OSError:
            return False

    def stop(self, kill: bool = False) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            self.process.wait(timeout=30)
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def private_registries(*names: str, engine: docker.APIClient | None = None) -> Iterator[dict[str, PrivateRegistry]]:
    """{name: PrivateRegistry} for each of `names`, started; on leaving, each closed and, given `engine`, that
    engine's tags naming it removed (what pushes from it left behind)."""
    made = {name: PrivateRegistry() for name in names}
    try:
        for registry in made.values():
            registry.start()
        yield made
    finally:
        for registry in made.values():
            registry.close()
            if engine is not None:
                untag_registry(engine, registry.address)


class FaultProxy:
    """An HTTP proxy in front of a registry. It can call `on_request(method, path)` before forwarding
    (return False to drop the connection, as a registry going down does) and can rewrite the
    Docker-Content-Digest header of manifest reads (a registry serving a different digest)."""

    HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"})

    def __init__(self, upstream: str, on_request=None, rewrite_digest: str | None = None, forge=None):
        # forge(method, path) -> (status, headers, body) answers a request in the registry's place (a hostile
        # registry's word), or None to forward it
        self.upstream, self.on_request, self.rewrite_digest, self.forge = upstream, on_request, rewrite_digest, forge
        self.requests: list[tuple[str, str]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                proxy.requests.append((self.command, self.path))
                body = self._body()
                if proxy.on_request and proxy.on_request(self.command, self.path) is False:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                forged = proxy.forge(self.command, self.path) if proxy.forge else None
                if forged is not None:
                    status, headers, data = forged
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                    return
                try:
                    upstream = http.client.HTTPConnection(proxy.upstream, timeout=120)
                    upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                    # header by header: the engine sends several Accept lines, all of which count
                    for key, value in self.headers.items():
                        if key.lower() not in proxy.HOP and key.lower() != "content-length":
                            upstream.putheader(key, value)
                    if body is not None:
                        upstream.putheader("Content-Length", str(len(body)))
                    upstream.endheaders(body)
                    response = upstream.getresponse()
                    data = response.read()
                except OSError:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(response.status, response.reason)
                for key, value in response.getheaders():
                    if key.lower() in proxy.HOP or key.lower() == "content-length":
                        continue
                    if (key.lower() == "docker-content-digest" and proxy.rewrite_digest
                            and self.command in ("GET", "HEAD") and "/manifests/" in self.path):
                        value = proxy.rewrite_digest
                    self.send_header(key, value)
                length = response.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
                self.send_header("Content-Length", length or "0")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _body(self) -> bytes | None:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = self.headers.get("Content-Length")
                return self.rfile.read(int(length)) if length else None

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def make_certificates(directory: Path, name: str = "ngcbuild-test-ca") -> Path:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, as dockerd --tlsverify and
    docker-py (DOCKER_CERT_PATH: ca.pem, cert.pem, key.pem) expect them."""
    directory.mkdir(parents=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca-key.pem", "-out", "ca.pem", "-days",
             "1", "-subj", f"/CN={name}", cwd=directory)
    for who, usage, extra in (("server", "serverAuth", "subjectAltName=IP:127.0.0.1\n"), ("client", "clientAuth", "")):
        (directory / f"{who}.ext").write_text(f"{extra}extendedKeyUsage={usage}\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{who}-key.pem", "-out", f"{who}.csr", "-subj",
                 f"/CN={who}", cwd=directory)
        _openssl("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                 "-out", f"{who}-cert.pem", "-days", "1", "-extfile", f"{who}.ext", cwd=directory)
    (directory / "cert.pem").write_bytes((directory / "client-cert.pem").read_bytes())
    (directory / "key.pem").write_bytes((directory / "client-key.pem").read_bytes())
    return directory


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def untag_registry(client: docker.APIClient, address: str) -> list[str]:
    """Remove this engine's tags naming a private registry (what pushes to it left behind); an image
    left without a tag goes with its last one."""
    return _untag(client, lambda tag: tag.startswith(f"{address}/"))


def untag_release(client: docker.APIClient, release: str) -> list[str]:
    """Remove this engine's tags of a test's own release under the default registry: its image tags and
    its stages' cache tags (nvcr.io/nvidia/pytorch[-cache]:RELEASE-...)."""
    return _untag(client, lambda tag: any(tag.startswith(f"nvcr.io/nvidia/{repository}:{release}-")
                                          for repository in ("pytorch", "pytorch-cache")))


def _untag(client: docker.APIClient, chosen) -> list[str]:
    removed = []
    for image in client.images():
        for tag in image.get("RepoTags") or []:
            if chosen(tag):
                try:
                    client.remove_image(tag)
                    removed.append(tag)
                except docker.errors.APIError:
                    pass  # a container uses it: leave it
    return removed


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root) + "/"
    mounts = []
    for line in Path("/proc/mounts").read_text().splitlines():
        point = line.split()[1]
        if point.startswith(prefix):
            mounts.append(point)
    return mounts
