"""What changed between two BUILT images, from what their builds left in build/R/: the SBOM
(sbom.cdx.json: every Python distribution and Debian package found in the image, and the image's
environment, labels, layers and the dynamic linker's libraries) and the record (record.json: the
image id, platform and size). Nothing asks the engine: two images built on other machines compare
the same way, as long as their build/R/ folders are here.

Both files are read by their one typed reader (workspace/record.py, workspace/sbom.py): the SBOM must
be the one the record names (its sha256), every value comes checked and escaped, and the page escapes
each again as Markdown (docs/markdown.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ngcbuild.core.errors import UserError
from ngcbuild.core.files import exists
from ngcbuild.core.names import check_release_name
from ngcbuild.core.project import Project
from ngcbuild.docs.markdown import document_environment
from ngcbuild.manifest.versions import compare
from ngcbuild.workspace.record import read_record
from ngcbuild.workspace.release_dir import SBOM
from ngcbuild.workspace.sbom import read_sbom

TEMPLATE = "notes/image-diff.md.j2"


@dataclass(frozen=True)
class ImageFacts:
    release: str
    image_id: str
    platform: str
    size: int | None
    python: dict[str, str]
    deb: dict[str, str]
    env: dict[str, str]
    labels: dict[str, str]
    layers: tuple[tuple[int, str], ...]
    libraries: dict[str, str]
    cuda_arch: frozenset[str] | None  # the architectures compiled into torch (sm_90 ...), None: not recorded
    recorded: frozenset[str]  # which of env, label, layer, library the SBOM records (older ones lack them)


@dataclass(frozen=True)
class Change:
    name: str
    kind: str  # added, removed, upgraded, downgraded, rebuilt, changed
    old: str | None
    new: str | None


@dataclass(frozen=True)
class LayerRow:
    position: int
    step: str
    old: int | None
    new: int | None

    @property
    def delta(self) -> int:
        return (self.new or 0) - (self.old or 0)


@dataclass(frozen=True)
class ImageDiff:
    old: ImageFacts
    new: ImageFacts
    python: tuple[Change, ...]
    deb: tuple[Change, ...]
    libraries: tuple[Change, ...] | None  # None: one SBOM does not record them
    env: tuple[Change, ...] | None
    labels: tuple[Change, ...] | None
    layers: tuple[LayerRow, ...] | None
    unrecorded: tuple[str, ...] = field(default=())
    # the GPU architectures compiled into torch: (dropped, added), None where an image records none
    cuda_arch: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        for side in ("old", "new"):
            data[side] = {key: data[side][key] for key in ("release", "image_id", "platform", "size")}
            facts = getattr(self, side).cuda_arch
            data[side]["torch_cuda_arch"] = sorted(facts) if facts is not None else None
        return data


def has_image_facts(project: Project, release: str) -> bool:
    return exists(project.out(release) / SBOM)


def read_image(project: Project, release: str) -> ImageFacts:
    check_release_name(release)
    directory = project.out(release)
    if not exists(directory / SBOM):
        raise UserError(f"{(directory / SBOM).relative_to(project.root)}: no SBOM of {release}'s image; run `ngcbuild "
                        f"build --release {release}` and `ngcbuild sbom --release {release}` first")
    record = read_record(directory)
    sbom = read_sbom(directory, project.root, record)
    size = record.build.size_bytes
    return ImageFacts(release, sbom.image_id or record.build.image_id or "", sbom.platform or "", size,
                      sbom.in_image("pypi"), sbom.in_image("deb"), sbom.env, sbom.labels, sbom.layers, sbom.libraries,
                      sbom.torch_cuda_arch, sbom.recorded)


def _changes(old: dict[str, str], new: dict[str, str], versions: bool = True) -> tuple[Change, ...]:
    changes = []
    for name in sorted(set(old) | set(new), key=str.lower):
        before, after = old.get(name), new.get(name)
        if before == after:
            continue
        if before is None:
            kind = "added"
        elif after is None:
            kind = "removed"
        else:
            kind = compare(before, after) if versions else "changed"
            kind = "changed" if kind == "same" else kind
        changes.append(Change(name, kind, before, after))
    return tuple(changes)


def _layers(old: ImageFacts, new: ImageFacts) -> tuple[LayerRow, ...]:
    """Layer by layer, in order: both images come from the same templates, so the nth layer of each is
    made by the same step (its words may differ: the pins it installs)."""
    rows = []
    for position in range(max(len(old.layers), len(new.layers))):
        before = old.layers[position] if position < len(old.layers) else None
        after = new.layers[position] if position < len(new.layers) else None
        step = (after or before)[1]
        rows.append(LayerRow(position + 1, step, before[0] if before else None, after[0] if after else None))
    return tuple(rows)


def diff_images(old: ImageFacts, new: ImageFacts) -> ImageDiff:
    both = old.recorded & new.recorded

    def when(kind, make):
        return make() if kind in both else None

    unrecorded = tuple(sorted({"env", "label", "layer", "library"} - both))
    # Debian's versions do not order as Python's do (epochs, revisions, ~): a change is "changed"
    return ImageDiff(old, new, _changes(old.python, new.python), _changes(old.deb, new.deb, versions=False),
                     when("library", lambda: _changes(old.libraries, new.libraries, versions=False)),
                     when("env", lambda: _changes(old.env, new.env, versions=False)),
                     when("label", lambda: _changes(old.labels, new.labels, versions=False)),
                     when("layer", lambda: _layers(old, new)), unrecorded,
                     None if old.cuda_arch is None or new.cuda_arch is None else
                     (tuple(sorted(old.cuda_arch - new.cuda_arch)), tuple(sorted(new.cuda_arch - old.cuda_arch))))


def render_image_diff(project: Project, old: str, new: str) -> str:
    diff = diff_images(read_image(project, old), read_image(project, new))
    return document_environment(project).get_template(TEMPLATE).render(diff=diff, size=_size, counts=_counts)


def _counts(rows) -> str:
    """"3 added, 33 upgraded": how many of each kind, in a fixed order."""
    kinds = ("added", "removed", "upgraded", "downgraded", "rebuilt", "changed")
    return ", ".join(f"{n} {kind}" for kind in kinds for n in [sum(r.kind == kind for r in rows)] if n)


def _size(number: int | None) -> str:
    if number is None:
        return "—"
    sign = "-" if number < 0 else ""
    number = abs(number)
    for unit in ("B", "kB", "MB", "GB"):
        if number < 1000 or unit == "GB":
            return f"{sign}{number:.0f} {unit}" if unit == "B" else f"{sign}{number:.1f} {unit}"
        number /= 1000
    return f"{sign}{number}"
