"""Make a release's base image when it cannot be pulled: debootstrap from a Debian mirror, then
`docker import` under the name the Dockerfile uses, so the rendered Dockerfile is the same on every
machine."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import docker

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.references import ImageRef
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
        log(f"cannot pull {ref}: {exc.explanation or exc}")
    if release.base.bootstrap is None or ref != release.base.image or platform != release.build.platform:
        raise OperationError(f"base image {ref} for {platform} is not here and cannot be pulled; "
                             "pull or load it, or pass --base")
    log(f"making {ref} locally with debootstrap (`invoke base --release {release.release}`)")
    make_base(client, release, log=log)
    return "bootstrapped"


def _local_for(client: docker.APIClient, ref: str, platform: str) -> bool:
    """`ref` is here and built for `platform` (an amd64 image must not stand in for arm64)."""
    if not image_exists(client, ref):
        return False
    return client.inspect_image(ref).get("Architecture") == platform.split("/")[1]


def make_base(client: docker.APIClient, release: Release, log=print) -> str:
    """debootstrap the release's suite into a temporary root and import it as the base image."""
    spec = release.base.bootstrap
    if spec is None:
        raise UserError(f"manifests/{release.release}.yaml: base.bootstrap: not set; this base cannot be made locally")
    if shutil.which("debootstrap") is None:
        raise OperationError("debootstrap is not installed (apt-get install debootstrap)")
    arch = release.build.platform.split("/")[1]
    base = ImageRef.parse(release.base.image)
    repository, tag = base.repository, base.tag
    with tempfile.TemporaryDirectory(prefix="ngcbuild-base-", dir="/var/tmp") as tmp:
        root = Path(tmp) / "root"
        command = ["debootstrap", f"--variant={spec.variant}", f"--arch={arch}", spec.suite, str(root), spec.mirror]
        log("running " + " ".join(command))
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-20:])
            raise OperationError(f"debootstrap failed (exit {result.returncode}):\n{tail}")
        _slim(root)
        archive = Path(tmp) / "rootfs.tar"
        subprocess.run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(archive), "."], check=True)
        changes = [
            f"ENV PATH={DEFAULT_PATH}",
            'CMD ["bash"]',
            f"LABEL org.opencontainers.image.description=debootstrap-{spec.variant}-{spec.suite}-from-{spec.mirror}",
        ]
        client.import_image(src=str(archive), repository=repository, tag=tag, changes=changes)
    image = client.inspect_image(release.base.image)
    log(f"made {release.base.image} ({image['Id'][:19]}, {image['Size'] / 1e6:.0f} MB)")
    return image["Id"]


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
