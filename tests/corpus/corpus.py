"""The corpus of broken inputs: `cases/` holds each input byte for byte, `cases.yaml` says what the
one-line error must name (the file, the key) and contain (what was expected)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..conftest import REPO
from ..helpers import minimal_manifest

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
# The manifest paired with every constraints case: valid, so the constraints file is what fails.
GOOD_MANIFEST = minimal_manifest("a corpus case")


@dataclass(frozen=True)
class Case:
    name: str
    source: Path
    key: str
    expect: tuple[str, ...]
    file: str  # the path the message must start with, relative to the project
    pad_to: int = 0
    constraints: bool = True  # a manifest case gets the dev constraints unless this is false
    release: str = ""  # the --release argument (default: the case name)
    extra: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "constraints" if self.source.suffix == ".txt" else "manifest"

    @property
    def release_arg(self) -> str:
        return self.release or self.name

    def data(self) -> bytes:
        """The input as the loader will read it; padded with comment lines where a huge file is meant."""
        data = self.source.read_bytes()
        if self.pad_to > len(data):
            line = b"#" + b" padding" * 12 + b"\n"
            data += line * ((self.pad_to - len(data)) // len(line) + 1)
        return data

    def materialize(self, root: Path) -> None:
        """Write the case into a scratch project at `root` (templates and parts already there)."""
        shutil.copytree(HERE / "parts", root / "manifests" / "corpus", dirs_exist_ok=True)
        manifest = root / "manifests" / f"{self.name}.yaml"
        constraints = root / "constraints" / f"{self.name}.txt"
        if self.kind == "constraints":
            manifest.write_text(GOOD_MANIFEST)
            constraints.write_bytes(self.data())
        else:
            manifest.write_bytes(self.data())
            if self.constraints:
                shutil.copy(REPO / "constraints" / "dev.txt", constraints)


def load_cases() -> list[Case]:
    spec = yaml.safe_load((HERE / "cases.yaml").read_text(encoding="utf-8"))
    files = {p.stem: p for p in CASES.iterdir()}
    missing = sorted(set(files) - set(spec)) + sorted(set(spec) - set(files))
    if missing:
        raise AssertionError(f"cases/ and cases.yaml disagree about: {', '.join(missing)}")
    cases = []
    for name, entry in spec.items():
        source = files[name]
        default = f"constraints/{name}.txt" if source.suffix == ".txt" else f"manifests/{name}.yaml"
        cases.append(Case(
            name=name, source=source, key=entry.get("key", ""), expect=tuple(entry["expect"]),
            file=entry.get("file", default), pad_to=entry.get("pad_to", 0),
            constraints=entry.get("constraints", True), release=entry.get("release", ""),
        ))
    return cases
