"""build/R/sbom.cdx.json, read: the one typed reader of the CycloneDX document supply/sbom.py writes, for
every step that reads it (the audit, `diff --images`, attest).

The document is ngcbuild's output but a file on disk all the same, maybe another job's artifact: read
through core/files (bounded, no FIFO, no link out of the project), every value checked for its type
and form here (a package URL that names a Python distribution names one and its version; the image id
is a digest; the platform a platform), and every text escaped (core/text.safe) before any step can
print it, put it into Markdown or into a URL. A document that is not what ngcbuild writes is "damaged"
(OutputDamaged, exit 1, naming its key). With the record, the SBOM must be the one the record names
(its sha256), or it is refused (exit 2): no step compares, audits or attaches another.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from ngcbuild.core.errors import ManifestError, OutputDamaged, UserError, excerpt
from ngcbuild.core.files import exists, nesting, parse_json, read_text
from ngcbuild.core.text import safe
from ngcbuild.workspace.record import Record
from ngcbuild.workspace.release_dir import SBOM
from ngcbuild.workspace.sections import DIGEST, PLATFORM

MAX_BYTES = 64 * 1024 * 1024  # an SBOM of a CUDA image is a few MB
MAX_DEPTH = 32  # a CycloneDX document of ours nests about 6 levels
# What a Python distribution's name and version may look like to reach PyPI's URL, a report and a table.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,198}[A-Za-z0-9])?")
_VERSION = re.compile(r"[A-Za-z0-9!+._-]{1,100}")
SHOWN = 200  # characters of a name, version or property value, at most, once escaped
# the image's facts supply/sbom.py records as properties (`ngcbuild:KIND`), each "KEY=VALUE" or its own form
FACTS = ("env", "label", "layer", "library")


@dataclass(frozen=True)
class Component:
    kind: str  # the package URL's type (pypi, deb), operating-system, or other
    name: str  # the component's name: a distribution's as it names itself, a Debian package's from its URL
    version: str
    manifest: bool  # the manifest's own entry (what a pin says), not a package found in the image
    package: str | None = None  # a Python distribution's name in its package URL (normalised; what PyPI is asked)


@dataclass(frozen=True)
class Sbom:
    path: Path
    data: bytes
    components: tuple[Component, ...]
    env: dict[str, str]
    labels: dict[str, str]
    layers: tuple[tuple[int, str], ...]  # (bytes, the step that made it), oldest first
    libraries: dict[str, str]  # soname -> the file it resolves to
    recorded: frozenset[str]  # which FACTS the document records (older ones lack them)
    image_id: str | None
    platform: str | None
    torch_cuda_arch: frozenset[str] | None  # None: not recorded

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def in_image(self, kind: str) -> dict[str, str]:
        """name -> version of the image's own components of `kind` (pypi, deb)."""
        return {c.name: c.version for c in self.components if c.kind == kind and not c.manifest}


def read_sbom(directory: Path, within: Path, record: Record | None = None) -> Sbom:
    """build/R/sbom.cdx.json of `directory`; with `record`, refused unless it is the one the record names."""
    path = directory / SBOM
    release = directory.name
    hint = f"run `invoke sbom --release {release}` to rewrite it"
    if not exists(path):
        raise UserError(f"{path}: no SBOM; run `invoke sbom --release {release}` first")
    try:
        text = read_text(path, MAX_BYTES, "a CycloneDX SBOM ngcbuild wrote (JSON)", "no SBOM", within=within)
    except ManifestError as exc:  # a link out of the project, a FIFO, a folder, too large, not UTF-8
        raise OutputDamaged(path, "", f"{exc.expected}; {hint}") from None
    data = text.encode("utf-8")
    doc = parse_json(path, text, OutputDamaged, hint)
    if not isinstance(doc, dict) or not isinstance(doc.get("components"), list) or nesting(doc, MAX_DEPTH) > MAX_DEPTH:
        raise OutputDamaged(path, "components", "expected a CycloneDX document (an object with a list of "
                                                f"components); {hint}")
    components = tuple(_component(path, index, c) for index, c in enumerate(doc["components"]))
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    image = metadata.get("component") if isinstance(metadata.get("component"), dict) else {}
    properties = image.get("properties") or []
    if not isinstance(properties, list):
        raise OutputDamaged(path, "metadata.component.properties", f"expected a list; {hint}")
    sbom = _with_facts(path, data, components, properties, hint)
    if record is not None:
        recorded = record.sbom.sha256 if record.sbom is not None else None
        if recorded != sbom.sha256:
            says = f"says {recorded[:12]}" if recorded else "names none"
            raise UserError(f"{path}: not the SBOM `invoke sbom` recorded in record.json (sha256 {sbom.sha256[:12]}, "
                            f"the record {says}); run `invoke sbom --release {release}`")
    return sbom


def _component(path: Path, index: int, component) -> Component:
    """One entry of `components`, every string checked: what it says reaches a URL, a report and a table."""
    key = f"components.{index}"
    if not isinstance(component, dict):
        raise OutputDamaged(path, key, f"expected an object, got {excerpt(component)}")
    purl, name, version = component.get("purl"), component.get("name"), component.get("version", "")
    if not isinstance(name, str) or not isinstance(version, str) or (purl is not None and not isinstance(purl, str)):
        raise OutputDamaged(path, key, "expected a name, a version and a purl that are strings")
    manifest = str(component.get("bom-ref", "")).startswith("manifest:")
    if purl is None:
        kind = "operating-system" if component.get("type") == "operating-system" else "other"
        return Component(kind, _shown(name), _shown(version), manifest)
    from packageurl import PackageURL  # where an SBOM is read only

    try:
        parsed = PackageURL.from_string(purl)
    except ValueError:
        raise OutputDamaged(path, f"{key}.purl", f"{excerpt(purl)} is not a package URL") from None
    if parsed.type == "pypi":
        if not (_NAME.fullmatch(parsed.name or "") and _VERSION.fullmatch(parsed.version or "")):
            raise OutputDamaged(path, f"{key}.purl", f"{excerpt(purl)} does not name a Python distribution and its "
                                                     "version")
        return Component("pypi", _shown(name), parsed.version, manifest, parsed.name)
    if parsed.type == "deb":
        return Component("deb", _shown(unquote(parsed.name or "")), _shown(version), manifest)
    return Component(_shown(parsed.type), _shown(parsed.name or ""), _shown(parsed.version or ""), manifest)


def _with_facts(path: Path, data: bytes, components, properties: list, hint: str) -> Sbom:
    facts: dict[str, dict] = {"env": {}, "label": {}, "library": {}}
    layers, recorded, own = [], set(), {}
    for index, prop in enumerate(properties):
        key = f"metadata.component.properties.{index}"
        if not (isinstance(prop, dict) and isinstance(prop.get("name"), str)
                and isinstance(prop.get("value", ""), str)):
            raise OutputDamaged(path, key, f"expected a name and a value that are strings; {hint}")
        kind, value = prop["name"].removeprefix("ngcbuild:"), prop.get("value", "")
        if kind in ("env", "label"):
            name, _, val = value.partition("=")
            facts[kind][_shown(name)] = _shown(val)
        elif kind == "library":
            soname, _, file = value.partition(" => ")
            facts[kind][_shown(soname)] = _shown(file)
        elif kind == "layer":  # "POSITION SIZE STEP"
            position, size, step = (value.split(" ", 2) + [""])[:3]
            if not (position.isascii() and position.isdigit() and size.isascii() and size.isdigit()):
                raise OutputDamaged(path, key, f"expected a layer as POSITION SIZE STEP, got {excerpt(value)}; {hint}")
            layers.append((int(position), int(size), _shown(step)))
        else:
            own[kind] = value
            continue
        recorded.add(kind)
    for kind, form in (("image-id", DIGEST), ("platform", PLATFORM)):
        if kind in own and not form.accepts(own[kind]):
            raise OutputDamaged(path, "metadata.component.properties", f"ngcbuild:{kind}: expected {form.expected}, "
                                                                       f"got {excerpt(own[kind])}; {hint}")
    arch = own.get("torch-cuda-arch")
    return Sbom(path, data, components, facts["env"], facts["label"],
                tuple((size, step) for _, size, step in sorted(layers)), facts["library"], frozenset(recorded),
                own.get("image-id"), own.get("platform"),
                frozenset(_shown(word, 40) for word in arch.split()) if arch is not None else None)


def _shown(text: str, limit: int = SHOWN) -> str:
    """A text of the document as every output may show it: control characters escaped, a `|` dropped
    (it would end a table cell), at most `limit` characters."""
    return safe(text, limit).replace("|", "")
