"""The typed release model: what one manifest (after `extends`) may say.

Unknown keys are errors (extra="forbid"); every string that can reach a Dockerfile is one of the
validated types in ngcbuild.manifest.fields. Differences between eras (conda or system Python, the pip
constraint file, what is bundled) are fields here, never `if release >= ...` in code or templates.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ngcbuild.core.errors import excerpt
from ngcbuild.core.redact import redact
from ngcbuild.manifest.bump_policy import BumpPolicy
from ngcbuild.manifest.derive_spec import DeriveSpec
from ngcbuild.manifest.fields import (
    AbsPath,
    AdvisoryId,
    ArchList,
    BuildNumber,
    BuildOption,
    Capability,
    ComponentName,
    ComputeCapability,
    Day,
    Digest,
    EnvName,
    Fingerprint,
    GitRef,
    LabelKey,
    MajorMinor,
    PackageName,
    Prose,
    Reason,
    RepoPath,
    SafeValue,
    TaggedImage,
    TagWord,
    Text,
    Url,
    Version,
)

Provenance = Literal["nvidia", "secondary", "chosen"]
# base: already in the base image; none: documented only, not in the image we build (needs a reason).
InstallMethod = Literal["pip", "apt", "conda", "source", "base", "none"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Bootstrap(Strict):
    """How `invoke base` makes the base image locally when it cannot be pulled."""

    suite: PackageName
    mirror: Url
    variant: Literal["minbase", "buildd"] = "minbase"


def _check_requirement(value: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        Requirement(value)
    except InvalidRequirement as exc:
        raise PydanticCustomError("ngcbuild_requirement", "{value} is not a PEP 508 requirement ({why})",
                                  {"value": excerpt(value), "why": redact(str(exc).splitlines()[0], 120)}) from None
    return value


# One Requires-Dist line (`sympy>=1.13.3`, `setuptools; python_version >= "3.12"`): read by verify only.
RequiresDist = Annotated[Prose, AfterValidator(_check_requirement)]


class DeclaredDistribution(Strict):
    """A Python distribution the base image carries (pip lists it in the image), for verify's
    prediction of the image's `pip check`: its version, its Requires-Dist, and where that was read."""

    version: Version
    requires_dist: list[RequiresDist] = Field(default_factory=list)
    evidence: Text


class BasePythonDistributions(Strict):
    """Every Python distribution the base image carries for the image's interpreter, and how that list was
    read (its evidence: a `pip list` of the base, its published package list, "carries no Python")."""

    evidence: Text
    distributions: dict[PackageName, DeclaredDistribution] = Field(default_factory=dict)


class AptKey(Strict):
    """The key an apt repository the base image adds is signed with now (NVIDIA's CUDA repository: 3bf863cc
    since April 2022), where the base image may trust only a key since rotated out. The image installs it
    before any apt step, refused unless its fingerprint is `fingerprint`, and removes the keys it `replaces`;
    `invoke verify` reads the repository's InRelease and says which key signs it."""

    repository: Url  # the repository it signs (the URL of its sources.list line, which holds InRelease)
    url: Url  # where the armored key is fetched
    fingerprint: Fingerprint
    replaces: list[Fingerprint] = Field(default_factory=list)
    evidence: Text


class AptList(Strict):
    """One apt source file the base image carries (/etc/apt/sources.list.d/cuda.list), from evidence: the
    repository its line names and what the build does with it. `keep`: apt reads it, so a key the image
    trusts signs it, either an apt_keys entry for the same repository (installed by the build) or
    `signed_by`, a key the base's own keyring holds (an Ubuntu archive's). `remove`: no package of the
    image comes from it, and the build deletes the file before any apt step (NVIDIA's machine-learning
    repository, never re-keyed after the 2022 rotation: apt refuses it unsigned and the step exits 100).
    `invoke verify` reads each one's InRelease and names the key that signs it."""

    path: AbsPath
    repository: Url  # the first repository its lines name (NVIDIA's are flat: REPOSITORY/InRelease)
    use: Literal["keep", "remove"]
    signed_by: Text | None = None  # the base keyring's key, in words (an Ubuntu archive's keys)
    evidence: Text


class AptLists(Strict):
    """The base image's apt source files: `lists`, from evidence, every one of them (the build fails on a file
    of /etc/apt/sources.list.d it does not name), or `not_known` with the reason (nothing is checked then)."""

    lists: list[AptList] | None = None
    not_known: Text | None = None

    @model_validator(mode="after")
    def _one_of(self):
        if (self.lists is None) == (self.not_known is None):
            raise PydanticCustomError("ngcbuild_missing", "expected exactly one of lists and not_known",
                                      {"key": "lists"})
        return self


class BaseImage(Strict):
    image: TaggedImage
    digest: Digest | None = None
    bootstrap: Bootstrap | None = None
    # A tag its registry no longer serves (when and why): `invoke verify` refuses it and names the way
    # out, a mirror given with --base-image, and what that mirror must also fix (each item of mirror_must).
    removed: Text | None = None
    mirror_must: list[Text] = Field(default_factory=list)
    # What the base image provides that no component of the manifest records, each with its evidence
    # (cuda-compiler: "a devel image: nvcc is in /usr/local/cuda/bin"): a need it meets (components.*.needs).
    provides: dict[Capability, Text] = Field(default_factory=dict)
    # The Python distributions the base image carries, from evidence: `invoke verify` predicts the image's
    # `pip check` from them with everything the image installs. Absent: not known (verify says so, and
    # never counts "0 of the base image"); declared with no distributions: none, by its evidence.
    python_distributions: BasePythonDistributions | None = None
    # Keys of the apt repositories it adds that the image installs first (a key rotation the base predates).
    apt_keys: list[AptKey] = Field(default_factory=list)
    # Every apt source file it carries, from evidence, or not known (AptLists).
    apt_lists: AptLists | None = None

    @model_validator(mode="after")
    def _each_kept_list_is_signed_by_a_trusted_key(self):
        re_keyed = {key.repository.rstrip("/") for key in self.apt_keys}
        for i, item in enumerate((self.apt_lists.lists or []) if self.apt_lists else []):
            repository = item.repository.rstrip("/")
            if item.use == "keep" and repository not in re_keyed and item.signed_by is None:
                raise PydanticCustomError(
                    "ngcbuild_missing", "keeps a repository no key signs; expected signed_by (a key the base's keyring "
                    "holds) or an apt_keys entry for {repository}", {"key": f"apt_lists.lists.{i}.signed_by",
                                                                      "repository": repository})
            if item.use == "remove" and repository in re_keyed:
                raise PydanticCustomError(
                    "ngcbuild_missing", "removes {repository}, whose key apt_keys installs; expected use: keep",
                    {"key": f"apt_lists.lists.{i}.use", "repository": repository})
        return self


class ImageSpec(Strict):
    repository: RepoPath = "nvidia/pytorch"
    tag_suffix: TagWord = "py3"


class AptSource(Strict):
    """An apt archive the base image installs from: `invoke verify` reads its indexes for the apt pins."""

    url: Url
    suites: list[PackageName]
    components: list[PackageName] = Field(default_factory=lambda: ["main"])


class OperatingSystem(Strict):
    name: Text
    version: Text
    # Where the OS version comes from: NVIDIA's notes state it for most releases; for others it
    # follows from the base image we chose.
    provenance: Provenance = "chosen"
    source: Text | None = None
    # The C library's version: which manylinux wheels the image can install (`invoke verify`).
    glibc: MajorMinor | None = None
    # The distribution's archives (release, updates and security suites), for `invoke verify`.
    apt_sources: list[AptSource] = Field(default_factory=list)


class CondaSpec(Strict):
    """A Miniconda installer, pinned by its versioned file name, unpacked into `prefix`."""

    installer: Url
    prefix: AbsPath = "/opt/conda"


class PythonSpec(Strict):
    version: MajorMinor
    # The interpreter's full version where no apt pin of it says (a conda installer's Python): verify
    # evaluates markers (python_full_version) and Requires-Python with it (interpreter_version).
    full_version: Version | None = None
    # Archived releases may know only the version; buildable ones need install and site_packages.
    install: Literal["system", "conda"] | None = None
    site_packages: AbsPath | None = None
    conda: CondaSpec | None = None
    # Distribution packages (apt) that provide the interpreter in the image, pinned.
    apt_packages: dict[PackageName, Version] = Field(default_factory=dict)
    # Distribution packages needed only in the builder stage (pip for the staged installs).
    builder_apt_packages: dict[PackageName, Version] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _full_version_is_of_version(self):
        if self.full_version is not None and not re.fullmatch(re.escape(self.version) + r"\.[0-9]+", self.full_version):
            raise PydanticCustomError("ngcbuild_python", "full_version {full} is not a {version}.N version",
                                      {"full": self.full_version, "version": self.version})
        return self

    @property
    def interpreter_version(self) -> str | None:
        """MAJOR.MINOR.PATCH of the image's interpreter: full_version, else the upstream version of the
        apt pin of python{version} (or python3): 3.12.3-1ubuntu0.17 is 3.12.3. None when neither says."""
        if self.full_version is not None:
            return self.full_version
        for package in (f"python{self.version}", "python3"):
            pin = self.apt_packages.get(package)
            if pin is None:
                continue
            upstream = pin.split(":", 1)[-1].rsplit("-", 1)[0]
            match = re.match(re.escape(self.version) + r"\.[0-9]+", upstream)
            if match:
                return match.group(0)
        return None


class WrongWheelTag(Strict):
    """A wheel whose metadata names a platform tag pip does not accept for the platform it is built
    for and installs on (NVIDIA's aarch64 wheels tagged `manylinux2014_sbsa`): `pip check` reports it
    as "not supported on this platform". Tolerated for exactly this distribution and these platforms."""
    distribution: PackageName
    platforms: list[Literal["linux/amd64", "linux/arm64"]] = Field(min_length=1)
    # What the wheel's WHEEL file says (Tag:), and where that was read.
    tag: Text
    evidence: Reason


class MetByBase(Strict):
    """A requirement of an installed distribution that no distribution of the image meets because the
    base image carries what it would install (tensorrt-cu13 requires tensorrt-cu13-libs, TensorRT's
    libraries, which cuda-dl-base has): `pip check` reports "DIST VERSION requires REQUIRES, which is
    not installed." and the image's pip check tolerates exactly that line, on every platform."""
    distribution: PackageName
    requires: PackageName
    # The component the base image carries (install: base) that stands in for the requirement.
    component: ComponentName
    evidence: Reason


class PipSpec(Strict):
    # NGC images carry /etc/pip/constraint.txt and PIP_CONSTRAINT from 25.03 on.
    constraint_file: bool
    # Wheels known to carry wrong platform tags (data, with evidence): `pip check` tolerates exactly
    # these on exactly those platforms; any other unsupported wheel still fails the build.
    wrong_wheel_tags: list[WrongWheelTag] = Field(default_factory=list)
    # Requirements the base image meets outside pip (data, with evidence): tolerated by the image's
    # pip check line for line; any other missing requirement still fails the build.
    met_by_base: list[MetByBase] = Field(default_factory=list)
    break_system_packages: bool = False
    # Extra package indexes (PyTorch's CPU index for `dev`); dropped when a wheelhouse is given.
    extra_index_urls: list[Url] = Field(default_factory=list)
    # Groups of pinned packages that get a layer each, after the components and before the rest,
    # most stable first: a changed pin then rebuilds only its own group's layer.
    layers: list[list[PackageName]] = Field(default_factory=list)
    # Distributions a release derived from this one (manifests/derived/) may move only under an
    # override that says so: its torch, NVIDIA's wheels. Components built from source are protected too.
    protected: list[PackageName] = Field(default_factory=list)


class Component(Strict):
    version: Version
    # How the image gets it; archived (documentation-only) releases may leave it out.
    install: InstallMethod | None = None
    provenance: Provenance = "chosen"
    # Where the value comes from, in words (a page, a banner, "fits CUDA 13.1").
    source: Text | None = None
    # Provenance of the install method and its packaging pins (package names, apt revisions, refs)
    # when it differs from the version's: NVIDIA states "TensorRT 7.2.2", we chose the debs.
    method_provenance: Provenance = "chosen"
    # The one pip/conda package that carries `version` (default: the catalog's pip_package).
    package: PackageName | None = None
    # Several packages installed for this component, each pinned (apt debs, pip distributions,
    # conda packages); `version` stays the component's headline version.
    packages: dict[PackageName, Version] = Field(default_factory=dict)
    channel: PackageName | None = None  # conda channel
    repo: Url | None = None
    ref: GitRef | None = None
    url: Url | None = None  # a release archive, for source builds from a tarball
    options: list[BuildOption] = Field(default_factory=list)  # handed to the component's build
    build_env: dict[EnvName, SafeValue] = Field(default_factory=dict)
    # The form NGC prints in env vars, labels and the banner when it differs (a short hash).
    env_version: Version | None = None
    # What the module reports (__version__) when it is not `version`: NGC's torch appends .nvYY.MM
    # (2.10.0a0+b4e4ee81d3.nv25.12), which the source build stamps (pip then lists it too); PyPI's CUDA
    # torch 2.11.0 reports 2.11.0+cu130. The smoke suite expects it (reported_version).
    module_version: Version | None = None
    # NVIDIA's own statement where we chose another value (notes.conflicts says why): the notes' tables
    # and the matrix show both, never the chosen value alone.
    nvidia_states: Version | None = None
    # What NGC's image of this release has by secondary evidence (its notes name none) where ours differs
    # (20.12's torchvision: 0.8.2 here, 0.9.0a0 there): the notes show both beside the component.
    ngc_reported: Version | None = None
    reason: Reason | None = None  # why install: none
    # Features NVIDIA's notes credit to it that the pinned build lacks, each with our finding (APEX at a 2025
    # commit has no apex.amp): the notes print NVIDIA's text with the finding beside it.
    lacks: dict[Capability, Prose] = Field(default_factory=dict)
    # A packaging pin that is itself a stated fact ("Jupyter Client 6.0.0" in NVIDIA's list) has
    # its provenance here; every other pin of `packages` has method_provenance.
    package_provenance: dict[PackageName, Provenance] = Field(default_factory=dict)
    # The build number its build stamps (PYTORCH_BUILD_NUMBER of a PyTorch source build: above 1 it appends
    # .postN to the version) and the image's env carries; NGC's images say 0.
    build_number: int = Field(0, ge=0, le=999)
    # Messages its import prints that the smoke suite accepts, each with why: a fragment of the warning
    # or of the logged "skipping" line (an import that warns or skips its kernels is otherwise a failure).
    # The release notes list each among the known issues.
    import_warnings: dict[Text, Prose] = Field(default_factory=dict)
    # What this release's build of it needs beyond the catalog's `needs` (PyTorch 20.12 links OpenMPI and
    # MAGMA): a step, or the base image with evidence, must provide each, and the builder runs that first.
    needs: list[Capability] = Field(default_factory=list)
    # install: source: the Requires-Dist of the distribution the build installs, as its setup at the
    # pinned commit declares them (where that was read: `source`). verify predicts the image's `pip check`
    # from them; absent, that prediction is "not verified" (verify does not read source trees).
    requires_dist: list[RequiresDist] | None = None

    @model_validator(mode="after")
    def _method_needs_its_pins(self):
        unknown = sorted(set(self.package_provenance) - set(self.packages))
        if unknown:
            raise PydanticCustomError("ngcbuild_packages", "package_provenance names {names}, not in packages",
                                      {"names": ", ".join(unknown)})
        if self.install == "source" and not ((self.repo and self.ref) or self.url):
            raise PydanticCustomError("ngcbuild_source", "install: source needs repo and ref, or url")
        if self.install in ("apt", "conda") and not self.packages:
            raise PydanticCustomError("ngcbuild_packages", "install: {method} needs packages (name: version)",
                                      {"method": self.install})
        if self.requires_dist is not None and self.install != "source":
            raise PydanticCustomError("ngcbuild_requires", "requires_dist is for install: source (a wheel's metadata "
                                      "is read from its index)")
        if self.install == "none" and not self.reason:
            raise PydanticCustomError("ngcbuild_reason", "install: none needs a reason (why the image lacks it)")
        return self

    @property
    def shown_version(self) -> str:
        """The form of env vars, labels and the banner."""
        return self.env_version or self.version

    @property
    def reported_version(self) -> str:
        """What its module reports (__version__) and pip lists: module_version where the manifest states
        it, else the version; never env_version, which is the form of env vars and labels (TE's '2.10'
        where the module says 2.10.0+769ed778). The smoke suite and verify hold a module to it by the one
        version rule (manifest/version_rule.py)."""
        return self.module_version or self.version

    def pin_provenance(self, package: str) -> Provenance:
        """Provenance of one pin of `packages`."""
        return self.package_provenance.get(package, self.method_provenance)


# GPU features a release promises beyond its component versions; the smoke suite checks each one
# the manifest lists (mempool: torch.cuda.MemPool is usable).
GpuFeature = Literal["mempool"]
# GPU families by architecture name; the smoke suite maps a device's compute capability to one.
GpuFamily = Literal["Kepler", "Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada", "Hopper", "Blackwell"]


class GpuSpec(Strict):
    required: bool = False
    min_compute_capability: ComputeCapability | None = None
    cuda_arch_list: ArchList | None = None
    features: list[GpuFeature] = Field(default_factory=list)
    # The families the release's CUDA stack supports; on another one the GPU checks skip, naming it
    # (an image older than the device). Empty: no such limit stated.
    families: list[GpuFamily] = Field(default_factory=list)


class BannerSpec(Strict):
    copyright: list[Text] = Field(default_factory=list)
    license: list[Text] = Field(default_factory=list)


Platform = Literal["linux/amd64", "linux/arm64"]


class CudaHomeSpec(Strict):
    """A CUDA toolkit tree assembled in the image from the CUDA wheels under site-packages (the
    public-wheels path): nvcc, headers and libraries linked under `path` (CUDA_HOME, nvcc on PATH), and
    every library folder of the wheels known to the dynamic linker, as NGC images have them."""

    path: AbsPath = "/usr/local/cuda"
    # The folder under python.site_packages whose */include and */lib the CUDA wheels install.
    wheels: RepoPath = "nvidia"
    # The folder under `wheels` that holds bin/nvcc and nvvm/, and the one whose lib/ holds libcudart
    # (CUDA 13's wheels share one, cu13; CUDA 12's had one per wheel).
    nvcc: PackageName
    runtime: PackageName


TorchCapability = Literal["lapack", "mpi", "mkl", "nvshmem", "cusparselt"]


class StackSpec(Strict):
    """What the stack checks of the smoke suite accept."""

    # Libraries that `ldd` may report "not found" for a library of the stack, each with why: provided
    # at run time (the driver's libcuda), or needed only by an optional plugin (an MPI bootstrap).
    unresolved_ok: dict[PackageName, Reason] = Field(default_factory=dict)
    # What the PyTorch build must have beyond its version, checked in the image: LAPACK (CPU linear
    # algebra; a source build without MKL or OpenBLAS has none), MPI (torch.distributed's backend), MKL
    # (torch.backends.mkl: NGC's amd64 builds link it), NVSHMEM (torch's symmetric memory backend) and
    # cuSPARSELt (torch.backends.cusparselt: NGC's notes say its builds turn it on since 24.06).
    torch_with: list[TorchCapability] = Field(default_factory=list)
    # What the PyTorch build is made without where NVIDIA's image may have it (25.12 turns MPI off and links
    # OpenBLAS, not MKL), each checked absent in the image: a statement of the notes, proved.
    torch_without: list[TorchCapability] = Field(default_factory=list)
    # Commands the image puts on PATH, by the folder each is in (NGC's trtexec in /opt/tensorrt/bin): the
    # smoke suite finds each on PATH there.
    commands: dict[PackageName, AbsPath] = Field(default_factory=dict)
    # Where the base may keep a command its folder lacks (cuda-dl-base may not ship /opt/tensorrt/bin, which
    # NGC's PyTorch layer adds): the image links the first that exists into the folder, and a build whose
    # base has none fails right there, not hours later in the smoke suite.
    command_sources: dict[PackageName, list[AbsPath]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _sources_of_promised_commands(self):
        stray = sorted(set(self.command_sources) - set(self.commands))
        if stray:
            raise PydanticCustomError("ngcbuild_missing", "{name} is not in stack.commands; expected a source of a "
                                      "command the image promises", {"key": f"command_sources.{stray[0]}",
                                                                     "name": stray[0]})
        empty = sorted(name for name, paths in self.command_sources.items() if not paths)
        if empty:
            raise PydanticCustomError("ngcbuild_missing", "names no path; expected at least one",
                                      {"key": f"command_sources.{empty[0]}"})
        return self

    @model_validator(mode="after")
    def _with_or_without(self):
        both = sorted(set(self.torch_with) & set(self.torch_without))
        if both:
            raise PydanticCustomError("ngcbuild_torch_without", "{names} in both torch_with and torch_without",
                                      {"names": ", ".join(both)})
        return self


class BuildSpec(Strict):
    number: BuildNumber = "0"
    # The platform `invoke build` builds when none is asked for.
    platform: Platform = "linux/amd64"
    # Every platform `invoke publish` puts in the multi-arch tag (empty: `platform` alone).
    # given, it names at least one (an empty list is a mistake, not "the default")
    platforms: list[Platform] = Field(default_factory=list, min_length=1)
    # The time every timestamp of the image says (files the build wrote, history, `created`), as
    # seconds since 1970; unset: SOURCE_DATE_EPOCH, else the commit's time (engine/epoch.py).
    source_date_epoch: int | None = Field(default=None, ge=0, le=2**32 - 1)
    # Components whose build cannot be made reproducible (a source build that embeds the time), each
    # with the reason: `repro` names them when two builds differ (docs/reproducible.md).
    not_reproducible: dict[ComponentName, Text] = Field(default_factory=dict)

    @property
    def published_platforms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.platforms)) if self.platforms else (self.platform,)


class BuilderSpec(Strict):
    """What the builder stage needs beyond the interpreter (never shipped in the image)."""

    # Distribution packages for source builds (git), pinned.
    apt_packages: dict[PackageName, Version] = Field(default_factory=dict)
    # Python build requirements installed into the builder's environment; pins come from the
    # constraints file, so each name must be pinned there.
    requirements: list[PackageName] = Field(default_factory=list)


class WorkspaceSpec(Strict):
    """/workspace: the license file and a README of the examples the release notes list."""

    license: list[Text] = Field(default_factory=list)


class Fact(Strict):
    """One statement of the release notes and where it comes from. An item of "The container also
    includes" in a buildable release says how the image built here has it: the component whose step
    installs it, the evidence that the base image carries it, or why it lacks it (listed as not included)."""

    text: Prose
    provenance: Provenance = "nvidia"
    source: Prose | None = None
    component: ComponentName | None = None
    base: Prose | None = None
    left_out: Prose | None = None

    @model_validator(mode="after")
    def _one_way_in(self):
        given = [key for key in ("component", "base", "left_out") if getattr(self, key)]
        if len(given) > 1:
            raise PydanticCustomError("ngcbuild_fact", "give one of component, base or left_out, not {keys}",
                                      {"keys": " and ".join(given)})
        return self


def _fact_from_text(value):
    return {"text": value} if isinstance(value, str) else value


FactItem = Annotated[Fact, BeforeValidator(_fact_from_text)]


class DriverRequirements(Strict):
    """The facts of NVIDIA's "Driver Requirements" (the matrix and diffs read the minimum) and how the notes
    say them: `text`, NVIDIA's paragraph of that release quoted as it stands (its wording changed over the
    years: 2020's "Tesla" became "a data center GPU"), which must name each fact given; without it, the notes
    template words the facts. A statement with no minimum driver to give (25.12 refers to the CUDA guides)
    is `text` alone."""

    minimum: Text | None = None  # "455 or later"
    datacenter_branches: list[Text] = Field(default_factory=list)  # ["418.xx", "440.30", "450.xx"]
    text: Prose | None = None
    provenance: Provenance = "nvidia"

    @model_validator(mode="after")
    def _facts_or_text(self):
        missing = [fact for fact in ([self.minimum] if self.minimum else []) + self.datacenter_branches
                   if self.text and fact not in self.text]
        if missing:
            raise PydanticCustomError(
                "ngcbuild_driver", "text does not name {fact}; expected NVIDIA's paragraph naming every fact given",
                {"fact": missing[0]})
        if self.datacenter_branches and not self.minimum:
            raise PydanticCustomError("ngcbuild_driver", "datacenter_branches need the minimum driver")
        return self


class GpuRequirements(Strict):
    """The facts of NVIDIA's "GPU Requirements" beside gpu.min_compute_capability (whose provenance
    this is); the notes template words them. Absent: NVIDIA's notes state none."""

    families: list[Text] = Field(default_factory=list)  # ["Pascal", "Volta", ...]
    text: Prose | None = None
    provenance: Provenance = "nvidia"

    @model_validator(mode="after")
    def _facts_or_text(self):
        if self.text and self.families:
            raise PydanticCustomError("ngcbuild_gpu", "give families (the notes word them) or text, not both")
        return self


class Example(Strict):
    name: Text
    description: Prose | None = None


class Notes(Strict):
    """What the release notes say beyond the component list (see invoke notes)."""

    pytorch_location: Prose | None = None
    driver: DriverRequirements | None = None
    gpu_requirements: GpuRequirements | None = None
    key_features: list[FactItem] = Field(default_factory=list)
    announcements: list[FactItem] = Field(default_factory=list)
    known_issues: list[FactItem] = Field(default_factory=list)
    tensor_core_examples: list[Example] = Field(default_factory=list)
    # NVIDIA's "Automatic Mixed Precision (AMP)" section of this release, paragraph by paragraph, as its own
    # notes word it (each release's text: 20.12's names Apex AMP beside torch.cuda.amp, 20.02's Apex alone).
    # Absent: the notes describe the image's AMP in ngcbuild's words, never as NVIDIA's.
    amp: list[FactItem] = Field(default_factory=list)
    # Items of "The container also includes" that are not components we install.
    also_includes: list[FactItem] = Field(default_factory=list)
    # Where sources disagree, what we chose and why.
    conflicts: list[FactItem] = Field(default_factory=list)
    # What NVIDIA's image carries that the image built here lacks and no component records (no honest
    # version is known), each with why: the notes say so instead of implying the image has it.
    not_in_image: list[FactItem] = Field(default_factory=list)
    # What a user meets that differs from NVIDIA's image of the release, beyond what the image lacks (the order
    # of PATH, a tool NGC installs that this build does not): the notes list each under its own heading.
    differences: list[FactItem] = Field(default_factory=list)


MAX_EXCEPTION_DAYS = 730  # how far ahead an allowed advisory may expire: reviewed at least every two years


class AllowedAdvisory(Strict):
    """A known advisory the release ships with on purpose: why, and until when (`invoke audit`)."""

    id: AdvisoryId  # the advisory's id or one of its aliases (CVE-..., GHSA-...)
    reason: Reason
    # The last day the exception holds: from the day after, the audit fails until it is renewed or the
    # distribution is fixed (an exception nobody looks at again is not a policy), at most
    # MAX_EXCEPTION_DAYS after the day the manifest is read (9999-12-31 is no expiry).
    expires: Day

    @field_validator("expires")
    @classmethod
    def _within_the_horizon(cls, expires: date) -> date:
        latest = date.today() + timedelta(days=MAX_EXCEPTION_DAYS)
        if expires > latest:
            raise PydanticCustomError("ngcbuild_horizon", "{day} is more than {days} days ahead; an exception expires "
                                      "by {latest} at the latest (renew it then, with a reason)",
                                      {"day": expires.isoformat(), "days": MAX_EXCEPTION_DAYS,
                                       "latest": latest.isoformat()})
        return expires


def _min_checked(value):
    if value == "all" or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise PydanticCustomError("ngcbuild_min_checked", "{value} is not a count; expected a whole number >= 0 or all",
                              {"value": excerpt(value)})


MinChecked = Annotated[int | str, BeforeValidator(_min_checked)]
MAX_ALLOWED = 200  # exceptions: a longer list is no policy anyone reviews


class SecuritySpec(Strict):
    """What `invoke audit` lets through (the report of the image's known vulnerabilities)."""

    allow: list[AllowedAdvisory] = Field(default_factory=list, max_length=MAX_ALLOWED)
    # The fewest of the image's Python distributions the audit must have checked (against an advisory
    # source that answered) to pass, or "all": fewer is the verdict "not checked" (exit 1), never clean.
    # 0 accepts an audit that checked nothing, explicitly.
    min_checked: MinChecked = 1

    @model_validator(mode="after")
    def _each_advisory_once(self):
        seen = set()
        for entry in self.allow:
            if entry.id.casefold() in seen:
                raise PydanticCustomError("ngcbuild_duplicate", "{id} is allowed twice; expected each advisory once",
                                          {"id": entry.id})
            seen.add(entry.id.casefold())
        return self


class Release(Strict):
    release: str  # filled in from the file name by the loader
    status: Literal["buildable", "archived"] = "buildable"
    # nvidia: a release NVIDIA ships (its notes are the facts); public-wheels: ngcbuild's own release
    # assembled from public Debian and PyPI packages, whose documents must never pass for NVIDIA's.
    origin: Literal["nvidia", "public-wheels"] = "nvidia"
    summary: Text
    image: ImageSpec = Field(default_factory=ImageSpec)
    base: BaseImage | None = None
    # Archived releases may leave out what is unknown; a buildable release needs both.
    os: OperatingSystem | None = None
    python: PythonSpec | None = None
    pip: PipSpec | None = None
    build: BuildSpec = Field(default_factory=BuildSpec)
    builder: BuilderSpec = Field(default_factory=BuilderSpec)
    workspace: WorkspaceSpec = Field(default_factory=WorkspaceSpec)
    gpu: GpuSpec = Field(default_factory=GpuSpec)
    cuda_home: CudaHomeSpec | None = None
    stack: StackSpec = Field(default_factory=StackSpec)
    banner: BannerSpec = Field(default_factory=BannerSpec)
    components: dict[ComponentName, Component] = Field(default_factory=dict)
    env: dict[EnvName, SafeValue] = Field(default_factory=dict)
    # Folders put in front of a path list the base image may already set, keeping what it has
    # (LD_LIBRARY_PATH: torch's lib first, as NGC's images have it); a variable here is not in `env`.
    env_prepend: dict[EnvName, list[AbsPath]] = Field(default_factory=dict)
    # Where the image's entrypoint script lives (its start-up snippets stay in /opt/nvidia/entrypoint.d).
    entrypoint: AbsPath = "/opt/nvidia/nvidia_entrypoint.sh"
    # Ports the image declares (EXPOSE), e.g. Jupyter's and TensorBoard's as NGC images do.
    expose: list[Annotated[int, Field(ge=1, le=65535)]] = Field(default_factory=list)
    labels: dict[LabelKey, Text] = Field(default_factory=dict)
    notes: Notes = Field(default_factory=Notes)
    security: SecuritySpec = Field(default_factory=SecuritySpec)
    # A derived release (manifests/derived/R.yaml): a team's requirements on its base (derive_spec.py).
    derive: DeriveSpec | None = None
    # How `ngcbuild bump` proposes the next release from the indexes (manifest/bump_policy.py).
    bump: BumpPolicy | None = None

    @model_validator(mode="after")
    def _prepend_or_set(self):
        # (ngcbuild_missing: the error names its key, see loader.describe_error)
        both = sorted(set(self.env_prepend) & set(self.env))
        if both:
            raise PydanticCustomError("ngcbuild_missing", "set in env too; expected it in one of env and env_prepend",
                                      {"key": f"env_prepend.{both[0]}"})
        empty = sorted(name for name, folders in self.env_prepend.items() if not folders)
        if empty:
            raise PydanticCustomError("ngcbuild_missing", "names no folder; expected at least one",
                                      {"key": f"env_prepend.{empty[0]}"})
        return self

    @model_validator(mode="after")
    def _not_reproducible_names_components(self):
        for name in self.build.not_reproducible:
            if name not in self.components:
                raise PydanticCustomError(
                    "ngcbuild_missing", "'{name}' is not a component of this release; expected one of components",
                    {"key": f"build.not_reproducible.{name}", "name": name})
        return self

    @model_validator(mode="after")
    def _met_by_what_the_base_carries(self):
        for index, met in enumerate(self.pip.met_by_base if self.pip else []):
            component = self.components.get(met.component)
            if component is None or component.install != "base":
                raise PydanticCustomError(
                    "ngcbuild_missing", "'{name}' is not a component the base image carries (install: base); "
                    "expected one that stands in for {requires}",
                    {"key": f"pip.met_by_base.{index}.component", "name": met.component, "requires": met.requires})
        return self

    @model_validator(mode="after")
    def _buildable_needs_build_facts(self):
        if self.status == "buildable":
            for key in ("base", "os", "python", "pip"):
                if getattr(self, key) is None:
                    raise PydanticCustomError(
                        "ngcbuild_missing", "required in a buildable release (or mark it status: archived)",
                        {"key": key})
            for key in ("install", "site_packages"):
                if getattr(self.python, key) is None:
                    raise PydanticCustomError(
                        "ngcbuild_missing", "python.{key} is required in a buildable release", {"key": key})
            if self.python.install == "conda" and self.python.conda is None:
                raise PydanticCustomError(
                    "ngcbuild_missing", "python.install: conda needs python.conda.installer")
            for name, component in self.components.items():
                if component.install is None:
                    raise PydanticCustomError(
                        "ngcbuild_missing", "required in a buildable release (pip, apt, source or base)",
                        {"key": f"components.{name}.install"})
            cuda = self.components.get("cuda")
            if cuda is not None and cuda.install != "none" and not self.gpu.cuda_arch_list:
                # The image sets TORCH_CUDA_ARCH_LIST from it: without it, building a CUDA extension
                # where no GPU is visible (a `docker build` extending the image) fails in torch.
                raise PydanticCustomError(
                    "ngcbuild_missing", "required in a buildable release with a CUDA stack: the "
                    "TORCH_CUDA_ARCH_LIST of its image, e.g. '7.5 8.0 9.0+PTX'", {"key": "gpu.cuda_arch_list"})
        return self

    @property
    def tag(self) -> str:
        return f"{self.release}-{self.image.tag_suffix}"

    @property
    def left_out(self) -> dict[str, Component]:
        """Components the image we ship lacks and its documents must say so: install: none in a
        public-wheels release. (In an NVIDIA release they are in NVIDIA's image, which the documents
        describe; only our build lacks them.)"""
        if self.origin != "public-wheels":
            return {}
        return {name: c for name, c in self.components.items() if c.install == "none"}


__all__ = ["Release", "Component", "ComponentName", "GitRef", "Provenance", "InstallMethod"]
