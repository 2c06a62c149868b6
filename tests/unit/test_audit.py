"""`invoke audit`'s logic with recorded PyPI answers: the policy (allowed, not allowed, expired,
unused, too little checked), the two ways PyPI is asked and the fallback between them, the SBOM's
reading, the report and the table, and the notes' section. The real PyPI and the real image are
tests/integration/test_audit.py's."""

import json
from datetime import date
from pathlib import Path

import pytest

from ngcbuild.core.errors import OutputDamaged, UserError
from ngcbuild.core.http import Answer, AnswerTooLarge, HttpFailure
from ngcbuild.core.project import Project
from ngcbuild.manifest.model import SecuritySpec
from ngcbuild.supply import advisories as adv
from ngcbuild.supply.advisories import CHECKED, NOT_CHECKED, PER_VERSION, PROJECT_JSON, Finding, PypiAdvisories
from ngcbuild.supply.audit import FAILED, PASSED, judge, report, sbom_contents, table
from ngcbuild.workspace.audit_report import read_audit
from ngcbuild.workspace.sbom import read_sbom

from ..conftest import REPO

RECORDED = REPO / "tests" / "data" / "audit" / "pycrypto-project.json"  # PyPI's answer, 2026-11-24
TODAY = date(2026, 11, 24)


def pycrypto() -> Finding:
    return adv.from_project_json("pycrypto", "2.6.1", RECORDED.read_bytes(), "404")


def policy(*allow, min_checked=1) -> SecuritySpec:
    return SecuritySpec.model_validate({"allow": [dict(zip(("id", "reason", "expires"), a, strict=True)) for a in allow],
                                        "min_checked": min_checked})


def clean(name="tqdm", version="4.70.1") -> Finding:
    return Finding(name, version, CHECKED, PROJECT_JSON)


def unchecked(name="numpy", version="2.4.6") -> Finding:
    return Finding(name, version, NOT_CHECKED, reason="the project JSON describes only the latest version, 2.5.5")


# --- PyPI's answers ---------------------------------------------------------------------------------

def test_the_recorded_answer_gives_each_vulnerability_once_with_its_aliases():
    finding = pycrypto()
    assert finding.status == CHECKED and finding.source == PROJECT_JSON
    # PyPI lists each twice (its PYSEC id and its GHSA id, each the other's alias): merged
    assert [a.id for a in finding.advisories] == ["PYSEC-2017-94", "PYSEC-2018-97"]
    first = finding.advisories[0]
    assert set(first.aliases) == {"CVE-2013-7459", "GHSA-cq27-v7xp-c356"} and first.fixed_in == ()
    assert first.link == "https://osv.dev/vulnerability/PYSEC-2017-94" and "ALGnew" in first.summary


def test_the_project_json_speaks_only_for_the_latest_version():
    older = adv.from_project_json("pycrypto", "2.6", RECORDED.read_bytes(), "404")
    assert older.status == NOT_CHECKED and older.advisories == ()
    assert "describes only the latest version, 2.6.1, not 2.6" in older.reason
    # a local build of the latest version (2.13.0+cpu of 2.13.0) is that version's source
    local = adv.from_project_json("pycrypto", "2.6.1+cpu", RECORDED.read_bytes(), "404")
    assert local.status == CHECKED and len(local.advisories) == 2


@pytest.mark.parametrize("body, why", [
    (b"<html>proxy error</html>", "could not be read"),
    (b'{"info": {}}', "could not be read"),
    (b'{"info": {"version": 7}}', "could not be read"),
    (b'{"info": {"version": "2.6.1"}, "vulnerabilities": {"id": "x"}}', "not a list"),
    (b'{"info": {"version": "2.6.1"}, "vulnerabilities": [{"aliases": []}]}', "has no id"),
    (b'{"info": {"version": "2.6.1"}, "vulnerabilities": [{"id": "A-1", "fixed_in": "1.0"}]}', "lists of strings"),
    (b"[" * 100_000 + b"]" * 100_000, "could not be read"),
])
def test_an_answer_that_cannot_be_read_leaves_the_distribution_not_checked(body, why):
    finding = adv.from_project_json("pycrypto", "2.6.1", body, "404")
    assert finding.status == NOT_CHECKED and why in finding.reason


def test_a_withdrawn_advisory_is_left_out():
    data = json.loads(RECORDED.read_text())
    for entry in data["vulnerabilities"]:
        if "2018" in entry["id"] or "2018" in " ".join(entry["aliases"]):
            entry["withdrawn"] = "2026-01-01T00:00:00Z"
    finding = adv.from_project_json("pycrypto", "2.6.1", json.dumps(data).encode(), "404")
    assert [a.id for a in finding.advisories] == ["PYSEC-2017-94"]


class Recorded:
    """Answers recorded per URL (a status and a body, or an exception to raise), in the shape of
    core/http.fetch: the pure logic of which source answers for which distribution. Real PyPI:
    tests/integration/test_audit.py; a misbehaving index: tests/corpus/fakes.py."""

    def __init__(self, answers: dict):
        self.answers, self.asked = answers, []

    def __call__(self, method, url, limit, deadline_s, headers):
        self.asked.append(url)
        status, body = self.answers.get(url, (404, b"{}"))
        if isinstance(status, Exception):
            raise status
        return Answer(status, {}, body, url)


def advisories(answers: dict, **kwargs) -> PypiAdvisories:
    return PypiAdvisories(fetch=Recorded(answers), **kwargs)


def version_answer(vulnerabilities: list, version: str = "2.6.1") -> bytes:
    return json.dumps({"info": {"version": version}, "vulnerabilities": vulnerabilities}).encode()


def test_the_per_version_json_answers_first_and_the_project_json_only_for_what_it_lacks():
    recorded = json.loads(RECORDED.read_text())["vulnerabilities"]
    source = advisories({
        "https://pypi.org/pypi/pycrypto/2.6.1/json": (200, version_answer(recorded)),  # an ordinary machine
        "https://pypi.org/pypi/tqdm/json": (200, b'{"info": {"version": "4.70.1"}, "vulnerabilities": []}'),
        "https://pypi.org/pypi/numpy/json": (200, b'{"info": {"version": "2.5.5"}, "vulnerabilities": []}'),
    })
    found = source.check_all([("pycrypto", "2.6.1"), ("tqdm", "4.70.1"), ("numpy", "2.4.6")])
    assert [(f.name, f.status, f.source) for f in found] == [
        ("pycrypto", CHECKED, PER_VERSION), ("tqdm", CHECKED, PROJECT_JSON), ("numpy", NOT_CHECKED, None)]
    assert [a.id for a in found[0].advisories] == ["PYSEC-2017-94", "PYSEC-2018-97"]
    assert "https://pypi.org/pypi/pycrypto/json" not in source.asked  # the per-version JSON answered for it
    assert "per-version JSON answered 404" in found[2].reason and "2.5.5, not 2.4.6" in found[2].reason


def test_a_local_build_is_checked_by_its_public_versions_answer():
    source = advisories({"https://pypi.org/pypi/torch/2.13.0/json": (200, version_answer([], "2.13.0"))})
    found = source.check("torch", "2.13.0+cpu")
    assert found.status == CHECKED and "public version 2.13.0 of a local build" in found.source
    assert source.asked[:2] == ["https://pypi.org/pypi/torch/2.13.0+cpu/json", "https://pypi.org/pypi/torch/2.13.0/json"]


def test_a_mirror_is_asked_instead_of_pypi():
    mirror = "https://u:s3cr3t@mirror.example/pypi"
    source = advisories({f"{mirror}/tqdm/json": (200, b'{"info": {"version": "4.70.1"}, "vulnerabilities": []}')},
                        base=mirror)
    assert source.check("tqdm", "4.70.1").status == CHECKED
    assert all(url.startswith(mirror) for url in source.asked)


def test_a_distribution_pypi_does_not_know_is_looked_for_in_the_release_indexes():
    index = "https://download.example/whl/cpu"
    page = json.dumps({"meta": {"api-version": "1.0"}, "files": [
        {"filename": "torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl"}, {"filename": "garbage"}, 7]}).encode()
    found = advisories({f"{index}/torch/": (200, page)}, indexes=(index,)).check("torch", "2.13.0+cpu")
    assert found.status == NOT_CHECKED and f"served by the release's index {index}" in found.reason
    found = advisories({f"{index}/torch/": (200, b"<html>")}, indexes=(index,)).check("torch", "2.13.0+cpu")
    assert "could not be read" in found.reason and "not a PEP 691 project page" in found.reason


@pytest.mark.parametrize("answers, why", [
    ({"https://pypi.org/pypi/x/1.0/json": (HttpFailure("https://pypi.org/pypi/x/1.0/json: cannot be reached"), b"")},
     "could not be asked (cannot be reached)"),
    ({"https://pypi.org/pypi/x/1.0/json": (503, b"busy")}, "could not be asked (HTTP 503)"),
    ({"https://pypi.org/pypi/x/1.0/json": (200, b"not json")}, "could not be read (not valid JSON"),
    ({"https://pypi.org/pypi/x/1.0/json": (200, b'{"vulnerabilities": [{"id": "A-1"}]}')}, "no `info` object"),
    ({"https://pypi.org/pypi/x/1.0/json": (AnswerTooLarge("x: over"), b"")}, "over the"),
    ({"https://pypi.org/pypi/x/json": (HttpFailure("https://pypi.org/pypi/x/json: no whole answer within 120s"), b"")},
     "could not be fetched (no whole answer within 120s)"),
    ({"https://pypi.org/pypi/x/json": (500, b"")}, "answered HTTP 500"),
    ({}, "not on PyPI"),
])
def test_pypi_failing_leaves_the_distribution_not_checked_never_clean(answers, why):
    finding = advisories(answers).check("x", "1.0")
    assert finding.status == NOT_CHECKED and finding.advisories == () and why in finding.reason


def test_a_version_pypi_cannot_key_is_not_checked():
    finding = advisories({}).check("x", "not a version")
    assert finding.status == NOT_CHECKED and "PEP 440" in finding.reason


def test_past_the_deadline_nothing_more_is_asked():
    source = advisories({}, deadline_s=0)
    finding = source.check("x", "1.0", ends=0)
    assert finding.status == NOT_CHECKED and "deadline" in finding.reason and source.asked == []


def test_each_request_is_given_at_most_what_is_left_of_the_audits_one_deadline():
    """Issue 54 item 1: a mirror that trickles each answer to its request's deadline (120 s) ends the audit at
    the audit's own deadline, not a request's length later per worker and per index."""
    import time

    given = []

    def slow(method, url, limit, deadline_s, headers):
        given.append(deadline_s)
        time.sleep(0.3)  # each answer takes what a trickle would: here, past the audit's deadline
        return Answer(404, {}, b"{}", url)

    source = PypiAdvisories(fetch=slow, deadline_s=0.5, indexes=("https://a.example/simple",
                                                                 "https://b.example/simple"))
    started = time.monotonic()
    found = source.check_all([("x", "1.0"), ("y", "1.0")])
    assert time.monotonic() - started < 2
    assert all(0 < seconds <= 0.5 for seconds in given), given
    assert all(f.status == NOT_CHECKED for f in found)
    assert any("deadline" in f.reason for f in found), [f.reason for f in found]


def test_one_advisory_listed_many_times_or_in_a_chain_of_aliases_is_merged_in_linear_time():
    entry = {"id": "PYSEC-1", "aliases": ["CVE-1"], "fixed_in": ["2.0"]}
    chain = [{"id": f"A-{i}", "aliases": [f"A-{i + 1}"]} for i in range(5000)]
    found = adv.from_pypi_entries([entry] * 5000 + chain)
    assert [a.id for a in found] == ["A-0", "PYSEC-1"]
    assert len(found[0].aliases) == 5000 and found[1].aliases == ("CVE-1",)


def test_text_from_the_index_is_escaped():
    entry = {"id": "PYSEC-1\x1b[2J", "aliases": ["CVE-1\r"], "summary": "bad\x1b]0;title\x07 news"}
    [advisory] = adv.from_pypi_entries([entry])
    assert "\x1b" not in advisory.id + advisory.summary and "\r" not in "".join(advisory.aliases)
    assert "\\x1b" in advisory.id


# --- the policy -------------------------------------------------------------------------------------

def test_an_advisory_nobody_allowed_fails():
    judged = judge([pycrypto(), clean()], policy(), TODAY)
    assert judged["verdict"] == FAILED and judged["counts"]["not_allowed"] == 2
    assert any("pycrypto 2.6.1: PYSEC-2017-94 is not allowed" in p for p in judged["problems"])


def test_allowing_each_advisory_by_id_or_alias_passes():
    judged = judge([pycrypto(), clean()], policy(("PYSEC-2017-94", "not reachable: no ALGnew caller", "2026-12-31"),
                                                 ("CVE-2018-6594", "ElGamal unused", TODAY)), TODAY)
    assert judged["verdict"] == PASSED and judged["problems"] == []
    assert judged["counts"]["allowed"] == 2 and judged["counts"]["not_allowed"] == 0
    assert judged["fates"][("pycrypto", "PYSEC-2018-97")] == "allowed until 2026-11-24: ElGamal unused"
    assert {a["status"] for a in judged["allow"]} == {"used"}


def test_an_expired_exception_fails_used_or_not():
    used = judge([pycrypto()], policy(("PYSEC-2017-94", "no caller reaches it", "2026-11-23"), ("PYSEC-2018-97", "no caller reaches it", "2027-01-01")), TODAY)
    assert used["verdict"] == FAILED
    assert used["problems"] == ["security.allow PYSEC-2017-94 expired on 2026-11-23: renew it with a reason, or "
                                "update the distribution and remove it"]
    assert used["fates"][("pycrypto", "PYSEC-2017-94")] == "allowed until 2026-11-23: EXPIRED"
    unused = judge([clean()], policy(("GHSA-aaaa-bbbb-cccc", "kept for a pin since dropped", "2020-01-01")), TODAY)
    assert unused["verdict"] == FAILED and unused["allow"][0]["status"] == "expired"


def test_an_exception_for_an_advisory_not_found_is_reported_not_failed():
    judged = judge([clean()], policy(("PYSEC-2099-1", "kept for a pin we dropped", "2027-01-01")), TODAY)
    assert judged["verdict"] == PASSED and judged["allow"][0]["status"] == "unused"
    data = report("dev", "sha256:" + "a" * 64, "build/dev/sbom.cdx.json", "0" * 64, [clean()], [], judged, "now")
    assert "security.allow PYSEC-2099-1: no such advisory among the checked distributions" in table(data)


@pytest.mark.parametrize("findings, min_checked, verdict", [
    ([unchecked(), unchecked("torch")], 1, "not checked"),  # nothing checked is never clean
    ([], 1, "not checked"),
    ([unchecked(), clean()], 1, PASSED),
    ([unchecked(), clean()], "all", "not checked"),
    ([unchecked(), clean()], 2, "not checked"),
    ([unchecked()], 0, PASSED),  # accepted explicitly
    ([unchecked(), pycrypto()], 5, FAILED),  # an advisory outranks the coverage
])
def test_too_little_checked_is_the_verdict_not_checked(findings, min_checked, verdict):
    judged = judge(findings, policy(min_checked=min_checked), TODAY)
    assert judged["verdict"] == verdict
    if verdict == "not checked":
        assert "could be checked" in judged["problems"][-1]


def test_the_report_says_per_distribution_who_checked_it_or_why_not():
    findings = [pycrypto(), clean(), unchecked()]
    judged = judge(findings, policy(("PYSEC-2017-94", "no caller reaches it", "2027-01-01")), TODAY)
    others = [{"kind": "deb", "name": "libc6", "version": "2.36-9", "reason": "a Debian package"}]
    data = report("dev", "sha256:" + "a" * 64, "build/dev/sbom.cdx.json", "0" * 64, findings, others, judged, "now")
    assert data["verdict"] == FAILED  # PYSEC-2018-97 is not allowed
    assert data["counts"] == {"python_distributions": 3, "checked": 2, "checked_by": {PROJECT_JSON: 2},
                              "not_checked": 1, "advisories": 2, "not_allowed": 1, "allowed": 1,
                              "other_components_not_checked": {"deb": 1}}
    by_name = {d["name"]: d for d in data["distributions"]}
    assert [a["policy"] for a in by_name["pycrypto"]["advisories"]] == ["allowed until 2027-01-01: no caller reaches it", "not allowed"]
    assert by_name["numpy"] == {"name": "numpy", "version": "2.4.6", "status": NOT_CHECKED,
                                "reason": unchecked().reason}
    shown = table(data)
    assert "| numpy | 2.4.6 | NOT CHECKED | - |" in shown
    assert "NOT CHECKED: 1 deb component (a Debian package)" in shown
    assert "verdict: failed: 2 of 3 Python distributions checked" in shown
    json.dumps(data)  # the report is JSON as it is


# --- the SBOM ---------------------------------------------------------------------------------------

def sbom(tmp_path: Path, components, image="sha256:" + "b" * 64) -> Path:
    path = tmp_path / "build" / "dev" / "sbom.cdx.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"bomFormat": "CycloneDX", "components": components, "metadata": {
        "component": {"properties": [{"name": "ngcbuild:image-id", "value": image}]}}}))
    return path


def test_the_sbom_gives_each_distribution_once_and_lists_the_rest_as_not_checked(tmp_path):
    path = sbom(tmp_path, [
        {"bom-ref": "manifest:pytorch", "name": "PyTorch", "version": "2.13.0+cpu", "purl": "pkg:pypi/torch@2.13.0%2Bcpu"},
        {"bom-ref": "manifest:cuda", "name": "CUDA", "version": "12.8"},
        {"bom-ref": "os", "type": "operating-system", "name": "debian", "version": "12"},
        {"bom-ref": "pypi:torch@2.13.0+cpu", "name": "torch", "version": "2.13.0+cpu", "purl": "pkg:pypi/torch@2.13.0%2Bcpu"},
        {"bom-ref": "pypi:Jinja2@3.1.6", "name": "Jinja2", "version": "3.1.6", "purl": "pkg:pypi/jinja2@3.1.6"},
        {"bom-ref": "deb:libcublas", "name": "libcublas-12-8", "version": "12.8.4.1-1",
         "purl": "pkg:deb/ubuntu/libcublas-12-8@12.8.4.1-1?arch=amd64"},
    ])
    read = read_sbom(path.parent, tmp_path)
    distributions, others = sbom_contents(read)
    image = read.image_id
    assert distributions == [("jinja2", "3.1.6"), ("torch", "2.13.0+cpu")]
    assert [(o["kind"], o["name"]) for o in others] == [("operating-system", "debian"), ("deb", "libcublas-12-8")]
    assert "CUDA libraries installed by apt" in others[1]["reason"]
    assert image == "sha256:" + "b" * 64


@pytest.mark.parametrize("components, key", [
    ([{"name": "x", "version": "1", "purl": "pkg:pypi/x@1%0A--index-url%3Devil"}], "components.0.purl"),
    ([{"name": "x", "version": "1", "purl": "not a purl"}], "components.0.purl"),
    ([{"name": 7, "version": "1"}], "components.0"),
    (["x"], "components.0"),
    ({"a": 1}, "components"),
])
def test_a_damaged_sbom_is_named_with_its_key(tmp_path, components, key):
    path = sbom(tmp_path, components)
    with pytest.raises(OutputDamaged, match=f"sbom.cdx.json is damaged: .*{key}"):
        read_sbom(path.parent, tmp_path)


def test_no_sbom_says_which_step_makes_it(tmp_path):
    with pytest.raises(UserError, match="invoke sbom --release dev"):
        read_sbom(tmp_path / "build" / "dev", tmp_path)


# --- the notes' section -----------------------------------------------------------------------------

def written_report(tmp_path: Path, data) -> Path:
    directory = tmp_path / "build" / "dev"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "audit.json").write_text(data if isinstance(data, str) else json.dumps(data))
    return directory


def a_report() -> dict:
    findings = [pycrypto(), clean(), unchecked()]
    judged = judge(findings, policy(("PYSEC-2017-94", "no caller reaches it", "2027-01-01")), TODAY)
    return report("dev", "sha256:" + "a" * 64, "build/dev/sbom.cdx.json", "0" * 64, findings,
                  [{"kind": "deb", "name": "libc6", "version": "2.36", "reason": "a Debian package"}], judged, "then")


def test_the_notes_read_what_the_audit_wrote(tmp_path):
    found = read_audit(written_report(tmp_path, a_report()), tmp_path)
    assert found.verdict == FAILED and found.checked == 2 and found.python_distributions == 3
    assert [(a.distribution, a.id, a.policy) for a in found.advisories] == [
        ("pycrypto 2.6.1", "PYSEC-2017-94", "allowed until 2027-01-01: no caller reaches it"), ("pycrypto 2.6.1", "PYSEC-2018-97", "not allowed")]
    assert found.not_checked == (("numpy 2.4.6", unchecked().reason),) and found.other_not_checked == (("deb", 1),)
    assert read_audit(tmp_path / "build" / "cuda-dev", tmp_path) is None


@pytest.mark.parametrize("change, key", [
    (lambda d: d.update(verdict="fine"), "verdict"),
    (lambda d: d["counts"].update(checked="2"), "counts.checked"),
    (lambda d: d["distributions"][0]["advisories"][0].update(aliases="CVE-1"), "distributions.0.advisories.0.aliases"),
    (lambda d: d["distributions"].append(None), "distributions.3"),
    (lambda d: d.pop("counts"), "counts"),
    # a link the notes would put into Markdown as it stands: only an advisory's page is one
    (lambda d: d["distributions"][0]["advisories"][0].update(link="javascript:alert(1)"),
     "distributions.0.advisories.0.link"),
    (lambda d: d["distributions"][0]["advisories"][0].update(link="https://osv.dev/vulnerability/X) [y](z"),
     "distributions.0.advisories.0.link"),
])
def test_a_damaged_report_stops_the_notes_with_its_key(tmp_path, change, key):
    data = a_report()
    change(data)
    with pytest.raises(OutputDamaged, match=f"audit.json is damaged: .*{key}.*invoke audit --release dev"):
        read_audit(written_report(tmp_path, data), tmp_path)


def test_the_notes_section_lists_advisories_and_what_was_not_checked(scratch):
    from ngcbuild.docs.notes import render_notes
    from ngcbuild.manifest.series import Series

    scratch.copy_release("dev")
    project = Project.at(scratch.root)
    notes = render_notes(Series.load(project), "dev", project)
    assert "## Known Vulnerabilities\n\nNo vulnerability report exists for this image" in notes
    written_report(scratch.root, a_report())
    notes = render_notes(Series.load(project), "dev", project)
    assert "verdict **failed**. 2 of 3 Python distributions were checked" in notes
    assert "- pycrypto 2.6.1: [PYSEC-2018-97](https://osv.dev/vulnerability/PYSEC-2018-97)" in notes
    assert "- numpy 2.4.6: " in notes and "- 1 deb component (Debian packages" in notes


class Unreachable:
    """A source for which PyPI answered nothing (the proxy down)."""

    def check_all(self, distributions):
        return [Finding(n, v, NOT_CHECKED, reason="PyPI could not be asked (proxy refused)") for n, v in distributions]


def test_when_nothing_could_be_checked_the_report_says_so_and_the_audit_fails(scratch):
    import hashlib
    import io

    from ngcbuild.supply.audit import AuditFailed, audit_release

    scratch.copy_release("dev")
    text = json.dumps({"components": [{"name": "tqdm", "version": "4.70.1", "purl": "pkg:pypi/tqdm@4.70.1"}]})
    directory = scratch.root / "build" / "dev"
    directory.mkdir(parents=True)
    (directory / "sbom.cdx.json").write_text(text)
    (directory / "record.json").write_text(json.dumps({"sbom": {"sha256": hashlib.sha256(text.encode()).hexdigest()}}))
    out = io.StringIO()
    with pytest.raises(AuditFailed, match="audit dev: not checked"):
        audit_release(Project.at(scratch.root), "dev", source=Unreachable(), today=TODAY, out=out)
    data = json.loads((directory / "audit.json").read_text())
    assert data["verdict"] == "not checked" and data["counts"]["checked"] == 0
    assert "| tqdm | 4.70.1 | NOT CHECKED | - | PyPI could not be asked (proxy refused) |" in out.getvalue()
    record = json.loads((directory / "record.json").read_text())
    assert record["audit"]["verdict"] == "not checked"
    assert record["audit"]["sha256"] == hashlib.sha256((directory / "audit.json").read_bytes()).hexdigest()


def test_an_advisory_id_from_pypi_cannot_break_out_of_its_link_or_table_cell():
    """PyPI's text (an id, a reason) reaches a Markdown link and the printed table."""
    hostile = "PYSEC-1) [x](https://evil.example"
    advisory = adv.from_pypi_entries([{"id": hostile, "aliases": [], "fixed_in": []}])[0]
    assert advisory.link.startswith("https://osv.dev/vulnerability/PYSEC-1%29%20%5Bx%5D")
    assert " " not in advisory.link and ")" not in advisory.link
    data = a_report()
    data["distributions"][0]["reason"] = "a | b"
    data["distributions"][0]["status"] = NOT_CHECKED
    assert "| a \\| b |" in table(data)
