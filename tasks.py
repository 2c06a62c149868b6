"""The commands users and CI run (`invoke --list`). Each task parses its arguments and calls one
ngcbuild function; all logic lives in src/ngcbuild."""

from invoke import task

from ngcbuild import api
from ngcbuild.cli import guarded


@task(help={"release": "release name (manifests/R.yaml)",
            "base": "base image to build FROM instead of the manifest's (a mirror of it)"})
@guarded
def render(c, release, base=None):
    """Write build/R/: the Dockerfile and every context file, byte-identical on every run."""
    api.render(release, base=base)


@task(help={
    "release": "release name (manifests/R.yaml)",
    "registry": "registry host of the tag (default nvcr.io)",
    "ca_bundle": "CA bundle for pip/apt in the build (default: $PIP_CERT, $SSL_CERT_FILE or $REQUESTS_CA_BUNDLE)",
    "wheelhouse": "directory of wheels to install offline (default: $PIP_FIND_LINKS when it is a directory)",
    "no_cache": "build without the engine's layer cache",
    "base": "base image to build FROM instead of the manifest's (a mirror of it)",
    "platform": "linux/amd64 or linux/arm64 (default: the manifest's build.platform); one platform per build",
    "force": "build even when an image of the same context hash exists locally or in --registry",
    "label": "extra image label KEY=VALUE (repeatable), e.g. the CI run, for cleanup by label",
}, iterable=["label"])
@guarded
def build(c, release, registry=None, ca_bundle=None, wheelhouse=None, no_cache=False, base=None, platform=None,
          force=False, label=None):
    """Render and build R with the Docker SDK; tag <registry>/nvidia/pytorch:R-py3; write build/R/record.json."""
    api.build(release, registry=registry, ca_bundle=ca_bundle, wheelhouse=wheelhouse, no_cache=no_cache,
              base=base, platform=platform, force=force, labels=label)


@task
@guarded
def golden(c):
    """Regenerate tests/golden/<R>/Dockerfile for every buildable release, for review with git diff."""
    api.golden()


@task(help={
    "release": "release name (with --host: check the host against R's manifest)",
    "require_gpu": "turn every no-GPU skip into a failure (GPU runners)",
    "image": "image to test (default: the one in build/R/record.json)",
    "perf": "also run the performance smoke; figures to build/R/perf.json",
    "baseline": "with --perf: the same on this release's image or image REF, report regressions",
    "threshold": "with --baseline: a figure worse by more than this fraction is a regression (default 0.05)",
    "host": "run the checks with the host's Python, no Docker (a GPU machine); results in build/host/",
    "expect_from_env": "with --host: expectations from the host's PyTorch/CUDA/cuDNN/NCCL instead of a manifest",
    "python": "with --host: the interpreter whose PyTorch to check (default: this one)",
})
@guarded
def smoke(c, release=None, require_gpu=False, image=None, perf=False, baseline=None, threshold=None,
          host=False, expect_from_env=False, python=None):
    """Run the smoke suite inside the built image (or on the host); JUnit at build/R/smoke-junit.xml."""
    api.smoke(release, require_gpu=require_gpu, image=image, perf=perf, baseline=baseline, threshold=threshold,
              host=host, expect_from_env=expect_from_env, python=python)


@task(help={"release": "release name", "registry": "registry HOST[:PORT] to push to"})
@guarded
def push(c, release, registry):
    """Push every tag of R to the registry, verify the digest read back, record it."""
    api.push(release, registry=registry)


@task(help={"release": "release name", "registry": "registry HOST[:PORT] to publish to"})
@guarded
def publish(c, release, registry):
    """Push one tag per platform of R, then the multi-arch tag R-py3 as a manifest list."""
    api.publish(release, registry=registry)


@task(help={"release": "release name", "image": "image to describe (default: the one in build/R/record.json)"})
@guarded
def sbom(c, release, image=None):
    """Write build/R/sbom.cdx.json (CycloneDX) from inside the built image; record its digest."""
    api.sbom(release, image=image)


@task(help={"release": "release name", "from_": "registry HOST[:PORT] to copy from",
            "to": "registry HOST[:PORT] to copy to"})
@guarded
def promote(c, release, from_, to):
    """Copy R's pushed image by digest to another registry (only after a passing smoke run); verify it."""
    api.promote(release, source=from_, target=to)


@task(help={"base": "compare with this commit or branch (default: every buildable release)"})
@guarded
def changed(c, base=None):
    """JSON: the releases whose manifest, constraints or templates changed since --base, and their CI jobs."""
    api.changed_jobs(base=base)


@task(help={"release": "release whose base image to make (default dev)"})
@guarded
def base(c, release="dev"):
    """Make the base image of R locally (debootstrap + docker import) when it cannot be pulled."""
    api.base(release)


@task(help={"runs": "runs per timed figure (median and spread)",
            "registry": "registry HOST[:PORT] for the push-reuse figure (skipped when not given)",
            "release": "dev (every figure) or cuda-dev (cold build, size, one pin, push); its own section"})
@guarded
def bench(c, runs=3, registry=None, release="dev"):
    """Build speed, cache reuse, image size, render and push figures for `dev` (or cuda-dev), in BENCHMARKS.md."""
    api.bench(runs=int(runs), registry=registry, release=release)


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


@task(help={"release": "release name (manifests/R.yaml)"})
@guarded
def notes(c, release):
    """Write build/R/release-notes.md: NVIDIA's sections, generated from the manifests."""
    api.notes(release)


@task(help={"json": "print JSON (for CI and scripts) instead of Markdown",
            "changed": "with --json: only the releases (and CI jobs) that changes since --base touch",
            "base": "with --changed: the commit or branch to compare with (default: every buildable release)"})
@guarded
def matrix(c, json=False, changed=False, base=None):
    """Print the support matrix across all manifests (Markdown; --json for CI; --changed for the CI plan)."""
    if changed:
        api.changed_jobs(base=base)
    else:
        api.matrix(as_json=json)


@task(positional=["old", "new"], help={"old": "the earlier release", "new": "the later release",
                                       "json": "print JSON instead of Markdown"})
@guarded
def diff(c, old, new, json=False):
    """What changed from release OLD to release NEW: components, Python packages, settings."""
    api.diff(old, new, as_json=json)


@task(help={"screenshot": "take a screenshot of the index with headless Chromium (default on, when installed)"})
@guarded
def docs(c, screenshot=True):
    """Build the documentation site in build/site/: support matrix, release notes, diffs."""
    api.docs(screenshot=screenshot)


@task(help={"release": "release name (manifests/R.yaml)",
            "json": "print JSON (for CI and scripts) instead of the table",
            "base": "the mirror of the base image the build will use (as for invoke build --base)"})
@guarded
def verify(c, release, json=False, base=None):
    """Check every pin of R against its indexes for R's Python and platforms; exit 1 on a failure."""
    api.verify(release, as_json=json, base=base)
