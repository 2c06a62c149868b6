"""verify and the one resolver judge the same pins alike, on every buildable release, against the real
indexes (network): where verify's closure says a release's pin set is closed on a platform, uv
resolves those pins to exactly themselves; where verify says it is not (a requirement left unpinned,
or a version a requirement excludes), uv adds a distribution, moves one, or finds no set.

Both read the same list of indexes (core/indexes.py). What the image builds from source or its
base image carries (25.12's torch, the TensorRT libraries its pip check tolerates) stands in for uv as
a metadata-only wheel at the version the image has, as `resolve` and `bump` give it."""

import dataclasses
import tempfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from ngcbuild.core.indexes import release_indexes
from ngcbuild.core.project import Project
from ngcbuild.manifest.derived import built_from_source
from ngcbuild.manifest.loader import buildable_releases, load_release
from ngcbuild.resolver.stand_ins import StandIn
from ngcbuild.resolver.uv import Uv
from ngcbuild.verify import run
from ngcbuild.verify.parallel import Work
from ngcbuild.verify.pins import choose_pins
from ngcbuild.verify.report import NOT_VERIFIED, VERIFIED
from ngcbuild.verify.sources import Sources
from ngcbuild.verify.target import Target
from ngcbuild.verify.web import Web

from ..conftest import REPO

pytestmark = pytest.mark.network
RELEASES = buildable_releases(Project.at(REPO))


def _stand_ins(loaded, sources: Sources, target: Target) -> tuple[StandIn, ...]:
    """What the image has without installing it from an index: its source builds, and the requirements
    its base meets (pip.met_by_base), at the version their requirer pins."""
    release = loaded.release
    found = [StandIn(p.name, p.version) for p in built_from_source(release, loaded.catalog, loaded.constraints)]
    chosen = choose_pins(loaded.constraints.pins, target, sources)
    for met in release.pip.met_by_base:
        requirer = chosen.get(canonicalize_name(met.distribution))
        for text in (requirer.metadata.requires_dist if requirer and requirer.metadata else ()):
            requirement = Requirement(text)
            exact = [s.version for s in requirement.specifier if s.operator == "=="]
            if canonicalize_name(requirement.name) == canonicalize_name(met.requires) and exact:
                found.append(StandIn(requirement.name, exact[0]))
    return tuple(found)


@pytest.mark.parametrize("name, unpinned", [*((r, None) for r in RELEASES), ("cuda-dev", "filelock")],
                         ids=[*RELEASES, "cuda-dev-less-filelock"])
def test_verify_and_the_resolver_agree_on_the_pins(name, unpinned, tmp_path):
    """`unpinned`: a pin taken out first (a set that is not closed: both must say so)."""
    loaded = load_release(Project.at(REPO), name)
    if unpinned:
        kept = tuple(p for p in loaded.constraints.pins if p.key != unpinned)
        loaded = dataclasses.replace(loaded, constraints=dataclasses.replace(loaded.constraints, pins=kept))
    release = loaded.release
    indexes = release_indexes(release)
    platforms = dict.fromkeys((release.build.platform, *release.build.published_platforms))
    web = Web()
    judged, unreachable = 0, ""
    for platform in platforms:
        target = Target(release.python.interpreter_version, platform, release.os.glibc)
        with tempfile.TemporaryDirectory() as scratch:
            rows = run._python_rows(loaded, [target], indexes, web, Work(), Path(scratch))
            closure = next(r for r in rows if r.kind == "closure")
            if closure.status == NOT_VERIFIED and "unreachable" in closure.reason:
                unreachable = closure.reason  # what this machine cannot read, neither judges
                continue
            sources = Sources(indexes, web, Work(), Path(scratch))
            stand_ins = _stand_ins(loaded, sources, target)
        standing = {s.key for s in stand_ins}
        pins = {p.key: p.version for p in loaded.constraints.pins if p.key not in standing}
        with Uv(indexes, stand_ins=stand_ins) as uv:
            compiled = uv.compile([f"{key}=={version}" for key, version in sorted(pins.items())], [], target)
        resolved = {p.key: p.version for p in compiled.pins if p.key not in standing}
        same = compiled.ok and resolved == pins
        assert same == (closure.status == VERIFIED), (
            f"{name} on {platform}: verify's closure is {closure.status} ({closure.reason[:300]}); the resolver "
            f"{'resolves the pins to themselves' if same else 'does not: ' + (compiled.message[:300] or str(sorted(set(resolved.items()) ^ set(pins.items()))[:10]))}")
        judged += 1
    if not judged:  # said, never silent: the indexes of the release are not all reachable from here
        pytest.skip(f"{name}: not judged on this machine: {unreachable[:300]}")
