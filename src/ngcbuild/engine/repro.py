"""`ngcbuild repro`: build a release again without the layer cache and say whether it gave the same
release image (each engine image made into it as push makes it, engine/release_image.py, nothing loaded):
"reproduced: <release image id>", or per layer the files that differ and how (compare.py), exit status 1.

What it is compared with: `--against REF` (an image in the engine, or pulled: a pushed release, what
a consumer checks), else the image the release's record names (the last build on this checkout).
The rebuild is a `build --force --no-cache`: its image becomes the release's image, as any build's.
"""

from __future__ import annotations

import sys

from ngcbuild.core.errors import OperationError, UserError, shown_path
from ngcbuild.core.outputs import printer
from ngcbuild.core.project import Project
from ngcbuild.engine.build import build_release
from ngcbuild.engine.options import BuildOptions, check_mirrors_answer, check_platform_listed
from ngcbuild.workspace.record import previous_record


class NotReproduced(OperationError):
    pass


def run_repro(project: Project, release: str, options: BuildOptions, against: str | None = None, out=sys.stdout):
    """Rebuild `release` (options with no_cache and force) and compare; the Comparison, or NotReproduced."""
    from ngcbuild.core.names import check_release_name
    from ngcbuild.engine.client import connect, ensure_image, image_exists
    from ngcbuild.engine.compare import compare_images
    from ngcbuild.manifest.loader import load_release

    check_release_name(release)
    loaded = load_release(project, release)
    named = loaded.release.build.not_reproducible  # bad input stops here
    # what the rebuild would refuse (exit 2), refused before the engine is asked or the image compared
    if loaded.release.status == "archived":
        raise UserError(f"{shown_path(loaded.path)}: status: release {release} is archived (documentation only: its "
                        "base images are gone); nothing of it is built, so nothing to reproduce")
    check_platform_listed(options, loaded.release, shown_path(loaded.path))
    say = printer(out)
    check_mirrors_answer(options)  # before the engine is asked (build_release asks again: a connection, milliseconds)
    client = connect()
    if against is None:
        first = previous_record(project.out(release)).build.image_id
        if first is None:
            raise UserError(f"repro --release {release}: no image of {release} recorded in build/{release}/ to "
                            f"compare with; build it first (`invoke build --release {release}`) or name --against REF")
        what = f"the image build/{release}/record.json names ({first[:19]})"
    else:
        first = against
        what = against
        ensure_image(client, against, f"--against {against}: the image to compare with", say)
    if not image_exists(client, first):
        raise OperationError(f"repro --release {release}: {what} is no longer in the engine; "
                             "build again, or name --against REF")
    first = client.inspect_image(first)["Id"]
    say(f"repro {release}: building again without the layer cache, to compare with {what}")
    built = build_release(project, release, options, out)
    comparison = compare_images(client, first, built.record.build.image_id)
    for line in comparison.lines((what, "the rebuild")):
        say(line)
    for component, reason in sorted(named.items()):
        say(f"the manifest names {component} as not reproducible: {reason}"
            + ("" if not comparison.same else " (reproduced all the same: the entry may go)"))
    if not comparison.same:
        raise NotReproduced(f"repro --release {release}: not reproduced ({len(comparison.layers)} layers and "
                            f"{len(comparison.config)} config keys differ, listed above)")
    return comparison

