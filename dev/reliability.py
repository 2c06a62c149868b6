"""`invoke reliability`: the one command that refreshes RELIABILITY.md.

The figures: run the corpus of broken inputs, the fault tests and the secrets scans (every test marked
`reliability`) and count what they measured; or, with `--from-run`, take the figures the last whole
test run left in build/reliability/RELIABILITY.md (tests/reliability_plugin.py: a test run writes
nothing outside build/). A whole run counts more hostile inputs than the marked tests alone: the engine tests
that interrupt `mutate` and `promote` (test_mutants.py, test_attestation.py: minutes each, so not marked) record
theirs too. Then the tables of planted defects that `ngcbuild mutate --release R` left in
build/R/mutants.md, each in its own marked section; a release with no table in build/ keeps its
section as it was.

The tests measure; this module only runs them and counts. Each test appends one JSON line per
measurement to $NGCBUILD_FIGURES (tests/conftest.py, fixture `figures`) before it asserts, so a
failing check shows up as a non-zero figure, not as a missing one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.outputs import write_file
from ngcbuild.core.project import Project
from ngcbuild.smoke.junit import counts, read_junit

MARKER = "reliability"
FUZZ_EXAMPLES = 1000  # per property of tests/unit/test_fuzz.py (the unit test run uses fewer)
REPORT = "RELIABILITY.md"
WORK = "reliability"  # build/reliability/: the figures' records and the last run's report
MUTANTS_TABLE = "mutants.md"  # build/R/mutants.md (smoke/mutate.py; workspace/release_dir.MUTANTS_REPORT)
ALL_OK = "All figures are as they must be."
# Sections between markers (`<!-- mutants:dev:begin -->`...`<!-- mutants:dev:end -->`) are the planted
# defects' tables: kept verbatim when the figures are rewritten, replaced by a newer table in build/.
MARKED = re.compile(r"<!-- ([\w.:-]+):begin -->.*?<!-- \1:end -->", re.S)

# What the fault tests cannot do on our machines, and why (kept next to the figures it qualifies).
NOT_PRODUCED = (
    ("permission denied on the engine's socket",
     ("the tests run as root, and root connects to any socket whatever its mode; the message exists "
      "(`ngcbuild.engine.client`) but only a test run as another user could reach it")),
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
class ClassFigures:
    """One class of hostile input (tests/corpus/hostile.py): how its cases ended."""

    cases: int = 0
    clean: int = 0
    tracebacks: int = 0
    hangs: int = 0
    secrets: int = 0
    leftovers: int = 0
    wrong_exit: int = 0

    def add(self, record: dict, expected_exit=None) -> None:
        self.cases += 1
        self.clean += bool(record.get("clean"))
        self.tracebacks += bool(record.get("traceback"))
        self.hangs += bool(record.get("hang"))
        self.secrets += bool(record.get("secret"))
        self.leftovers += int(record.get("leftovers", 0))
        # the hostile cases' own words for it ("exit 2, expected 1"); other tests' messages tell an exit that was right
        self.wrong_exit += re.search(r"\bexit \S+, expected ", record.get("message") or "") is not None


@dataclass
class FuzzFigures:
    """One property of tests/unit/test_fuzz.py: its generated examples and how they ended."""

    examples: int = 0
    accepted: int = 0
    clean_errors: int = 0
    errors: int = 0
    hangs: int = 0


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
    hostile: dict = field(default_factory=dict)  # class -> ClassFigures
    fuzz: dict = field(default_factory=dict)  # property -> FuzzFigures
    hostile_unclean: list = field(default_factory=list)

    @property
    def hostile_total(self) -> ClassFigures:
        total = ClassFigures()
        for figures in self.hostile.values():
            for name in vars(total):
                setattr(total, name, getattr(total, name) + getattr(figures, name))
        return total

    @property
    def ok(self) -> bool:
        hostile, fuzz = self.hostile_total, list(self.fuzz.values())
        measured = (len(self.corpus.inputs) >= 40 and self.faults.tried and self.secrets.tried
                    and len(self.hostile) >= 6 and hostile.cases >= 40 and len(fuzz) >= 3
                    and all(f.examples for f in fuzz))
        return bool(measured and not self.failed and not self.skipped
                     and self.corpus.clean == self.corpus.tried and self.faults.clean == self.faults.tried
                     and not (self.corpus.tracebacks or self.faults.tracebacks)
                     and not self.faults.leftovers and not self.secrets.found
                     and hostile.clean == hostile.cases
                     and not any(f.errors or f.hangs for f in fuzz))


def summarize(records: list[dict], outcomes: dict[str, int], duration_s: float = 0.0) -> Summary:
    suites = {"corpus": Suite(), "fault": Suite(), "secrets": Suite()}
    fault_cases, secret_cases = [], []
    hostile: dict[str, ClassFigures] = {}
    fuzz: dict[str, FuzzFigures] = {}
    hostile_unclean = []
    for record in records:
        if record.get("suite") == "hostile":
            hostile.setdefault(record.get("klass", "?"), ClassFigures()).add(record)
            if not record.get("clean"):
                hostile_unclean.append(f"{record['case']}: {record.get('message', '')}")
            continue
        if record.get("suite") == "fuzz":
            fuzz[record["case"]] = FuzzFigures(int(record.get("examples", 0)), int(record.get("accepted", 0)),
                                               int(record.get("clean_errors", 0)), int(record.get("errors", 0)),
                                               int(record.get("hangs", 0)))
            continue
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
                   outcomes.get("failed", 0), outcomes.get("skipped", 0), duration_s, fault_cases, secret_cases,
                   hostile, fuzz, hostile_unclean)


def render(summary: Summary, when: str) -> str:
    c, f, s, h = summary.corpus, summary.faults, summary.secrets, summary.hostile_total
    examples = sum(z.examples for z in summary.fuzz.values())
    lines = [
        "# Reliability and security figures",
        "",
        (f"Written by `invoke reliability` on {when} ({summary.duration_s:.0f}s): the corpus of broken "
         "inputs and the hostile inputs (`tests/corpus/`), the generated examples (`tests/unit/test_fuzz.py`), "
         "the fault tests against a real engine and registry "
         "(`tests/integration/test_faults.py`) and the secrets scans of the `dev` release "
         "(`tests/integration/test_dev_pipeline.py`). Do not edit: rerun the task."),
        "",
        f"**{ALL_OK if summary.ok else 'SOME FIGURES ARE WRONG: see below.'}**",
        "",
        "| figure | value | must be |",
        "|---|---:|---|",
        f"| broken inputs in the corpus (manifests, constraints files, arguments) | {len(c.inputs)} | at least 40 |",
        f"| hostile inputs (links, special files, file-system state, arguments, git refs...) | {h.cases} "
        "| at least 40 |",
        f"| hostile inputs handled cleanly (exit status, one line, no hang, nothing echoed or left) | {h.clean} "
        f"| {h.cases} |",
        f"| generated examples (hypothesis: loader, constraints, argument validators) | {examples} | |",
        f"| generated examples ending in another exception or over the time bound "
        f"| {sum(z.errors + z.hangs for z in summary.fuzz.values())} | 0 |",
        f"| runs of them through `invoke build` and `invoke push` | {c.tried} | |",
        f"| clean errors (one line naming file, key and what was expected; exit 2) | {c.clean} | {c.tried} |",
        f"| faults produced | {f.tried} | |",
        f"| faults handled cleanly (clear message, no tag moved, image kept, rerun succeeds) | {f.clean} | {f.tried} |",
        f"| tracebacks | {c.tracebacks + f.tracebacks + h.tracebacks} | 0 |",
        f"| hangs (killed at the time bound) | {h.hangs} | 0 |",
        f"| secrets echoed in messages (credentials, content of files outside the project) | {h.secrets} | 0 |",
        f"| leftovers after exit-2 errors (build/ written, files written by injected options) | {h.leftovers} | 0 |",
        f"| leftovers after faults (containers, temporary files, journals) | {f.leftovers} | 0 |",
        f"| places scanned for secrets | {s.tried} | |",
        f"| secrets found (registry password, CA bundle) | {s.found} | 0 |",
        (f"| tests passed / failed / skipped | {summary.passed} / {summary.failed} / {summary.skipped} "
         "| all / 0 / 0 |"),
        "",
        "## Hostile input, by class",
        "",
        "Cases of `tests/corpus/hostile.py`, each through `invoke` in its own scratch project with a sentinel "
        "engine.",
        "",
        "| class | cases | clean | tracebacks | hangs | secrets echoed | leftovers | wrong exit status |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *[f"| {name} | {k.cases} | {k.clean} | {k.tracebacks} | {k.hangs} | {k.secrets} | {k.leftovers} "
          f"| {k.wrong_exit} |" for name, k in sorted(summary.hostile.items())],
        "",
        "## Generated examples",
        "",
        "Properties of `tests/unit/test_fuzz.py` (hypothesis, derandomized): every example must be accepted or "
        "refused with the clean error, within the time bound.",
        "",
        "| property | examples | accepted | clean errors | other exceptions | over the time bound |",
        "|---|---:|---:|---:|---:|---:|",
        *[f"| {name} | {z.examples} | {z.accepted} | {z.clean_errors} | {z.errors} | {z.hangs} |"
          for name, z in summary.fuzz.items()],
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
    unclean = c.unclean + f.unclean + summary.hostile_unclean
    if unclean:
        lines += ["## Not clean", "", *[f"- {item}" for item in unclean], ""]
    lines += ["## Faults not produced on our machines", "",
              *[f"- **{what}**: {why}." for what, why in NOT_PRODUCED], ""]
    return "\n".join(lines)


def run_reliability(project: Project, out=sys.stdout, from_run: bool = False) -> Path:
    """Refresh RELIABILITY.md at the project root: the figures, then the planted defects' tables."""
    if from_run:
        figures = last_run_figures(project)
    else:
        summary, passed = measure(project)
        figures = render(summary, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        write_file(project.build / WORK / REPORT, figures, within=project.root)
        print(f"measured: {len(summary.corpus.inputs)} broken inputs ({summary.corpus.tried} runs), "
              f"{summary.hostile_total.cases} hostile inputs, {summary.faults.tried} faults, "
              f"{summary.secrets.tried} secret scans", file=out, flush=True)
        if not passed or not summary.ok:
            raise OperationError(f"reliability figures are not all as they must be; {REPORT} left as it was, "
                                 f"the figures are in {project.build / WORK / REPORT}")
    report = project.root / REPORT
    old = report.read_text(encoding="utf-8") if report.exists() else ""
    write_file(report, with_sections(figures, old, mutant_tables(project)), within=project.root)
    print(f"wrote {REPORT}", file=out, flush=True)
    return report


def measure(project: Project) -> tuple[Summary, bool]:
    """Run every test marked `reliability`; (what they measured, whether pytest passed)."""
    work = project.build / WORK
    work.mkdir(parents=True, exist_ok=True)
    figures, junit = work / "figures.jsonl", work / "junit.xml"
    figures.unlink(missing_ok=True)
    started = time.monotonic()
    env = {**os.environ, "NGCBUILD_FIGURES": str(figures), "NGCBUILD_FUZZ_EXAMPLES": str(FUZZ_EXAMPLES)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-m", MARKER, "-q", f"--junitxml={junit}", "tests"],
                            cwd=project.root, env=env, check=False)
    duration = time.monotonic() - started
    records = [json.loads(line) for line in figures.read_text().splitlines()] if figures.exists() else []
    return summarize(records, _outcomes(junit), duration), result.returncode == 0


def last_run_figures(project: Project) -> str:
    """The figures a whole test run left in build/reliability/, when every one is as it must be."""
    path = project.build / WORK / REPORT
    if not path.is_file():
        raise UserError(f"{path}: no figures of a whole test run here; run the whole suite (`invoke test`) first, "
                        "or `invoke reliability` without --from-run to measure them")
    text = path.read_text(encoding="utf-8")
    if f"**{ALL_OK}**" not in text:
        raise OperationError(f"{path}: the last run's figures are not all as they must be; {REPORT} left as it was")
    return text


def mutant_tables(project: Project) -> dict[str, str]:
    """name -> marked section, of every build/R/mutants.md that `ngcbuild mutate` left."""
    tables = {}
    for path in sorted(project.build.glob(f"*/{MUTANTS_TABLE}")):
        for match in MARKED.finditer(path.read_text(encoding="utf-8")):
            tables[match.group(1)] = match.group(0)
    return tables


def with_sections(new: str, old: str, fresh: dict[str, str]) -> str:
    """`new`, then every marked section of `old` in its order (the `fresh` one of that name instead
    where there is one), then the `fresh` sections `old` did not hold."""
    kept = [fresh.get(match.group(1), match.group(0)) for match in MARKED.finditer(old)]
    named = {match.group(1) for match in MARKED.finditer(old)}
    sections = [*kept, *(text for name, text in fresh.items() if name not in named)]
    sections = [text for text in sections if text not in new]
    return new.rstrip("\n") + "\n\n" + "\n\n".join(sections) + "\n" if sections else new


def _outcomes(junit: Path) -> dict[str, int]:
    if not junit.exists():
        return {}
    # the product's one reader and counting rule of a JUnit report (smoke/junit.py)
    total = counts(read_junit(junit.read_bytes(), str(junit)))
    return {"passed": total.passed, "failed": total.failed + total.errors, "skipped": total.skipped}
