"""The catalogue of planted defects (smoke/mutants.yaml) and what it takes to plant one: the facts of a
release it is written against (derived from the release's expected.json, so one entry plants the same
defect in every release that has the thing), the Dockerfile of the thin mutant image, and the changed
expectations. Pure logic: no engine (smoke/mutate.py builds and runs them)."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ngcbuild.core import files, safeyaml
from ngcbuild.core.errors import ManifestError

CATALOGUE = Path(__file__).with_name("mutants.yaml")
MAX_BYTES = 200_000
LABEL = "io.ngcbuild.mutant"  # value: the run's id; every image a run builds carries it
PLACEHOLDER = re.compile(r"\{\{ *([a-z_]+) *\}\}")
# What a run-time contract variable is: the NVIDIA container toolkit's and NGC's own.
CONTRACT_PREFIX = "NVIDIA_"
CONTAINER = "the smoke container"  # the killer named when the image cannot even run the suite


class Change(BaseModel):
    """One change to expected.json: set a key, add to a list, remove a key (dotted path)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    op: Literal["set", "add", "remove"]
    path: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    value: object = None


class Mutant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{1,60}$")
    description: str
    requires: list[str] = Field(default_factory=list)
    dockerfile: list[str] = Field(default_factory=list)
    expect: list[Change] = Field(default_factory=list)
    # The check that must fail first: one, or one per kind of release where a release's own check
    # sees the defect earlier (torch built for another CUDA: torchvision's ops, where torchvision is in)
    killed_by: str | list[str]
    # Fragments the killing check's message must contain (case-insensitive): it names the defect.
    names: list[str] = Field(default_factory=list)

    def applies(self, facts: dict[str, str]) -> bool:
        return all(name in facts for name in self.requires)

    def dockerfile_text(self, base: str, run_id: str, facts: dict[str, str]) -> str:
        """FROM the built image; the label first, so that every layer this mutant makes carries it."""
        lines = [f"FROM {base}", f'LABEL {LABEL}="{run_id}"']
        lines += [fill(line, facts) for line in self.dockerfile]
        return "\n".join(lines) + "\n"

    def killers(self, facts: dict[str, str]) -> list[str]:
        wanted = [self.killed_by] if isinstance(self.killed_by, str) else self.killed_by
        return [fill(name, facts) for name in wanted]


def load_catalogue(path: Path = CATALOGUE) -> list[Mutant]:
    text = files.read_text(path, MAX_BYTES, "the catalogue of planted defects (a YAML list)",
                            "the catalogue of planted defects is missing", within=path.parent)
    try:
        data = safeyaml.load(text)
    except safeyaml.YamlProblem as exc:
        raise ManifestError(path, exc.key, exc.message) from None
    if not isinstance(data, list):
        raise ManifestError(path, "", f"expected a list of mutants, got {type(data).__name__}")
    mutants, seen = [], set()
    for index, raw in enumerate(data):
        try:
            mutant = Mutant.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ManifestError(path, ".".join(str(p) for p in (index, *first["loc"])), first["msg"]) from None
        if mutant.id in seen:
            raise ManifestError(path, f"{index}.id", f"{mutant.id!r} is used twice; expected unique ids")
        if not mutant.dockerfile and not mutant.expect:
            raise ManifestError(path, f"{index}", "expected dockerfile lines or expect changes (or both)")
        killers = [mutant.killed_by] if isinstance(mutant.killed_by, str) else mutant.killed_by
        used = PLACEHOLDER.findall(" ".join([*mutant.dockerfile, *mutant.names, *killers]))
        unknown = sorted({*mutant.requires, *used} - set(FACTS))
        if unknown:
            raise ManifestError(path, f"{index}.requires", f"unknown facts {unknown}; expected some of {sorted(FACTS)}")
        seen.add(mutant.id)
        mutants.append(mutant)
    return mutants


def fill(text: str, facts: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: facts[m.group(1)], text)


def patched(expected: dict, changes: list[Change], facts: dict[str, str]) -> dict:
    """expected.json with the mutant's changes applied (string values filled in with the facts)."""
    result = copy.deepcopy(expected)
    for change in changes:
        *parents, last = change.path.split(".")
        node = result
        for key in parents:
            node = node.setdefault(key, {})
        value = fill(change.value, facts) if isinstance(change.value, str) else copy.deepcopy(change.value)
        if change.op == "set":
            node[last] = value
        elif change.op == "remove":
            node.pop(last, None)
        else:
            node.setdefault(last, [])
            if value not in node[last]:
                node[last].append(value)
    return result


def expected_bytes(expected: dict) -> bytes:
    return json.dumps(expected, indent=2, sort_keys=True).encode() + b"\n"


# Each fact, and how it is read from expected.json; a fact whose thing the release lacks is absent.
FACTS = {
    "library": "the shared-library name (up to .so) of the first library component of the stack",
    "library_component": "the component of that library",
    "library_distribution": "the pinned distribution that carries that library (by the catalogue's pip name)",
    "library_distribution_folder": "its dist-info folder's name part",
    "library_distribution_other": "another version than its pin",
    "torch": "PyTorch is in the image",
    "torch_version": "the version PyTorch reports (its pin, with the local part)",
    "torch_public": "that version without its local part",
    "torch_version_file": "torch/version.py under the manifest's site-packages",
    "torch_init": "torch/__init__.py under the manifest's site-packages",
    "torch_label": "the label that carries PyTorch's version",
    "package": "a pinned distribution that PyTorch does not import (numpy where pinned)",
    "other_package": "another pinned distribution",
    "constraint_file": "the pip constraint file",
    "cuda": "the manifest's CUDA version",
    "cuda_home": "the CUDA_HOME the image assembles",
    "path": "PATH is among the rendered variables",
    "arch_list": "TORCH_CUDA_ARCH_LIST of the image",
    "contract_var": "the first run-time contract variable (NVIDIA_*) of the image",
    "contract_var_last": "the last one",
    "entrypoint": "the entrypoint script",
    "banner_snippet": "the start-up snippet that prints the banner",
    "driver_snippet": "the start-up snippet that warns when no driver is visible",
    "workdir": "the working directory",
    "workspace_file": "the first file under /workspace",
    "extra_module": "the Python module of the first stack component other than PyTorch",
    "extra_module_component": "its component",
    "torchvision": "torchvision is in the image",
    "torchvision_image_io": "torchvision has torchvision.io's image decoders (0.8 and later)",
    "prepended": "the first variable the manifest prepends folders to (env_prepend)",
    "torch_mkl": "the manifest promises a PyTorch built with MKL (stack.torch_with: mkl)",
    "torch_nvshmem": "the manifest promises a PyTorch that uses NVSHMEM (stack.torch_with: nvshmem)",
}
# The snippets of templates/image/entrypoint.d, which every release's image carries (in the folder
# expected.json names, /opt/nvidia/entrypoint.d).
BANNER_SNIPPET = "10-banner.sh"
DRIVER_SNIPPET = "50-gpu-driver-check.sh"
SNIPPETS_DIR = "/opt/nvidia/entrypoint.d"  # where an expected.json that names none has them
# Distributions PyTorch imports at `import torch`: planting a defect in one of them would fail every
# check that imports torch, not the check of the defect.
TORCH_IMPORTS = {"torch", "filelock", "fsspec", "jinja2", "markupsafe", "mpmath", "networkx", "sympy",
                 "typing-extensions", "pip", "setuptools", "packaging"}


@dataclass(frozen=True)
class Release:
    """What the facts need beyond expected.json: the pip names of the stack's libraries."""

    expected: dict
    library_distributions: dict[str, str]  # component -> pinned distribution carrying its library


def facts_of(release: Release) -> dict[str, str]:
    expected = release.expected
    facts: dict[str, str] = {}
    stack = expected.get("stack", {})
    packages = expected.get("packages", {})
    env = expected.get("env", {})
    libraries = stack.get("libraries", {})
    if libraries:
        component = sorted(libraries)[0]
        facts.update(library=libraries[component], library_component=component)
        distribution = release.library_distributions.get(component)
        if distribution in packages:
            facts.update(library_distribution=distribution,
                         library_distribution_folder=re.sub(r"[-_.]+", "_", distribution),
                         library_distribution_other=_other_version(packages[distribution]))
    modules = stack.get("modules", {})
    torch = modules.get("pytorch")
    if torch:
        facts.update(torch="yes", torch_version=torch["version"], torch_public=torch["version"].split("+")[0],
                     torch_version_file=f"{expected['python']['site_packages']}/torch/version.py",
                     torch_init=f"{expected['python']['site_packages']}/torch/__init__.py")
        label = next((k for k, v in sorted(expected.get("labels", {}).items())
                      if v == torch["version"] and "pytorch" in k), None)
        if label:
            facts["torch_label"] = label
    spare = sorted(name for name in packages if name not in TORCH_IMPORTS)
    if spare:
        facts["package"] = "numpy" if "numpy" in spare else spare[0]
        others = [name for name in sorted(packages) if name != facts["package"]]
        if others:
            facts["other_package"] = others[0]
    if expected.get("pip_constraint_file"):
        facts["constraint_file"] = expected["pip_constraint_file"]
    cuda = expected.get("gpu", {}).get("cuda")
    if cuda:
        facts["cuda"] = cuda
    if stack.get("cuda_home"):
        facts["cuda_home"] = stack["cuda_home"]
    if "PATH" in env:
        facts["path"] = "yes"
    if env.get("TORCH_CUDA_ARCH_LIST"):
        facts["arch_list"] = env["TORCH_CUDA_ARCH_LIST"]
    contract = sorted(name for name in env if name.startswith(CONTRACT_PREFIX))
    if contract:
        facts.update(contract_var=contract[0], contract_var_last=contract[-1])
    entrypoint = expected.get("entrypoint")
    if entrypoint:
        folder = expected.get("entrypoint_snippets", SNIPPETS_DIR)
        facts.update(entrypoint=entrypoint, banner_snippet=f"{folder}/{BANNER_SNIPPET}",
                     driver_snippet=f"{folder}/{DRIVER_SNIPPET}")
    facts["workdir"] = expected.get("workdir", "/workspace")
    workspace = sorted(expected.get("workspace", {}))
    if workspace:
        facts["workspace_file"] = workspace[0]
    extra = sorted(name for name in modules if name != "pytorch")
    if extra:
        facts.update(extra_module=modules[extra[0]]["module"], extra_module_component=extra[0])
    if "torchvision" in expected.get("components_in_image", []):
        facts["torchvision"] = "yes"
        numbers = [int(n) for n in re.findall(r"[0-9]+", expected.get("components", {}).get("torchvision", ""))[:2]]
        if numbers >= [0, 8]:
            facts["torchvision_image_io"] = "yes"
    prepended = sorted(expected.get("env_prepend", {}))
    if prepended:
        facts["prepended"] = prepended[0]
    with_ = stack.get("torch_with", [])
    if torch and "mkl" in with_:
        facts["torch_mkl"] = "yes"
    if torch and "nvshmem" in with_:
        facts["torch_nvshmem"] = "yes"
    return facts


def _other_version(version: str) -> str:
    """A version that is not `version`: its first number one lower (or higher, from 0)."""
    head, dot, rest = version.partition(".")
    number = int(head) if head.isdigit() else 0
    return f"{number - 1 if number > 0 else number + 1}{dot}{rest}"
