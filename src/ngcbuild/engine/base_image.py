"""Make a release's base image when it cannot be pulled: debootstrap from a Debian mirror, then
a `FROM scratch` + `ADD rootfs.tar /` build under the name the Dockerfile uses, so the rendered
Dockerfile is the same on every machine. A build, not `docker import`: the engine's import records
its own architecture whatever `--platform` says, a build records the platform it was asked for.

The manifest's platform gets the manifest's name (`debian:bookworm-slim`); another platform gets
that name with the architecture appended (`debian:bookworm-slim-arm64`), since one local name holds
one architecture: build that platform with `--base-image debian:bookworm-slim-arm64`. Another
architecture is bootstrapped under emulation (`.ci/qemu`)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import docker

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.references import ImageRef
from ngcbuild.core.text import safe
from ngcbuild.engine.client import image_exists
from ngcbuild.manifest.model import Release

# What Debian's -slim images leave out; kept out of every later apt install too.
SLIM_DPKG_EXCLUDES = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
"""
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def ensure_base(client: docker.APIClient, release: Release, log=print, ref: str | None = None,
                platform: str | None = None) -> str:
    """The base image (`ref`, default the manifest's) for `platform` (default the manifest's) is
    local, pulled, or bootstrapped (in that order; only the manifest's own image, for the manifest's
    platform, is bootstrapped). Returns how it was found."""
    ref = ref or release.base.image
    platform = platform or release.build.platform
    if _local_for(client, ref, platform):
        return "local"
    log(f"base image {ref} for {platform} is not here; trying to pull it")
    try:
        for _ in client.pull(ref, stream=True, decode=True, platform=platform):
            pass
        if _local_for(client, ref, platform):
            return "pulled"
    except docker.errors.APIError as exc:
        log(f"cannot pull {ref}: {safe(exc.explanation or exc, 300)}")  # the engine's words
    if release.base.bootstrap is None or ref != base_name(release, platform):
        made = f"; `invoke base --release {release.release} --platform {platform}` makes " \
               f"{base_name(release, platform)}" if release.base.bootstrap is not None else ""
        raise OperationError(f"base image {ref} for {platform} is not here and cannot be pulled; "
                             f"pull or load it, or pass --base-image{made}")
    log(f"making {ref} locally with debootstrap (`invoke base --release {release.release} --platform {platform}`)")
    make_base(client, release, log=log, platform=platform)
    return "bootstrapped"


def base_name(release: Release, platform: str) -> str:
    """The local name of the base image bootstrapped for `platform`: the manifest's own for its
    platform, with `-<arch>` appended to the tag for any other."""
    if platform == release.build.platform:
        return release.base.image
    base = ImageRef.parse(release.base.image)
    return f"{base.repository}:{base.tag}-{platform.split('/')[1]}"


def _local_for(client: docker.APIClient, ref: str, platform: str) -> bool:
    """`ref` is here and built for `platform` (an amd64 image must not stand in for arm64)."""
    if not image_exists(client, ref):
        return False
    return client.inspect_image(ref).get("Architecture") == platform.split("/")[1]


def make_base(client: docker.APIClient, release: Release, log=print, platform: str | None = None) -> str:
    """debootstrap the release's suite for `platform` (default the manifest's) into a temporary root
    and build it as the base image (`base_name`). Returns the image id."""
    spec = release.base.bootstrap
    if spec is None:
        raise UserError(f"manifests/{release.release}.yaml: base.bootstrap: not set; this base cannot be made locally")
    if shutil.which("debootstrap") is None:
        raise OperationError("debootstrap is not installed (apt-get install debootstrap)")
    platform = platform or release.build.platform
    arch = platform.split("/")[1]
    name = base_name(release, platform)
    with tempfile.TemporaryDirectory(prefix="ngcbuild-base-", dir="/var/tmp") as tmp:
        root = Path(tmp) / "root"
        command = ["debootstrap", f"--variant={spec.variant}", f"--arch={arch}", spec.suite, str(root), spec.mirror]
        log("running " + " ".join(command))
        try:
            result = subprocess.run(command, capture_output=True, text=True)
        finally:  # a debootstrap that stopped halfway leaves /proc and /sys mounted in the root it made
            _unmount_under(root)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-20:])
            raise OperationError(f"debootstrap failed (exit {result.returncode}):\n{tail}")
        _slim(root)
        context = Path(tmp) / "context"
        context.mkdir()
        subprocess.run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(context / "rootfs.tar"), "."],
                       check=True)
        shutil.rmtree(root)
        (context / "Dockerfile").write_text(base_dockerfile(spec))
        _build_from_scratch(client, context, name, platform, log)
    image = client.inspect_image(name)
    if image.get("Architecture") != arch:
        raise OperationError(f"made {name}, but the engine recorded it as {image.get('Architecture')}, not {arch}")
    log(f"made {name} for {platform} ({image['Id'][:19]}, {image['Size'] / 1e6:.0f} MB)")
    return image["Id"]


def _unmount_under(root: Path) -> None:
    """Every mount below `root` unmounted, deepest first, so that the temporary folder can be removed
    (mountinfo's fifth field is the mount point, with spaces escaped as \\040)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return
    points = [line.split()[4].replace("\\040", " ") for line in lines if len(line.split()) > 4]
    inside = [point for point in points if Path(point).is_relative_to(root)]
    for point in sorted(inside, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True)


def base_dockerfile(spec) -> str:
    """The image of a bootstrapped root: its files, the PATH and command of Debian's images, and
    where it came from."""
    return (f"FROM scratch\nADD rootfs.tar /\nENV PATH={DEFAULT_PATH}\n"
            f"LABEL org.opencontainers.image.description=debootstrap-{spec.variant}-{spec.suite}-from-{spec.mirror}\n"
            'CMD ["bash"]\n')


def _build_from_scratch(client: docker.APIClient, context: Path, name: str, platform: str, log) -> None:
    """The classic builder, for one platform; an error in the stream is an error (as in every build)."""
    stream = client.build(path=str(context), tag=name, platform=platform, rm=True, forcerm=True, decode=True)
    for event in stream:
        if "error" in event or "errorDetail" in event:
            detail = event.get("errorDetail", {}).get("message") or event.get("error")
            # the engine's words: escaped (an escape sequence or a second line in them reaches no terminal)
            raise OperationError(f"making the base image {name} failed: {safe(detail, 1000)}")
        if event.get("stream", "").startswith("Step "):
            log(safe(event["stream"].rstrip(), 1000))


def _slim(root: Path) -> None:
    for pattern in ("var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb",
                    "usr/share/man/*", "usr/share/info/*", "var/log/*.log"):
        for path in root.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    (root / "etc/dpkg/dpkg.cfg.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/dpkg/dpkg.cfg.d/docker-slim").write_text(SLIM_DPKG_EXCLUDES)
