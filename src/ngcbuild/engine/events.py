"""Parsers for the Docker engine's JSON event streams (build and push).

Pure logic, no engine: unit tests feed them recorded streams. Both fail on `error` *and*
`errorDetail`, since the engine reports a failure inside a stream that otherwise looks successful.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from ngcbuild.core.text import safe

_STEP_RE = re.compile(r"^Step (\d+)/(\d+) : (.*)$")
_ID_RE = re.compile(r"^Successfully built ([0-9a-f]{12,64})$")
# The classic builder runs each RUN step in a container of its own and names it in the log.
_CONTAINER_RE = re.compile(r"^\s*---> Running in ([0-9a-f]{12,64})$")
_FROM_RE = re.compile(r"^FROM\s+(?:--platform=\S+\s+)?\S+(?:\s+AS\s+(\S+))?\s*$", re.IGNORECASE)
FINAL_STAGE = "final"  # the name given to the last stage when the Dockerfile names it not
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
# dpkg's percentage counter: one line per 5%, worth nothing in a log.
_NOISE_RE = re.compile(r"^\(Reading database \.\.\. \d+%$")
TAIL_LINES = 40


def _error_of(event: dict) -> str | None:
    detail = event.get("errorDetail")
    if event.get("error") or detail:
        message = event.get("error") or (detail or {}).get("message") or str(detail)
        # the engine's words (which may quote a registry's): escaped before any terminal sees them
        return safe(str(message).strip(), 1000)
    return None


MAX_LINE = 4000  # characters of one line of a step's output shown


@dataclass
class BuildStream:
    """Follows a classic-builder event stream: steps, log lines, the image id, the error."""

    tail: deque = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    step: int = 0
    steps: int = 0
    instruction: str = ""
    image_id: str | None = None
    error: str | None = None
    cached_steps: int = 0
    step_log: list = field(default_factory=list)  # (step, instruction, cached)
    containers: list = field(default_factory=list)  # intermediate containers, in the order they ran
    # [stage name, image id the engine reported when it ended], in Dockerfile order
    stage_images: list = field(default_factory=list)

    def feed(self, event: dict) -> list[str]:
        """Consume one event; return the lines to show the user."""
        error = _error_of(event)
        if error:
            self.error = error
            self.tail.append(error)
            return [f"ERROR: {error}"]
        aux = event.get("aux")
        if isinstance(aux, dict) and aux.get("ID"):
            # The engine reports the image of every stage as it ends; the last one is the build's.
            self.image_id = aux["ID"]
            if self.stage_images:
                self.stage_images[-1][1] = aux["ID"]
        shown = []
        text = event.get("stream")
        if not isinstance(text, str):
            return shown
        for line in _ANSI_RE.sub("", text).splitlines():
            # what a step printed: colours dropped above, any other escape sequence shown escaped
            line = safe(line.rstrip(), MAX_LINE)
            if not line or _NOISE_RE.match(line.strip()):
                continue
            self.tail.append(line)
            step = _STEP_RE.match(line)
            if step:
                self.step, self.steps, self.instruction = int(step[1]), int(step[2]), step[3]
                self.step_log.append([self.step, self.instruction, False])
                stage = _FROM_RE.match(self.instruction)
                if stage:
                    self.stage_images.append([(stage[1] or str(len(self.stage_images))).lower(), None])
                shown.append(f"[{self.step}/{self.steps}] {self.instruction}")
                continue
            if line.strip() == "---> Using cache" and self.step_log:
                self.step_log[-1][2] = True
                self.cached_steps += 1
            running = _CONTAINER_RE.match(line)
            if running:
                self.containers.append(running[1])
            built = _ID_RE.match(line)
            if built and not self.image_id:
                self.image_id = built[1]
            shown.append(f"    {line}")
        return shown

    def stages(self) -> dict[str, str]:
        """Stage name -> its image id, the last stage named `final`; empty unless every stage ended."""
        named = [[name, image] for name, image in self.stage_images if image]
        if named and len(named) == len(self.stage_images):
            named[-1][0] = FINAL_STAGE
        return dict(named) if len(named) == len(self.stage_images) else {}

    @property
    def failed_step(self) -> str:
        return f"step {self.step}/{self.steps}: {self.instruction}" if self.steps else "before the first step"


def stage_names(dockerfile: str) -> list[str]:
    """The stages of a Dockerfile as BuildStream.stages() names them (the last one `final`)."""
    names = []
    for line in dockerfile.splitlines():
        stage = _FROM_RE.match(line.strip())
        if stage:
            names.append((stage[1] or str(len(names))).lower())
    if names:
        names[-1] = FINAL_STAGE
    return names


def stages_copying(dockerfile: str, source: str) -> list[str]:
    """The stages (named as stage_names names them) whose COPY or ADD lines name `source` of the context."""
    names, found = stage_names(dockerfile), []
    current = -1
    for line in dockerfile.splitlines():
        words = line.strip().split()
        if _FROM_RE.match(line.strip()):
            current += 1
        elif words and words[0].upper() in ("COPY", "ADD") and source in words[1:-1] and 0 <= current < len(names):
            found.append(names[current])
    return list(dict.fromkeys(found))


@dataclass
class PushStream:
    """Follows a push event stream: per-layer progress, the pushed digest, the error."""

    digest: str | None = None
    size: int | None = None
    error: str | None = None
    layers: dict = field(default_factory=dict)  # layer id -> last status
    uploaded_bytes: dict = field(default_factory=dict)  # layer id -> bytes pushed

    def feed(self, event: dict) -> list[str]:
        """The lines to show for one event; what the engine relays from the registry (its errors, its
        statuses) is escaped: core/text.safe."""
        return [safe(line, 1000) for line in self._feed(event)]

    def _feed(self, event: dict) -> list[str]:
        error = _error_of(event)
        if error:
            self.error = error
            return [f"ERROR: {error}"]
        aux = event.get("aux")
        if isinstance(aux, dict) and aux.get("Digest"):
            self.digest, self.size = aux["Digest"], aux.get("Size")
            return [f"    pushed {aux.get('Tag', '')} {self.digest}"]
        status, layer = event.get("status"), event.get("id")
        if not status:
            return []
        if layer:
            previous = self.layers.get(layer)
            self.layers[layer] = status
            detail = event.get("progressDetail") or {}
            if status == "Pushing" and isinstance(detail.get("current"), int):
                self.uploaded_bytes[layer] = detail["current"]
            if status != previous and status not in ("Pushing", "Preparing", "Waiting"):
                return [f"    {layer}: {status}"]
            return []
        return [f"    {status}"]
