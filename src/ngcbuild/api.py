"""One function per task, on the project in the current directory."""

from __future__ import annotations

import json
import os
import sys

from . import base as base_image
from . import build as builder
from . import changed
from . import golden as golden_files
from . import promote as promoter
from . import publish as publisher
from . import registry as registry_client
from . import reliability as reliability_runner
from . import sbom as sbom_writer
from .engine import connect
from .errors import UserError, shown_path
from .manifest import load_release
from .project import Project
from .render import render_release
from .smoke import runner as smoke_runner


def render(release: str, base=None, root=".") -> None:
    rendered = render_release(Project.at(root), release, base=base)
    print(f"rendered {len(rendered.files)} files into {rendered.directory} (context {rendered.context_hash[:12]})")


def build(release: str, registry=None, ca_bundle=None, wheelhouse=None, no_cache=False, base=None,
          platform=None, force=False, labels=None, root=".") -> dict:
    options = builder.options_from(registry, ca_bundle, wheelhouse, no_cache, os.environ, base=base,
                                   platform=platform, force=force, labels=labels)
    return builder.build_release(Project.at(root), release, options, out=sys.stdout)


def golden(root=".") -> None:
    written = golden_files.regenerate(Project.at(root))
    for path in written:
        print(f"wrote {path}")
    print("review the changes with `git diff tests/golden` before committing them")


def smoke(release: str | None, require_gpu=False, image=None, perf=False, baseline=None,
          threshold=None, host=False, expect_from_env=False, python=None, root=".") -> None:
    from .smoke.perf import DEFAULT_THRESHOLD

    project = Project.at(root)
    threshold = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    if not 0 < threshold < 1:
        raise UserError(f"--threshold: expected a fraction between 0 and 1 (0.05 is 5 %), got {threshold}")
    if host:
        if image or baseline:
            raise UserError("--image and --baseline need Docker; host mode runs the checks with the host's Python")
        _smoke_host(project, release, expect_from_env, require_gpu, perf, python)
        return
    if expect_from_env or python:
        raise UserError("--expect-from-env and --python belong to host mode: add --host")
    if not release:
        raise UserError("--release: which release's image to test (or --host --expect-from-env on a GPU host)")
    smoke_runner.run_smoke(project, release, require_gpu=require_gpu, image=image, perf=perf,
                           baseline=baseline, threshold=threshold)


def _smoke_host(project: Project, release, expect_from_env, require_gpu, perf, python) -> None:
    from .render import render_files
    from .smoke import host

    python = python or sys.executable
    if expect_from_env == bool(release):
        raise UserError("host mode needs exactly one of --expect-from-env (expectations from the host's "
                        "PyTorch) or --release R (expectations from R's manifest)")
    if expect_from_env:
        facts = host.probe_environment(python)
        expected = json.dumps(host.expectations_from_env(facts), indent=2, sort_keys=True).encode() + b"\n"
        name = "host"
    else:
        expected = render_files(project, load_release(project, release)).files["expected.json"]
        name = release
    host.run_host(project.build, expected, name, python=python, require_gpu=require_gpu, perf=perf)


def push(release: str, registry: str, root=".") -> dict:
    return registry_client.push_release(Project.at(root), release, registry, out=sys.stdout)


def base(release: str = "dev", root=".") -> None:
    loaded = load_release(Project.at(root), release)
    base_image.make_base(connect(), loaded.release)


def bench(runs: int = 3, registry: str | None = None, root=".", release: str = "dev") -> None:
    from .bench import run_bench

    path = run_bench(Project.at(root), runs=runs, registry=registry, release=release)
    print(f"figures written to {path}")


def notes(release: str, root=".") -> None:
    from .notes import write_notes

    path = write_notes(Project.at(root), release)
    print(f"wrote {shown_path(path)}")


def matrix(as_json=False, root=".") -> None:
    from .matrix import matrix_json, render_matrix

    project = Project.at(root)
    if as_json:
        print(json.dumps(matrix_json(project), indent=2))
    else:
        print(render_matrix(project), end="")


def diff(old: str, new: str, as_json=False, root=".") -> None:
    from .catalog import Catalog
    from .diff import diff_releases, render_diff
    from .releases import Series

    project = Project.at(root)
    series = Series.load(project)
    if as_json:
        result = diff_releases(series.get(old), series.get(new), Catalog.load(project))
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(render_diff(project, series, old, new), end="")


def docs(screenshot=True, root=".") -> None:
    from . import browser
    from .site import SCREENSHOT, build_site

    site = build_site(Project.at(root))
    print(f"wrote {len(site.pages)} pages into {shown_path(site.directory)}")
    if not screenshot:
        return
    chromium = browser.find_chromium()
    if chromium is None:
        print("no screenshot: chromium is not installed (bash .ci/browser installs it)")
        return
    with browser.serve(site.directory) as url:
        shot = browser.screenshot(chromium, url + "index.html", site.directory / SCREENSHOT)
    print(f"screenshot of the index (phone width) at {shown_path(shot)}")


def publish(release: str, registry: str, root=".") -> dict:
    return publisher.publish_release(Project.at(root), release, registry, out=sys.stdout)


def sbom(release: str, image=None, root=".") -> dict:
    return sbom_writer.write_sbom(Project.at(root), release, image=image, out=sys.stdout)


def promote(release: str, source: str, target: str, root=".") -> dict:
    return promoter.promote_release(Project.at(root), release, source, target, out=sys.stdout)


def changed_jobs(base=None, root=".") -> dict:
    """The releases (and CI jobs) that changes since `base` touch; all buildable ones without a base.
    For `invoke matrix --json --changed [--base REF]`."""
    result = changed.selection(Project.at(root), base)
    print(json.dumps(result, indent=2))
    return result


def reliability(root=".") -> None:
    reliability_runner.run_reliability(Project.at(root), out=sys.stdout)


def verify(release: str, as_json=False, base=None, root=".") -> None:
    """Print the verification of every pin of R (a table, or JSON); exit 1 when one failed."""
    from . import verify as verifier

    loaded = load_release(Project.at(root), release)
    if loaded.release.status != "buildable":
        raise UserError(f"{release} is archived (documentation only): nothing of it is built, so nothing to verify")
    rows = verifier.verify_release(loaded, verifier.Web(), base=base)
    sys.stdout.write(verifier.as_json(release, rows) if as_json else verifier.as_table(release, rows))
    failed = verifier.summary(rows)[verifier.FAILED]
    if failed:
        raise verifier.VerifyFailed(f"verify {release}: {failed} failed (see the table)")
