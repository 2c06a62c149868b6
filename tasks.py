"""The commands users and CI run (`invoke --list`). Each task parses its arguments and calls one
ngcbuild function; all logic lives in src/ngcbuild."""

from invoke import task

from ngcbuild import api
from ngcbuild.cli import guarded


@task(help={"release": "release name (manifests/R.yaml)"})
@guarded
def render(c, release):
    """Write build/R/: the Dockerfile and every context file, byte-identical on every run."""
    api.render(release)


@task(help={
    "release": "release name (manifests/R.yaml)",
    "registry": "registry host of the tag (default nvcr.io)",
    "ca_bundle": "CA bundle for pip/apt in the build (default: $PIP_CERT, $SSL_CERT_FILE or $REQUESTS_CA_BUNDLE)",
    "wheelhouse": "directory of wheels to install offline (default: $PIP_FIND_LINKS when it is a directory)",
    "no_cache": "build without the engine's layer cache",
})
@guarded
def build(c, release, registry=None, ca_bundle=None, wheelhouse=None, no_cache=False):
    """Render and build R with the Docker SDK; tag <registry>/nvidia/pytorch:R-py3; write build/R/record.json."""
    api.build(release, registry=registry, ca_bundle=ca_bundle, wheelhouse=wheelhouse, no_cache=no_cache)


@task(help={
    "release": "release name",
    "require_gpu": "turn every GPU skip into a failure (GPU runners)",
    "image": "image to test (default: the one in build/R/record.json)",
})
@guarded
def smoke(c, release, require_gpu=False, image=None):
    """Run the smoke suite inside the built image; JUnit at build/R/smoke-junit.xml."""
    api.smoke(release, require_gpu=require_gpu, image=image)


@task(help={"release": "release name", "registry": "registry HOST[:PORT] to push to"})
@guarded
def push(c, release, registry):
    """Push every tag of R to the registry, verify the digest read back, record it."""
    api.push(release, registry=registry)


@task(help={"release": "release whose base image to make (default dev)"})
@guarded
def base(c, release="dev"):
    """Make the base image of R locally (debootstrap + docker import) when it cannot be pulled."""
    api.base(release)


@task
@guarded
def reliability(c):
    """Run the corpus of broken inputs, the fault tests and the secrets scans; write RELIABILITY.md."""
    api.reliability()


@task(help={"k": "only tests matching this expression", "unit": "unit tests only (no engine)"})
def test(c, k=None, unit=False):
    """The whole test suite (unit + integration against a real engine and registry)."""
    args = ["tests/unit"] if unit else ["tests"]
    if k:
        args += ["-k", k]
    c.run("python -m pytest " + " ".join(f"'{a}'" for a in args), pty=False)
