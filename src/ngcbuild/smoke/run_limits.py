"""The limits the smoke container runs with: NGC's `docker run` flags (--shm-size=1g --ulimit memlock=-1
--ulimit stack=67108864), lowered one by one to what the engine may set where it refuses them.

An engine without the right to raise a limit (a sandbox, rootless Docker or Podman) refuses to start the
container with runc's "error setting rlimit type N". Podman also sets the open-files and process limits of
every container on its own, which such an engine refuses just the same. Each refusal names the limit; it
is set to the next lower value this machine's own limits suggest, and the run says what it lowered.
"""

from __future__ import annotations

import re
import resource
from dataclasses import dataclass, field

from docker.types import Ulimit

NGC_SHM_SIZE = "1g"
NGC_LIMITS = {"memlock": -1, "stack": 67108864}  # -1: unlimited
MOST_ATTEMPTS = 12  # each a container refused at once, before it ran anything
# runc's numbers (Linux's RLIMIT_*) of the limits an engine sets: name, and this process's own
_TYPES = {3: ("stack", resource.RLIMIT_STACK), 6: ("nproc", resource.RLIMIT_NPROC),
          7: ("nofile", resource.RLIMIT_NOFILE), 8: ("memlock", resource.RLIMIT_MEMLOCK)}
_BY_NAME = {name: number for number, (name, _) in _TYPES.items()}
_REFUSED = re.compile(r"rlimit type (\d+)")
_FLOORS = {"stack": (8 << 20,), "memlock": (64 << 20, 8 << 20, 64 << 10), "nofile": (65536, 4096, 1024),
           "nproc": (65536, 32768, 4096)}


@dataclass
class Limits:
    values: dict[str, int] = field(default_factory=lambda: dict(NGC_LIMITS))
    lowered: list[str] = field(default_factory=list)  # what was lowered, in words

    def host_config_flags(self) -> dict:
        return {"shm_size": NGC_SHM_SIZE,
                "ulimits": [Ulimit(name=name, soft=value, hard=value) for name, value in sorted(self.values.items())]}

    def lower(self, message: str) -> str | None:
        """The limit an engine's refusal `message` names set to its next lower value: a note saying so,
        or None where the refusal names no limit or nothing lower is left to try."""
        match = _REFUSED.search(message)
        if match is None:
            name = "memlock" if "rlimit" in message and self.values.get("memlock") == -1 else None
        else:
            name = _TYPES.get(int(match[1]), (None, None))[0]
        if name is None:
            return None
        current = self.values.get(name)
        lower = [value for value in candidates(name) if current is None or current == -1 or value < current]
        if not lower:
            return None
        self.values[name] = lower[0]
        shown = "the engine's default" if current is None else ("unlimited" if current == -1 else str(current))
        self.lowered.append(f"{name} {shown} -> {lower[0]}")
        return f"note: this engine may not set {name} to {shown}; running with {name}={lower[0]}"


def candidates(name: str) -> list[int]:
    """Values to try for the limit `name`, highest first: this process's own hard and soft limits (an
    engine started here has them), then common floors."""
    soft, hard = resource.getrlimit(_TYPES[_BY_NAME[name]][1])
    own = [value for value in (hard, soft) if value != resource.RLIM_INFINITY and value > 0]
    floors = [value for value in _FLOORS[name] if not own or value < min(own)]
    return sorted(set(own), reverse=True) + sorted(set(floors), reverse=True)
