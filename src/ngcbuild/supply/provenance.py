"""The in-toto statement (v1) with a SLSA provenance predicate (v1) of one pushed image.

subject: the pushed image manifest (repository and sha256). buildDefinition: what the image was made
from, each file with its sha256 (the manifest chain, the constraints, every image template), the
ngcbuild version and the commit of the checkout that built it, the base image's digest, the context
hash; runDetails: who built it (the builder id), when, and what the pipeline said of it afterwards
(the smoke verdict, the SBOM's and the audit report's sha256, which the signature thereby covers).

The statement describes the files as they are when it is made, so it is made only when build/R/
was rendered from exactly those files (the render stamp) and the record's context hash is that of
the render: otherwise the files have changed since the build and the statement would not be true.
"""

from __future__ import annotations

import os
import socket

from ngcbuild.core.errors import OperationError
from ngcbuild.workspace.record import Record
from ngcbuild.workspace.sections import NOT_RUN, PASSED, smoke_verdict

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
# what an ngcbuild image build is; the fields below are its parameters
BUILD_TYPE = "https://ngcbuild.invalid/build-types/image/v1"
BUILDER_ENV = "NGCBUILD_BUILDER_ID"


class ProvenanceUnavailable(OperationError):
    pass


def builder_id(environ=os.environ) -> str:
    """NGCBUILD_BUILDER_ID when set; on GitHub Actions the workflow that ran; else this host."""
    if environ.get(BUILDER_ENV):
        return environ[BUILDER_ENV]
    if environ.get("GITHUB_ACTIONS") == "true" and environ.get("GITHUB_REPOSITORY"):
        server = environ.get("GITHUB_SERVER_URL", "https://github.com")
        workflow = (environ.get("GITHUB_WORKFLOW_REF")
                    or f"{environ['GITHUB_REPOSITORY']}@{environ.get('GITHUB_REF', '')}")
        return f"{server}/{workflow}"
    return f"ngcbuild://{socket.gethostname()}"


def invocation_id(environ=os.environ) -> str | None:
    if environ.get("GITHUB_RUN_ID") and environ.get("GITHUB_REPOSITORY"):
        server = environ.get("GITHUB_SERVER_URL", "https://github.com")
        return (f"{server}/{environ['GITHUB_REPOSITORY']}/actions/runs/{environ['GITHUB_RUN_ID']}"
                f"/attempts/{environ.get('GITHUB_RUN_ATTEMPT', '1')}")
    return None


def materials(project, loaded) -> list[dict]:
    """The files the image was rendered from (the release's own, the component catalogue, every image
    template), each with its sha256, in a stable order: read as the render stamp reads them
    (render/stamp.input_files)."""
    from ngcbuild.render.stamp import input_files, release_inputs

    own = [*release_inputs(project, loaded), project.catalog]
    files = input_files(project, own, ((project.image_templates, "*"),))
    return [{"uri": f"file:{path.relative_to(project.root).as_posix()}", "digest": {"sha256": sha256}}
            for path, sha256 in files]


def ngcbuild_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ngcbuild")
    except PackageNotFoundError:
        return "unknown"


def statement(*, subject_name: str, digest: str, release: str, record: Record, files: list[dict],
              base: dict, byproducts: list[dict], registry: str, checkout: str | None, attached: list[str],
              environ=os.environ, now: str) -> dict:
    """The statement (a JSON object) for the image manifest `digest` pushed as `subject_name`.
    The commit is the one the build recorded; a reused image's record has none, and then it is the
    attesting checkout's (whose files the stamp proved to be those of the image's render)."""
    build, smoke = record.build, record.smoke
    verdict = smoke_verdict(smoke, build.image_id or "")
    dependencies = [*files, base]
    commit, whose = (build.source_revision, "build") if build.source_revision else (checkout, "attest")
    if commit:
        dependencies.append({"uri": "git+checkout", "digest": {"gitCommit": commit}, "name": "ngcbuild checkout",
                             "annotations": {"recorded_by": whose}})
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {"sha256": digest.removeprefix("sha256:")}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": {
                "buildType": BUILD_TYPE,
                "externalParameters": {"release": release, "registry": registry, "platform": build.platform,
                                       "base_image": build.base_image},
                "internalParameters": {"context_sha256": build.context_sha256,
                                       "image_id": build.image_id, "reused": build.reused,
                                       "ngcbuild_version": ngcbuild_version(),
                                       **_normalisation(build),
                                       # the documents attached beside the image with this statement
                                       "attached": attached},
                "resolvedDependencies": dependencies,
            },
            "runDetails": {
                "builder": {"id": builder_id(environ), "version": {"ngcbuild": ngcbuild_version()}},
                "metadata": {**({"invocationId": invocation_id(environ)} if invocation_id(environ) else {}),
                             "startedOn": build.built_at, "finishedOn": now},
                "byproducts": [
                    {"name": "smoke", "annotations": {
                        "verdict": verdict if verdict in (PASSED, NOT_RUN) else "failed",
                        **{k: v for k, v in (smoke.to_json() if smoke else {}).items()
                           if k in ("passed", "failed", "errors", "skipped", "exit_code", "at")}}},
                    *byproducts,
                ],
            },
        },
    }


def _normalisation(build) -> dict:
    """The epoch every time in the image says and how the release image is made from the engine's
    (docs/reproducible.md): what a consumer's rebuild needs to give the same image."""
    done = build.normalisation
    if done is None:
        return {}
    return {"source_date_epoch": done.epoch,
            "normalisation": {"version": done.version, "epoch_from": done.epoch_from, "made_after": done.made_after,
                              "base_layers": done.base_layers}}


def base_image(name: str) -> dict:
    """The base image as a dependency: its repository digest when the engine knows one (pulled), its
    local image id otherwise (made here with debootstrap: no registry ever served it)."""
    import docker

    from ngcbuild.engine.client import connect

    try:
        inspected = connect().inspect_image(name)
    except docker.errors.APIError as exc:
        raise ProvenanceUnavailable(f"the base image {name} is not on this engine ({type(exc).__name__}); attest "
                                    "on the machine that built the image") from None
    repo_digest = next((d for d in inspected.get("RepoDigests") or [] if "@sha256:" in d), None)
    if repo_digest:
        return {"uri": f"docker://{name}", "name": "base image",
                "digest": {"sha256": repo_digest.rpartition("@sha256:")[2]},
                "annotations": {"digest": "repository digest"}}
    return {"uri": f"docker://{name}", "name": "base image",
            "digest": {"sha256": inspected["Id"].removeprefix("sha256:")},
            "annotations": {"digest": "local image id (made on this machine, never pulled)"}}
