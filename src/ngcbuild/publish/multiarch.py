"""Publish a release for every platform it lists: push one tag per platform, then write the
multi-arch tag as a manifest list through the registry API (the engine cannot make one).

Nothing is written when a listed platform has no build of the current context: a multi-arch tag
that silently lacks arm64 is worse than none.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import docker

from ngcbuild.core.errors import OperationError
from ngcbuild.core.names import check_release_name
from ngcbuild.core.outputs import make_dir, printer
from ngcbuild.core.project import Project
from ngcbuild.core.references import ImageRef, registry_host
from ngcbuild.core.text import safe
from ngcbuild.engine.client import connect
from ngcbuild.engine.reuse import arch_of, platform_tag
from ngcbuild.image.media import DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST
from ngcbuild.manifest.loader import load_release
from ngcbuild.publish.platform_records import gather, load_records
from ngcbuild.publish.push import push_and_read_back, record_tag, registry_tags
from ngcbuild.registry.auth import keychain
from ngcbuild.registry.client import Registry, RegistryError
from ngcbuild.render.context import render_as_built, render_loaded
from ngcbuild.workspace.record import Record, read_record, record_path, write_record
from ngcbuild.workspace.sections import Published, utc_timestamp


class PublishRefused(OperationError):
    pass


def manifest_list(entries: list[dict]) -> tuple[bytes, str]:
    """The list body for per-platform manifests [{platform, digest, size, media_type}], and its type:
    a Docker manifest list over Docker manifests, an OCI index over OCI ones."""
    oci = all(e["media_type"] == OCI_MANIFEST for e in entries)
    if not oci and any(e["media_type"] not in (DOCKER_MANIFEST, OCI_MANIFEST) for e in entries):
        raise PublishRefused(f"cannot list manifests of types {sorted({e['media_type'] for e in entries})}")
    media_type = OCI_INDEX if oci else DOCKER_LIST
    body = {
        "schemaVersion": 2,
        "mediaType": media_type,
        "manifests": [
            {"mediaType": e["media_type"], "size": e["size"], "digest": e["digest"],
             "platform": {"architecture": arch_of(e["platform"]), "os": e["platform"].split("/")[0],
                          **({"variant": "v8"} if arch_of(e["platform"]) == "arm64" else {})}}
            for e in sorted(entries, key=lambda e: e["platform"])
        ],
    }
    return json.dumps(body, indent=3).encode(), media_type


def check_publishable(loaded) -> None:
    """A derived release of one platform is published as every release is; one of several is refused
    (a multi-arch list of it would hold images FROM different base images, one per platform, each of
    its own context, and publish holds every platform to one)."""
    platforms = loaded.release.build.published_platforms
    if loaded.derived is not None and len(platforms) > 1:
        raise PublishRefused(f"{loaded.release.release} is a derived release of {len(platforms)} platforms "
                             f"({', '.join(platforms)}): each is built FROM {loaded.derived.base}'s image of its "
                             "platform by digest, so each has its own context, and a multi-arch list of them is "
                             "not published yet; push each platform's image (`ngcbuild push`), or list only one "
                             "platform in build.platforms")


def missing_platforms(release, record: Record, context_hash: str) -> list[str]:
    """Platforms the manifest lists that have no build of this context in the record."""
    return [p for p in release.build.published_platforms
            if p not in record.platforms or record.platforms[p].context_sha256 != context_hash]


def publish_release(project: Project, name: str, host: str, out=sys.stdout, sleep=time.sleep) -> Published:
    host = registry_host(host)
    keychain().for_host(host)  # NGCBUILD_REGISTRY_* half set: refused before anything is rendered
    check_release_name(name)
    record = read_record(project.out(name))  # before rendering: no build/R/ written for a bad record
    loaded = load_release(project, name)
    check_publishable(loaded)
    rendered = render_loaded(project, loaded)
    release = rendered.plan.release
    directory = rendered.directory
    missing = missing_platforms(release, record, rendered.context_hash)
    if missing:
        hints = "; ".join(f"`invoke build --release {name} --platform {p}`" for p in missing)
        raise PublishRefused(
            f"{name} lists platforms {', '.join(release.build.published_platforms)} but "
            f"{', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no build of context "
            f"{rendered.context_hash[:12]}; build {'it' if len(missing) == 1 else 'them'} first ({hints}). "
            "Nothing was pushed.")

    say = printer(out)

    client = connect()
    registry = Registry(host)
    repository_path = release.image.repository
    repository = f"{host}/{repository_path}"
    entries = []
    # a failure anywhere below takes back every engine tag this publish added or moved (as push does)
    with ExitStack() as taken_back:
        for platform in release.build.published_platforms:
            built = record.platforms[platform]
            image = _checked_image(client, name, platform, built.image_id)
            tag_for_push = taken_back.enter_context(registry_tags(client, image["Id"], out))
            own = platform_tag(release.tag, platform)
            # the per-platform tag, and the hash tags (skip-by-hash looks for them in the registry)
            tags = [own] + [t for t in (record_tag(ref, directory) for ref in built.tags) if t != release.tag]
            tags = list(dict.fromkeys(tags))
            for tag in tags:
                tag_for_push(repository, tag)
            say(f"pushing {', '.join(f'{repository}:{tag}' for tag in tags)} ({platform})")
            before = [entry.digest for entry in built.pushed.values() if entry.registry == host and entry.digest]
            before += [listed.platforms[platform] for listed in record.published.values()
                       if listed.registry == host and platform in listed.platforms]
            digest = push_and_read_back(client, registry, repository_path, tags, image["Id"], out, sleep, before).digest
            manifest = registry.manifest(repository_path, digest)
            if manifest is None or manifest.is_list:
                raise PublishRefused(f"{repository}@{digest}: the registry does not serve the image manifest "
                                     "just pushed")
            entries.append({"platform": platform, "digest": digest, "size": len(manifest.body),
                            "media_type": manifest.media_type})
    return _write_list(registry, release, record, entries, directory, host, say)


def publish_from_records(project: Project, name: str, host: str, records_dir: Path,
                         out=sys.stdout) -> Published | Record:
    """The release workflow's publish: each platform was built, smoke-tested and pushed by a job of
    its own; from their records (`records_dir`), tag each platform's pushed manifest `R-py3-<arch>`
    and write the list. Nothing is pushed from this machine's engine."""
    # every argument and every record checked before anything is rendered: a refusal leaves no build/R/
    host = registry_host(host)
    keychain()  # NGCBUILD_REGISTRY_* half set, or for no host: refused before anything is rendered
    check_release_name(name)
    records = load_records(records_dir)
    loaded = load_release(project, name)
    release = loaded.release
    check_publishable(loaded)
    contexts: dict[str | None, str] = {}

    def context_of(record: Record) -> str:
        """The context the record's platform must have been built from: the release as rendered
        now, FROM the base image that platform's build used (a derived release: its base by digest)."""
        base = record.build.base_image
        if base not in contexts:
            contexts[base] = render_as_built(project, loaded, record.build).context_hash
        return contexts[base]

    record, pushed = gather(records, name, release.build.published_platforms, context_of, host)
    directory = make_dir(project.out(name))

    say = printer(out)

    if len(release.build.published_platforms) == 1:
        # one platform: its job pushed R-py3 itself, and promotion copies that image
        write_record(directory, record)
        say(f"{name} has one platform ({release.build.platform}): no list to write; its record, smoke run and "
            f"pushes are in {record_path(directory)}")
        return record
    registry = Registry(host)
    repository_path = release.image.repository
    entries = []
    for platform, (ref, digest) in sorted(pushed.items()):
        tag = ImageRef.parse(ref).tag  # checked by gather()
        manifest = registry.manifest(repository_path, tag)
        if manifest is None or manifest.digest != digest:
            raise PublishRefused(f"{ref}: the {platform} job pushed {digest}, but the registry now serves "
                                 f"{manifest.digest if manifest else 'nothing'}; nothing was written")
        if manifest.is_list:
            raise PublishRefused(f"{host}/{repository_path}@{digest}: not an image manifest; nothing was written")
        own = platform_tag(release.tag, platform)
        registry.put_manifest(repository_path, own, manifest.body, manifest.media_type)
        say(f"{platform}: {ref}@{digest} (smoke passed) tagged {own}")
        entries.append({"platform": platform, "digest": digest, "size": len(manifest.body),
                        "media_type": manifest.media_type})
    return _write_list(registry, release, record, entries, directory, host, say)


def _write_list(registry: Registry, release, record: Record, entries: list[dict], directory, host: str,
                say) -> Published:
    repository_path = release.image.repository
    repository = f"{host}/{repository_path}"
    body, media_type = manifest_list(entries)
    served = registry.put_and_read_back(repository_path, release.tag, body, media_type)
    digest = served.digest
    if not served.is_list:
        raise PublishRefused(f"{repository}:{release.tag}: wrote list {digest} but the registry serves it as "
                             f"{safe(served.media_type, 80)}")
    listed = sorted(str(entry.platform) for entry in served.entries() if entry.platform is not None)
    if listed != sorted(release.build.published_platforms):
        raise RegistryError(f"{repository}:{release.tag}: the served list names {listed}")
    ref = f"{repository}:{release.tag}"
    result = Published.of(digest=digest, media_type=media_type, registry=host,
                          platforms={e["platform"]: e["digest"] for e in entries}, at=utc_timestamp())
    write_record(directory, replace(record, published={**record.published, ref: result}))
    say(f"published {ref}@{digest}: {media_type.rsplit('.', 2)[-2]} of {', '.join(listed)} (verified)")
    return result


def _checked_image(client, name: str, platform: str, image_id: str) -> dict:
    try:
        image = client.inspect_image(image_id)
    except docker.errors.ImageNotFound:
        raise PublishRefused(f"the {platform} image {image_id[:19]} of {name} is gone; rebuild it "
                             f"(`invoke build --release {name} --platform {platform}`)") from None
    actual = f"{image.get('Os')}/{image.get('Architecture')}"
    if actual != platform:
        raise PublishRefused(f"the image recorded for {platform} ({image_id[:19]}) is {actual}")
    return image
