"""One function per task, on the project in the current directory."""

from __future__ import annotations

import os
import sys

from . import base as base_image
from . import build as builder
from . import registry as registry_client
from . import reliability as reliability_runner
from .smoke import runner as smoke_runner
from .engine import connect
from .manifest import load_release
from .project import Project
from .render import render_release


def render(release: str, root=".") -> None:
    rendered = render_release(Project.at(root), release)
    print(f"rendered {len(rendered.files)} files into {rendered.directory} (context {rendered.context_hash[:12]})")


def build(release: str, registry=None, ca_bundle=None, wheelhouse=None, no_cache=False, root=".") -> dict:
    options = builder.options_from(registry, ca_bundle, wheelhouse, no_cache, os.environ)
    return builder.build_release(Project.at(root), release, options, out=sys.stdout)


def smoke(release: str, require_gpu=False, image=None, root=".") -> None:
    smoke_runner.run_smoke(Project.at(root), release, require_gpu=require_gpu, image=image)


def push(release: str, registry: str, root=".") -> dict:
    return registry_client.push_release(Project.at(root), release, registry, out=sys.stdout)


def base(release: str = "dev", root=".") -> None:
    loaded = load_release(Project.at(root), release)
    base_image.make_base(connect(), loaded.release)


def reliability(root=".") -> None:
    reliability_runner.run_reliability(Project.at(root), out=sys.stdout)
