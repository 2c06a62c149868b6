"""The support matrix: one row per release, every manifest, newest first.

Markdown for people (templates/docs/notes/matrix.md.j2), JSON for CI and scripts. Each value keeps its
provenance, so a value chosen by us is marked (Markdown) or labelled (JSON) as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from ngcbuild.core.project import Project
from ngcbuild.docs.facts import Segment, used_provenances, version_text
from ngcbuild.docs.markdown import document_environment
from ngcbuild.manifest.model import Release
from ngcbuild.manifest.series import Series

TEMPLATE = "notes/matrix.md.j2"
# Columns after release and status: (key, heading). Component columns read components[key].
COLUMNS = (
    ("ubuntu", "Ubuntu"),
    ("python", "Python"),
    ("cuda", "CUDA"),
    ("cudnn", "cuDNN"),
    ("nccl", "NCCL"),
    ("pytorch", "PyTorch"),
    ("tensorrt", "TensorRT"),
    ("dali", "DALI"),
    ("min_driver", "Minimum driver"),
    ("min_compute_capability", "Minimum compute capability"),
)
COMPONENT_COLUMNS = ("cuda", "cudnn", "nccl", "pytorch", "tensorrt", "dali")


@dataclass(frozen=True)
class MatrixRow:
    release: str
    status: str
    os: dict | None  # {"name": "Ubuntu", "version": "20.04"}
    cells: dict[str, Segment | None]  # column key -> value
    origin: str = "nvidia"  # or public-wheels: ngcbuild's own release, never to pass for NVIDIA's

    def to_json(self) -> dict:
        data: dict = {"release": self.release, "status": self.status, "origin": self.origin, "os": self.os}
        data.update({key: cell.text if cell else None for key, cell in self.cells.items()})
        data["provenance"] = {key: cell.provenance for key, cell in self.cells.items() if cell}
        return data


def matrix_rows(series: Series) -> list[MatrixRow]:
    return [_row(loaded.release) for loaded in reversed(series.releases)]


def _row(release: Release) -> MatrixRow:
    cells: dict[str, Segment | None] = {}
    os_ = release.os
    # NVIDIA's column is "Ubuntu"; another OS (Debian for `dev`) is shown with its name.
    cells["ubuntu"] = None
    if os_:
        cells["ubuntu"] = Segment(os_.version if os_.name == "Ubuntu" else f"{os_.name} {os_.version}",
                                  os_.provenance)
    cells["python"] = Segment(release.python.version) if release.python else None
    for name in COMPONENT_COLUMNS:
        component = release.components.get(name)
        cells[name] = Segment(version_text(component), component.provenance) if component else None
        if name in release.left_out:
            cells[name] = Segment("not included", "chosen")
    driver = release.notes.driver
    cells["min_driver"] = Segment(driver.minimum, driver.provenance) if driver and driver.minimum else None
    capability = release.gpu.min_compute_capability
    gpu_notes = release.notes.gpu_requirements
    # Without GPU requirements in NVIDIA's notes, a minimum compute capability is ours.
    cells["min_compute_capability"] = (
        Segment(capability, gpu_notes.provenance if gpu_notes else "chosen") if capability else None)
    os_json = {"name": os_.name, "version": os_.version} if os_ else None
    return MatrixRow(release.release, release.status, os_json, cells, release.origin)


def render_matrix(project: Project, series: Series | None = None, link: str | None = None) -> str:
    """The matrix in Markdown; `link` (such as "releases/{}.html") makes each release a link."""
    series = series or Series.load(project)
    rows = matrix_rows(series)
    used = used_provenances(cell for row in rows for cell in row.cells.values())
    return document_environment(project).get_template(TEMPLATE).render(
        rows=rows, columns=COLUMNS, link=link, footnotes=tuple(p for p in ("secondary", "chosen") if p in used))


def matrix_json(project: Project, series: Series | None = None) -> dict:
    series = series or Series.load(project)
    return {"columns": ["release", "status", *(key for key, _ in COLUMNS)],
            "releases": [row.to_json() for row in matrix_rows(series)]}
