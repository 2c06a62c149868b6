"""What makes the release image from the engine's image: the epoch every time the build wrote is set to, the
base image's time (an earlier time is the base's own and stays), and how many of the image's layers are the
base's (never rewritten). The build knows all three before it starts, and writes them into the engine's image
as one label, so that the image says how its release image is made wherever it goes: a reused image, an
image loaded into another engine, a push from another checkout. The rules themselves are the code's
(layer_tar.py, volatile.py, config.py), versioned by VERSION.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ngcbuild.core.text import safe
from ngcbuild.image.config import seconds

VERSION = 7  # of the rules (layer_tar.py, volatile.py, config.py): a change makes other release images
RECIPE_LABEL = "io.ngcbuild.release-image"
_FORM = re.compile(r"epoch=([0-9]{1,12}) made-after=([0-9]{1,12}) base-layers=([0-9]{1,4}) base=([0-9a-f]{16})")


class RecipeDamaged(ValueError):
    """An image whose recipe label is there but not in its one form (the message names the label and the form)."""


@dataclass(frozen=True)
class Recipe:
    epoch: int  # every time the build wrote says this
    made_after: int  # the base image's time: a time at or before it is the base's, kept
    base_layers: int  # the image's first layers, the base's, never rewritten
    base: str  # base_chain of those layers: an image whose first layers are others is not made by this recipe

    @classmethod
    def of_base(cls, epoch: int, base_image: dict) -> Recipe:
        """The recipe of an image built FROM `base_image` (its inspect answer) at `epoch`; ValueError when the
        answer has no time or layers in their form."""
        created, layers = base_image.get("Created"), (base_image.get("RootFS") or {}).get("Layers")
        if not isinstance(created, str) or not isinstance(layers, list) or not all(isinstance(x, str) for x in layers):
            raise ValueError("the base image's inspect answer has no creation time or no list of layers")
        return cls(epoch, seconds(created), len(layers), base_chain(layers))

    def label(self) -> dict[str, str]:
        return {RECIPE_LABEL: f"epoch={self.epoch} made-after={self.made_after} base-layers={self.base_layers} "
                       f"base={self.base}"}

    def check(self, diff_ids: list[str]) -> str | None:
        """Why an image of these layers is not one this recipe makes; None when it is."""
        if len(diff_ids) < self.base_layers or base_chain(diff_ids[:self.base_layers]) != self.base:
            return (f"its first {self.base_layers} layers are not the base image's its recipe names (label "
                    f"{RECIPE_LABEL})")
        return None

    @classmethod
    def of_image(cls, image: dict) -> Recipe | None:
        """The recipe an engine's image (its inspect answer) carries; None when it carries none (an image not
        built by ngcbuild: it is pushed as it is); RecipeDamaged when the label is not in its form."""
        labels = ((image.get("Config") or {}).get("Labels") or {}) if isinstance(image, dict) else {}
        if not isinstance(labels, dict) or RECIPE_LABEL not in labels:
            return None
        text = labels[RECIPE_LABEL]
        found = _FORM.fullmatch(text) if isinstance(text, str) else None
        if found is None:
            raise RecipeDamaged(f"the image's label {RECIPE_LABEL} is {safe(str(text), 120)!s}, where "
                                "'epoch=SECONDS made-after=SECONDS base-layers=COUNT base=HEX16' was expected")
        return cls(int(found[1]), int(found[2]), int(found[3]), found[4])


def base_chain(diff_ids: list[str]) -> str:
    """16 hex digits standing for a list of layers (their diff ids, in order)."""
    return hashlib.sha256("\n".join(diff_ids).encode()).hexdigest()[:16]
