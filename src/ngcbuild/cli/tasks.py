"""The tasks of `ngcbuild` and `invoke` (the same collection; `invoke` in ngcbuild's own checkout adds
the project's tools from dev/tasks.py). Each task parses its arguments and calls one function of
`ngcbuild.cli.commands`; all logic lives below that."""

import sys

from invoke import Collection

from ngcbuild.cli import commands
from ngcbuild.cli.guard import command

ENGINE_HELP = (
    "Docker engine URL: unix://, tcp:// (TLS from DOCKER_TLS_VERIFY, DOCKER_CERT_PATH); default DOCKER_HOST")


@command(help={"release": "release name (manifests/R.yaml)",
            "base": "base image to build FROM instead of the manifest's (a mirror of it)"})
def render(c, release, base=None):
    """Write build/R/: the Dockerfile and every context file, byte-identical on every run."""
    commands.render(release, base=base)


@command(help={
    "release": "release name (manifests/R.yaml)",
    "registry": "registry host of the tag (default nvcr.io)",
    "ca_bundle": "CA bundle for pip/apt in the build (default: $PIP_CERT, $SSL_CERT_FILE or $REQUESTS_CA_BUNDLE)",
    "wheelhouse": "directory of wheels to install offline (default: $PIP_FIND_LINKS when it is a directory)",
    "no_cache": "build without the engine's layer cache",
    "base": "base image to build FROM instead of the manifest's (a mirror of it)",
    "platform": "linux/amd64 or linux/arm64 (default: the manifest's build.platform); one platform per build",
    "force_platform": "build --platform even when the manifest's build.platforms does not list it",
    "force": "build even when an image of the same context hash exists locally or in --registry",
    "label": "extra image label KEY=VALUE (repeatable), e.g. the CI run, for cleanup by label",
    "cache_from": "registry HOST[:PORT] to pull R's layer cache (every stage's image) from before building",
    "cache_to": "registry HOST[:PORT] to push R's layer cache (every stage's image) to after building",
    "engine": ENGINE_HELP,
}, iterable=["label"])
def build(c, release, registry=None, ca_bundle=None, wheelhouse=None, no_cache=False, base=None, platform=None,
          force=False, label=None, cache_from=None, cache_to=None, engine=None, force_platform=False):
    """Render and build R with the Docker SDK; tag <registry>/nvidia/pytorch:R-py3; write build/R/record.json."""
    commands.build(release, registry=registry, ca_bundle=ca_bundle, wheelhouse=wheelhouse, no_cache=no_cache,
              base=base, platform=platform, force=force, labels=label, cache_from=cache_from, cache_to=cache_to,
              engine=engine, force_platform=force_platform)


@command(help={
    "release": "release name (with --host: check the host against R's manifest)",
    "require_gpu": "turn every no-GPU skip into a failure (GPU runners)",
    "image": "image to test (default: the one in build/R/record.json)",
    "perf": "also run the performance smoke; figures to build/R/perf.json",
    "baseline": "with --perf: the same on this release's image or image REF, report regressions",
    "threshold": "with --baseline: a figure worse by more than this fraction is a regression (default 0.05)",
    "host": "run the checks with the host's Python, no Docker (a GPU machine); results in build/host/",
    "expect_from_env": "with --host: expectations from the host's PyTorch/CUDA/cuDNN/NCCL instead of a manifest",
    "python": "with --host: the interpreter whose PyTorch to check (default: this one)",
    "engine": ENGINE_HELP,
})
def smoke(c, release=None, require_gpu=False, image=None, perf=False, baseline=None, threshold=None,
          host=False, expect_from_env=False, python=None, engine=None):
    """Run the smoke suite inside the built image (or on the host); JUnit at build/R/smoke-junit.xml."""
    commands.smoke(release, require_gpu=require_gpu, image=image, perf=perf, baseline=baseline, threshold=threshold,
              host=host, expect_from_env=expect_from_env, python=python, engine=engine)


@command(help={
    "release": "release name (manifests/R.yaml)",
    "image": "image to plant the defects in (default: the one in build/R/record.json)",
    "jobs": "mutants tested side by side, each in its own container (default 2)",
    "engine": ENGINE_HELP,
})
def mutate(c, release, image=None, jobs=None, engine=None):
    """Plant each defect of the catalogue in R's image, run the smoke suite on it; exit 1 on a survivor."""
    commands.mutate(release, image=image, jobs=jobs, engine=engine)


@command(help={"release": "release name", "registry": "registry HOST[:PORT] to push to",
               "cache": "also push the layer cache (every stage's image, under <repository>-cache) for --cache-from",
               "engine": ENGINE_HELP})
def push(c, release, registry, cache=False, engine=None):
    """Push every tag of R to the registry, verify the digest read back, record it."""
    commands.push(release, registry=registry, cache=cache, engine=engine)


@command(help={"release": "release name", "registry": "registry HOST[:PORT] to publish to",
               "records": "folder of the platform jobs' record.json files (CI): list what they pushed, push nothing"})
def publish(c, release, registry, records=None):
    """Push one tag per platform of R, then the multi-arch tag R-py3 as a manifest list."""
    commands.publish(release, registry=registry, records=records)


@command(help={"release": "release name", "image": "image to describe (default: the one in build/R/record.json)"})
def sbom(c, release, image=None):
    """Write build/R/sbom.cdx.json (CycloneDX) from inside the built image; record its digest."""
    commands.sbom(release, image=image)


@command(help={"release": "release name",
               "pypi_mirror": "a mirror of PyPI's JSON API to ask instead of PyPI, https://HOST/PATH such as "
                              "https://mirror.example/pypi (default: $NGCBUILD_PYPI_MIRROR, else https://pypi.org/pypi)"})
def audit(c, release, pypi_mirror=None):
    """Check the Python distributions of R's SBOM against PyPI's advisory data; report build/R/audit.json;
    exit 1 on an advisory the manifest's security.allow does not allow, an expired one, or too little checked."""
    commands.audit(release, pypi_mirror=pypi_mirror)


TRUSTED_KEY_HELP = ("public key FILE (PEM Ed25519) whose signatures are trusted (repeatable; default: the files in "
                    "$NGCBUILD_TRUSTED_KEYS, separated by :)")


@command(help={"release": "release name", "from_": "registry HOST[:PORT] to copy from",
            "to": "registry HOST[:PORT] to copy to", "trusted_key": TRUSTED_KEY_HELP}, iterable=["trusted_key"])
def promote(c, release, from_, to, trusted_key=None):
    """Copy R's pushed image by digest to another registry (only after a passing smoke run and a verified
    attestation), with its attestations; verify it."""
    commands.promote(release, source=from_, target=to, trusted_keys=trusted_key)


@command(help={"out": "path of the private key, inside the project (default keys/signing.key); the public key "
                      "is written beside it as PATH.pub"})
def keygen(c, out=None):
    """Make an Ed25519 key pair to try signing out: the private key (mode 0600) and PATH.pub."""
    commands.keygen(out)


@command(help={"release": "release name", "registry": "registry HOST[:PORT] R was pushed to",
               "key": "private key FILE (PEM Ed25519, mode 0600; default: $NGCBUILD_SIGNING_KEY_FILE)"})
def attest(c, release, registry, key=None):
    """Sign the SLSA provenance of each image of R pushed to the registry; attach it, the SBOM and the audit report."""
    commands.attest(release, registry=registry, key=key)


@command(help={"image": "HOST[:PORT]/name:tag or ...@sha256:DIGEST in a registry",
                                         "trusted_key": TRUSTED_KEY_HELP}, iterable=["trusted_key"])
def verify_attestation(c, image, trusted_key=None):
    """Check an image's attestations in its registry (signed by a trusted key, about this digest); print them."""
    commands.verify_attestation(image, trusted_keys=trusted_key)


RELEASES_HELP = "only these releases, by name, separated by spaces or commas (the release workflow's dispatch input)"


@command(help={"base": "compare with this commit or branch (default: every buildable release)",
               "releases": RELEASES_HELP})
def changed(c, base=None, releases=None):
    """JSON: the releases whose inputs (manifests, constraints, image templates, ngcbuild's code) changed since
    --base, and their CI jobs."""
    commands.changed_jobs(base=base, releases=releases)


@command(help={"release": "release whose base image to make (default dev)",
               "platform": "linux/amd64 or linux/arm64 (default: the manifest's); another one is named IMAGE-ARCH"})
def base(c, release="dev", platform=None):
    """Make the base image of R locally (debootstrap) when it cannot be pulled; another platform under emulation."""
    commands.base(release, platform=platform)


@command(help={"keep": "ngcbuild images to keep per release and platform, newest first (default 2)",
               "engine": ENGINE_HELP})
def prune(c, keep=None, engine=None):
    """Remove dangling images and ngcbuild's images beyond the newest --keep per release and platform."""
    commands.prune(keep=keep, engine=engine)


@command(help={"release": "release name (manifests/R.yaml)"})
def notes(c, release):
    """Write build/R/release-notes.md: NVIDIA's sections, generated from the manifests."""
    commands.notes(release)


@command(help={"json": "print JSON (for CI and scripts) instead of Markdown",
            "changed": "with --json: only the releases (and CI jobs) that changes since --base touch",
            "base": "with --changed: the commit or branch to compare with (default: every buildable release)",
            "releases": "with --changed: " + RELEASES_HELP})
def matrix(c, json=False, changed=False, base=None, releases=None):
    """Print the support matrix across all manifests (Markdown; --json for CI; --changed for the CI plan)."""
    if changed:
        commands.changed_jobs(base=base, releases=releases)
    else:
        commands.matrix(as_json=json)


@command(positional=["old", "new"], help={"old": "the earlier release", "new": "the later release",
                                       "json": "print JSON instead of Markdown"})
def diff(c, old, new, json=False):
    """What changed from release OLD to release NEW: components, Python packages, settings."""
    commands.diff(old, new, as_json=json)


@command(help={"screenshot": "take a screenshot of the index with headless Chromium (default on, when installed)"})
def docs(c, screenshot=True):
    """Build the documentation site in build/site/: support matrix, release notes, diffs."""
    commands.docs(screenshot=screenshot)



@command(help={"release": "release name (manifests/R.yaml)",
               "json": "print JSON (for CI and scripts) instead of the table",
               "base": "the mirror of the base image the build will use (as for invoke build --base)"})
def verify(c, release, json=False, base=None):
    """Check every pin of R against its indexes for R's Python and platforms; exit 1 on a failure."""
    commands.verify(release, as_json=json, base=base)


@command(help={
    "workflow": "release (release.yml, the default) or ci (ci.yml's --job jobs)",
    "release": "release.yml: the release(s) to build, by name (the dispatch input), e.g. dev",
    "staging": "release.yml: the staging registry HOST[:PORT] the build jobs push to",
    "registry": "release.yml: the release registry HOST[:PORT] the publish job promotes to",
    "secret_file": "release.yml: KEY=VALUE lines for act's secrets (RELEASE_REGISTRY_USER, RELEASE_REGISTRY_PASSWORD)",
    "require_gpu": "release.yml: keep smoke's --require-gpu (off by default: a rehearsal host has no GPU)",
    "job": "ci.yml: a job to run (repeatable): lint, unit",
}, iterable=["job"])
def rehearse(c, workflow="release", release=None, staging=None, registry=None, secret_file=None, require_gpu=False,
             job=None):
    """Run a workflow locally through act (host mode, local stand-ins for downloaded actions), as CI would."""
    commands.rehearse(workflow, release=release, staging=staging, registry=registry, secret_file=secret_file,
                      require_gpu=require_gpu, jobs=job)


namespace = Collection.from_module(sys.modules[__name__])
