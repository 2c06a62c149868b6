"""`invoke reliability`: run the corpus of broken inputs, the fault tests and the secrets scans, and
write the figures they measured to RELIABILITY.md.

The tests measure; this module only runs them and counts. Each test appends one JSON line per
measurement to $NGCBUILD_FIGURES (tests/conftest.py, fixture `figures`) before it asserts, so a
failing check shows up as a non-zero figure, not as a missing one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from .errors import OperationError
from .project import Project

MARKER = "reliability"
REPORT = "RELIABILITY.md"

# What the fault tests cannot do on our machines, and why (kept next to the figures it qualifies).
NOT_PRODUCED = (
    ("permission denied on the engine's socket",
     ("the tests run as root, and root connects to any socket whatever its mode; the message exists "
      "(`ngcbuild.engine`) but only a test run as another user could reach it")),
    ("a registry that answers slowly or hangs mid-upload",
     "the engine's own upload timeouts are minutes long; a test bounded to seconds cannot wait them out"),
    ("the disk filling up during a build or a push",
     "the shared engine's data root is the machine's only disk; filling it would break other builds"),
    ("a step killed for running out of memory",
     "builds here set no memory limit; the hint for a step's exit code 137 names both causes (memory, or "
     "the engine stopping), and only the second is produced"),
    ("a registry with a bad TLS certificate",
     "the registries here are plain HTTP on 127.0.0.1, which the engine trusts without TLS"),
)


@dataclass
class Suite:
    tried: int = 0
    clean: int = 0
    tracebacks: int = 0
    leftovers: int = 0
    found: int = 0
    unclean: list = field(default_factory=list)
    inputs: set = field(default_factory=set)  # distinct inputs (a corpus case is run twice)


@dataclass
class Summary:
    corpus: Suite
    faults: Suite
    secrets: Suite
    passed: int
    failed: int
    skipped: int
    duration_s: float
    fault_cases: list  # (case, clean, leftovers)
    secret_cases: list  # (case, found)

    @property
    def ok(self) -> bool:
        measured = len(self.corpus.inputs) >= 40 and self.faults.tried and self.secrets.tried
        return bool(measured and not self.failed and not self.skipped
                     and self.corpus.clean == self.corpus.tried and self.faults.clean == self.faults.tried
                     and not (self.corpus.tracebacks or self.faults.tracebacks)
                     and not self.faults.leftovers and not self.secrets.found)


def summarize(records: list[dict], outcomes: dict[str, int], duration_s: float = 0.0) -> Summary:
    suites = {"corpus": Suite(), "fault": Suite(), "secrets": Suite()}
    fault_cases, secret_cases = [], []
    for record in records:
        suite = suites.get(record.get("suite"))
        if suite is None:
            continue
        suite.tried += 1
        suite.inputs.add(record.get("input", record.get("case")))
        suite.tracebacks += bool(record.get("traceback"))
        suite.leftovers += int(record.get("leftovers", 0))
        suite.found += int(record.get("found", 0))
        if record.get("suite") == "secrets":
            secret_cases.append((record["case"], int(record.get("found", 0))))
            continue
        suite.clean += bool(record.get("clean"))
        if not record.get("clean"):
            suite.unclean.append(f"{record['case']}: {record.get('message') or record.get('leftover_items') or ''}")
        if record.get("suite") == "fault":
            fault_cases.append((record["case"], bool(record.get("clean")), int(record.get("leftovers", 0))))
    return Summary(suites["corpus"], suites["fault"], suites["secrets"], outcomes.get("passed", 0),
                   outcomes.get("failed", 0), outcomes.get("skipped", 0), duration_s, fault_cases, secret_cases)


def render(summary: Summary, when: str) -> str:
    c, f, s = summary.corpus, summary.faults, summary.secrets
    lines = [
        "# Reliability and security figures",
        "",
        (f"Written by `invoke reliability` on {when} ({summary.duration_s:.0f}s): the corpus of broken "
         "inputs (`tests/corpus/`), the fault tests against a real engine and registry "
         "(`tests/integration/test_faults.py`) and the secrets scans of the `dev` release "
         "(`tests/integration/test_dev_pipeline.py`). Do not edit: rerun the task."),
        "",
        f"**{'All figures are as they must be.' if summary.ok else 'SOME FIGURES ARE WRONG: see below.'}**",
        "",
        "| figure | value | must be |",
        "|---|---:|---|",
        f"| broken inputs in the corpus (manifests, constraints files, arguments) | {len(c.inputs)} | at least 40 |",
        f"| runs of them through `invoke build` and `invoke push` | {c.tried} | |",
        f"| clean errors (one line naming file, key and what was expected; exit 2) | {c.clean} | {c.tried} |",
        f"| faults produced | {f.tried} | |",
        f"| faults handled cleanly (clear message, no tag moved, image kept, rerun succeeds) | {f.clean} | {f.tried} |",
        f"| tracebacks | {c.tracebacks + f.tracebacks} | 0 |",
        f"| leftovers after faults (containers, temporary files, journals) | {f.leftovers} | 0 |",
        f"| places scanned for secrets | {s.tried} | |",
        f"| secrets found (registry password, CA bundle) | {s.found} | 0 |",
        (f"| tests passed / failed / skipped | {summary.passed} / {summary.failed} / {summary.skipped} "
         "| all / 0 / 0 |"),
        "",
        "## Faults",
        "",
        "| fault | handled cleanly | leftovers |",
        "|---|---|---:|",
        *[f"| {case} | {'yes' if clean else '**no**'} | {left} |" for case, clean, left in summary.fault_cases],
        "",
        "## Secrets",
        "",
        "| where | found |",
        "|---|---:|",
        *[f"| {case} | {found} |" for case, found in summary.secret_cases],
        "",
    ]
    unclean = c.unclean + f.unclean
    if unclean:
        lines += ["## Not clean", "", *[f"- {item}" for item in unclean], ""]
    lines += ["## Faults not produced on our machines", "",
              *[f"- **{what}**: {why}." for what, why in NOT_PRODUCED], ""]
    return "\n".join(lines)


def run_reliability(project: Project, out=sys.stdout) -> Summary:
    """Run every test marked `reliability`, then write RELIABILITY.md at the project root."""
    work = project.build / "reliability"
    work.mkdir(parents=True, exist_ok=True)
    figures, junit = work / "figures.jsonl", work / "junit.xml"
    figures.unlink(missing_ok=True)
    started = time.monotonic()
    env = {**os.environ, "NGCBUILD_FIGURES": str(figures)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-m", MARKER, "-q", f"--junitxml={junit}", "tests"],
                            cwd=project.root, env=env, check=False)
    duration = time.monotonic() - started
    records = [json.loads(line) for line in figures.read_text().splitlines()] if figures.exists() else []
    summary = summarize(records, _outcomes(junit), duration)
    report = project.root / REPORT
    report.write_text(render(summary, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())), encoding="utf-8")
    print(f"wrote {REPORT}: {len(summary.corpus.inputs)} broken inputs ({summary.corpus.tried} runs), "
          f"{summary.faults.tried} faults, "
          f"{summary.secrets.tried} secret scans", file=out, flush=True)
    if result.returncode != 0 or not summary.ok:
        raise OperationError(f"reliability figures are not all as they must be (pytest exit {result.returncode}); "
                             f"see {REPORT}")
    return summary


def _outcomes(junit: Path) -> dict[str, int]:
    if not junit.exists():
        return {}
    suite = ElementTree.parse(junit).getroot()
    suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
    tests = int(suite.get("tests", 0))
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    return {"passed": tests - failed - skipped, "failed": failed, "skipped": skipped}
