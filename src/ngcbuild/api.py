"""One function per task, on the project in the current directory."""

from __future__ import annotations

import json
import os
import sys

from . import base as base_image
from . import build as builder
from . import changed
from . import promote as promoter
from . import publish as publisher
from . import registry as registry_client
from . import sbom as sbom_writer
from .engine import connect
from .manifest import load_release
from .project import Project
from .render import render_release
from .smoke import runner as smoke_runner


def render(release: str, root=".") -> None:
    rendered = render_release(Project.at(root), release)
    print(f"rendered {len(rendered.files)} files into {rendered.directory} (context {rendered.context_hash[:12]})")


def build(release: str, registry=None, ca_bundle=None, wheelhouse=None, no_cache=False, platform=None,
          force=False, labels=None, root=".") -> dict:
    options = builder.options_from(registry, ca_bundle, wheelhouse, no_cache, os.environ,
                                   platform=platform, force=force, labels=labels)
    return builder.build_release(Project.at(root), release, options, out=sys.stdout)


def smoke(release: str, require_gpu=False, image=None, root=".") -> None:
    smoke_runner.run_smoke(Project.at(root), release, require_gpu=require_gpu, image=image)


def push(release: str, registry: str, root=".") -> dict:
    return registry_client.push_release(Project.at(root), release, registry, out=sys.stdout)


def base(release: str = "dev", root=".") -> None:
    loaded = load_release(Project.at(root), release)
    base_image.make_base(connect(), loaded.release)


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
