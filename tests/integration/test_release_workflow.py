"""The workflows run, not only linted: release.yml end to end through act (`ngcbuild rehearse`, host
mode, the real engine, the local staging registry and a release registry of its own with
credentials), its failure paths, and the ci.yml jobs this machine can run. Judged from outside: act's
exit status, the registries' contents, the engine's images, and the whole log (no secret in it).

The staging registry is the shared local one, named `localhost:PORT` rather than 127.0.0.1:PORT: the
tags the run makes on the (shared) engine are then its own, so the workflow's cleanup and this test's
never move or remove a tag another test made under the 127.0.0.1 name.
"""

import gzip
import json
import re
import secrets
import shutil
import subprocess
from pathlib import Path

import docker
import pytest

from ngcbuild.core.references import host_address
from ngcbuild.registry.auth import Credentials
from ngcbuild.registry.client import Registry

from ..conftest import REPO, run_command
from ..helpers import minimal_manifest
from .private import PrivateRegistry

pytestmark = [pytest.mark.engine, pytest.mark.workflow]

REPOSITORY = "nvidia/pytorch"
RUN_LABEL = "io.ngcbuild.ci.run"  # release.yml's RUN_LABEL key
USER = "release-bot"
BROKEN = minimal_manifest("a release whose interpreter pin does not exist (its build fails at step 2)",
                          python3_apt="0.0.0-does-not-exist")


@pytest.fixture
def staging(engine, registry):
    """The shared registry under its `localhost` name; afterwards, what the runs left under that name on
    the engine is taken off: the stage images' cache tags (an image another tag names stays) and a
    run's image pulled back by a later run as its layer cache."""
    name = f"localhost:{registry.rpartition(':')[2]}" if host_address(registry) == "127.0.0.1" else registry
    yield name
    for image in engine.images():
        tags = [t for t in image.get("RepoTags") or [] if t != "<none>:<none>"]
        names = tags + [d for d in image.get("RepoDigests") or [] if d != "<none>@<none>"]
        if not any(n.startswith(name + "/") for n in names):
            continue
        if RUN_LABEL in (image.get("Labels") or {}) and all(n.startswith(name + "/") for n in names):
            # a run's image that a later run pulled back as its layer cache (the final stage's cache
            # image): every name it has is the rehearsal's, and a rehearsal does not prune
            try:
                engine.remove_image(image["Id"], force=True, noprune=True)
            except docker.errors.APIError as exc:
                if exc.status_code != 409:  # 409: a later build's layers were cut from it (its children)
                    raise
                for each in names:  # its names taken off; the layers go with the children that hold them
                    engine.remove_image(each, noprune=True)
            continue
        for tag in tags:  # other images: only the rehearsal's tags taken off (the last one removes it)
            if tag.startswith(name + "/"):
                engine.remove_image(tag, noprune=True)


@pytest.fixture
def release_registry():
    password = "rel-pw-" + secrets.token_hex(16)
    served = PrivateRegistry(users={USER: password})
    served.start()
    try:
        yield served, password
    finally:
        served.close()


def signing_keys() -> tuple[str, str]:
    """A key pair made for the run, each PEM in base64 on one line (as the workflow's secrets hold them)."""
    import base64

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(private).decode(), base64.b64encode(public).decode()


def secret_file(directory: Path, password: str) -> Path:
    """The release registry's credentials and the attestation keys, as act's --secret-file."""
    private, public = signing_keys()
    path = directory / "secrets.env"
    path.write_text(f"RELEASE_REGISTRY_USER={USER}\nRELEASE_REGISTRY_PASSWORD={password}\n"
                    f"ATTESTATION_SIGNING_KEY={private}\nATTESTATION_PUBLIC_KEY={public}\n")
    path.chmod(0o600)
    return path


def rehearse(cwd: Path, releases: str, staging: str, release_host: str, secrets_path: Path):
    result = run_command("ngcbuild", "rehearse", "--releases", releases, "--staging-registry", staging,
                         "--release-registry", release_host, "--secret-file", str(secrets_path), cwd=cwd, timeout=3000)
    log = result.stdout + result.stderr
    (secrets_path.parent / "act.log").write_text(log)  # kept with the test's files for a post-mortem
    label = re.search(r"images labelled (io\.ngcbuild\.ci\.run=[0-9]+-1)\)", log)
    assert label, log[-3000:]
    return result, log, label.group(1), re.search(r"; run ([0-9]+) ", log).group(1)


def ended(log: str, job: str, how: str) -> bool:
    """act's closing line of `job` (its name, as act prints it, padded or numbered in a matrix)."""
    return re.search(rf"^\[release/{re.escape(job)}[^\]]*\] 🏁  Job {how}$", log, re.MULTILINE) is not None


def artifact_json(root: Path, run: str, name: str, path: str) -> dict:
    """A file of an artifact as act's artifact server stored it (gzipped by the client)."""
    stored = root / "build" / "rehearse" / run / "artifacts" / run / name / (path + ".gz__")
    data = stored.read_bytes() if stored.exists() else (stored.parent / Path(path).name).read_bytes()
    return json.loads(gzip.decompress(data) if stored.exists() else data)


def test_release_workflow_end_to_end(act, engine, staging, release_registry, tmp_path):
    """Dispatched for the derived release team-vision: the plan adds its base dev; dev's build job, then
    the derived job FROM the image dev's job pushed, then both published and promoted."""
    served, password = release_registry
    result, log, label, run = rehearse(REPO, "team-vision", staging, served.address, secret_file(tmp_path, password))
    assert result.returncode == 0, log[-6000:]
    assert password not in log  # the secret reached act by file and was never printed
    for job in ("plan", "build dev (linux/amd64)", "build team-vision (linux/amd64, on dev)", "publish dev",
                "publish team-vision"):
        assert ended(log, job, "succeeded"), job
    dev_done = re.search(r"^\[release/build dev[^\]]*\] 🏁  Job succeeded$", log, re.MULTILINE).start()
    assert dev_done < log.index("[release/build team-vision")  # the derived job waits for its base's
    assert "smoke without --require-gpu" in log  # the rehearsal's choice is visible in the run
    # the build job audited the SBOM it made (before its push) and uploaded the report
    built_record = artifact_json(REPO, run, "build-dev-amd64", "record.json")  # the common folder is not kept
    audit = artifact_json(REPO, run, "build-dev-amd64", "audit.json")
    assert audit["release"] == "dev" and audit["image_id"] == built_record["image_id"]
    assert audit["sbom"]["sha256"] == built_record["sbom"]["sha256"]
    assert built_record["audit"]["verdict"] == audit["verdict"] == "passed"  # else the job would have failed
    assert re.search(r"verdict: passed: [0-9]+ of [0-9]+ Python distributions checked", log)

    # the release registry holds what publish made, promoted by digest from staging: the multi-arch list,
    # or, for a release of one platform (dev: publish writes no list for one), that platform's image
    release = Registry(served.address, Credentials(USER, password))
    promoted = release.manifest(REPOSITORY, "dev-py3")
    staged = Registry(staging).manifest(REPOSITORY, "dev-py3")
    assert promoted is not None and staged is not None and promoted.digest == staged.digest
    record = artifact_json(REPO, run, "published-dev", "build/dev/record.json")  # the publish job's record
    if promoted.is_list:
        platforms = {str(entry.platform): entry.digest for entry in promoted.entries()}
        for platform, digest in platforms.items():
            assert Registry(staging).digest(REPOSITORY, f"dev-py3-{platform.split('/')[1]}") == digest, platform
    else:
        assert len(record["platforms"]) == 1
        platforms = {next(iter(record["platforms"])): promoted.digest}
    assert set(record["platforms"]) == set(platforms)
    for platform, digest in platforms.items():
        # each platform's image in the release registry is the one its build job pushed to staging
        assert digest in {entry["digest"] for entry in record["platforms"][platform]["pushed"].values()}, platform
        assert Registry(staging).digest(REPOSITORY, digest) == release.digest(REPOSITORY, digest) == digest, platform
        smoke = record["platforms"][platform]["smoke"]  # and it passed its smoke run
        assert smoke["exit_code"] == 0 and smoke["failed"] == 0 and smoke["passed"] > 0, platform
        assert smoke["image_id"] == record["platforms"][platform]["image_id"], platform
    assert record["promoted"][f"{served.address}/{REPOSITORY}:dev-py3"]["digest"] == promoted.digest
    # promotion checked each platform image's signed provenance and copied it (with the SBOM and the
    # audit report the build job made) beside it
    signing_key = next(line for line in (tmp_path / "secrets.env").read_text().splitlines()
                       if line.startswith("ATTESTATION_SIGNING_KEY="))
    assert signing_key.partition("=")[2] not in log
    attested = record["promoted"][f"{served.address}/{REPOSITORY}:dev-py3"]["attestations"]
    assert set(attested) == set(platforms.values())
    for digest in platforms.values():
        assert attested[digest]["attached"] == ["audit", "provenance", "sbom"], digest  # sorted
        assert release.manifest(REPOSITORY, digest.replace(":", "-")) is not None, digest

    # the derived image: built FROM the image dev's job pushed to staging (by digest), smoked, attested and
    # promoted as dev's is
    team = artifact_json(REPO, run, "build-team-vision-amd64", "record.json")
    dev_pushed = {entry["digest"] for entry in built_record["pushed"].values()}
    assert team["base_image"] == f"{staging}/{REPOSITORY}@{next(iter(dev_pushed))}" and len(dev_pushed) == 1
    assert team["smoke"]["failed"] == 0 and team["smoke"]["image_id"] == team["image_id"]
    team_promoted = release.manifest("teams/vision", "team-vision-py3")
    assert team_promoted is not None and team_promoted.digest == Registry(staging).digest("teams/vision",
                                                                                           "team-vision-py3")
    team_record = artifact_json(REPO, run, "published-team-vision", "build/team-vision/record.json")
    assert team_record["promoted"][f"{served.address}/teams/vision:team-vision-py3"]["digest"] == team_promoted.digest

    # the run built its own image (under its label), tagged it only under the staging name (never a tag
    # another test's image carries), and removed it
    built = re.search(r"\] +\| built sha256:\S+ in .*; tagged (.*); record:", log)
    assert built, "the build job built nothing (an image reused would not be the run's own)"
    assert all(tag.startswith(staging + "/") for tag in built.group(1).split(", ")), built.group(1)
    assert engine.images(filters={"label": label}) == []


def scratch_copy(tmp_path: Path) -> Path:
    """The project as git sees it (tracked and new files), with the installed stand-ins, in a new repository."""
    root = tmp_path / "project"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    for modules in (REPO / ".ci" / "actions").glob("*/node_modules"):
        shutil.copytree(modules, root / modules.relative_to(REPO), symlinks=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@invalid", "commit", "-q", "-m", "scratch"],
                   cwd=root, check=True)
    return root


def test_release_workflow_failure_paths(act, engine, staging, release_registry, tmp_path):
    """A smoke failure (dev's manifest, in a scratch copy, promises another torch version than the image
    holds) fails its build job before any push; a failing build pushes nothing; publish and promote never run."""
    served, password = release_registry
    root = scratch_copy(tmp_path)
    manifest = root / "manifests" / "dev.yaml"
    text = manifest.read_text()
    planted = text.replace("    version: 2.13.0+cpu\n    install: pip\n",
                           "    version: 2.13.0+cpu\n    module_version: 2.12.0\n    install: pip\n")
    assert planted != text
    manifest.write_text(planted)
    (root / "manifests" / "i21-broken.yaml").write_text(BROKEN)
    shutil.copy(root / "constraints" / "dev.txt", root / "constraints" / "i21-broken.txt")
    stage = Registry(staging)
    dev_before = stage.digest(REPOSITORY, "dev-py3")

    result, log, label, run = rehearse(root, "dev i21-broken", staging, served.address, secret_file(tmp_path, password))
    assert result.returncode == 1, log[-6000:]
    assert "the rehearsal of release.yml failed" in result.stderr
    assert password not in log
    assert ended(log, "build dev (linux/amd64)", "failed") and ended(log, "build i21-broken (linux/amd64)", "failed")
    dev_job = "\n".join(line for line in log.splitlines() if "[release/build dev" in line)
    # the planted expectation failed (and nothing before it: the job's own lines say what did otherwise)
    assert "torch.__version__ is 2.13.0+cpu, the manifest says 2.12.0" in log, dev_job[-8000:]
    assert "[release/publish" not in log  # neither publish nor promote ran

    context = re.search(r"building dev from \S+ \(context ([0-9a-f]{12});", log)
    assert context, "the planted dev was not built"
    assert stage.digest(REPOSITORY, f"dev-py3-{context.group(1)}") is None  # smoke failed: nothing pushed
    assert stage.digest(REPOSITORY, "dev-py3") == dev_before
    assert stage.digest(REPOSITORY, "i21-broken-py3") is None  # the build failed: no tag in staging
    release = Registry(served.address, Credentials(USER, password))
    assert release.digest(REPOSITORY, "dev-py3") is None and release.digest(REPOSITORY, "i21-broken-py3") is None
    assert engine.images(filters={"label": label}) == []
