"""A derived release as the loader sees it: its base (one of our releases, or an image pinned by
digest), the base's pins, the team's requirements, the overrides checked against the base, and its
lock (fresh, stale or missing).

Its pins (the `constraints` every later stage reads) are the base's, less the overridden ones, plus
the lock's: what the image's /etc/pip/constraint.txt holds. Checked here, before anything runs:
each override replaces a pin the base has (at that version), a protected distribution moves only
under an override that says so, and the file itself sets nothing its base decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.markers import Marker
from packaging.utils import canonicalize_name

from ngcbuild.core.errors import ManifestError, shown_path
from ngcbuild.core.files import exists
from ngcbuild.manifest.constraints import Constraints, Pin, load_constraints, parse_pin
from ngcbuild.manifest.derive_spec import Override
from ngcbuild.manifest.lock import Lock, inputs_digest, lock_path, read_lock
from ngcbuild.manifest.model import Release
from ngcbuild.manifest.platforms import interpreter, markers
from ngcbuild.manifest.requirements import TeamRequirement, load_requirements

DERIVED_DIR = "derived"  # manifests/derived/R.yaml
# What a derived release's own file may set: its name, image and documents; everything its image
# holds comes from the base.
OWN_KEYS = ("extends", "inherit", "summary", "image", "labels", "derive", "security", "notes", "banner", "build")
RESOLVE_HINT = "ngcbuild resolve --release {name}"


def derived_manifest(manifests: Path, name: str) -> Path:
    return manifests / DERIVED_DIR / f"{name}.yaml"


def base_pins_path(constraints_dir: Path, name: str) -> Path:
    """The pins read from a base image (an image base has no constraints file of ours)."""
    return constraints_dir / f"{name}.base.txt"


@dataclass(frozen=True)
class DerivedRelease:
    name: str
    base_release: str | None  # one of our releases
    base_image: str | None  # IMAGE@sha256:... (an image base)
    base_constraints: Constraints | None  # None: an image base whose pins were not read yet
    # Base distributions no index serves (components the base builds from source), as NAME==VERSION:
    # the resolver is told the base holds them.
    provided: tuple[Pin, ...]
    requirements_path: Path
    requirements: tuple[TeamRequirement, ...]
    overrides: dict[str, Override]  # canonical name -> override
    protected: frozenset[str]  # canonical names
    lock_path: Path
    lock: Lock | None
    lock_problem: str | None  # why the lock there cannot be read (resolve rewrites it; build refuses it)
    inputs: str | None  # the digest of the resolve's inputs now (None: base pins not read)
    targets: tuple[tuple[str, str, str], ...]  # (python, platform, glibc)
    index_urls: tuple[str, ...]  # the base's extra indexes (PyPI is always first)

    @property
    def base(self) -> str:
        return self.base_release or self.base_image

    @property
    def lock_state(self) -> str:
        if self.lock_problem is not None:
            return "damaged"
        if self.lock is None:
            return "missing"
        return "fresh" if self.lock.inputs == self.inputs else "stale"

    @property
    def input_files(self) -> list[Path]:
        """The files a resolve reads besides the manifest chain (the stamp and provenance list them)."""
        base = [self.base_constraints.path] if self.base_constraints is not None else []
        return [*base, self.requirements_path, self.lock_path]

    def base_pins(self) -> tuple[Pin, ...]:
        """Every distribution of the base image: its constraints and what it builds from source."""
        pinned = self.base_constraints.pins if self.base_constraints is not None else ()
        return pinned + self.provided

    def kept_pins(self) -> tuple[Pin, ...]:
        """The base's pins less the overridden ones: the constraints of the resolve."""
        return tuple(p for p in self.base_pins() if p.key not in self.overrides)

    def pins_for(self, platform: str) -> tuple[Pin, ...]:
        """The image's pins on `platform`: the base's less the overridden, plus the lock's entries
        whose marker holds there (empty lock part while the lock is not fresh)."""
        locked = []
        if self.lock_state == "fresh":
            environment = markers(self.targets[0][0], platform)
            for index, entry in enumerate(self.lock.pins):
                if entry.version is not None and (entry.marker is None or Marker(entry.marker).evaluate(environment)):
                    locked.append(Pin(entry.name, entry.version, index + 1))
        keys = {p.key for p in locked}
        return tuple(p for p in self.kept_pins() if p.key not in keys) + tuple(locked)



def load_derived(path: Path, own: dict, release: Release, base: Release | None, base_constraints: Constraints | None,
                 provided: tuple[Pin, ...], protected_of_base: set[str], *, root: Path,
                 constraints_dir: Path) -> DerivedRelease:
    """Check a derived manifest against its base and read what it names. `own` is the file's own
    mapping (before extends), `base` the base release when it is one of ours (its constraints and the
    names it protects given), None for an image base."""
    spec = release.derive
    foreign = sorted(set(own) - set(OWN_KEYS)) if base is not None else []
    if foreign:
        raise ManifestError(path, foreign[0], f"a derived release takes this from its base {base.release}; expected "
                                              f"only {', '.join(OWN_KEYS)} in its own file")
    name = release.release
    if base is not None:
        if spec.protected:
            raise ManifestError(path, "derive.protected", f"the base release {base.release} declares what it protects "
                                                          "(its pip.protected); expected it only for a base image")
        protected = protected_of_base
        base_image = None
    else:
        if release.base.digest is None:
            raise ManifestError(path, "base.digest", "a derived release on an image names it by digest "
                                                     "(sha256:<64 hex digits>); a tag moves")
        protected = {_key(p) for p in spec.protected}
        base_image = f"{release.base.image.rsplit(':', 1)[0] if _has_tag(release.base.image) else release.base.image}" \
                     f"@{release.base.digest}"
        pins_file = base_pins_path(constraints_dir, name)
        base_constraints = load_constraints(pins_file, manifest=shown_path(path), within=root) \
            if exists(pins_file) else None
    every = Constraints(base_constraints.path, base_constraints.pins + provided) if base_constraints else None
    if base is None and every is not None:
        _check_image_protects(path, spec.protected, every, base_image)
    overrides = _checked_overrides(path, spec.overrides, every, protected, base.release if base else name)
    requirements_path = root / spec.requirements
    requirements = load_requirements(requirements_path, within=root,
                                     named_by=f"{shown_path(path)}: derive.requirements")
    platforms = tuple(dict.fromkeys((release.build.platform, *release.build.published_platforms)))
    if release.os is None or release.os.glibc is None:
        raise ManifestError(path, "os.glibc", "required to resolve a derived release: the C library version (e.g. "
                                              "'2.36') that says which manylinux wheels the image installs")
    targets = tuple((interpreter(release), platform, release.os.glibc) for platform in platforms)
    indexes = tuple(release.pip.extra_index_urls)
    inputs = None
    if base_constraints is not None:
        inputs = inputs_digest(
            base=base.release if base else base_image, base_pins=[str(p) for p in every.pins],
            requirements=[r.text for r in requirements], overrides=[o.replaces for o in spec.overrides],
            protected=sorted(protected), indexes=list(indexes), targets=[" ".join(t) for t in targets],
            index_as_of=spec.index_as_of.isoformat() if spec.index_as_of else None)
    lock_file = lock_path(constraints_dir, name)
    lock, problem = None, None
    if exists(lock_file):
        try:
            lock = read_lock(lock_file, within=root)
        except ManifestError as exc:
            problem = str(exc)
    return DerivedRelease(name, base.release if base else None, base_image, base_constraints, provided,
                          requirements_path,
                          requirements, overrides, frozenset(protected), lock_file, lock, problem, inputs, targets,
                          indexes)


def _check_image_protects(path: Path, protected: list[str], pins: Constraints, image: str) -> None:
    for index, name in enumerate(protected):
        if pins.get(name) is None:
            raise ManifestError(path, f"derive.protected.{index}",
                                f"{name!r} is not among the pins read from {image} ({pins.path.name})")


def _checked_overrides(path: Path, overrides: list[Override], base_constraints: Constraints | None,
                       protected: set[str], base: str) -> dict[str, Override]:
    checked = {}
    for index, override in enumerate(overrides):
        key = f"derive.overrides.{index}"
        pin = parse_pin(override.replaces, 0)
        if base_constraints is not None:
            have = base_constraints.get(pin.name)
            if have is None:
                raise ManifestError(path, f"{key}.replaces",
                                    f"{base} does not pin {pin.key}; an override replaces a base pin (a new "
                                    "distribution belongs in the requirements)")
            if have.version != pin.version:
                raise ManifestError(path, f"{key}.replaces", f"{override.replaces} is not {base}'s pin ({base} pins "
                                                             f"{have}); expected the base's pin it replaces")
        if pin.key in protected and not override.protected:
            raise ManifestError(path, key, f"{pin.key} is protected by {base}; an override that moves it says "
                                           "protected: true")
        if override.protected and pin.key not in protected:
            raise ManifestError(path, f"{key}.protected", f"{pin.key} is not protected by {base}; expected "
                                                          "protected: true only for a protected distribution")
        checked[pin.key] = override
    return checked


def _key(name: str) -> str:
    return canonicalize_name(name)


def _has_tag(image: str) -> bool:
    return ":" in image.rsplit("/", 1)[-1]


def built_from_source(release: Release, catalog, constraints: Constraints) -> tuple[Pin, ...]:
    """The distributions a release builds from source and its constraints do not pin (25.12's torch),
    at the version pip lists for them in the image."""
    pins = []
    for component_name, component in release.components.items():
        entry = catalog.get(component_name)
        package = component.package or (entry.pip_package if entry else None)
        if component.install == "source" and package and constraints.get(package) is None:
            pins.append(Pin(package, str(component.reported_version), 0))
    return tuple(pins)


def protected_names(release: Release, catalog) -> set[str]:
    """What a release protects from its derived releases: its pip.protected and every component built
    from source (no index has those builds)."""
    names = {_key(p) for p in release.pip.protected} if release.pip else set()
    for component_name, component in release.components.items():
        entry = catalog.get(component_name)
        package = component.package or (entry.pip_package if entry else None)
        if component.install == "source" and package:
            names.add(_key(package))
    return names


def check_protected(path: Path, release: Release, constraints: Constraints) -> None:
    """Each name of pip.protected is a distribution the release pins (a name nothing pins protects nothing)."""
    for index, name in enumerate(release.pip.protected if release.pip else ()):
        if constraints.get(name) is None:
            raise ManifestError(path, f"pip.protected.{index}", f"{name!r} is not pinned in {constraints.path.name}; "
                                                                "expected a distribution of the image")
