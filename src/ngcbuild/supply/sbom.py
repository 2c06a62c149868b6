"""A CycloneDX SBOM of a built image, read from inside it, built with cyclonedx-python-lib's model.

One container run of the image lists its Python distributions (importlib.metadata) and its
Debian/Ubuntu packages (dpkg-query); the manifest adds its components with their versions and
provenance (where the pin came from), which the image alone cannot tell. The document goes to
build/R/sbom.cdx.json, its sha256 into the record.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import uuid
from dataclasses import replace
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version

import docker
from cyclonedx.model import Property
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.output.json import JsonV1Dot5
from packageurl import PackageURL

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.project import Project
from ngcbuild.core.references import ImageRef, ReferenceProblem
from ngcbuild.engine.client import connect
from ngcbuild.engine.container import run_once
from ngcbuild.manifest.catalog import Catalog
from ngcbuild.manifest.loader import load_release
from ngcbuild.workspace.record import read_record, require, write_record
from ngcbuild.workspace.release_dir import SBOM, ReleaseDir
from ngcbuild.workspace.sections import BuildRecord, SbomEntry, utc_timestamp

SPEC_VERSION = "1.5"
TIMEOUT_S = 300

# Runs in the image with its own python3; prints one JSON document on stdout.
INVENTORY_SCRIPT = r"""
import importlib.metadata as md, json, os, subprocess, sys
python = sorted({(d.metadata["Name"], d.version) for d in md.distributions() if d.metadata["Name"]})
try:
    fmt = "${Package}\t${Version}\t${Architecture}\t${source:Package}\t${db:Status-Abbrev}\n"
    listing = subprocess.run(["dpkg-query", "-W", "-f", fmt], capture_output=True, text=True, check=True).stdout
except (OSError, subprocess.CalledProcessError):
    listing = ""
dpkg = [line.split("\t") for line in listing.splitlines() if line.count("\t") == 4]
try:
    os_release = dict(l.split("=", 1) for l in open("/etc/os-release").read().splitlines() if "=" in l)
except OSError:
    os_release = {}
# the dynamic linker's cache: each library's name and the file it resolves to (its version is in the name)
try:
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
except (OSError, subprocess.CalledProcessError):
    cache = ""
libraries = sorted({(line.split()[0], os.path.basename(os.path.realpath(line.rsplit("=> ", 1)[1].strip())))
                    for line in cache.splitlines()[1:] if "=> " in line})
# the GPU architectures compiled into torch (a constant of the build: no GPU needed to read it)
try:
    import torch
    cuda_arch = torch._C._cuda_getArchFlags() if hasattr(torch._C, "_cuda_getArchFlags") else ""
except Exception:
    cuda_arch = ""
print(json.dumps({"python": python, "dpkg": [d[:4] for d in dpkg if d[4].startswith("ii")],
                  "os": {k: v.strip('"') for k, v in os_release.items()},
                  "python_version": sys.version.split()[0], "libraries": libraries,
                  "torch_cuda_arch": " ".join(str(cuda_arch or "").split())}))
"""


class SbomFailed(OperationError):
    pass


def inventory(client, image: str) -> dict:
    """What the image holds, from a run of the image itself (no network, removed afterwards)."""
    ran = run_once(client, image, [], entrypoint=["python3", "-c", INVENTORY_SCRIPT], what=f"the inventory of "
                   f"{image[:19]}", deadline_s=TIMEOUT_S, failure=SbomFailed, labels={"io.ngcbuild.sbom": "1"},
                   environment={"PYTHONDONTWRITEBYTECODE": "1"})
    if ran.exit_code != 0:
        raise SbomFailed(f"the inventory of {image[:19]} exited {ran.exit_code}: {ran.stderr.strip()[-600:]}")
    stdout = ran.stdout
    try:
        return json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise SbomFailed(f"the inventory of {image[:19]} printed no JSON: {stdout[-300:]!r}") from None


def purl_pypi(name: str, ver: str) -> PackageURL:
    return PackageURL(type="pypi", name=re.sub(r"[-_.]+", "-", name).lower(), version=ver)


def purl_deb(distro: dict, name: str, ver: str, arch: str) -> PackageURL:
    vendor = distro.get("ID", "debian")
    qualifiers = {"arch": arch}
    if distro.get("VERSION_ID"):
        qualifiers["distro"] = f"{vendor}-{distro['VERSION_ID']}"
    return PackageURL(type="deb", namespace=vendor, name=name, version=ver, qualifiers=qualifiers)


def _props(**values) -> list[Property]:
    return [Property(name=f"ngcbuild:{k}", value=str(v)) for k, v in values.items() if v is not None]


def bom(release, catalog: Catalog, found: dict, image: dict, ref: str, build: BuildRecord, now: str,
        serial: str) -> Bom:
    """The CycloneDX model of the image (a pure function of its inputs, so unit tests need no engine):
    the manifest's components with their provenance, the OS, every Python distribution and Debian
    package found in the image; the image (metadata.component) depends on each."""
    installed = {re.sub(r"[-_.]+", "-", n).lower(): v for n, v in found["python"]}
    components = []
    for name, component in sorted(release.components.items()):
        entry = catalog.get(name)
        package = component.package or (entry.pip_package if entry else None)
        in_image = installed.get(re.sub(r"[-_.]+", "-", package).lower()) if package else None
        components.append(Component(
            type=ComponentType.FRAMEWORK if name == "pytorch" else ComponentType.LIBRARY,
            bom_ref=f"manifest:{name}", name=entry.display if entry else name, version=component.version,
            purl=purl_pypi(package, component.version) if component.install == "pip" and package else None,
            properties=_props(component=name, provenance=component.provenance, source=component.source,
                              install=component.install, **{"version-in-image": in_image})))
    os_info = found.get("os") or {}
    if os_info.get("ID"):
        components.append(Component(type=ComponentType.OPERATING_SYSTEM, bom_ref="os", name=os_info["ID"],
                                    version=os_info.get("VERSION_ID", ""), description=os_info.get("PRETTY_NAME", "")))
    for name, ver in found["python"]:
        components.append(Component(type=ComponentType.LIBRARY, bom_ref=f"pypi:{name}@{ver}", name=name, version=ver,
                                    purl=purl_pypi(name, ver)))
    for name, ver, arch, source in found["dpkg"]:
        components.append(Component(type=ComponentType.LIBRARY, bom_ref=f"deb:{name}@{ver}:{arch}", name=name,
                                    version=ver, purl=purl_deb(os_info, name, ver, arch),
                                    properties=_props(**{"source-package": source}) if source and source != name
                                    else None))
    try:
        tool_version = version("ngcbuild")
    except PackageNotFoundError:
        tool_version = "unknown"
    document = Bom(serial_number=uuid.UUID(serial), version=1)
    document.metadata.timestamp = datetime.fromisoformat(now.replace("Z", "+00:00"))
    document.metadata.tools.components.add(Component(type=ComponentType.APPLICATION, name="ngcbuild",
                                                     version=tool_version))
    document.metadata.component = Component(
        type=ComponentType.CONTAINER, bom_ref="image", name=_repository_of(ref), version=release.tag,
        properties=_props(**{"image-id": image["Id"], "context-sha256": build.context_sha256,
                             "platform": f"{image.get('Os')}/{image.get('Architecture')}",
                             "python-version": found.get("python_version"),
                             "source-revision": build.source_revision,
                             "torch-cuda-arch": found.get("torch_cuda_arch") or None}) + _image_facts(image, found))
    document.components.update(components)
    document.register_dependency(document.metadata.component, components)
    return document


def _image_facts(image: dict, found: dict) -> list[Property]:
    """What `ngcbuild diff --images` compares beyond the packages: the image's environment and labels,
    each layer's size and the step that made it (oldest first), and the dynamic linker's libraries."""
    config = image.get("Config") or {}
    facts = [("env", entry) for entry in config.get("Env") or []]
    facts += [("label", f"{key}={value}") for key, value in sorted((config.get("Labels") or {}).items())]
    # numbered: a CycloneDX document keeps its properties sorted, and the layers' order is their meaning
    facts += [("layer", f"{n:03d} {size} {step}") for n, (size, step) in enumerate(found.get("layers") or [], 1)]
    facts += [("library", f"{name} => {file}") for name, file in found.get("libraries") or []]
    return [Property(name=f"ngcbuild:{kind}", value=value) for kind, value in facts]


def layer_sizes(client, image_id: str) -> list[tuple[int, str]]:
    """(bytes, the step that made it) of each layer with content, oldest first (the engine's history)."""
    steps = []
    for entry in reversed(client.history(image_id)):
        size = int(entry.get("Size") or 0)
        if size > 0:
            step = " ".join(str(entry.get("CreatedBy") or "").replace("/bin/sh -c #(nop) ", "").split())
            steps.append((size, step[:200]))
    return steps


def serialized(document: Bom) -> str:
    """The JSON text of the document, in the spec version we write (SPEC_VERSION)."""
    return JsonV1Dot5(document).output_as_string(indent=2)


def document(release, catalog: Catalog, found: dict, image: dict, ref: str, build: BuildRecord,
             now: str, serial: str) -> dict:
    """The CycloneDX 1.5 document as JSON data (see `bom`)."""
    return json.loads(serialized(bom(release, catalog, found, image, ref, build, now, serial)))


def validate(doc: dict) -> str:
    """Check against the CycloneDX JSON schema (cyclonedx-python-lib's validator, which needs its
    json-validation extra); returns how it was checked. Without the extra, the required structure
    is checked by hand."""
    from cyclonedx.exception import MissingOptionalDependencyException
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    try:
        error = JsonStrictValidator(SchemaVersion.from_version(doc["specVersion"])).validate_str(json.dumps(doc))
    except MissingOptionalDependencyException:
        refs = [c["bom-ref"] for c in doc["components"]]
        if doc.get("bomFormat") != "CycloneDX" or len(refs) != len(set(refs)) or \
                not all(c.get("name") and c.get("type") for c in doc["components"]):
            raise SbomFailed("the SBOM is not a well-formed CycloneDX document") from None
        return "structure checked (install cyclonedx-python-lib[json-validation] for the schema)"
    if error is not None:
        message = getattr(getattr(error, "data", None), "message", None) or str(error)[:500]
        raise SbomFailed(f"the SBOM does not validate against the CycloneDX {doc['specVersion']} schema: {message}")
    return f"valid against the CycloneDX {doc['specVersion']} JSON schema"


def write_sbom(project: Project, name: str, image: str | None = None, out=sys.stdout) -> SbomEntry:
    loaded = load_release(project, name)
    release = loaded.release
    directory = project.out(name)
    record = read_record(directory)
    ref = image or require(record.build.image_id, directory, "image_id", "the id of the built image")
    client = connect()
    try:
        inspected = client.inspect_image(ref)
    except docker.errors.ImageNotFound:
        raise UserError(f"image {ref} not found; run `invoke build --release {name}` first") from None
    found = inventory(client, inspected["Id"])
    found["layers"] = layer_sizes(client, inspected["Id"])
    name_ref = next(iter(record.build.tags or []), f"{release.image.repository}:{release.tag}")
    text = serialized(bom(release, loaded.catalog, found, inspected, name_ref, record.build, utc_timestamp(),
                          uuid.uuid4().urn))
    doc = json.loads(text)
    checked = validate(doc)
    data = (text + "\n").encode()
    path = ReleaseDir(directory, project.root).write(SBOM, data)
    result = SbomEntry.of(path=str(path.relative_to(project.root)), sha256=hashlib.sha256(data).hexdigest(),
                          image_id=inspected["Id"], components=len(doc["components"]),
                          python_distributions=len(found["python"]), deb_packages=len(found["dpkg"]))
    write_record(directory, replace(record, sbom=result))
    print(f"sbom: {path} ({len(found['python'])} Python distributions, {len(found['dpkg'])} Debian packages, "
          f"{len(release.components)} manifest components; {checked}; sha256 {result.sha256[:12]})",
          file=out, flush=True)
    return result


def _repository_of(ref: str) -> str:
    """The component name: the repository of the image's reference (the reference itself if it has none)."""
    try:
        return ImageRef.parse(ref).repository
    except ReferenceProblem:
        return ref
