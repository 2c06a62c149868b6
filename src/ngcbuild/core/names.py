"""What a built image is called: the release's name rule and the names its image gets. Light on
purpose (no pydantic, no Jinja): the unchanged-release path of `build` runs on this alone."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from ngcbuild.core.errors import UserError, excerpt

RELEASE_NAME_RE = re.compile(r"[0-9]{2}\.[0-9]{2}|[a-z][a-z0-9-]{0,30}")


def check_release_name(name: str) -> None:
    """The --release argument becomes a file name, a build/ folder and an image tag: a path or shell
    characters in it would reach all three."""
    if not isinstance(name, str) or not RELEASE_NAME_RE.fullmatch(name):
        raise UserError(f"--release {excerpt(name)}: expected a release name (YY.MM such as 25.12, or a lower-case "
                        "word such as dev) naming a file manifests/NAME.yaml")


@dataclass(frozen=True)
class ImageNames:
    """The names a release's image is built, tagged and recorded under."""

    release: str  # 25.12
    tag: str  # 25.12-py3
    repository_path: str  # nvidia/pytorch (the registry host is the build's option)
    default_platform: str  # the platform that gets `tag` itself (others get tag-<arch>)
    base_image: str  # what it is built FROM: the manifest's, or the --base-image mirror

    @classmethod
    def of(cls, release, base_image: str | None = None) -> "ImageNames":
        """The names of a validated release; `base_image` is the --base-image mirror when one is used."""
        return cls(release=release.release, tag=release.tag, repository_path=release.image.repository,
                   default_platform=release.build.platform, base_image=base_image or release.base.image)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ImageNames":
        fields = {key: data[key] for key in cls.__dataclass_fields__}
        if not all(isinstance(value, str) for value in fields.values()):
            raise ValueError("image names must be strings")
        return cls(**fields)
