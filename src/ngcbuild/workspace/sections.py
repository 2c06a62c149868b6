"""The sections of build/R/record.json, one frozen dataclass each, as the stages write them.

The build's own fields lie at the top of the record (`image_id`, `tags`...), each later stage adds
its section beside them: `smoke`, `pushed`, `cache_pushed`, `sbom`, `audit`, `attested`,
`published`, `promoted` (with any zstd variant), and `platforms` (the builds of every platform of one
context). A new section (a derived image's base, the monthly bump) is one more class here and one more field of
`Record` (record.py). Every field may be missing in a record (a record is written step by step, and
a platform job's record holds only what that job did): what a step needs, it asks for by name
(`Record.needed`), and a missing value is then a damaged record naming its key.

The one question every stage asks of the smoke section, "did the suite pass on this image", has one
answer here: `smoke_verdict`.

Every id, digest, reference, host and platform a section holds has its form (`DIGEST`, `REFERENCE`...),
checked as the record is read (schema.py): what a record says reaches Dockerfiles (a derived image's
FROM), command lines and labels, and build/ may come from another job's artifact.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection
from dataclasses import dataclass, field

from ngcbuild.core.names import RELEASE_NAME_RE, ImageNames
from ngcbuild.core.references import ImageRef, ReferenceProblem, parse_host
from ngcbuild.workspace.schema import Form, Section

_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")
_HEX64_RE = re.compile(r"[0-9a-f]{64}")
_PLATFORM_RE = re.compile(r"[a-z0-9]{1,32}/[a-z0-9_]{1,32}(/[a-z0-9]{1,16})?")
_KEY_ID_RE = re.compile(r"[A-Za-z0-9:_.-]{1,128}")


def _parses(parse):
    def accepts(text: str) -> bool:
        try:
            parse(text)
        except ReferenceProblem:
            return False
        return True
    return accepts


DIGEST = Form("sha256:<64 hex digits>", lambda text: bool(_DIGEST_RE.fullmatch(text)), "digests")
HEX64 = Form("a sha256 of 64 hex digits", lambda text: bool(_HEX64_RE.fullmatch(text)))
REFERENCE = Form("an image reference (registry/name:tag or @sha256:<64 hex digits>)", _parses(ImageRef.parse),
                 "image references")
# what an image was built FROM: a reference, or (a derived image FROM a base never pushed) an image id
IMAGE = Form("an image reference or an image id (sha256:<64 hex digits>)",
             lambda text: DIGEST.accepts(text) or REFERENCE.accepts(text))
HOST = Form("a registry HOST[:PORT]", _parses(parse_host))
PLATFORM = Form("a platform such as linux/amd64", lambda text: bool(_PLATFORM_RE.fullmatch(text)), "platforms")
RELEASE = Form("a release name such as 25.12 or dev", lambda text: bool(RELEASE_NAME_RE.fullmatch(text)))
TAG = Form("a tag (letters, digits, _ . -)", lambda text: REFERENCE.accepts(f"x:{text}"))
KEY_ID = Form("a key id (letters, digits, : _ . -)", lambda text: bool(_KEY_ID_RE.fullmatch(text)))


def form(kind: Form, default=None, keys: Form | None = None, **more):
    """A field whose text is of `kind` (a dict's values), its keys of `keys`."""
    metadata = {"form": kind, **({"key_form": keys} if keys else {}), **more.pop("metadata", {})}
    if callable(default):
        return field(default_factory=default, metadata=metadata, **more)
    return field(default=default, metadata=metadata, **more)


def utc_timestamp(seconds: float | None = None) -> str:
    """The one timestamp format of our records: 2025-12-01T12:00:00Z."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@dataclass(frozen=True)
class Normalisation(Section):
    """How the release image is made from the build's engine image (image/recipe.py, engine/release_image.py,
    where it leaves: push): the epoch every time the build wrote is set to, where that came from, the base
    image's time (a later time was the build's own) and how many of its layers are the base's. The other
    fields are those of records written when the build itself made the release image (rules version 4)."""

    version: int | None = None
    epoch: int | None = None
    epoch_from: str | None = None
    made_after: int | None = None
    base_layers: int | None = None
    raw_image_id: str | None = form(DIGEST)
    memo: bool | None = None  # found normalised already on this engine
    layers_rewritten: int | None = None
    removed: dict[str, str] = field(default_factory=dict)  # path in the image -> why (image/volatile.py)
    pyc_clamped: int | None = None
    seconds: float | None = None


@dataclass(frozen=True)
class BuildFacts(Section):
    """What only a build that ran knows (a reused image has none of these)."""

    duration_s: float | None = None
    steps: int | None = None
    cached_steps: int | None = None
    step_log: list = field(default_factory=list)  # [step, instruction, cached]
    ca_bundle_used: bool | None = None
    wheels: list[str] = field(default_factory=list)
    source_revision: str | None = None
    stages: dict[str, str] = field(default_factory=dict)  # builder stage -> its image id (the layer cache)
    cache_from: list[str] = field(default_factory=list)  # cache images pulled from --cache-from
    normalisation: Normalisation | None = None


@dataclass(frozen=True)
class BuildRecord(Section):
    """The build's part of the record: the image built (or reused by its context hash) and its names."""

    FLAT = ("facts",)

    release: str | None = form(RELEASE)
    image_id: str | None = form(DIGEST)
    tags: list[str] | None = form(REFERENCE)
    registry: str | None = form(HOST)
    size_bytes: int | None = None
    layers: int | None = None
    context_sha256: str | None = form(HEX64)
    platform: str | None = form(PLATFORM)
    base_image: str | None = form(IMAGE)
    built_at: str | None = None
    reused: bool = False
    facts: BuildFacts | None = None

    @classmethod
    def of_image(cls, names: ImageNames, image: dict, tags: list[str], registry: str, context_hash: str,
                 platform: str, facts: BuildFacts | None = None) -> BuildRecord:
        """The record of `image` (the engine's inspect) built, or reused when there are no `facts`,
        for `names`: made in this one place for both."""
        return cls.of(release=names.release, image_id=image["Id"], tags=list(tags), registry=registry,
                      size_bytes=image["Size"], layers=len(image["RootFS"]["Layers"]), context_sha256=context_hash,
                      platform=platform, base_image=names.base_image,
                      built_at=image.get("Created") if facts is None else utc_timestamp(),
                      **({"reused": True} if facts is None else {"facts": facts.whole()}))

    @property
    def stages(self) -> dict[str, str]:
        """The builder stages' images of the build that ran here (none for a reused image)."""
        return self.facts.stages if self.facts is not None else {}

    @property
    def source_revision(self) -> str | None:
        """The commit of the checkout that built the image (none for a reused image)."""
        return self.facts.source_revision if self.facts is not None else None

    @property
    def normalisation(self) -> Normalisation | None:
        """How the build's image was normalised (none for a reused image: its build said it)."""
        return self.facts.normalisation if self.facts is not None else None


@dataclass(frozen=True)
class SmokeRun(Section):
    """`smoke`: the last run of the smoke suite on the release's image (smoke/runner.py)."""

    passed: int | None = None
    failed: int | None = None
    errors: int | None = None
    skipped: int | None = None
    image_id: str | None = form(DIGEST)
    require_gpu: bool | None = None
    gpu_visible: bool | None = None
    exit_code: int | None = None
    junit: str | None = None
    at: str | None = None
    perf: str | None = None

    def counts(self) -> str:
        """`N failed, N errors, exit N`, for a message."""
        return f"{self.failed} failed, {self.errors} errors, exit {self.exit_code}"


PASSED = "passed"
FAILED = "failed"
NOT_RUN = "not run"
OTHER_IMAGE = "of another image"


def smoke_verdict(smoke: SmokeRun | None, images: str | Collection[str] | None) -> str:
    """Whether `smoke` proves one of `images` (an image id, or the ids of a list's images): PASSED,
    NOT_RUN (no smoke record), FAILED, or OTHER_IMAGE (it passed on another image). Fails closed: a
    count or exit status the record does not hold counts as a failure."""
    if smoke is None:
        return NOT_RUN
    if smoke.failed != 0 or smoke.errors != 0 or smoke.exit_code != 0:
        return FAILED
    images = {images} if isinstance(images, str) else set(images or ())
    return PASSED if smoke.image_id in images else OTHER_IMAGE


@dataclass(frozen=True)
class Pushed(Section):
    """One entry of `pushed`: a reference pushed and the digest the registry served back for it, with the id of
    the release image it names (its config's digest: the build's engine image made as data where it left,
    engine/release_image.py; the record's `build.image_id` is the engine's)."""

    digest: str | None = form(DIGEST)
    size: int | None = None
    registry: str | None = form(HOST)
    at: str | None = None
    image_id: str | None = form(DIGEST)


@dataclass(frozen=True)
class SbomEntry(Section):
    """`sbom`: build/R/sbom.cdx.json as written for an image (supply/sbom.py)."""

    path: str | None = None
    sha256: str | None = form(HEX64)
    image_id: str | None = form(DIGEST)
    components: int | None = None
    python_distributions: int | None = None
    deb_packages: int | None = None


@dataclass(frozen=True)
class AuditEntry(Section):
    """`audit`: build/R/audit.json as written for an SBOM (supply/audit.py)."""

    path: str | None = None
    sha256: str | None = form(HEX64)
    verdict: str | None = None
    sbom_sha256: str | None = form(HEX64)
    counts: dict | None = None


@dataclass(frozen=True)
class AttachedDocument(Section):
    manifest: str | None = form(DIGEST)
    sha256: str | None = form(HEX64)


@dataclass(frozen=True)
class Attested(Section):
    """One entry of `attested`: the signed provenance (and documents) attached next to a pushed image."""

    refs: list[str] = form(REFERENCE, list)
    key_id: str | None = form(KEY_ID)
    referrers_tag: str | None = form(TAG)
    attachments: dict[str, AttachedDocument] = field(default_factory=dict)
    at: str | None = None


@dataclass(frozen=True)
class Published(Section):
    """One entry of `published`: a multi-arch list written to a registry, and its platforms' digests."""

    digest: str | None = form(DIGEST)
    media_type: str | None = None
    registry: str | None = form(HOST)
    platforms: dict[str, str] = form(DIGEST, dict, keys=PLATFORM)
    at: str | None = None


@dataclass(frozen=True)
class PromotedAttestation(Section):
    key_id: str | None = form(KEY_ID)
    attached: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PromotedVariant(Section):
    """`promoted.<ref>.zstd`: the zstd variant `promote --zstd` made beside the promoted image (publish/variant.py):
    its tag, its manifest's digest (an OCI image manifest, or an OCI index for a list: `media_type`), the digest
    of the promoted image it was made from, the zstd level, and its layers' bytes against the gzip layers' (each
    distinct layer once, as a registry stores it)."""

    tag: str | None = form(TAG)
    digest: str | None = form(DIGEST)
    media_type: str | None = None
    made_from: str | None = form(DIGEST)
    level: int | None = None
    layer_bytes: int | None = None
    gzip_layer_bytes: int | None = None
    at: str | None = None


@dataclass(frozen=True)
class Promoted(Section):
    """One entry of `promoted`: an image copied by digest to another registry, its attestations checked, and
    the zstd variant made beside it (`zstd`, with --zstd)."""

    digest: str | None = form(DIGEST)
    source: str | None = form(HOST, metadata={"json": "from"})
    at: str | None = None
    attestations: dict[str, PromotedAttestation] = form(None, dict, keys=DIGEST)
    zstd: PromotedVariant | None = None


@dataclass(frozen=True)
class PlatformBuild(Section):
    """One entry of `platforms`: the build of one platform from the record's context; gathered from
    the platform jobs (publish --records), also its pushes, its own smoke run and its record's path."""

    image_id: str | None = form(DIGEST)
    context_sha256: str | None = form(HEX64)
    tags: list[str] = form(REFERENCE, list)
    pushed: dict[str, Pushed] = form(None, dict, keys=REFERENCE)
    smoke: SmokeRun | None = None
    record: str | None = None

    def own_smoke(self, record_smoke: SmokeRun | None) -> SmokeRun | None:
        """This platform's smoke run where the entry holds one (gathered from its own job, null
        included), else the record's (a list published from one machine)."""
        return self.smoke if "smoke" in self.present else record_smoke
