"""`invoke audit --release R`: the known vulnerabilities of R's image, from its SBOM, judged by R's policy.

Every Python distribution of build/R/sbom.cdx.json (`invoke sbom`) is checked against PyPI's advisory
data (supply/advisories.py: the per-version JSON, then the project JSON for a latest version; PyPI's
or a mirror's, `--pypi-mirror`/NGCBUILD_PYPI_MIRROR; the release's own indexes say where a distribution
PyPI does not know comes from). Everything else
the SBOM lists (Debian packages, CUDA libraries installed by apt among them, the OS) has no advisory
source here and is listed as NOT CHECKED, as is a distribution PyPI could not answer for: never clean.

The manifest's `security` decides the verdict: an advisory no `security.allow` entry names fails, an
allow entry past its `expires` day fails, and fewer checked distributions than `security.min_checked`
(default 1) is the verdict "not checked"; each of these exits 1, after the report
(build/R/audit.json) is written and the table printed. An allow entry that names no advisory found is
reported, not a failure.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from dataclasses import replace
from datetime import date, datetime, timezone

from packaging.utils import canonicalize_name

from ngcbuild.core.errors import OperationError, UserError
from ngcbuild.core.indexes import IndexSetting, release_indexes
from ngcbuild.core.project import Project
from ngcbuild.core.references import shown_url
from ngcbuild.core.text import safe
from ngcbuild.manifest.loader import load_release
from ngcbuild.manifest.model import SecuritySpec
from ngcbuild.supply.advisories import CHECKED, NOT_CHECKED, PYPI_JSON_API, Finding, PypiAdvisories, mirror_setting
from ngcbuild.workspace.record import read_record, write_record
from ngcbuild.workspace.release_dir import AUDIT, ReleaseDir
from ngcbuild.workspace.sbom import Sbom, read_sbom
from ngcbuild.workspace.sections import AuditEntry, utc_timestamp

PASSED, FAILED = "passed", "failed"
NOT_CHECKED_WHY = {
    "deb": "a Debian package (CUDA libraries installed by apt among them): PyPI's advisory data does not "
           "cover it and Debian's security tracker is not read by this audit",
    "operating-system": "the operating system: no advisory source here",
}


class AuditFailed(OperationError):
    """An advisory not allowed, an expired exception, or too little checked: exit status 1."""


def sbom_contents(sbom: Sbom) -> tuple[list[tuple[str, str]], list[dict]]:
    """From the SBOM (its one reader, workspace/sbom.py): the Python distributions (name, version) to
    check, each once; the other components (what cannot be checked here)."""
    python: dict[tuple[str, str], tuple[str, str]] = {}
    others = []
    for component in sbom.components:
        if component.kind == "pypi":
            python.setdefault((canonicalize_name(component.package), component.version),
                              (component.package, component.version))
        elif not component.manifest:
            # the manifest's own entries describe what a pin says; the image's entries are what is there
            others.append({"kind": component.kind, "name": component.name, "version": component.version,
                           "reason": NOT_CHECKED_WHY.get(component.kind, "no package URL an advisory source here "
                                                                         "knows")})
    return sorted(python.values(), key=lambda d: canonicalize_name(d[0])), others


def judge(findings: list[Finding], policy: SecuritySpec, today: date) -> dict:
    """The verdict of `policy` on the findings: what each advisory's fate is, what each allow entry
    did, the problems that fail the audit, and the counts. A pure function (tests give it findings)."""
    problems, fates = [], {}
    used = set()
    for finding in findings:
        for advisory in finding.advisories:
            entry = next((e for e in policy.allow if e.id.casefold() in advisory.names()), None)
            where = f"{finding.name} {finding.version}: {advisory.id}"
            if entry is None:
                fates[(finding.name, advisory.id)] = "not allowed"
                problems.append(f"{where} is not allowed (fixed in: {', '.join(advisory.fixed_in) or 'no release'})")
                continue
            used.add(entry.id)
            if entry.expires < today:
                fates[(finding.name, advisory.id)] = f"allowed until {entry.expires}: EXPIRED"
            else:
                fates[(finding.name, advisory.id)] = f"allowed until {entry.expires}: {entry.reason}"
    allow = []
    for entry in policy.allow:
        expired = entry.expires < today
        status = "expired" if expired else "used" if entry.id in used else "unused"
        if expired:
            problems.append(f"security.allow {entry.id} expired on {entry.expires}: renew it with a reason, or "
                            "update the distribution and remove it")
        allow.append({"id": entry.id, "expires": entry.expires.isoformat(), "reason": entry.reason, "status": status})
    checked = [f for f in findings if f.status == CHECKED]
    needed = len(findings) if policy.min_checked == "all" else policy.min_checked
    counts = {
        "python_distributions": len(findings),
        "checked": len(checked),
        "checked_by": dict(sorted(Counter(f.source for f in checked).items())),
        "not_checked": len(findings) - len(checked),
        "advisories": sum(len(f.advisories) for f in findings),
        "not_allowed": sum(1 for fate in fates.values() if fate == "not allowed"),
        "allowed": sum(1 for fate in fates.values() if fate.startswith("allowed")),
    }
    verdict = FAILED if problems else NOT_CHECKED if len(checked) < needed else PASSED
    if verdict == NOT_CHECKED:
        problems.append(f"only {len(checked)} of {len(findings)} Python distributions could be checked; "
                        f"security.min_checked is {policy.min_checked}: the image is not shown clean")
    return {"verdict": verdict, "problems": problems, "fates": fates, "allow": allow, "counts": counts,
            "min_checked": policy.min_checked}


def report(release: str, image: str | None, sbom_path: str, sbom_sha256: str, findings: list[Finding],
           others: list[dict], judged: dict, now: str, base: str = PYPI_JSON_API,
           indexes: tuple[str, ...] = ()) -> dict:
    """The JSON report (build/R/audit.json)."""
    distributions = []
    for finding in findings:
        data = finding.as_json()
        for advisory in data.get("advisories", []):
            advisory["policy"] = judged["fates"][(finding.name, advisory["id"])]
        distributions.append(data)
    kinds = Counter(o["kind"] for o in others)
    return {
        "release": release,
        "image_id": image,
        "sbom": {"path": sbom_path, "sha256": sbom_sha256},
        "audited_at": now,
        "sources": [f"PyPI's per-version JSON ({shown_url(base)}/NAME/VERSION/json)",
                    f"PyPI's project JSON ({shown_url(base)}/NAME/json) for a latest version",
                    *(f"the release's index {shown_url(i)} (where a distribution PyPI does not know comes from)"
                      for i in indexes)],
        "verdict": judged["verdict"],
        "problems": judged["problems"],
        "counts": {**judged["counts"], "other_components_not_checked": dict(sorted(kinds.items()))},
        "policy": {"min_checked": judged["min_checked"], "allow": judged["allow"]},
        "distributions": distributions,
        "not_checked_components": others,
    }


def table(data: dict) -> str:
    """The report as the table `invoke audit` prints."""
    counts = data["counts"]
    lines = [f"audit {data['release']}: image {str(data['image_id'])[:19]}, SBOM sha256 {data['sbom']['sha256'][:12]}",
             "", "| distribution | version | status | source | advisories |", "|---|---|---|---|---|"]
    for d in data["distributions"]:
        if d["status"] == CHECKED:
            found = "; ".join(f"{a['id']} ({', '.join(a['aliases'][:3]) or 'no alias'}; fixed in "
                              f"{', '.join(a['fixed_in']) or 'no release'}): {a['policy']}" for a in d["advisories"])
            lines.append(f"| {d['name']} | {d['version']} | checked | {d['source']} | {_cell(found) or 'none known'} |")
        else:
            lines.append(f"| {d['name']} | {d['version']} | NOT CHECKED | - | {_cell(d['reason'])} |")
    lines.append("")
    for kind, n in counts["other_components_not_checked"].items():
        why = next(o["reason"] for o in data["not_checked_components"] if o["kind"] == kind)
        lines.append(f"NOT CHECKED: {n} {kind} component{'s' if n != 1 else ''} ({why})")
    for entry in data["policy"]["allow"]:
        if entry["status"] == "unused":
            lines.append(f"security.allow {entry['id']}: no such advisory among the checked distributions")
    by = ", ".join(f"{n} by {source}" for source, n in counts["checked_by"].items()) or "none"
    lines.append(f"verdict: {data['verdict']}: {counts['checked']} of {counts['python_distributions']} Python "
                 f"distributions checked ({by}), {counts['not_checked']} not checked; {counts['advisories']} "
                 f"advisories, {counts['allowed']} allowed, {counts['not_allowed']} not allowed")
    lines += [f"  - {p}" for p in data["problems"]]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """A table cell: a `|` from PyPI's text or a reason would end the cell early; control characters
    escaped."""
    return safe(str(text), 2000).replace("|", "\\|")


def audit_release(project: Project, name: str, source=None, today: date | None = None, out=sys.stdout,
                  mirror: str | None = None, setting: IndexSetting | None = None) -> dict:
    """Check R's image, write build/R/audit.json and the record's `audit`, print the table; raise
    AuditFailed (after all that) when the policy says so. `mirror`: --pypi-mirror (else
    NGCBUILD_PYPI_MIRROR, else beside the index `setting`'s index, else PyPI: mirror_setting)."""
    setting = setting if setting is not None else IndexSetting()
    base, why = mirror_setting(mirror, setting=setting)  # bad input stops here, before anything is read
    loaded = load_release(project, name)
    directory = project.out(name)
    record = read_record(directory)
    sbom = read_sbom(directory, project.root, record)  # the one the record names, or refused
    path, digest, image = sbom.path, sbom.sha256, sbom.image_id
    distributions, others = sbom_contents(sbom)
    if image is not None and record.build.image_id not in (None, image):
        raise UserError(f"{path} describes image {image[:19]}, the build record's image is "
                        f"{record.build.image_id[:19]}; run `invoke sbom --release {name}` first")
    # where a distribution PyPI does not know comes from: the release's own indexes and the setting's extras
    indexes = tuple(release_indexes(loaded.release, setting)[1:])
    if why:
        out.write(why + "\n")
    source = source or PypiAdvisories(base=base, indexes=indexes)
    findings = source.check_all(distributions)
    judged = judge(findings, loaded.release.security, today or datetime.now(timezone.utc).date())
    result = report(name, image, str(path.relative_to(project.root)), digest, findings, others, judged,
                    utc_timestamp(), base=base, indexes=indexes)
    body = (json.dumps(result, indent=2) + "\n").encode()
    written = ReleaseDir(directory, project.root).write(AUDIT, body)
    entry = AuditEntry.of(path=str(written.relative_to(project.root)), sha256=hashlib.sha256(body).hexdigest(),
                          verdict=result["verdict"], sbom_sha256=digest, counts=result["counts"])
    write_record(directory, replace(record, audit=entry))
    out.write(table(result))
    out.flush()
    if result["verdict"] != PASSED:
        raise AuditFailed(f"audit {name}: {result['verdict']} ({len(result['problems'])} problem"
                          f"{'s' if len(result['problems']) != 1 else ''}, see the table); report {written}")
    return result
