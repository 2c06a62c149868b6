"""pip's resolver, the one bump proposes with: `pip install --dry-run --report` for a target's Python,
ABI and platform tags against the release's indexes (pip reads each candidate's metadata, PEP 658
where the index serves it), and what its output says when it finds no set.

verify no longer resolves with pip (it reads metadata itself); bump asks a real resolver for "the
newest set the whole closure accepts", and this is the one way it runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from packaging.utils import canonicalize_name

from ngcbuild.core.errors import OperationError
from ngcbuild.core.references import shown_url
from ngcbuild.verify.target import Target

TIMEOUT_S = 1800


def run_pip(arguments: list[str], indexes: list[str], target: Target, web, scratch: Path, *,
            quiet: bool = True) -> subprocess.CompletedProcess:
    """`pip install --dry-run` for `target` against `indexes` (the first is the index URL), its report
    written to scratch/report.json; `web.bundle` is the CA bundle pip trusts."""
    command = [sys.executable, "-m", "pip", "install", "--isolated", "--disable-pip-version-check",
               "--dry-run", "--ignore-installed", "--only-binary", ":all:",
               # pip would test Requires-Python against the interpreter running it, not the target's:
               # resolve.py tests it against the target instead.
               "--ignore-requires-python",
               "--target", str(scratch / "target"), "--report", str(scratch / "report.json"),
               *(["--quiet"] if quiet else []),
               "--python-version", target.python, "--implementation", "cp", "--abi", target.abi,
               "--index-url", indexes[0]]
    for index in indexes[1:]:
        command += ["--extra-index-url", index]
    for tag in target.platform_tags:
        command += ["--platform", tag]
    if web.bundle:
        command += ["--cert", web.bundle]
    # --isolated ignores PIP_* variables and the user's config, not the machine's (/etc/pip.conf may
    # name constraints or indexes): PIP_CONFIG_FILE=/dev/null makes pip read no config file.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    try:
        return subprocess.run(command + arguments, capture_output=True, text=True, timeout=TIMEOUT_S,
                              env={**environ, "PIP_CONFIG_FILE": os.devnull}, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        where = ", ".join(shown_url(i) for i in indexes)
        raise OperationError(f"pip did not finish resolving against {where} in {TIMEOUT_S // 60} minutes") from None


_NO_MATCH = re.compile(r"No matching distribution found for (?P<req>\S+)")


def unmatched_requirement(output: str) -> str | None:
    """The requirement pip stopped at ("No matching distribution found for NAME==V"), canonical name."""
    match = _NO_MATCH.search(output)
    if not match:
        return None
    return canonicalize_name(re.split(r"[=<>!~\[;]", match["req"], maxsplit=1)[0])


_CAUSE = re.compile(r"^\s*(?P<line>\S.*\b(?:depends on|requested|requires)\b.*)$")


def conflict_reason(output: str, limit: int = 3) -> str:
    """pip's reason for a resolution that failed, in one or two lines: its ERROR line and the first
    lines under "The conflict is caused by:"."""
    lines = output.splitlines()
    error = next((line.removeprefix("ERROR: ").strip() for line in lines
                  if line.startswith("ERROR:") and "ResolutionImpossible" not in line), "")
    causes = []
    if "The conflict is caused by:" in output:
        after = output.split("The conflict is caused by:", 1)[1].splitlines()
        causes = [m["line"].strip() for m in map(_CAUSE.match, after) if m]
        causes = sorted(causes, key=lambda line: "depends on" not in line)[:limit]  # the dependency first
    text = error or next((line.strip() for line in reversed(lines) if line.strip()), "no message")
    return text + (f" ({'; '.join(causes)})" if causes else "")
